"""The dual retriever on a store that scores candidates itself (`expand(..., vector=)`,
`similar_relations(..., refs=True)`) and on one without those keywords (a store written before
them): the same rankings, scores and records either way, and the scored path copies only the
records it returns. Sibling edges come from `store.siblings` (only the edges with the seed
edge's relation and direction at each hub); for a store without it, from a walk around the
hubs that is cut before that filter: the two differ only where that cut dropped siblings."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import plan

from mem0g.config import FusionConfig, FusionWeights, RetrievalConfig
from mem0g.embed import CachedEmbedder, HashingEmbedder
from mem0g.resolve.names import normalize_name
from mem0g.retrieve import DualRetriever
from mem0g.stores import EmbeddedGraphStore
from mem0g.stores.base import EdgeRef
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


class HubWalk(DualRetriever):
    """The retriever as it read siblings before `GraphStore.siblings`: a walk of
    `sibling_limit` edges around the hubs, cut before the relation filter (a big hub's other
    edges could crowd out the siblings). Kept here to show what `siblings` changed."""

    one_trip = False  # its reads are the separate ones, whatever the store offers

    def _read_siblings(
        self,
        scope: Tenant,
        keys: list[tuple[str, str, bool]],
        validity: Validity,
        limit: int,
        qvec: np.ndarray,
    ) -> list[EdgeRef]:
        hubs = set(keys)
        hub_ids = sorted({hub for hub, _, _ in keys})
        return [
            ref._replace(hop=2)
            for ref in self._expand(scope, hub_ids, 1, validity, limit, qvec)
            if (ref.destination_id, ref.relation, True) in hubs
            or (ref.source_id, ref.relation, False) in hubs
        ]


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


def _walk(
    retriever: DualRetriever, query: str, scope: Tenant, validity: Validity
) -> tuple[np.ndarray, set[str], list[EdgeRef]]:
    """What `search` has before it looks for siblings: the query vector, seeds, walked edges."""
    qvec = retriever.embedder.embed([query])[0]
    seeds = [h.id for h in retriever.link(query, qvec, scope)]
    config = retriever.config
    walked = retriever._expand(scope, seeds, config.hops, validity, config.expansion_limit, qvec)
    return qvec, set(seeds), walked


@pytest.mark.parametrize("hops", [1, 2])
def test_sibling_reads_differ_from_the_hub_walk_only_where_it_was_cut(
    graph: EmbeddedGraphStore, embedder: CachedEmbedder, hops: int
) -> None:
    """Unbounded, `store.siblings` and the old walk around the hubs find the same sibling
    edges (hop 2, the same scores); bounded, `siblings` returns the first `sibling_limit` of
    them (key order, then write order), and the old walk a subset: all of them (then the
    same as `siblings`) unless its cut, which fell before the relation filter, dropped some."""

    def retriever(sibling_limit: int, kind: type[DualRetriever] = DualRetriever) -> DualRetriever:
        config = RetrievalConfig(hops=hops, link_threshold=0.3, sibling_limit=sibling_limit)
        return kind(graph, embedder, config)

    unbounded = 10**6
    new_all, old_all = retriever(unbounded), retriever(unbounded, HubWalk)
    cut_short = compared = 0
    for query in QUERIES:
        for scope in (A, A_RUN, B):
            for validity in VALIDITIES:
                qvec, seeds, walked = _walk(new_all, query, scope, validity)
                every = new_all._siblings(scope, seeds, walked, validity, qvec)
                assert all(ref.hop == 2 for ref in every)
                assert len({ref.id for ref in every}) == len(every)
                old_every = old_all._siblings(scope, seeds, walked, validity, qvec)
                assert sorted(old_every) == sorted(every)  # ids, ends, hop and score
                for limit in (7, 50):
                    new = retriever(limit)._siblings(scope, seeds, walked, validity, qvec)
                    assert new == every[:limit]
                    old = retriever(limit, HubWalk)._siblings(scope, seeds, walked, validity, qvec)
                    assert set(old) <= set(every) and len(old) <= len(new)
                    if set(old) == set(every):  # the old walk's cut hid no sibling
                        assert new == every
                    else:
                        cut_short += 1
                    compared += bool(every)
    assert compared > 100 and cut_short > 50


class SiblingsById(DualRetriever):
    """Sibling edges in id order: edges of equal score keep the order a read returns them in,
    which differs between `store.siblings` (key order, then write order) and the old walk
    (hubs in id order, then their adjacency)."""

    def _siblings(self, *args: Any, **kwargs: Any) -> list[EdgeRef]:
        return sorted(super()._siblings(*args, **kwargs), key=lambda ref: ref.id)


class HubWalkById(HubWalk, SiblingsById):
    """The old hub walk, its siblings in id order (see `SiblingsById`)."""


@pytest.mark.parametrize("config_name", [name for name in CONFIGS if name != "tight limits"])
def test_search_is_unchanged_where_the_hub_walk_was_not_cut(
    graph: EmbeddedGraphStore, embedder: CachedEmbedder, config_name: str
) -> None:
    """Where the old walk around the hubs kept every sibling (sibling_limit 200 here, against
    hubs of a few dozen edges), `store.siblings` changes no search result, up to the order of
    siblings of equal score (the hashing embedder scores many alike)."""
    config = CONFIGS[config_name]
    new = SiblingsById(graph, embedder, config)
    old = HubWalkById(graph, embedder, config)
    for query in QUERIES:
        for scope in (A, A_RUN, B):
            for validity in VALIDITIES:
                for limit in (1, 4, 10, 40):
                    want = old.search(query, scope, limit, validity)
                    assert new.search(query, scope, limit, validity) == want


@pytest.fixture
def any_store(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    """An empty store of the kind under test (see conftest.py), 64 dimensions."""
    if store_kind == "neo4j":
        store = request.getfixturevalue("neo4j_connect")(dims=64)
    else:
        store = EmbeddedGraphStore(tmp_path / "hub", dims=64)
    yield store
    store.close()


def test_a_big_hub_no_longer_hides_the_siblings(any_store: Any, embedder: CachedEmbedder) -> None:
    """Acme holds 300 unrelated edges written before its 3 real siblings of Xavier's edge
    (Yann, Zoe, Walter work at Acme). The old walk read the hub's first `sibling_limit` edges
    and then kept the works_at ones: none. `siblings` reads only works_at edges into Acme."""
    store = any_store
    query = "who works with Xavier?"
    qvec = embedder.embed([query])[0]
    rng = np.random.default_rng(3)

    def unrelated_to_query() -> list[float]:
        vec = rng.standard_normal(64).astype(np.float32)
        vec -= np.dot(vec, qvec) * qvec  # cosine ~0 with the query: nothing links by embedding
        return (vec / np.linalg.norm(vec)).tolist()

    def entity(name: str) -> Entity:
        return Entity(tenant=A, name=name, keys=[normalize_name(name)],
                      embedding=unrelated_to_query())  # fmt: skip

    def edge(source: Entity, relation: str, destination: Entity, vector: Any) -> Relation:
        return Relation(tenant=A, source_id=source.id, source=source.name, relation=relation,
                        destination_id=destination.id, destination=destination.name,
                        embedding=list(vector))  # fmt: skip

    acme = entity("Acme")
    people = [entity(n) for n in ("Xavier", "Yann", "Zoe", "Walter")]
    works = [edge(p, "works_at", acme, unrelated_to_query()) for p in people]
    store.apply(WritePlan(tenant=A, new_entities=[acme, *people], new_relations=works))
    clients = [entity(f"Client {i}") for i in range(300)]
    # the unrelated edges are the query's nearest triples, so they fill the triple search
    # and do not bring the siblings in by that route; written later, they are the hub's
    # newest edges, which a walk around the hub keeps first
    supplied = [edge(c, "buys_from", acme, qvec.tolist()) for c in clients]
    store.apply(WritePlan(tenant=A, new_entities=clients, new_relations=supplied))
    siblings = {r.id for r in works[1:]}

    def found(
        store: Any, sibling_limit: int, kind: type[DualRetriever] = DualRetriever
    ) -> set[str]:
        # BM25 over relation texts would find the "works at" siblings by their words; this
        # test is about the walk, so the lexical ranking is weighed out
        fusion = FusionConfig(weights=FusionWeights(bm25_relations=0))
        config = RetrievalConfig(sibling_limit=sibling_limit, fusion=fusion)
        result = kind(store, embedder, config).search(query, A, 10, Validity())
        assert [e.name for e in result.entities] == ["Xavier"]
        assert works[0].id in {h.id for h in result.relations}
        return {h.id for h in result.relations}

    assert siblings <= found(store, 50)
    assert not siblings & found(store, 50, HubWalk)  # the old walk around the hub
    # the limit counts siblings only, newest first (Walter's and Zoe's edges)
    assert found(store, 2) & siblings == {works[3].id, works[2].id}


def test_a_speaker_with_more_edges_than_the_cap_is_walked_from_the_latest(
    any_store: Any, embedder: CachedEmbedder
) -> None:
    """The speaker's node gains an edge or more per message. Past `expansion_limit` the
    graph ranking keeps walking its newest edges (a talk of 30 plans, cap 12): the last
    things said reach the search through the graph, the first ones only if another ranking
    finds them. An oldest-first cut froze the graph's view of the speaker after the cap."""
    store = any_store

    def entity(name: str) -> Entity:
        return Entity(tenant=A, name=name, keys=[normalize_name(name)],
                      embedding=embedder.embed([name])[0].tolist())  # fmt: skip

    alice = entity("Alice")
    store.apply(WritePlan(tenant=A, new_entities=[alice]))
    edges = []
    for i in range(30):  # one add per message, each naming a new place
        place = entity(f"Place {i}")
        vector = embedder.embed([f"Alice visited Place {i}"])[0].tolist()
        rel = Relation(tenant=A, source_id=alice.id, source="Alice", relation="visited",
                       destination_id=place.id, destination=place.name,
                       embedding=vector)  # fmt: skip
        store.apply(WritePlan(tenant=A, new_entities=[place], new_relations=[rel]))
        edges.append(rel)
    # the graph ranking alone: dense and BM25 relations weighed out
    fusion = FusionConfig(weights=FusionWeights(dense_relations=0, bm25_relations=0))
    config = RetrievalConfig(expansion_limit=12, siblings=False, fusion=fusion)
    for walk_statement in (None, False):  # the store's own walk, and the separate reads
        retriever = DualRetriever(
            store, embedder, config.model_copy(update={"walk_statement": walk_statement})
        )
        result = retriever.search("where has Alice been?", A, 30, Validity())
        assert [e.name for e in result.entities] == ["Alice"]
        walked = {h.id for h in result.relations if "graph_expansion" in h.sources}
        assert walked == {r.id for r in edges[-12:]}


