"""The dual retriever on a store that scores candidates itself (`expand(..., vector=)`,
`similar_relations(..., refs=True)`) and on one without those keywords (a store written before
them): the same rankings, scores and records either way, and the scored path copies only the
records it returns."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mem0g.config import FusionConfig, RetrievalConfig
from mem0g.embed import CachedEmbedder, HashingEmbedder
from mem0g.resolve.names import normalize_name
from mem0g.retrieve import DualRetriever
from mem0g.stores import EmbeddedGraphStore
from mem0g.types import (
    Entity,
    Episode,
    Invalidation,
    Message,
    Relation,
    Tenant,
    Validity,
    WritePlan,
)

UTC = timezone.utc
T0 = datetime(2020, 1, 1, tzinfo=UTC)
A = Tenant(user_id="a")
A_RUN = Tenant(user_id="a", run_id="r2")
B = Tenant(user_id="b")
CITIES = ["Paris", "Berlin", "Lisbon"]
COMPANIES = ["Contoso", "Fabrikam"]
HOBBIES = ["tennis", "chess", "climbing"]
SLOTS = [("lives_in", CITIES), ("works_at", COMPANIES), ("plays", HOBBIES), ("born_in", CITIES)]


class RecordsOnly:
    """The embedded store seen through a `GraphStore` without the scored-read keywords."""

    def __init__(self, inner: EmbeddedGraphStore) -> None:
        self.inner = inner

    def expand(
        self, scope: Tenant, entity_ids: Sequence[str], hops: int, validity: Validity, limit: int
    ) -> list[tuple[Relation, int]]:
        return self.inner.expand(scope, entity_ids, hops, validity, limit)

    def similar_relations(
        self, scope: Tenant, vector: np.ndarray, k: int, validity: Validity
    ) -> list[tuple[Relation, float]]:
        return self.inner.similar_relations(scope, vector, k, validity)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def write_people(
    store: EmbeddedGraphStore,
    embedder: CachedEmbedder,
    tenant: Tenant,
    people: int,
    rng: random.Random,
) -> list[Relation]:
    """People with a few edges each into shared hubs (cities, companies, hobbies), so hubs hold
    many edges and expansion limits cut walks short; returns the edges written."""
    names: dict[str, str] = {}  # name -> type
    triples: list[tuple[str, str, str]] = []
    for i in range(people):
        person = f"Person {i}"
        names[person] = "person"
        for rel, pool in rng.sample(SLOTS, 3):
            hub = rng.choice(pool)
            names[hub] = "place" if pool is CITIES else "thing"
            if (person, rel, hub) not in triples:
                triples.append((person, rel, hub))
    vectors = embedder.embed(list(names))
    entities = {
        name: Entity(tenant=tenant, name=name, type=kind, keys=[normalize_name(name)],
                     embedding=vectors[i].tolist())
        for i, (name, kind) in enumerate(names.items())
    }  # fmt: skip
    texts = [f"{s} {r.replace('_', ' ')} {d}" for s, r, d in triples]
    edge_vectors = embedder.embed(texts)
    relations = [
        Relation(
            tenant=tenant, source_id=entities[s].id, source=s, relation=r,
            destination_id=entities[d].id, destination=d, embedding=edge_vectors[i].tolist(),
            valid_from=T0 + timedelta(days=rng.randrange(0, 1000)),
        )
        for i, (s, r, d) in enumerate(triples)
    ]  # fmt: skip
    relations[3].embedding = None  # walked and returned like any other edge, scored 0
    episode = Episode(tenant=tenant, messages=[Message(content="x")], timestamp=T0)
    store.apply(
        WritePlan(
            tenant=tenant,
            episode=episode,
            new_entities=list(entities.values()),
            new_relations=relations,
        )
    )
    picked = rng.sample(relations, len(relations) // 5)
    invalidations = [
        Invalidation(
            relation_id=r.id, invalid_at=r.valid_from + timedelta(days=rng.randrange(1, 400))
        )  # type: ignore[operator]
        for r in picked
    ]
    store.apply(WritePlan(tenant=tenant, invalidations=invalidations))
    return relations


@pytest.fixture(scope="module")
def embedder() -> CachedEmbedder:
    return CachedEmbedder(HashingEmbedder(64))


@pytest.fixture
def graph(tmp_path: Path, embedder: CachedEmbedder) -> Iterator[EmbeddedGraphStore]:
    store = EmbeddedGraphStore(tmp_path / "store", dims=64)
    rng = random.Random(5)
    write_people(store, embedder, A, 40, rng)
    write_people(store, embedder, A_RUN, 10, rng)
    write_people(store, embedder, B, 20, rng)
    yield store
    store.close()


QUERIES = [
    "who works with Person 3?",
    "where does Person 7 live?",
    "who lives in Paris?",
    "who plays chess in Berlin?",
    "Person 12 works at Fabrikam",
    "what does Person 30 do for fun?",
    "who was born in Lisbon?",
    "climbing",
    "something unrelated entirely",
]
VALIDITIES = [
    Validity(),
    Validity(include_invalid=True),
    Validity(as_of=T0 + timedelta(days=300)),
    Validity(as_of=T0 + timedelta(days=900)),
]
CONFIGS = {
    "default": RetrievalConfig(),
    "tight limits": RetrievalConfig(expansion_limit=12, sibling_limit=7, triple_top_k=5),
    "two hops": RetrievalConfig(hops=2, expansion_limit=60, link_threshold=0.3),
    "no siblings": RetrievalConfig(siblings=False),
    "no hops": RetrievalConfig(hops=0),
    "weighted": RetrievalConfig(
        fusion=FusionConfig(method="weighted", entity_weight=0.7, triple_weight=1.3)
    ),
}


@pytest.mark.parametrize("config_name", list(CONFIGS))
def test_scored_reads_rank_exactly_like_copied_records(
    graph: EmbeddedGraphStore, embedder: CachedEmbedder, config_name: str
) -> None:
    config = CONFIGS[config_name]
    scored = DualRetriever(graph, embedder, config)
    copied = DualRetriever(RecordsOnly(graph), embedder, config)  # type: ignore[arg-type]
    assert scored.scored_reads and not copied.scored_reads
    found = 0
    for query in QUERIES:
        for scope in (A, A_RUN, B, Tenant(user_id="nobody")):
            for validity in VALIDITIES:
                for limit in (1, 4, 10, 40):
                    want = copied.search(query, scope, limit, validity)
                    got = scored.search(query, scope, limit, validity)
                    assert got == want, (query, scope, validity, limit)
                    assert all(scope.matches(graph.get_relations(scope, [h.id])[0].tenant)
                               for h in got.relations)  # fmt: skip
                    found += len(got.relations)
    assert found > 1000  # the cases above do return edges


def test_only_the_returned_edges_are_copied(
    graph: EmbeddedGraphStore, embedder: CachedEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    copies: list[str] = []
    out = graph._out

    def counting(record: Any) -> Any:
        if isinstance(record, Relation):
            copies.append(record.id)
        return out(record)

    monkeypatch.setattr(graph, "_out", counting)
    retriever = DualRetriever(graph, embedder, RetrievalConfig())
    for query in QUERIES:
        copies.clear()
        result = retriever.search(query, A, 5, Validity())
        assert copies == [h.id for h in result.relations]
