"""Real embeddings of the synthetic texts (cached across sizes and runs, optionally pooled and
borrowed above a pool size) and writing a graph through the store's real write path."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.data import UTC, SyntheticGraph
from bench.timing import Progress
from mem0g.embed import Embedder
from mem0g.resolve.names import normalize_name
from mem0g.stores.base import GraphStore
from mem0g.types import Entity, Episode, Message, Provenance, Relation, Tenant, WritePlan


class VectorSource:
    """Real embeddings of texts, cached across sizes; optional reuse above a pool size.

    Reuse (when a size needs more distinct texts than `pool_size`): a random pool of the texts
    is embedded for real; every other text borrows the vector of a pooled text of the same
    shape (same relation and destination, else same relation; same entity type for names),
    plus small Gaussian noise, re-normalised."""

    def __init__(self, embedder: Embedder, pool_size: int, batch: int, progress: Progress):
        self.embedder = embedder
        self.pool_size = pool_size
        self.batch = batch
        self.progress = progress
        self.cache: dict[str, np.ndarray] = {}

    def load(self, path: Path) -> int:
        """Vectors saved by an earlier run of the same embedder; returns how many."""
        if not path.is_file():
            return 0
        with np.load(path, allow_pickle=False) as data:
            if str(data["embedder"]) != self.embedder.name:
                return 0
            texts, matrix = data["texts"].tolist(), data["vectors"]
        self.cache.update(zip(texts, matrix, strict=True))
        return len(texts)

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        texts = list(self.cache)
        matrix = np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, 0))
        with path.open("wb") as fh:  # a file object: np.savez would append ".npz" to a name
            np.savez(
                fh,
                embedder=np.array(self.embedder.name),
                texts=np.array(texts),
                vectors=matrix.astype(np.float32),
            )

    def embed(self, texts: Sequence[str], label: str) -> float:
        """Embed texts not cached yet; returns seconds spent in the model."""
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        spent = 0.0
        with self.progress.task(label, len(missing)) as advance:
            for start in range(0, len(missing), self.batch):
                chunk = missing[start : start + self.batch]
                begin = time.perf_counter()
                vectors = self.embedder.embed(chunk)
                spent += time.perf_counter() - begin
                for text, vector in zip(chunk, vectors, strict=True):
                    self.cache[text] = np.asarray(vector, dtype=np.float32)
                advance(len(chunk))
        return spent

    def vectors_for(
        self,
        texts: Sequence[str],
        shapes: Sequence[tuple[str, ...]],
        rng: random.Random,
        label: str,
    ) -> tuple[list[np.ndarray], dict[str, Any]]:
        """One unit vector per text; `shapes[i]` are its reuse keys, most specific first."""
        distinct = list(dict.fromkeys(texts))
        reuse = self.pool_size > 0 and len(distinct) > self.pool_size
        if reuse:
            cached = [t for t in distinct if t in self.cache]
            rest = [t for t in distinct if t not in self.cache]
            rng.shuffle(rest)
            pool = set((cached + rest)[: max(self.pool_size, 0)])
        else:
            pool = set(distinct)
        fresh = sum(1 for t in pool if t not in self.cache)
        seconds = self.embed([t for t in distinct if t in pool], label)
        by_shape: dict[tuple[str, ...], list[str]] = {}
        if reuse:
            for text, keys in zip(texts, shapes, strict=True):
                if text in pool:
                    for depth in range(1, len(keys) + 1):
                        by_shape.setdefault(keys[:depth], []).append(text)
        out: list[np.ndarray] = []
        reused = 0
        noise_rng = np.random.default_rng(rng.randrange(2**32))
        anyone = sorted(pool)  # the donors of a text with no shape in the pool (sorted once)
        for text, keys in zip(texts, shapes, strict=True):
            if text in pool:
                out.append(self.cache[text])
                continue
            donors = (
                next(
                    (by_shape[keys[:d]] for d in range(len(keys), 0, -1) if keys[:d] in by_shape),
                    None,
                )
                or anyone
            )
            out.append(perturb(self.cache[rng.choice(donors)], noise_rng))
            reused += 1
        info = {
            "distinct": len(distinct),
            "embedded_now": fresh,
            "embed_s": round(seconds, 2),
            "reused": reused,
            "pooled": len(pool),
        }
        return out, info


def perturb(vector: np.ndarray, rng: np.random.Generator, scale: float = 0.2) -> np.ndarray:
    """A borrowed vector made distinct: noise of norm ~`scale`, re-normalised (cos ~0.98)."""
    noise = rng.standard_normal(vector.shape[0]).astype(np.float32)
    noisy = vector + noise * (scale / np.sqrt(vector.shape[0]))
    return (noisy / np.linalg.norm(noisy)).astype(np.float32)


def write_graph(
    store: GraphStore,
    tenant: Tenant,
    graph: SyntheticGraph,
    entity_vectors: dict[str, np.ndarray],
    edge_vectors: Sequence[np.ndarray],
    batch: int,
    progress: Progress,
    label: str,
    ids: dict[str, str] | None = None,
) -> float:
    """Write through `store.apply(WritePlan)` in batches; entities ride in the plan of their
    first edge, and names already in `ids` (name -> entity id, updated) are reused. Returns
    seconds spent in `apply`."""
    now = datetime.now(UTC)
    ids = {} if ids is None else ids
    spent = 0.0
    with progress.task(label, len(graph.triples)) as advance:
        for start in range(0, len(graph.triples), batch):
            episode = Episode(
                tenant=tenant,
                messages=[Message(content=f"synthetic benchmark batch {start // batch}")],
                timestamp=now,
                created_at=now,
            )
            plan = WritePlan(tenant=tenant, episode=episode, updated_at=now)
            provenance = [Provenance(episode_id=episode.id, timestamp=now)]
            for i in range(start, min(start + batch, len(graph.triples))):
                src, rel, dst = graph.triples[i]
                for name in (src, dst):
                    if name not in ids:
                        entity = Entity(
                            tenant=tenant,
                            name=name,
                            type=graph.entity_types[name],
                            keys=[normalize_name(name)],
                            embedding=entity_vectors[name].tolist(),
                            created_at=now,
                            updated_at=now,
                        )
                        ids[name] = entity.id
                        plan.new_entities.append(entity)
                plan.new_relations.append(
                    Relation(
                        tenant=tenant,
                        source_id=ids[src],
                        source=src,
                        relation=rel,
                        destination_id=ids[dst],
                        destination=dst,
                        embedding=edge_vectors[i].tolist(),
                        valid_from=graph.valid_from[i],
                        created_at=now,
                        updated_at=now,
                        provenance=provenance,
                    )
                )
            begin = time.perf_counter()
            store.apply(plan)
            spent += time.perf_counter() - begin
            advance(len(plan.new_relations))
    return spent


def graph_vectors(
    graph: SyntheticGraph, source: VectorSource, rng: random.Random, label: str
) -> tuple[dict[str, np.ndarray], list[np.ndarray], dict[str, Any]]:
    """Entity-name vectors and triple vectors for a graph (real, or pooled; see VectorSource)."""
    names = list(graph.entity_types)
    name_vecs, name_info = source.vectors_for(
        names, [(graph.entity_types[n],) for n in names], rng, f"{label} embed names"
    )
    texts = [graph.text(i) for i in range(len(graph.triples))]
    shapes = [(rel, dst) for _, rel, dst in graph.triples]
    edge_vecs, edge_info = source.vectors_for(texts, shapes, rng, f"{label} embed triples")
    return (
        dict(zip(names, name_vecs, strict=True)),
        edge_vecs,
        {
            "names": name_info,
            "triples": edge_info,
        },
    )


def borrowed_vectors(
    graph: SyntheticGraph,
    donor: SyntheticGraph,
    donor_names: dict[str, np.ndarray],
    donor_edges: Sequence[np.ndarray],
    rng: random.Random,
) -> tuple[dict[str, np.ndarray], list[np.ndarray]]:
    """Vectors for another tenant's graph borrowed (perturbed) from the target's, by shape."""
    noise = np.random.default_rng(rng.randrange(2**32))
    by_type: dict[str, list[str]] = {}
    for name, type_ in donor.entity_types.items():
        by_type.setdefault(type_, []).append(name)
    by_rel: dict[str, list[int]] = {}
    for i, (_, rel, _) in enumerate(donor.triples):
        by_rel.setdefault(rel, []).append(i)
    names = {
        n: perturb(donor_names[rng.choice(by_type.get(t) or list(donor_names))], noise)
        for n, t in graph.entity_types.items()
    }
    every = list(range(len(donor.triples)))
    edges = [
        perturb(donor_edges[rng.choice(by_rel.get(rel) or every)], noise)
        for _, rel, _ in graph.triples
    ]
    return names, edges