def test_siblings_come_from_the_hubs_of_the_best_scoring_edges(
    any_store: Any, embedder: CachedEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Xavier has 40 edges to 40 hubs; only the hubs of the `sibling_hubs` edges that best
    match the query are read, best first, so "who works with Xavier?" still reaches his
    coworkers while a seed with hundreds of edges no longer reads hundreds of hubs."""
    store = any_store
    query = "who works with Xavier?"

    def entity(name: str) -> Entity:
        return Entity(tenant=A, name=name, keys=[normalize_name(name)],
                      embedding=embedder.embed([name])[0].tolist())  # fmt: skip

    def edge(source: Entity, relation: str, destination: Entity) -> Relation:
        text = f"{source.name} {relation.replace('_', ' ')} {destination.name}"
        return Relation(tenant=A, source_id=source.id, source=source.name, relation=relation,
                        destination_id=destination.id, destination=destination.name,
                        embedding=embedder.embed([text])[0].tolist())  # fmt: skip

    xavier, acme = entity("Xavier"), entity("Acme")
    hobbies = [entity(f"Hobby {i}") for i in range(40)]
    fans = [entity(f"Fan {i}") for i in range(40)]
    coworkers = [entity(n) for n in ("Yann", "Zoe")]
    edges = [edge(xavier, f"enjoys_{i}", h) for i, h in enumerate(hobbies)]  # written first
    edges += [edge(f, f"enjoys_{i}", h) for i, (f, h) in enumerate(zip(fans, hobbies, strict=True))]
    works = [edge(p, "works_at", acme) for p in (xavier, *coworkers)]
    entities = [xavier, acme, *hobbies, *fans, *coworkers]
    store.apply(WritePlan(tenant=A, new_entities=entities, new_relations=edges + works))

    calls: list[list[tuple[str, str, bool]]] = []
    siblings = store.siblings

    def recording(scope: Tenant, keys: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(list(keys))
        return siblings(scope, keys, *args, **kwargs)

    def search(config: RetrievalConfig) -> set[str]:
        calls.clear()
        one_trip = DualRetriever(store, embedder, config).search(query, A, 10, Validity())
        # the separate reads, so the sibling keys can be seen (`walk` sends the same ones:
        # tests/test_store_walk.py), and the same results as the one-statement walk
        config = config.model_copy(update={"walk_statement": False})
        retriever = DualRetriever(store, embedder, config)
        monkeypatch.setattr(store, "siblings", recording)  # after the retriever checked it
        try:
            result = retriever.search(query, A, 10, Validity())
        finally:
            monkeypatch.undo()
        assert [e.name for e in result.entities] == ["Xavier"]
        assert result == one_trip
        return {h.id for h in result.relations}

    found = search(RetrievalConfig(link_threshold=0.99))
    assert len(calls) == 1 and len(calls[0]) == RetrievalConfig().sibling_hubs == 8
    assert calls[0][0] == (acme.id, "works_at", True)  # the best-matching edge's hub first
    assert {w.id for w in works} <= found
    # every hub read (the cap above all 40): the same coworkers, at 5x the hubs
    assert {w.id for w in works} <= search(RetrievalConfig(link_threshold=0.99, sibling_hubs=100))
    assert len(calls[0]) == 41
    search(RetrievalConfig(link_threshold=0.99, sibling_hubs=0))
    assert calls == []


def test_the_reads_that_need_no_vector_are_sent_before_the_query_is_embedded(
    any_store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """find_entities, lexical_entities (link_lexical) and the BM25 facts need only the
    query's words, the scope's fact vector sum (the hubness correction) not even those: on a
    server they overlap the query embedding (a store that holds names brings the sum with
    the name ranker's read, which is sent early too, and sends no read of its own for it).
    The embedder waits for them (on Neo4j they run on the read pool; a read sent after the
    embedding would never come), and the search returns what it did with them sent after
    it."""
    import time

    from mem0g import Memory

    store = any_store
    sent: list[str] = []
    early = {"find_entities", "lexical_entities", "lexical_facts"}
    early |= {"name_ranker"} if store.capabilities.held_names else {"fact_vector_sum"}
    for name in {*early, "similar_facts", "fact_vector_sum"}:
        real = getattr(store, name)
        monkeypatch.setattr(
            store, name, lambda *a, _r=real, _n=name, **k: (sent.append(_n), _r(*a, **k))[1]
        )

    class Watching(HashingEmbedder):
        seen: list[str] | None = None

        def embed(self, texts: Any) -> np.ndarray:
            if list(texts) == [query]:
                deadline = time.monotonic() + 10
                while not early <= set(sent) and time.monotonic() < deadline:
                    time.sleep(0.005)
                Watching.seen = list(sent)
            return super().embed(texts)

    def vec(text: str) -> list[float]:
        return HashingEmbedder(64).embed([text])[0].tolist()

    query = "where does Xavier live"
    tenant = Tenant(user_id="a")
    xavier, paris = (Entity(tenant=tenant, name=n, keys=[normalize_name(n)], embedding=vec(n))
                     for n in ("Xavier", "Paris"))  # fmt: skip
    lives = Relation(tenant=tenant, source_id=xavier.id, source="Xavier", relation="lives_in",
                     destination_id=paris.id, destination="Paris",
                     embedding=vec("Xavier lives_in Paris"))  # fmt: skip
    with Memory({"retrieval": {"link_lexical": True}}, embedder=Watching(64), store=store) as m:
        m.add("Xavier lives in Paris", user_id="a", infer=False)
        store.apply(plan(tenant, [xavier, paris], [lives]))
        sent.clear()
        hits = m.search(query, user_id="a")
        first = list(sent)
        if store.capabilities.held_names:  # once the names are held, the sum comes with them
            store.name_ranker(tenant, wait=True)
            sent.clear()
            again = m.search(query, user_id="a")
            assert "fact_vector_sum" not in sent and again.facts == hits.facts
    assert Watching.seen is not None and early <= set(Watching.seen), Watching.seen
    assert "similar_facts" not in Watching.seen  # it needs the vector
    assert first.count("fact_vector_sum") == 1  # Neo4j: the names were not held yet
    assert [f.text for f in hits.facts][:1] == ["Xavier lives in Paris"]
    assert [e.name for e in hits.entities][:1] == ["Xavier"]
    assert [h.relation for h in hits.relations] == ["lives_in"]
