"""Benchmark `Memory.search` latency against query-embedding latency, and `add` overhead.

For each size N a fresh store gets one target tenant of N synthetic edges (people, companies,
cities, hobbies, universities), written through `store.apply(WritePlan)` in batches, the real
write path. Then:

* search: Q distinct natural queries through `Memory.search` (embedding included), interleaved
  with embedding the same strings alone through the inner embedder (no cache), so both see the
  same machine load; the target is search p95 <= 2x query-embedding p95 at 10k edges.
* add (on the 10k store): `Memory.add` against the scripted TEST DOUBLE LLM server answering
  instantly; the time the add spent waiting on LLM round trips or the embedding model (the
  union of those spans: the graph and fact paths run concurrently) is subtracted to give
  mem0g's own overhead per add; the target is p95 <= 20 ms.

It is a measurement: the exit code is 0 whether targets pass or not. Ratios taken while the
1-minute load exceeds the CPU count are flagged "busy": the model then slows far more than the
rest, which flatters search. Building 100k edges embeds ~120k texts (minutes to tens of
minutes on 2 cores); `--vector-cache FILE` keeps them for reruns, `--pool-size P` embeds only
P texts per kind and reuses perturbed vectors for the rest (recorded in the JSON notes).

    .venv/bin/python scripts/bench_search.py --sizes 1000,10000,100000 \
        --out bench-results/search.json --vector-cache bench-results/vectors-minilm.npz
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import io
import json
import math
import os
import platform
import pstats
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from mem0g import Memory
from mem0g.config import EmbedderConfig, GraphStoreConfig, MemoryConfig
from mem0g.embed import CachedEmbedder, Embedder, make_embedder
from mem0g.llm.client import LLMClient
from mem0g.llm.protocol import ResolveUpdatesPayload
from mem0g.resolve.names import normalize_name
from mem0g.stores.base import GraphStore
from mem0g.types import Entity, Episode, Message, Provenance, Relation, Tenant, WritePlan
from mem0g.types import triple_text as make_triple_text

TARGET_USER = "bench-user"
SEARCH_TARGET_RATIO = 2.0
# store -> (max search p95 / query-embedding p95, at this many edges): issues #2 and #3
SEARCH_TARGETS = {"embedded": (SEARCH_TARGET_RATIO, 10_000), "neo4j": (4.0, 100_000)}
ADD_TARGET_MS = 20.0
TARGET_EDGES = 10_000
TRICKLE_BATCH = 5  # edges per write in --trickle: about one add's
UTC = timezone.utc
BASE_TIME = datetime(2015, 1, 1, tzinfo=UTC)

# ---------------------------------------------------------------- synthetic vocabulary

CITIES = """Amsterdam Athens Atlanta Auckland Austin Bangalore Bangkok Barcelona Beijing Berlin
Bogota Boston Brisbane Brussels Budapest Buenos_Aires Cairo Calgary Cape_Town Chicago Copenhagen
Dallas Delhi Denver Dubai Dublin Edinburgh Frankfurt Geneva Glasgow Hamburg Helsinki Hong_Kong
Houston Istanbul Jakarta Johannesburg Kyiv Kyoto Lagos Lima Lisbon London Los_Angeles Lyon
Madrid Manchester Manila Marseille Melbourne Mexico_City Miami Milan Montreal Moscow Mumbai
Munich Nairobi Naples New_York Osaka Oslo Ottawa Paris Perth Philadelphia Phoenix Porto Prague
Reykjavik Riga Rome Rotterdam San_Diego San_Francisco Santiago Sao_Paulo Seattle Seoul Seville
Shanghai Singapore Stockholm Sydney Taipei Tallinn Tel_Aviv Tokyo Toronto Turin Vancouver Venice
Vienna Vilnius Warsaw Washington Wellington Zagreb Zurich""".split()
CITIES = [c.replace("_", " ") for c in CITIES]
HOBBIES = """rock climbing|chess|salsa dancing|sourdough baking|birdwatching|trail running|
photography|woodworking|pottery|scuba diving|gardening|knitting|board games|cycling|surfing|
yoga|painting|playing guitar|playing piano|skiing|snowboarding|sailing|fishing|hiking|
kayaking|tennis|badminton|volleyball|basketball|football|cricket|baseball|golf|bouldering|
calligraphy|origami|astronomy|beekeeping|home brewing|cooking Thai food|wine tasting|
stand-up comedy|writing poetry|reading sci-fi|podcasting|video games|crossword puzzles|
marathon running|swimming|fencing|archery|karate|judo|boxing|ice skating|skateboarding|
coin collecting|stamp collecting|model trains|3D printing""".replace("\n", "").split("|")
UNIVERSITIES = [f"University of {c}" for c in CITIES[::3]] + [
    "MIT",
    "Stanford University",
    "ETH Zurich",
    "Imperial College London",
    "Sorbonne University",
    "Tsinghua University",
    "Harvard University",
    "Caltech",
    "Oxford University",
    "TU Delft",
]
COMPANY_HEADS = """Northwind Acme Globex Initech Umbrella Stark Wayne Tyrell Cyberdyne Soylent
Hooli Vandelay Wonka Oscorp Aperture Black_Mesa Blue_Sun Gringotts Monarch Pied_Piper Massive
Dynamic Sterling Nakatomi Virtucon Weyland Zorg Bluth Dunder Kramerica Prestige Vehement
Gekko Duff Oceanic Ajax Primatech Rekall Omni Tessier Ashpool Sirius Ingen Abstergo Lacuna
Polaris Helix Quantum Cobalt Saffron Juniper Meridian Harbor""".split()
COMPANY_HEADS = [c.replace("_", " ") for c in COMPANY_HEADS]
COMPANY_TAILS = """Labs|Analytics|Robotics|Foods|Logistics|Health|Energy|Capital|Studios|Systems|
Motors|Pharma|Insurance|Media|Software|Bank|Airlines|Textiles|Games|Biotech|Consulting|
Security|Telecom|Retail|Ventures""".replace("\n", "").split("|")

# (relation, destination kind) slots every person gets, in order, until N edges exist.
PERSON_SLOTS = [
    ("lives_in", "city"),
    ("works_at", "company"),
    ("enjoys", "hobby"),
    ("friend_of", "person"),
    ("studied_at", "university"),
    ("enjoys", "hobby"),
    ("born_in", "city"),
    ("manages", "person"),
    ("married_to", "person"),
    ("enjoys", "hobby"),
]
ENTITY_TYPES = {
    "person": "person",
    "company": "organization",
    "city": "city",
    "hobby": "activity",
    "university": "organization",
}


@dataclass
class SyntheticGraph:
    """Names, types and triples of one tenant; embedding-free so it is cheap to build."""

    people: list[str]
    companies: list[str]
    cities: list[str]
    hobbies: list[str]
    universities: list[str]
    entity_types: dict[str, str] = field(default_factory=dict)  # name -> type
    triples: list[tuple[str, str, str]] = field(default_factory=list)
    valid_from: list[datetime] = field(default_factory=list)

    def text(self, i: int) -> str:
        return make_triple_text(*self.triples[i])


def company_names(count: int) -> list[str]:
    """Realistic-looking distinct company names ("Northwind Robotics", then "... 2")."""
    names: list[str] = []
    round_ = 1
    while len(names) < count:
        for tail in COMPANY_TAILS:
            for head in COMPANY_HEADS:
                suffix = "" if round_ == 1 else f" {round_}"
                names.append(f"{head} {tail}{suffix}")
                if len(names) == count:
                    return names
        round_ += 1
    return names


def build_graph(edges: int, seed: int, person_prefix: str = "Person") -> SyntheticGraph:
    """Exactly `edges` distinct triples: companies located in cities, then people's facts.

    People get their slots round-robin, so each has ~5 edges; hubs (cities, hobbies) grow with
    N like real ones do, which is what makes entity expansion cost something."""
    rng = random.Random(seed)
    n_people = max(10, edges // 5)
    graph = SyntheticGraph(
        people=[f"{person_prefix}_{i}" for i in range(n_people)],
        companies=company_names(max(10, edges // 40)),
        cities=list(CITIES),
        hobbies=list(HOBBIES),
        universities=list(UNIVERSITIES),
    )
    pools = {
        "person": graph.people,
        "company": graph.companies,
        "city": graph.cities,
        "hobby": graph.hobbies,
        "university": graph.universities,
    }
    seen: set[tuple[str, str, str]] = set()

    def add(src: str, src_kind: str, rel: str, dst: str, dst_kind: str) -> None:
        key = (src, rel, dst)
        if src == dst or key in seen or len(graph.triples) >= edges:
            return
        seen.add(key)
        graph.entity_types.setdefault(src, ENTITY_TYPES[src_kind])
        graph.entity_types.setdefault(dst, ENTITY_TYPES[dst_kind])
        graph.triples.append(key)
        graph.valid_from.append(BASE_TIME + timedelta(days=rng.randrange(3650)))

    for company in graph.companies[: edges // 10]:
        add(company, "company", "located_in", rng.choice(graph.cities), "city")
    slot = 0
    while len(graph.triples) < edges:
        rel, kind = PERSON_SLOTS[slot % len(PERSON_SLOTS)]
        for person in graph.people:
            if len(graph.triples) >= edges:
                break
            add(person, "person", rel, rng.choice(pools[kind]), kind)
        slot += 1
    return graph


# ---------------------------------------------------------------- stores


class BenchStores:
    """Fresh, empty stores of one kind for each size, and whatever server they need.

    embedded: a new directory per size. neo4j: the server named by ``--neo4j-uri`` /
    NEO4J_URI (its database is wiped before each size, so an external server needs
    ``--wipe``), else a throwaway Maven-assembled server (scripts/neo4j via
    mem0g/testing/neo4j.py) in a temporary home on free ports, stopped at the end."""

    def __init__(self, kind: str, args: argparse.Namespace, progress: Progress) -> None:
        if kind not in ("embedded", "neo4j"):
            raise ValueError(f"unknown store {kind!r}; choose embedded or neo4j")
        self.kind = kind
        self.args = args
        self.progress = progress
        self.server: Any = None
        self.pid: int | None = None  # the throwaway server's process: its CPU time is read
        self.info: dict[str, Any] = {"kind": kind}

    def start(self) -> None:
        """Connect to (or start) the server before any model is loaded: fail fast."""
        if self.kind != "neo4j":
            return
        from neo4j import GraphDatabase

        uri = self.args.neo4j_uri or os.environ.get("NEO4J_URI")
        if uri:
            if self.args.server_cpus or self.args.neo4j_setting:
                raise SystemExit(
                    "error: --server-cpus and --neo4j-setting apply to the throwaway server only"
                )
            user = os.environ.get("NEO4J_USERNAME") or "neo4j"
            self.auth = (user, os.environ.get("NEO4J_PASSWORD") or "")
            self.uri = uri
            self.info.update(server="external", uri=uri)
        else:
            from mem0g.testing.neo4j import Neo4jUnavailable, start_maven_server

            os.environ.setdefault("MEM0G_NEO4J_PAGECACHE", self.args.neo4j_pagecache)
            self.progress.line(
                f"starting a throwaway Neo4j (heap {self.args.neo4j_heap}, page cache "
                f"{os.environ['MEM0G_NEO4J_PAGECACHE']}) with scripts/neo4j ..."
            )
            try:
                self.server = start_maven_server(
                    heap=self.args.neo4j_heap,
                    cpus=self.args.server_cpus,
                    settings=self.args.neo4j_setting,
                )
            except Neo4jUnavailable as exc:
                raise SystemExit(f"error: no Neo4j server for the benchmark: {exc}") from exc
            self.uri, self.auth = self.server.uri, (self.server.user, self.server.password)
            self.info.update(
                server="maven (scripts/neo4j, throwaway home)",
                heap=self.args.neo4j_heap,
                pagecache=os.environ["MEM0G_NEO4J_PAGECACHE"],
                cpus=self.args.server_cpus or "all",
                settings=self.args.neo4j_setting,
                java_opts=os.environ.get("MEM0G_NEO4J_JAVA_OPTS", ""),
            )
            self.pid = int((self.server.home / "run" / "neo4j.pid").read_text().split()[0])
            argv = Path(f"/proc/{self.pid}/cmdline").read_bytes().decode().split("\0")
            self.info["neo4j_toggles"] = [a for a in argv if a.startswith("-Dorg.neo4j.")]
        with GraphDatabase.driver(self.uri, auth=self.auth) as driver:
            try:
                driver.verify_connectivity()
                self.info["version"] = driver.get_server_info().agent
            except Exception as exc:
                self.close()
                raise SystemExit(f"error: cannot reach Neo4j at {self.uri}: {exc}") from exc
        self.progress.line(f"Neo4j {self.info['version']} at {self.uri}")

    def open(self, path: Path, dims: int) -> GraphStore:
        if self.kind == "embedded":
            from mem0g.stores.embedded import EmbeddedGraphStore

            return EmbeddedGraphStore(path, dims=dims)
        from mem0g.stores.neo4j import Neo4jGraphStore

        store = Neo4jGraphStore(
            self.uri,
            self.auth,
            database=self.args.neo4j_database,
            dims=dims,
            entity_vectors=self.args.neo4j_entity_vectors,
        )
        held = store.stats()
        if held.entities or held.relations or held.episodes:
            if self.server is None and not self.args.wipe:
                store.close()
                raise SystemExit(
                    f"error: the Neo4j database at {self.uri} is not empty ({held.entities} "
                    f"entities, {held.relations} relations); the benchmark wipes it before each "
                    "size: pass --wipe to allow that, or leave NEO4J_URI unset to use a "
                    "throwaway server"
                )
            begin = time.perf_counter()
            store.reset()
            self.progress.line(f"wiped the Neo4j database in {time.perf_counter() - begin:.1f}s")
        return store

    def server_cpu(self) -> float | None:
        """CPU seconds the throwaway server has used (None: no server process here)."""
        if self.pid is None:
            return None
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def others_cpu(self) -> float | None:
        """CPU seconds used so far by every process on this machine except this one and the
        throwaway server (Linux); None when that cannot be told (an external server on this
        machine would count as "others")."""
        machine = machine_cpu()
        if machine is None or (self.kind == "neo4j" and self.server_cpu() is None):
            return None
        return machine - sum(os.times()[:2]) - (self.server_cpu() or 0.0)

    def settle(self) -> dict[str, Any]:
        """Wait out the server's work left from the build (index merges, flushes): until it
        uses under 5% of a core over 3 s, or a fixed time when it cannot be watched."""
        if self.kind != "neo4j":
            return {"waited_s": 0.0}
        begin = time.perf_counter()
        if self.server_cpu() is None:
            wait = 30.0 if self.args.settle is None else self.args.settle
            self.progress.line(f"waiting {wait:.0f}s for the server to settle ...")
            time.sleep(wait)
            return {"waited_s": wait, "watched": False}
        limit = 600.0 if self.args.settle is None else self.args.settle
        self.progress.line("waiting for the server to go idle after the build ...")
        idle = False
        while time.perf_counter() - begin < limit:
            used = self.server_cpu() or 0.0
            time.sleep(3.0)
            if (self.server_cpu() or 0.0) - used < 0.15:
                idle = True
                break
        waited = round(time.perf_counter() - begin, 1)
        self.progress.line(f"server {'idle' if idle else 'still busy'} after {waited:.0f}s")
        return {"waited_s": waited, "watched": True, "idle": idle}

    def close(self) -> None:
        if self.server is not None:
            server, self.server = self.server, None
            server.stop()


# ---------------------------------------------------------------- timing helpers


class Clock:
    """Accumulates time spent inside wrapped callables (reset between measured operations):
    wall time, and the calling thread's CPU time, which a busy machine inflates far less."""

    def __init__(self) -> None:
        self.total = 0.0
        self.cpu = 0.0
        self.count = 0

    def reset(self) -> None:
        self.total, self.cpu, self.count = 0.0, 0.0, 0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start, start_cpu = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.total += time.perf_counter() - start
                self.cpu += time.thread_time() - start_cpu
                self.count += 1

        return timed


