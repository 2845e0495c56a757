"""`GraphStore.walk` (mem0g/stores/walk.py, issue #18): the graph half of a search after
linking in one call. On Neo4j one statement (cypher/walk.cypher) must return exactly what the
separate reads return (`walk_in_turn`: expand, siblings, lexical_relations, get_relations), on
both stores and across them, on the store-contract's kind of data; and a search on Neo4j
must send fewer round trips than the separate reads did."""

from __future__ import annotations

import dataclasses
import itertools
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from builders import A_BOT, CURRENT, DIMS, EVERYTHING, T0, A, B, Store, entity, plan, relation
from builders import unit as unit_vector

from mem0g.config import RetrievalConfig
from mem0g.embed import CachedEmbedder
from mem0g.retrieve import DualRetriever
from mem0g.stores import EmbeddedGraphStore
from mem0g.stores.base import StoreCapabilities
from mem0g.stores.walk import WalkRequest, WalkResult, sibling_keys, walk_in_turn
from mem0g.types import Invalidation, Tenant, Validity, WritePlan

AS_OF = Validity(as_of=T0 + timedelta(days=10))


def walk_plans(rng: np.random.Generator) -> tuple[list[WritePlan], dict[str, Any]]:
    """Two hubs (a company with 30 spokes under three relation names, a city with 12), spokes
    linked in pairs, some edges ended, one without an embedding, and another tenant beside it
    (A_BOT is inside user a's scope, B is not). Returns the plans and the ids tests seed from."""
    hub, city = entity(A, "Acme Corp", rng), entity(A, "Paris", rng)
    spokes = [entity(A, f"Person {i}", rng) for i in range(30)]
    rels = [
        relation(A, s, ("works_at", "owns", "likes")[i % 3], hub, rng,
                 valid_from=T0 + timedelta(days=i))
        for i, s in enumerate(spokes)
    ]  # fmt: skip
    rels += [relation(A, spokes[i], "knows", spokes[i + 1], rng) for i in range(0, 29, 2)]
    rels += [relation(A, city, "hosts", spokes[i], rng) for i in range(12)]
    rels[4].embedding = None
    first = plan(A, [hub, city, *spokes], rels)
    cut = plan(A, invalidations=[
        Invalidation(relation_id=rels[i].id, invalid_at=T0 + timedelta(days=i + 5))
        for i in (2, 7, 31)
    ])  # fmt: skip
    bot = [entity(A_BOT, n, rng) for n in ("Bot", "Acme Corp")]
    bot_plan = plan(A_BOT, bot, [relation(A_BOT, bot[0], "works_at", bot[1], rng)])
    b = [entity(B, n, rng) for n in ("Bea", "Acme Corp")]
    b_plan = plan(B, b, [relation(B, b[0], "works_at", b[1], rng)])
    seeds = {"hub": hub.id, "city": city.id, "spokes": [s.id for s in spokes],
             "rels": [r.id for r in rels], "bot": bot[0].id}  # fmt: skip
    return [first, cut, bot_plan, b_plan], seeds


def requests(ids: dict[str, Any], rng: np.random.Generator) -> list[tuple[Tenant, WalkRequest]]:
    """Seeds x validity x scope, the other knobs cycled through their edge cases."""
    spokes = ids["spokes"]
    seed_sets = [[ids["hub"]], [spokes[0]], [spokes[3], ids["hub"]], [], ["missing"],
                 [spokes[1], spokes[2], ids["city"]], [ids["bot"], ids["hub"]]]  # fmt: skip
    knobs = itertools.cycle([
        {"limit": 500, "sibling_hubs": 8, "sibling_limit": 200, "words": ["knows"], "top": 10},
        {"limit": 7, "sibling_hubs": 2, "sibling_limit": 5, "words": None, "top": 3},
        {"limit": 500, "sibling_hubs": 0, "sibling_limit": 200, "words": ["acme", "likes"],
         "top": 10, "rows": ids["rels"][5:9]},
        {"limit": 3, "sibling_hubs": 8, "sibling_limit": 1, "words": ["nothing"], "top": 0},
        {"limit": 500, "sibling_hubs": 8, "sibling_limit": 200, "words": [], "top": 50,
         "lexical_k": 2, "rows": ["missing", ids["rels"][0]]},
    ])  # fmt: skip
    out = []
    for seeds, validity, scope in itertools.product(
        seed_sets, (CURRENT, EVERYTHING, AS_OF), (A, A_BOT, B)
    ):
        vector = unit_vector(rng)
        out.append((scope, WalkRequest(seeds=seeds, validity=validity, vector=vector,
                                       **next(knobs))))  # fmt: skip
    return out


def same(got: WalkResult, want: WalkResult, tol: float) -> None:
    """The same walk, BM25 hits and records; walk scores to `tol`."""

    def shape(refs: list[Any]) -> list[tuple[Any, ...]]:
        return [tuple(ref)[:5] for ref in refs]

    assert shape(got.walked) == shape(want.walked)
    assert [r.score for r in got.walked] == pytest.approx([r.score for r in want.walked], abs=tol)
    assert shape(got.lexical) == shape(want.lexical)
    assert [r.score for r in got.lexical] == pytest.approx(
        [r.score for r in want.lexical], rel=1e-5
    )
    assert got.records == want.records  # the same records, none with an embedding
    assert all(r.embedding is None for r in got.records.values())


@pytest.fixture
def walk_ids(store: Store, rng: np.random.Generator) -> dict[str, Any]:
    """The store under test holding `walk_plans`; the ids to seed from."""
    plans, ids = walk_plans(rng)
    for p in plans:
        store.apply(p)
    return ids