class TimedEmbedder:
    """The real embedder with a clock around it, so model time can be told apart from ours."""

    def __init__(self, inner: Embedder, clock: Clock) -> None:
        self.inner = inner
        self.dims = inner.dims
        self.name = inner.name
        self.embed = clock.wrap(inner.embed)


def summary(seconds: Sequence[float]) -> dict[str, float]:
    """p50/p95/mean/min/max in milliseconds (linear-interpolated percentiles)."""
    ms = np.asarray(seconds, dtype=float) * 1000.0
    if ms.size == 0:
        return {"n": 0}
    return {
        "n": int(ms.size),
        "p50_ms": round(float(np.percentile(ms, 50)), 3),
        "p95_ms": round(float(np.percentile(ms, 95)), 3),
        "mean_ms": round(float(ms.mean()), 3),
        "min_ms": round(float(ms.min()), 3),
        "max_ms": round(float(ms.max()), 3),
    }


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


class Progress:
    """A rich bar on a terminal, otherwise a plain line every ~10% (logs stay readable)."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty()

    @contextlib.contextmanager
    def task(self, label: str, total: int) -> Iterator[Callable[[int], None]]:
        if self.quiet or total <= 0:
            yield lambda _n: None
            return
        if self.tty:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress

            columns = (
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
            )
            with RichProgress(*columns, transient=False) as bar:
                task_id = bar.add_task(label, total=total)
                yield lambda n: bar.advance(task_id, n)
            return
        done = 0
        start = time.perf_counter()
        step = max(1, total // 10)
        next_mark = step

        def advance(n: int) -> None:
            nonlocal done, next_mark
            done += n
            if done >= next_mark or done >= total:
                rate = done / max(time.perf_counter() - start, 1e-9)
                print(f"  {label}: {done}/{total} ({rate:,.0f}/s)", file=sys.stderr, flush=True)
                next_mark = done + step

        yield advance

    def line(self, text: str) -> None:
        if not self.quiet:
            print(text, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- vectors


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
        for text, keys in zip(texts, shapes, strict=True):
            if text in pool:
                out.append(self.cache[text])
                continue
            donors = next(
                (by_shape[keys[:d]] for d in range(len(keys), 0, -1) if keys[:d] in by_shape),
                None,
            ) or sorted(pool)
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


# ---------------------------------------------------------------- building a store


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


# ---------------------------------------------------------------- queries


GENERIC_QUERIES = """who changed jobs|who moved to a new city|which people enjoy outdoor sports|
who works in software|who studied abroad|which companies are in Europe|who likes music|
who is married|who manages a team|which friends live in the same city|who enjoys water sports|
who works at a bank|who was born in Asia|people who like board games and puzzles|
who works in healthcare|which startups do people work at|who does martial arts|
who enjoys cooking|who lives near the sea|who studied engineering|who likes winter sports|
who works in the energy sector|which companies make games|who plays an instrument|
who enjoys art and crafts|who lives in North America|who lives in South America|
who works for an airline|who collects things|who likes running|who works in media|
which people have pets|who studied at a famous university|who works in biotech|
who has friends at work|who likes reading|who enjoys team sports|who lives in Australia|
who works in logistics|who is into fitness""".replace("\n", "").split("|")
GENERIC_TAILS = ["?", " recently?", " these days?", " now?", " at the moment?", " lately?"]


def make_queries(graph: SyntheticGraph, count: int, rng: random.Random) -> list[str]:
    """`count` distinct queries, ~75% naming graph entities, ~25% generic."""
    people, companies = graph.people, graph.companies
    person_t = [
        "who works with {p}?",
        "where does {p} live?",
        "what does {p} do for fun?",
        "who are {p}'s friends?",
        "where did {p} study?",
        "where does {p} work?",
        "what do we know about {p}?",
        "is {p} still working at {c}?",
        "does {p} enjoy {h}?",
        "when did {p} move to {city}?",
        "who manages {p}?",
        "is {p} married?",
        "where was {p} born?",
        "who is {p} friends with in {city}?",
    ]
    other_t = [
        "who works at {c}?",
        "where is {c} based?",
        "which people at {c} live in {city}?",
        "who lives in {city}?",
        "which companies are located in {city}?",
        "who likes {h}?",
        "people in {city} who enjoy {h}",
        "who studied at {u}?",
        "who was born in {city}?",
    ]
    generic = [g + tail for g in GENERIC_QUERIES for tail in GENERIC_TAILS]
    rng.shuffle(generic)
    out: dict[str, None] = {}
    attempts = 0
    while len(out) < count and attempts < count * 50:
        attempts += 1
        roll = rng.random()
        if roll < 0.25 and generic:
            out[generic.pop()] = None
            continue
        template = rng.choice(person_t if roll < 0.6 else other_t)
        text = template.format(
            p=rng.choice(people),
            c=rng.choice(companies),
            city=rng.choice(graph.cities),
            h=rng.choice(graph.hobbies),
            u=rng.choice(graph.universities),
        )
        out[text] = None
    if len(out) < count:
        raise RuntimeError(f"could only make {len(out)} distinct queries")
    return list(out)


# ---------------------------------------------------------------- search benchmark


STAGES = (
    "find_entities",
    "similar_entities",
    "expand",
    "siblings",
    "similar_relations",
    "get_relations",
    "similar_facts",
)


def bench_search(
    memory: Memory,
    inner: Embedder,
    queries: Sequence[str],
    warmup: int,
    progress: Progress,
    label: str,
    server_cpu: Callable[[], float | None] = lambda: None,
    others_cpu: Callable[[], float | None] = lambda: None,
) -> dict[str, Any]:
    """Interleave `Memory.search(q)` with `inner.embed([q])`, alternating which goes first so
    load changes hit both alike; queries are distinct, so the search embeds every one."""
    store = memory.store
    stage_names = [name for name in STAGES if hasattr(store, name)]
    clocks = {name: Clock() for name in (*stage_names, "embed")}
    for name in stage_names:  # instance attributes shadow the methods only for this benchmark
        setattr(store, name, clocks[name].wrap(getattr(store, name)))
    cached = memory.embedder
    cached.inner = TimedEmbedder(inner, clocks["embed"])
    search_s: list[float] = []
    embed_s: list[float] = []
    stages: dict[str, list[float]] = {name: [] for name in clocks}
    returned: list[int] = []
    linked: list[int] = []
    without_embed: list[float] = []
    without_embed_cpu: list[float] = []
    cpu_start: float | None = None
    others_start: float | None = None
    timed_start = time.perf_counter()
    try:
        with progress.task(f"{label} search", len(queries)) as advance:
            for i, query in enumerate(queries):
                for clock in clocks.values():
                    clock.reset()
                order = (0, 1) if i % 2 == 0 else (1, 0)
                for which in order:
                    start = time.perf_counter()
                    if which == 0:
                        start_cpu = time.thread_time()
                        result = memory.search(query, user_id=TARGET_USER, limit=10)
                        took = time.perf_counter() - start
                        took_cpu = time.thread_time() - start_cpu
                    else:
                        inner.embed([query])
                        took = time.perf_counter() - start
                    if i < warmup:
                        continue
                    (search_s if which == 0 else embed_s).append(took)
                if i == warmup - 1 or (i == 0 and warmup == 0):
                    cpu_start = server_cpu()
                    others_start = others_cpu()
                    timed_start = time.perf_counter()
                if i >= warmup:
                    without_embed.append(search_s[-1] - clocks["embed"].total)
                    without_embed_cpu.append(took_cpu - clocks["embed"].cpu)
                    returned.append(len(result.relations))
                    linked.append(len(result.entities))
                    for name, clock in clocks.items():
                        stages[name].append(clock.total)
                advance(1)
    finally:
        for name in stage_names:
            delattr(store, name)
        cached.inner = inner
    cpu_end = server_cpu()
    others_end = others_cpu()
    timed_s = time.perf_counter() - timed_start
    others = None
    if others_start is not None and others_end is not None and timed_s > 0:
        others = round((others_end - others_start) / timed_s, 3)
    search = summary(search_s)
    embed = summary(embed_s)
    server_ms = None
    if cpu_start is not None and cpu_end is not None and search_s:
        server_ms = round(1000 * (cpu_end - cpu_start) / len(search_s), 2)
    return {
        "search": search,
        "server_cpu_per_search_ms": server_ms,
        "other_processes_cores": others,
        "query_embed": embed,
        "ratio_p95": round(search["p95_ms"] / embed["p95_ms"], 3),
        "ratio_p50": round(search["p50_ms"] / embed["p50_ms"], 3),
        "search_excluding_embed": summary(without_embed),
        "search_excluding_embed_cpu": summary(without_embed_cpu),
        "stages_in_search": {name: summary(values) for name, values in stages.items()},
        "avg_relations_returned": round(float(np.mean(returned)), 2),
        "avg_entities_linked": round(float(np.mean(linked)), 2),
    }


WARM_BLOCK = 100  # warm-up searches per reported block


def warm_queries(graph: SyntheticGraph, count: int, timed: Sequence[str], seed: int) -> list[str]:
    """`count` queries for warming the server, none of them a timed query's text."""
    if count <= 0:
        return []
    taken = set(timed)
    pool = make_queries(graph, count + len(taken), random.Random(seed))
    fresh = [q for q in pool if q not in taken]
    return (fresh * (count // max(len(fresh), 1) + 1))[:count]


def warm_server(
    memory: Memory,
    queries: Sequence[str],
    progress: Progress,
    label: str,
    server_cpu: Callable[[], float | None],
) -> dict[str, Any]:
    """Untimed searches on other query texts. A JVM server compiles its read paths only after
    hundreds of searches: on the 100k-edge store, measured here, the server's CPU per search
    fell from 94 to 21 ms over the first 400-800 searches after a restart; a long-running
    server is warm. Each block of `WARM_BLOCK` searches is reported, so the curve is seen."""
    blocks: list[dict[str, Any]] = []
    begin = time.perf_counter()
    with progress.task(f"{label} warm-up", len(queries)) as advance:
        for start in range(0, len(queries), WARM_BLOCK):
            chunk = queries[start : start + WARM_BLOCK]
            before = server_cpu()
            walls = []
            for query in chunk:
                t = time.perf_counter()
                memory.search(query, user_id=TARGET_USER, limit=10)
                walls.append(time.perf_counter() - t)
                advance(1)
            after = server_cpu()
            cpu_ms = None
            if before is not None and after is not None:
                cpu_ms = round(1000 * (after - before) / len(chunk), 2)
            blocks.append(
                {"searches": len(chunk), "wall": summary(walls), "server_cpu_per_search_ms": cpu_ms}
            )
    took = time.perf_counter() - begin
    cpu = [b["server_cpu_per_search_ms"] for b in blocks if b["server_cpu_per_search_ms"]]
    curve = f"; server CPU per search {cpu[0]:.1f} -> {cpu[-1]:.1f} ms" if cpu else ""
    progress.line(
        f"{label}: {len(queries)} warm-up searches in {took:.0f}s (blocks of {WARM_BLOCK}){curve}"
    )
    return {"searches": len(queries), "s": round(took, 1), "blocks": blocks}


def later_phases(
    args: argparse.Namespace,
    stores: BenchStores,
    memory: Memory,
    inner: Embedder,
    queries: Sequence[str],
    built: tuple[SyntheticGraph, dict[str, np.ndarray], list[np.ndarray], dict[str, str]],
    rng: random.Random,
    progress: Progress,
    label: str,
) -> list[dict[str, Any]]:
    """The same queries on a warm server (`--server-warmup`), after `--reindex`, then after
    `--trickle` more edges in small writes (new people linked to the graph's existing
    companies, cities, ...). Each of these phases first runs the warm-up searches, if any."""
    phases: list[dict[str, Any]] = []
    graph, names, edges, ids = built
    warm = warm_queries(graph, args.server_warmup, queries, args.seed + 5)

    def measure(phase: dict[str, Any]) -> None:
        phase["settle"] = stores.settle()
        if warm:
            phase["server_warmup"] = warm_server(
                memory, warm, progress, f"{label} {phase['phase']}", stores.server_cpu
            )
        memory.embedder.clear()  # the same query texts: each search embeds again
        phase["load_avg_before"] = load_average()
        name = f"{label} {phase['phase']}"
        phase.update(
            bench_search(
                memory,
                inner,
                queries,
                args.warmup,
                progress,
                name,
                stores.server_cpu,
                stores.others_cpu,
            )
        )
        phase["load_avg_during"] = load_average()
        phase["busy"] = busy(
            phase["load_avg_before"],
            phase["load_avg_during"],
            others=phase["other_processes_cores"],
        )
        progress.line(
            f"{name}: search p95 {phase['search']['p95_ms']:.1f} ms, embed p95 "
            f"{phase['query_embed']['p95_ms']:.1f} ms, ratio {phase['ratio_p95']:.2f}"
        )
        phases.append(phase)

    if warm:
        measure({"phase": "warm"})
    if args.reindex:
        begin = time.perf_counter()
        done = memory.rebuild_indexes()
        took = time.perf_counter() - begin
        progress.line(f"{label}: vector indexes rebuilt in {took:.1f}s")
        measure(
            {
                "phase": "after reindex",
                "reindex_s": round(took, 2),
                "reindex": [d.model_dump() for d in done],
            }
        )
    if args.trickle > 0:
        late = build_graph(args.trickle, args.seed + 99, person_prefix="Later")
        late_names, late_edges = borrowed_vectors(late, graph, names, edges, rng)
        write_s = write_graph(
            memory.store,
            Tenant(user_id=TARGET_USER),
            late,
            late_names,
            late_edges,
            TRICKLE_BATCH,
            progress,
            f"{label} trickle",
            ids,
        )
        writes = math.ceil(args.trickle / TRICKLE_BATCH)
        measure(
            {
                "phase": f"+{args.trickle:,} edges in writes of {TRICKLE_BATCH}"
                + (" after reindex" if args.reindex else ""),
                "trickle_edges": args.trickle,
                "trickle_write_s": round(write_s, 2),
                "trickle_writes_per_s": round(writes / write_s, 1),
            }
        )
    return phases


def search_all(memory: Memory, queries: Sequence[str]) -> None:
    for query in queries:
        memory.search(query, user_id=TARGET_USER, limit=10)


def profiled(work: Callable[[], None], runs: int, path: Path) -> list[dict[str, Any]]:
    """cProfile `work` (a separate batch, so the timings above stay unprofiled); the full
    stats go to `path`, the 15 functions with the most own time are returned."""
    profiler = cProfile.Profile()
    profiler.enable()
    work()
    profiler.disable()
    buffer = io.StringIO()
    stats = pstats.Stats(profiler, stream=buffer)
    stats.sort_stats("cumulative").print_stats(40)
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(r"mem0g[/\\]", 40)  # the library's own share
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(buffer.getvalue(), encoding="utf-8")
    raw: dict[tuple[str, int, str], tuple] = stats.stats  # type: ignore[attr-defined]
    ranked = sorted(raw.items(), key=lambda item: -item[1][2])[:15]
    return [
        {
            "function": f"{Path(file).name}:{line}({func})",
            "calls": calls,
            "tottime_ms_per_run": round(tottime * 1000 / runs, 3),
            "cumtime_ms_per_run": round(cumtime * 1000 / runs, 3),
        }
        for (file, line, func), (_, calls, tottime, cumtime, _) in ranked
    ]


# ---------------------------------------------------------------- add benchmark


@dataclass
class ScriptedTurn:
    text: str
    entities: list[tuple[str, str]]
    relations: list[tuple[str, str, str]]


def make_turns(graph: SyntheticGraph, count: int, rng: random.Random) -> list[ScriptedTurn]:
    """Distinct messages: 70% new facts about existing people (existing edges touch them, so
    `resolve_updates` is asked), 20% a new person at existing places, 10% all-new entities."""
    turns: list[ScriptedTurn] = []
    fresh = len(graph.people) + 100_000
    for i in range(count):
        city, company, hobby = (
            rng.choice(graph.cities),
            rng.choice(graph.companies),
            rng.choice(graph.hobbies),
        )
        if i % 10 == 0:
            a, b, place = f"Person_{fresh + 2 * i}", f"Person_{fresh + 2 * i + 1}", f"Town_{i}"
            turns.append(
                ScriptedTurn(
                    f"{a} and {b} have been friends since they met in {place} (note {i}).",
                    [(a, "person"), (b, "person"), (place, "city")],
                    [(a, "friend_of", b), (a, "lives_in", place)],
                )
            )
        elif i % 10 in (1, 2):
            new = f"Person_{fresh + 2 * i}"
            turns.append(
                ScriptedTurn(
                    f"My new colleague {new} just joined {company} and is really into {hobby} "
                    f"(note {i}).",
                    [(new, "person"), (company, "organization"), (hobby, "activity")],
                    [(new, "works_at", company), (new, "enjoys", hobby)],
                )
            )
        else:
            person = rng.choice(graph.people)
            turns.append(
                ScriptedTurn(
                    f"{person} started a new job at {company} and moved to {city} (note {i}).",
                    [(person, "person"), (company, "organization"), (city, "city")],
                    [(person, "works_at", company), (person, "lives_in", city)],
                )
            )
    return turns


def scripted_rules(turns: Sequence[ScriptedTurn]) -> list[dict[str, Any]]:
    """Callable rules: the TEST DOUBLE answers each task instantly from the turn's script."""
    by_text = {t.text: t for t in turns}

    def turn_of(payload: dict[str, Any]) -> ScriptedTurn | None:
        messages = payload.get("messages") or [{}]
        return by_text.get(messages[-1].get("content", ""))

    def entities(payload: dict[str, Any]) -> dict[str, Any]:
        turn = turn_of(payload)
        found = turn.entities if turn else []
        return {"entities": [{"name": n, "type": t} for n, t in found]}

    def relations(payload: dict[str, Any]) -> dict[str, Any]:
        turn = turn_of(payload)
        found = turn.relations if turn else []
        return {
            "relations": [
                {"source": s, "relation": r, "destination": d, "valid_from": None}
                for s, r, d in found
            ]
        }

    def facts(payload: dict[str, Any]) -> dict[str, Any]:
        turn = turn_of(payload)
        found = turn.relations if turn else []
        return {"facts": [make_triple_text(s, r, d) for s, r, d in found]}

    summary_text = "The user talks about colleagues, their jobs, homes and hobbies."
    return [
        {"task": "extract_entities", "response": entities},
        {"task": "establish_relations", "response": relations},
        {"task": "resolve_updates", "response": {"operations": []}},
        {"task": "extract_facts", "response": facts},
        {"task": "update_memory", "response": {"operations": []}},
        {"task": "summarize", "response": {"summary": summary_text}},
    ]


def inline_submit(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
    """An executor's `submit` that runs the call now, in the calling thread (for profiling)."""
    future: Future[Any] = Future()
    try:
        future.set_result(fn(*args, **kwargs))
    except BaseException as exc:
        future.set_exception(exc)
    return future


class Spans:
    """Time spans spent inside wrapped callables, from any thread. The graph and fact paths of
    an add run concurrently, so their waits overlap: the union of the spans, not their sum, is
    the time the add spent waiting on the LLM or the model."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.spans: list[tuple[float, float, str]] = []
        self.cpu = 0.0  # CPU time of the calling threads inside the spans

    def reset(self) -> None:
        with self._lock:
            self.spans, self.cpu = [], 0.0

    def wrap(
        self, kind: str, fn: Callable[..., Any], skip: Callable[..., bool] | None = None
    ) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if skip is not None and skip(*args, **kwargs):
                return fn(*args, **kwargs)
            start, start_cpu = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                end, used = time.perf_counter(), time.thread_time() - start_cpu
                with self._lock:
                    self.spans.append((start, end, kind))
                    self.cpu += used

        return timed

    def union(self, begin: float, end: float, kinds: Sequence[str]) -> float:
        """Seconds of [begin, end] covered by at least one span of these kinds."""
        with self._lock:
            cut = sorted((max(a, begin), min(b, end)) for a, b, k in self.spans if k in kinds)
        covered, reach = 0.0, begin
        for a, b in cut:
            if b > reach:
                covered += b - max(a, reach)
                reach = b
        return covered


def bench_add(
    store: GraphStore,
    inner: Embedder,
    graph: SyntheticGraph,
    adds: int,
    warmup: int,
    rng: random.Random,
    progress: Progress,
    memory_section: dict[str, Any],
    profile_path: Path | None = None,
) -> dict[str, Any]:
    """Per-add wall time minus the time the add was waiting on an LLM round trip
    (`LLMClient._complete`: SDK + HTTP + the scripted server) or the embedding model =
    mem0g's own overhead on the critical path. Background `summarize` calls are not
    subtracted (the add never waits for them)."""
    from mem0g.testing import ScriptedLLMServer

    extra = 20 if profile_path is not None else 0
    turns = make_turns(graph, adds + warmup + extra, rng)
    timed_turns, extra_turns = turns[: adds + warmup], turns[adds + warmup :]
    spans = Spans()
    path_cpu = [0.0]
    path_lock = threading.Lock()
    with ScriptedLLMServer(scripted_rules(turns)) as server:
        config = MemoryConfig.load(
            {
                "llm": {"base_url": server.base_url, "api_key": "bench", "max_retries": 0},
                "memory": memory_section,
            }
        )
        llm = LLMClient(config.llm)
        in_background = lambda task, *_a, **_k: task == "summarize"  # noqa: E731
        llm._complete = spans.wrap("llm", llm._complete, in_background)  # type: ignore[method-assign]
        embedder = CachedEmbedder(TimedEmbedder(inner, Clock()))
        embedder.inner.embed = spans.wrap("model", embedder.inner.embed)
        memory = Memory(config, llm=llm, embedder=embedder, store=store)
        pool = getattr(memory, "_paths", None)  # the graph/fact path threads, if any
        if pool is not None:
            submit = pool.submit

            def counted_submit(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
                def run(*a: Any, **k: Any) -> Any:
                    start_cpu = time.thread_time()
                    try:
                        return fn(*a, **k)
                    finally:
                        with path_lock:
                            path_cpu[0] += time.thread_time() - start_cpu

                return submit(run, *args, **kwargs)

            pool.submit = counted_submit

        empty = ResolveUpdatesPayload(reference_time=BASE_TIME.isoformat(), new=[], existing=[])
        rtt_empty: list[float] = []
        for i in range(30 + 5):
            start = time.perf_counter()
            llm.call("resolve_updates", empty)
            if i >= 5:
                rtt_empty.append(time.perf_counter() - start)

        wall, overhead, overhead_cpu, in_llm, in_model, in_either = [], [], [], [], [], []
        n_calls: list[int] = []
        by_task: dict[str, int] = {}
        events: dict[str, int] = {}
        with progress.task("add", len(timed_turns)) as advance:
            for i, turn in enumerate(timed_turns):
                spans.reset()
                path_cpu[0] = 0.0
                when = BASE_TIME + timedelta(days=4000, minutes=i)
                start, start_cpu = time.perf_counter(), time.thread_time()
                result = memory.add(turn.text, user_id=TARGET_USER, timestamp=when)
                end = time.perf_counter()
                took_cpu = time.thread_time() - start_cpu + path_cpu[0]
                advance(1)
                if i < warmup:
                    continue
                waiting = spans.union(start, end, ("llm", "model"))
                wall.append(end - start)
                in_llm.append(spans.union(start, end, ("llm",)))
                in_model.append(spans.union(start, end, ("model",)))
                in_either.append(waiting)
                overhead.append(end - start - waiting)
                overhead_cpu.append(took_cpu - spans.cpu)
                n_calls.append(result.usage.calls)
                for task, count in result.usage.by_task.items():
                    by_task[task] = by_task.get(task, 0) + count
                for change in result.relations:
                    events[change.event.value] = events.get(change.event.value, 0) + 1
        profile = None
        if profile_path is not None:

            def work() -> None:
                for i, turn in enumerate(extra_turns):
                    when = BASE_TIME + timedelta(days=4100, minutes=i)
                    memory.add(turn.text, user_id=TARGET_USER, timestamp=when)

            if pool is not None:  # cProfile sees one thread: run the paths inline meanwhile
                pool.submit = inline_submit
            profile = {
                "file": str(profile_path),
                "top_tottime": profiled(work, extra, profile_path),
            }
        if pool is not None:
            pool.shutdown(wait=True)
        summaries_worker = getattr(memory, "summaries", None)
        if summaries_worker is not None:
            summaries_worker.close()  # let a refresh in flight finish before the store closes
        unmatched = len(server.unmatched)
        summaries = server.calls("summarize")
    return {
        "edges_before": len(graph.triples),
        "memory_paths": memory_section,
        "raw": summary(wall),
        "throughput_adds_per_s": round(len(wall) / sum(wall), 2),
        "overhead": summary(overhead),
        "overhead_cpu": summary(overhead_cpu),
        "llm_roundtrip": summary(in_llm),
        "embedding_model": summary(in_model),
        "llm_or_model": summary(in_either),
        "empty_call_roundtrip": summary(rtt_empty),
        "llm_calls_per_add": {
            "mean": round(float(np.mean(n_calls)), 3),
            "min": int(min(n_calls)),
            "max": int(max(n_calls)),
            "by_task": {t: round(c / len(n_calls), 3) for t, c in sorted(by_task.items())},
        },
        "background_summarize_calls": summaries,
        "events": events,
        "unmatched_llm_requests": unmatched,
        **({"profile": profile} if profile else {}),
    }


# ---------------------------------------------------------------- report


OTHERS_BUSY = 0.25  # cores used by other processes that make a measurement "busy"


def machine_cpu() -> float | None:
    """CPU seconds all processes have used since boot (/proc/stat; None elsewhere)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq = (int(f) for f in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def busy(*loads: Sequence[float], others: float | None = None) -> bool:
    """Other processes competing for the cores: they stretch the model's time far more than
    the numpy/Python path (torch's threads wait for cores), so ratios flatter search. Judged by
    the cores other processes used while it ran (`others`, measured), else by the load
    average (which counts this benchmark and its server too)."""
    if others is not None:
        return others > OTHERS_BUSY
    cpus = os.cpu_count() or 1
    return any(load and load[0] > cpus for load in loads)


def targets(
    store: str, sizes: list[dict[str, Any]], add: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The issues' targets: embedded (#2) search and add at 10k edges; Neo4j (#3) search at
    100k edges (its add throughput is reported, without a target)."""
    ratio_limit, at_edges = SEARCH_TARGETS[store]
    at = next((s for s in sizes if s["edges"] == at_edges), None)
    name = f"search_p95 <= {ratio_limit:g}x query_embed_p95 at {at_edges // 1000}k edges"
    measured = (
        [("", at)]
        if at is None
        else [("", at)] + [(f" ({p['phase']})", p) for p in at.get("phases", [])]
    )
    out = [
        {
            "name": name + suffix,
            "value": None if run is None else run["ratio_p95"],
            "threshold": ratio_limit,
            "pass": None if run is None else run["ratio_p95"] <= ratio_limit,
            "busy_machine": bool(run and run["busy"]),
        }
        for suffix, run in measured
    ]
    if store == "embedded":
        add_at = add if add and add["edges_before"] == TARGET_EDGES else None
        over = add_at["overhead"]["p95_ms"] if add_at else None
        out.append(
            {
                "name": "add overhead p95 <= 20 ms at 10k edges",
                "value": over,
                "threshold": ADD_TARGET_MS,
                "pass": None if over is None else over <= ADD_TARGET_MS,
                "busy_machine": bool(add_at and add_at["busy"]),
            }
        )
    return out


def _step_s(phase: dict[str, Any]) -> float:
    """What a phase did before its searches: the reindex, or the trickle writes."""
    return float(phase.get("reindex_s") or phase.get("trickle_write_s") or 0.0)


def print_report(report: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console() if sys.stdout.isatty() else Console(width=160)  # logs: don't wrap
    table = Table(
        title=f"mem0g search benchmark ({report['embedder']['name']}, store={report['store']})"
    )
    for col in (
        "edges",
        "search p50",
        "search p95",
        "embed p50",
        "embed p95",
        "p95 ratio",
        "search-embed p95",
        "server cpu",
        "build/step s",
        "load avg",
    ):
        table.add_column(col, justify="right")
    rows = [(f"{s['edges']:,}", s) for s in report["sizes"]]
    rows += [
        (f"{s['edges']:,} {p['phase']}", {**p, "build": {"total_s": _step_s(p)}})
        for s in report["sizes"]
        for p in s.get("phases", [])
    ]
    for edges, s in rows:
        table.add_row(
            edges,
            f"{s['search']['p50_ms']:.1f} ms",
            f"{s['search']['p95_ms']:.1f} ms",
            f"{s['query_embed']['p50_ms']:.1f} ms",
            f"{s['query_embed']['p95_ms']:.1f} ms",
            f"{s['ratio_p95']:.2f}x",
            f"{s['search_excluding_embed']['p95_ms']:.1f} ms",
            "n/a"
            if s.get("server_cpu_per_search_ms") is None
            else f"{s['server_cpu_per_search_ms']:.1f} ms",
            f"{s['build']['total_s']:.0f}",
            f"{s['load_avg_during'][0]:.2f}" if s["load_avg_during"] else "n/a",
        )
    console.print(table)
    stage_table = Table(title="time inside search, mean ms per query")
    stage_table.add_column("edges", justify="right")
    shown = [n for n in (*STAGES, "embed") if n in report["sizes"][0]["stages_in_search"]]
    for name in shown:
        stage_table.add_column(name, justify="right")
    for s in report["sizes"]:
        st = s["stages_in_search"]
        stage_table.add_row(f"{s['edges']:,}", *(f"{st[n]['mean_ms']:.2f}" for n in shown))
    console.print(stage_table)
    add = report.get("add")
    if add:
        t = Table(
            title=f"add on the {add['edges_before']:,}-edge store "
            f"({add['raw']['n']} adds, {add['throughput_adds_per_s']:.1f} adds/s sequential, "
            f"{add['llm_calls_per_add']['mean']:.2f} LLM calls/add)"
        )
        for col in ("", "p50", "p95", "mean"):
            t.add_column(col, justify="right")
        rows = (
            "raw",
            "llm_roundtrip",
            "embedding_model",
            "llm_or_model",
            "overhead",
            "overhead_cpu",
            "empty_call_roundtrip",
        )
        for key in rows:
            v = add[key]
            t.add_row(
                key, f"{v['p50_ms']:.1f} ms", f"{v['p95_ms']:.1f} ms", f"{v['mean_ms']:.1f} ms"
            )
        console.print(t)
    for target in report["targets"]:
        verdict = {True: "[green]PASS[/]", False: "[red]FAIL[/]", None: "[yellow]SKIP[/]"}[
            target["pass"]
        ]
        value = "n/a" if target["value"] is None else f"{target['value']:.2f}"
        caveat = ""
        if target["busy_machine"] and target["pass"] is not None:
            caveat = " [yellow](busy machine: other processes ran meanwhile; not conclusive)[/]"
        console.print(
            f"{verdict}  {target['name']}: {value} (target {target['threshold']}){caveat}"
        )


# ---------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1000,10000", help="comma-separated edge counts")
    p.add_argument("--out", type=Path, default=Path("bench-results/search.json"))
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--warmup", type=int, default=10, help="untimed queries (and adds) first")
    p.add_argument("--adds", type=int, default=100)
    p.add_argument(
        "--add-size",
        type=int,
        default=TARGET_EDGES,
        help="store size for the add benchmark (nearest size run if absent)",
    )
    p.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    p.add_argument(
        "--paths",
        choices=("both", "graph"),
        default="both",
        help="add/search paths: graph + facts (the library default) or the graph alone",
    )
    p.add_argument("--store", choices=("embedded", "neo4j"), default="embedded")
    p.add_argument(
        "--neo4j-uri",
        default=None,
        help="an existing Neo4j server (default: NEO4J_URI; NEO4J_USERNAME/NEO4J_PASSWORD for "
        "credentials); unset = start a throwaway one with scripts/neo4j",
    )
    p.add_argument("--neo4j-database", default=None, help="database name (default: server's)")
    p.add_argument(
        "--wipe",
        action="store_true",
        help="allow wiping a non-empty external Neo4j database before each size",
    )
    p.add_argument(
        "--server-cpus",
        default=None,
        metavar="LIST",
        help="run the throwaway Neo4j on these CPUs only (e.g. 1): with --client-cpus, the "
        "server gets cores of its own, as on a separate machine",
    )
    p.add_argument(
        "--client-cpus",
        default=None,
        metavar="LIST",
        help="run this benchmark (client, model) on these CPUs only (e.g. 0; Linux)",
    )
    p.add_argument(
        "--settle",
        type=float,
        default=None,
        metavar="S",
        help="after building each store, wait until the server is idle (throwaway server: its "
        "CPU time is watched, up to S seconds, default 600) or S seconds (an external server, "
        "default 30): a bulk load leaves index merges running that would be timed as search",
    )
    p.add_argument(
        "--neo4j-setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a neo4j.conf setting for the throwaway server (repeatable)",
    )
    p.add_argument("--neo4j-heap", default="2g", help="heap of the throwaway server")
    p.add_argument(
        "--neo4j-entity-vectors",
        type=int,
        default=GraphStoreConfig().entity_vectors,
        metavar="N",
        help="entity name vectors the store holds for exact resolution (0: the index only)",
    )
    p.add_argument("--neo4j-pagecache", default="1g", help="page cache of the throwaway server")
    p.add_argument(
        "--other-tenants",
        type=int,
        default=0,
        metavar="M",
        help="extra edges spread over 10 other tenants (vectors borrowed)",
    )
    p.add_argument(
        "--pool-size",
        type=int,
        default=0,
        help="embed at most this many distinct texts per kind (names, triples) per "
        "size and reuse perturbed vectors for the rest; 0 = embed everything",
    )
    p.add_argument("--write-batch", type=int, default=1000, help="edges per WritePlan")
    p.add_argument(
        "--reindex",
        action="store_true",
        help="after the search run on each built store, rebuild its vector indexes "
        "(Memory.rebuild_indexes, `mem0g reindex`) and run the same queries again",
    )
    p.add_argument(
        "--trickle",
        type=int,
        default=0,
        metavar="N",
        help="then write N more edges to the tenant in writes of 5 (an add's size), as a "
        "live memory grows after a reindex, and run the same queries again",
    )
    p.add_argument(
        "--server-warmup",
        type=int,
        default=0,
        metavar="N",
        help="then run N untimed searches on other query texts and the same queries again "
        "(phase 'warm'); later phases are also preceded by them: a JVM server compiles its "
        "read paths only after hundreds of searches, and a long-running server is warm",
    )
    p.add_argument("--embed-batch", type=int, default=256)
    p.add_argument(
        "--vector-cache",
        type=Path,
        default=None,
        help="an .npz of text embeddings reused across runs (same embedder only); reruns then "
        "skip the slow build-time embedding",
    )
    p.add_argument(
        "--profile-dir",
        type=Path,
        default=None,
        help="also cProfile 50 extra queries per size and write the stats here",
    )
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--quiet", action="store_true")
    return p.parse_args(argv)


def parse_cpus(text: str) -> set[int]:
    """'0', '0-1', '0,2' -> a CPU set this process may use (else a clear error)."""
    cpus: set[int] = set()
    try:
        for part in text.split(","):
            first, dash, last = part.strip().partition("-")
            cpus.update(range(int(first), int(last if dash else first) + 1))
    except ValueError:
        raise SystemExit(f"error: not a CPU list: {text!r} (e.g. 0, 0-1, 0,2)") from None
    if not hasattr(os, "sched_getaffinity"):
        raise SystemExit("error: --client-cpus needs Linux (os.sched_setaffinity)")
    have = os.sched_getaffinity(0)
    if not cpus or not cpus <= have:
        raise SystemExit(f"error: CPUs {text!r} are not all available here (have {sorted(have)})")
    return cpus


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "numpy": np.__version__,
    }
    if hasattr(os, "sched_getaffinity"):
        info["usable_cpus"] = len(os.sched_getaffinity(0))
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
    return info


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    args.command = " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])])
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    if not sizes or min(sizes) < 10:
        raise SystemExit("--sizes needs edge counts >= 10")
    client_cpus = parse_cpus(args.client_cpus) if args.client_cpus else None
    progress = Progress(args.quiet)
    started = datetime.now(UTC)
    load_start = load_average()
    stores = BenchStores(args.store, args, progress)
    stores.start()  # fail fast on an unavailable server, before loading a model
    try:
        if client_cpus:  # after the server started (it may use other CPUs), before the model
            os.sched_setaffinity(0, client_cpus)
        return run(args, stores, progress, started, load_start)
    finally:
        stores.close()


def run(
    args: argparse.Namespace,
    stores: BenchStores,
    progress: Progress,
    started: datetime,
    load_start: list[float],
) -> int:
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    provider = "sentence-transformers" if args.embedder == "minilm" else "hashing"
    t0 = time.perf_counter()
    cached = make_embedder(EmbedderConfig(provider=provider))
    inner = cached.inner
    progress.line(
        f"embedder {inner.name} ({inner.dims} dims) ready in "
        f"{time.perf_counter() - t0:.1f}s; load avg {load_start}"
    )
    source = VectorSource(inner, args.pool_size, args.embed_batch, progress)
    if args.vector_cache is not None:
        loaded = source.load(args.vector_cache)
        progress.line(f"vector cache {args.vector_cache}: {loaded} vectors loaded")
    add_size = min(sizes, key=lambda n: (abs(n - args.add_size), n))
    memory_section = {"graph": True, "facts": args.paths == "both"}
    rng = random.Random(args.seed)
    results: list[dict[str, Any]] = []
    add_result: dict[str, Any] | None = None
    notes: list[str] = [
        "search and query-embedding timings are interleaved per query (alternating order); "
        "query texts are distinct, so Memory.search embeds each one (no cache hit)",
        "query_embed = embedder.inner.embed([q]) on the same strings, bypassing the cache",
        "add overhead = add wall time - the part of it spent waiting on an LLM round trip "
        "(LLMClient._complete: openai SDK + HTTP + the scripted TEST DOUBLE server, an "
        "in-process thread) or on the embedding model; the graph and fact paths run "
        "concurrently, so the union of those spans is subtracted, not their sum; background "
        "summarize calls are not subtracted",
        "overhead_cpu = CPU time of the calling thread and the path threads during the add "
        "minus their CPU time inside those spans: mem0g's own CPU work per add, load-robust; it "
        "can exceed the wall overhead, because one path's work overlaps the other path's LLM "
        "wait (and it leaves out fsync waits and descheduling)",
        "profiles (--profile-dir) run on extra queries/adds after the timed ones; the add "
        "profile runs the graph and fact paths inline (cProfile sees one thread)",
        "the synthetic store holds graph edges only (no facts), so the fact search in "
        "Memory.search scans nothing; the add benchmark's facts are the ones its adds create",
        "search_excluding_embed = search wall time - time in the embedding model inside it "
        "(retrieval + store work only); _cpu: the same on the calling thread's CPU time",
        "neo4j: after each build the benchmark waits for the server to go idle (build.settle): "
        "a bulk load leaves Lucene index merges and flushes running, which would otherwise be "
        "timed as search; server_cpu_per_search_ms = the throwaway server's CPU time (all its "
        "threads, /proc) over the timed queries / their count (null for an external server)",
        "busy: other processes used more than 0.25 of a core during the timed searches "
        "(other_processes_cores = all CPU time on the machine, /proc/stat, minus this process's "
        "and the throwaway server's, over the wall time); without that figure (an external "
        "server, not Linux): load average above the CPU count",
        "phases: the first row of a size is measured right after its build (for a Neo4j server "
        "started for the run: its read paths not yet JIT-compiled); with --server-warmup N, "
        "the 'warm' phase runs the same queries after N untimed searches on other query texts, "
        "and every later phase is preceded by N such searches too (server_warmup: CPU per "
        "search in blocks of 100, the warm-up curve)",
    ]

    def write_report(complete: bool) -> dict[str, Any]:
        """Written after every size too, so a long run that dies still leaves its numbers."""
        report: dict[str, Any] = {
            "benchmark": "mem0g search/add latency",
            "date": started.isoformat(timespec="seconds"),
            "duration_s": round((datetime.now(UTC) - started).total_seconds(), 1),
            "command": args.command,
            "machine": {
                **machine_info(),
                "load_avg_start": load_start,
                "load_avg_end": load_average(),
            },
            "embedder": {
                "kind": args.embedder,
                "name": inner.name,
                "dims": inner.dims,
                "provider": provider,
            },
            "store": args.store,
            "store_info": stores.info,
            "config": {
                "queries": args.queries,
                "warmup": args.warmup,
                "adds": args.adds,
                "seed": args.seed,
                "pool_size": args.pool_size,
                "vector_cache": None if args.vector_cache is None else str(args.vector_cache),
                "memory": memory_section,
                "other_tenants": args.other_tenants,
                "client_cpus": sorted(os.sched_getaffinity(0))
                if hasattr(os, "sched_getaffinity")
                else None,
                "server_cpus": args.server_cpus,
                "settle": args.settle,
                "server_warmup": args.server_warmup,
                "neo4j_entity_vectors": (
                    args.neo4j_entity_vectors if args.store == "neo4j" else None
                ),
                "write_batch": args.write_batch,
                "search_limit": 10,
                "retrieval": MemoryConfig().retrieval.model_dump(),
            },
            "sizes": results,
            "add": add_result,
            "notes": notes,
        }
        report["targets"] = targets(args.store, results, add_result)
        report["complete"] = complete
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")
        return report

    for n in sizes:
        label = f"{n:,} edges"
        size_rng = random.Random(rng.randrange(2**32))
        load_before = load_average()
        begin = time.perf_counter()
        graph = build_graph(n, args.seed)
        with tempfile.TemporaryDirectory(prefix=f"mem0g-bench-{n}-") as tmp:
            store = stores.open(Path(tmp) / "graph", inner.dims)
            names, edges, vec_info = graph_vectors(graph, source, size_rng, label)
            if vec_info["names"]["reused"] or vec_info["triples"]["reused"]:
                notes.append(
                    f"{n} edges: vector reuse: {vec_info['triples']['pooled']} triple texts and "
                    f"{vec_info['names']['pooled']} names embedded for real; the other "
                    f"{vec_info['triples']['reused']} triples / {vec_info['names']['reused']} "
                    "names borrow a pooled vector of the same relation+destination (else "
                    "relation; names: same type) plus Gaussian noise of norm 0.2, re-normalised"
                )
            target_ids: dict[str, str] = {}
            write_s = write_graph(
                store,
                Tenant(user_id=TARGET_USER),
                graph,
                names,
                edges,
                args.write_batch,
                progress,
                f"{label} write",
                target_ids,
            )
            other_edges = 0
            if args.other_tenants > 0:
                per = max(10, args.other_tenants // 10)
                for t in range(10):
                    if other_edges >= args.other_tenants:
                        break
                    count = min(per, args.other_tenants - other_edges)
                    other = build_graph(count, args.seed + 1 + t, person_prefix=f"Member{t}")
                    o_names, o_edges = borrowed_vectors(other, graph, names, edges, size_rng)
                    write_s += write_graph(
                        store,
                        Tenant(user_id=f"other-{t}"),
                        other,
                        o_names,
                        o_edges,
                        args.write_batch,
                        progress,
                        f"{label} other tenant {t}",
                    )
                    other_edges += count
            build_s = time.perf_counter() - begin
            settled = stores.settle()
            queries = make_queries(graph, args.queries + args.warmup + 50, size_rng)
            memory = Memory({"memory": memory_section}, embedder=CachedEmbedder(inner), store=store)
            search_load = load_average()
            timing = bench_search(
                memory,
                inner,
                queries[: args.queries + args.warmup],
                args.warmup,
                progress,
                label,
                stores.server_cpu,
                stores.others_cpu,
            )
            timing_load = load_average()
            entry: dict[str, Any] = {
                "edges": n,
                "entities": len(graph.entity_types),
                "other_tenant_edges": other_edges,
                "build": {
                    "total_s": round(build_s, 2),
                    "write_s": round(write_s, 2),
                    "vectors": vec_info,
                    "settle": settled,
                },
                **timing,
                "load_avg_before_build": load_before,
                "load_avg_before": search_load,
                "load_avg_during": timing_load,
                "busy": busy(search_load, timing_load, others=timing["other_processes_cores"]),
            }
            entry["phases"] = later_phases(
                args,
                stores,
                memory,
                inner,
                queries[: args.queries + args.warmup],
                (graph, names, edges, target_ids),
                size_rng,
                progress,
                label,
            )
            if args.profile_dir is not None:
                path = args.profile_dir / f"search_{n}.txt"
                work = functools.partial(search_all, memory, queries[-50:])
                entry["profile"] = {"file": str(path), "top_tottime": profiled(work, 50, path)}
            if n == add_size and args.adds > 0:
                add_profile = args.profile_dir / f"add_{n}.txt" if args.profile_dir else None
                add_result = bench_add(
                    store,
                    inner,
                    graph,
                    args.adds,
                    min(args.warmup, 3),
                    size_rng,
                    progress,
                    memory_section,
                    add_profile,
                )
                add_result["load_avg_during"] = load_average()
                add_result["busy"] = busy(timing_load, add_result["load_avg_during"])
            results.append(entry)
            memory.close()
            line = (
                f"{label}: search p95 {timing['search']['p95_ms']:.1f} ms, embed p95 "
                f"{timing['query_embed']['p95_ms']:.1f} ms, ratio {timing['ratio_p95']:.2f}"
            )
            progress.line(line)
            write_report(complete=False)
            if args.vector_cache is not None:
                source.save(args.vector_cache)
    report = write_report(complete=True)
    if not args.quiet:
        print_report(report)
        print(f"results written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