@pytest.mark.long
def test_walk_answers_what_the_separate_reads_answer(
    store: Store, walk_ids: dict[str, Any], rng: np.random.Generator
) -> None:
    ids = walk_ids
    walked = siblings = records = lexical = 0
    for scope, request in requests(ids, rng):
        got = store.walk(scope, request)
        same(got, walk_in_turn(store, scope, request), tol=1e-9)
        walked += bool(got.walked)
        siblings += any(r.hop == 2 for r in got.walked)
        lexical += bool(got.lexical)
        records += bool(got.records)
        assert len(got.walked) <= request.limit + request.sibling_limit
    assert min(walked, siblings, lexical, records) >= 5  # the cases exercise every part


def test_deeper_walks_take_the_separate_reads(
    store: Store, walk_ids: dict[str, Any], rng: np.random.Generator
) -> None:
    ids = walk_ids
    for hops in (2, 3):
        request = WalkRequest(seeds=[ids["spokes"][0]], validity=CURRENT,
                              vector=unit_vector(rng), hops=hops, words=["knows"])  # fmt: skip
        got = store.walk(A, request)
        same(got, walk_in_turn(store, A, request), tol=1e-9)
        assert max(r.hop for r in got.walked) >= 2


@pytest.mark.neo4j
def test_both_stores_walk_alike(
    embedded_store: EmbeddedGraphStore, neo4j_connect: Any, rng: np.random.Generator
) -> None:
    """The same plans in both stores: the same walk, siblings and records (scores: Neo4j's
    Cypher cosine agrees with the embedded float32 one to ~1e-7)."""
    neo4j = neo4j_connect(dims=DIMS)
    plans, ids = walk_plans(rng)
    for p in plans:
        embedded_store.apply(p)
        neo4j.apply(p)
    for scope, request in requests(ids, rng):
        # BM25 is each engine's own (Lucene's statistics span all tenants, FTS5's too, but
        # they weigh terms differently), so it is compared within a store only (above)
        request = dataclasses.replace(request, words=None)
        same(neo4j.walk(scope, request), embedded_store.walk(scope, request), tol=1e-6)


def test_sibling_keys_pick_the_best_hubs_once_each() -> None:
    from mem0g.stores.base import EdgeRef

    walked = [
        EdgeRef("e1", "s", "works_at", "acme", 1, 0.2),
        EdgeRef("e2", "s", "lives_in", "paris", 1, 0.9),
        EdgeRef("e3", "bob", "knows", "s", 1, 0.9000001),  # equal to 5 digits: walk order
        EdgeRef("e4", "s", "lives_in", "paris", 1, 0.5),  # the same hub and relation again
        EdgeRef("e5", "s", "likes", "s", 1, 0.1),  # a self-loop: both sides
        EdgeRef("e6", "x", "far", "y", 2, 1.0),  # hop 2: never a hub
    ]
    assert sibling_keys(walked, {"s"}, 8) == [
        ("paris", "lives_in", True), ("bob", "knows", False), ("acme", "works_at", True),
        ("s", "likes", True), ("s", "likes", False),
    ]  # fmt: skip
    assert sibling_keys(walked, {"s"}, 2) == [("paris", "lives_in", True), ("bob", "knows", False)]
    assert sibling_keys(walked, {"s"}, 0) == []


@pytest.mark.neo4j
def test_a_search_on_neo4j_takes_fewer_round_trips(
    neo4j_connect: Any, hashing: CachedEmbedder, rng: np.random.Generator
) -> None:
    """One `walk` read instead of expand, siblings, BM25 and the final get_relations, and
    the same search results as the separate reads gave."""
    store = neo4j_connect(dims=hashing.dims)
    names = ["Alice", "Bob", "Carol", "Dan", "Acme Corp", "Paris", "chess"]
    ents = {n: entity(A, n, 0) for n in names}
    for e in ents.values():
        e.embedding = hashing.embed([e.name])[0].tolist()
    triples = [("Alice", "works_at", "Acme Corp"), ("Bob", "works_at", "Acme Corp"),
               ("Carol", "works_at", "Acme Corp"), ("Alice", "lives_in", "Paris"),
               ("Dan", "lives_in", "Paris"), ("Bob", "plays", "chess")]  # fmt: skip
    rels = [relation(A, ents[s], r, ents[d]) for s, r, d in triples]
    for rel, (s, r, d) in zip(rels, triples, strict=True):
        rel.embedding = hashing.embed([f"{s} {r} {d}"])[0].tolist()
    store.apply(plan(A, list(ents.values()), rels))

    class Separate(type(store)):  # type: ignore[misc]
        capabilities = StoreCapabilities(concurrent_reads=True, lexical=True)

    config = RetrievalConfig(concurrent_reads=False)
    one = DualRetriever(store, hashing, config)
    store_separate = neo4j_connect(dims=hashing.dims)
    store_separate.__class__ = Separate
    separate = DualRetriever(store_separate, hashing, config)
    for query in ("who works with Alice", "where does Dan live", "chess", "Acme Corp"):
        with store.recording_reads() as reads:
            got = one.search(query, A, 5, CURRENT)
        with store_separate.recording_reads() as old_reads:
            want = separate.search(query, A, 5, CURRENT)
        assert got == want and got.relations
        assert reads.count("walk") == 1
        assert not {"edges_at", "sibling_edges", "lexical_relations", "get_relations"} & set(
            reads
        ), reads
        assert len(reads) < len(old_reads), (reads, old_reads)
