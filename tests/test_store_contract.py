"""The GraphStore contract, which both stores must pass (issue #13): scopes, vector search,
traversal, plan contents, rejected plans, durability across a reopen, concurrent writers and
the store's lifecycle, asserted through the public store methods only.

Every test runs on both stores (`store_kind`, STORE_KINDS in conftest.py: the embedded one in a
temp directory, Neo4j on the session's real server). What one store alone must show is in
tests/test_embedded_store.py (SQLite fault injection, SIGKILL, WAL, the edge matrix) and
tests/test_neo4j_store.py; the fact memory's contract is the last part of this file (its
SQLite-specific tests are in tests/test_embedded_facts.py)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest
from builders import (
    A_BOT,
    CURRENT,
    DIMS,
    EVERYTHING,
    T0,
    USER_A,
    A,
    B,
    Reopen,
    Store,
    added,
    chain,
    entity,
    fact,
    fact_plan,
    ids,
    plan,
    relation,
    ring,
    scope_state,
    similar,
    talk,
    texts,
    unit,
    walk,
)

from mem0g.stores import EmbeddedGraphStore, GraphStore, StoreError
from mem0g.stores.base import EdgeRef, PlanConflict, edge_score
from mem0g.stores.vectors import Hub
from mem0g.types import (
    AliasUpdate,
    Entity,
    EntityEvent,
    Episode,
    Fact,
    FactChange,
    FactEvent,
    Invalidation,
    MentionUpdate,
    Message,
    PossibleDuplicate,
    Provenance,
    Relation,
    Summary,
    Tenant,
    UpdateQuery,
    Validity,
    WritePlan,
)

# ---------------------------------------------------------------- basics


def test_apply_and_read_back(store: Store, rng: np.random.Generator) -> None:
    assert isinstance(store, GraphStore)
    p = chain(A, ["Alice", "Acme", "Berlin"], rng)
    store.apply(p)
    ents, rels = p.new_entities, p.new_relations
    assert store.get_entities(A, ids(ents)) == ents
    assert store.get_relations(A, ids(rels)) == rels
    assert store.find_entities(A, ["acme"]) == [ents[1]]
    assert store.episodes(A) == [p.episode]
    snap = store.snapshot(A, CURRENT)
    assert ids(snap.entities) == ids(ents) and ids(snap.relations) == ids(rels)
    stats = store.stats()
    assert (stats.entities, stats.relations, stats.valid_relations) == (3, 2, 2)
    assert (stats.episodes, stats.tenants) == (1, 1)
    assert store.tenants() == [A]


def test_reads_return_copies(store: Store, rng: np.random.Generator) -> None:
    p = chain(A, ["Alice", "Acme"], rng)
    store.apply(p)
    p.new_entities[0].aliases.append("changed after apply")
    got = store.get_entities(A, [p.new_entities[0].id])[0]
    got.aliases.append("x")
    got.keys.append("x")
    assert got.embedding is not None
    got.embedding[0] = 42.0
    rel = store.get_relations(A, [p.new_relations[0].id])[0]
    rel.provenance.append(Provenance(episode_id="x", timestamp=T0))
    again = store.get_entities(A, [got.id])[0]
    assert again.aliases == [] and again.keys == ["alice"] and again.embedding[0] != 42.0
    assert store.get_relations(A, [rel.id])[0].provenance == []


def test_scope_filter_vs_exact(store: Store, rng: np.random.Generator) -> None:
    by_tenant = {}
    for tenant in (A, A_BOT, B):
        p = chain(tenant, ["Alice", "Acme"], rng)
        store.apply(p)
        by_tenant[tenant] = p
    found = store.find_entities(A, ["alice"])
    assert {e.tenant for e in found} == {A, A_BOT}
    assert [e.tenant for e in store.find_entities(A, ["alice"], exact=True)] == [A]
    assert [e.tenant for e in store.find_entities(A_BOT, ["alice"], exact=True)] == [A_BOT]
    assert store.find_entities(Tenant(agent_id="bot"), ["alice"])[0].tenant == A_BOT
    assert store.find_entities(Tenant(user_id="a", agent_id="bot"), ["acme"], exact=True) == []
    query = np.asarray(by_tenant[A_BOT].new_entities[0].embedding, dtype=np.float32)
    assert {e.tenant for e, _ in store.similar_entities(A, query, 10)} == {A, A_BOT}
    assert {e.tenant for e, _ in store.similar_entities(A, query, 10, exact=True)} == {A}
    both = ids(by_tenant[A].new_entities) + ids(by_tenant[A_BOT].new_entities)
    assert {r.tenant for r in store.relations_touching(A, both, CURRENT)} == {A, A_BOT}
    assert {r.tenant for r in store.relations_touching(A, both, CURRENT, exact=True)} == {A}
    assert {e.tenant for e in store.snapshot(A, CURRENT).entities} == {A, A_BOT}
    assert {e.tenant for e in store.episodes(A)} == {A, A_BOT}
    assert store.stats(A).entities == 4 and store.stats(A).tenants == 2
    assert store.stats(B).entities == 2
    assert store.tenants() == sorted([A, A_BOT, B], key=lambda t: t.key)


def test_whole_tenant_reads_exact(store: Store, rng: np.random.Generator) -> None:
    """`exact=True` on the whole-tenant reads (snapshot, episodes, facts, possible
    duplicates) returns the exact tenant's records only; the filter returns its more specific
    tenants' too. A backup reads each tenant so, and on Neo4j by the tenant key, not by a
    user id that holds every run of the user."""
    made: dict[Tenant, WritePlan] = {}
    for tenant in (A, A_BOT, B):
        p = chain(tenant, ["Alice", "Acme"], rng)
        p.new_facts = [fact(tenant, f"a fact of {tenant.key}", rng)]
        p.fact_events = added(*p.new_facts)
        alice, acme = p.new_entities
        p.possible_duplicates = [
            PossibleDuplicate(entity_id=alice.id, candidate_id=acme.id, reason="test")
        ]
        store.apply(p)
        made[tenant] = p
    for tenant, p in made.items():
        snap = store.snapshot(tenant, EVERYTHING, exact=True)
        assert ids(snap.entities) == ids(p.new_entities)
        assert ids(snap.relations) == ids(p.new_relations)
        assert store.episodes(tenant, exact=True) == [p.episode]
        assert ids(store.facts(tenant, exact=True)) == ids(p.new_facts)
        assert store.possible_duplicates(tenant, exact=True) == p.possible_duplicates
        bare = store.snapshot(tenant, EVERYTHING, exact=True, embeddings=False)
        assert ids(bare.relations) == ids(p.new_relations)
        assert all(r.embedding is None for r in [*bare.entities, *bare.relations])
    both = [made[A], made[A_BOT]]  # the filter: A holds A_BOT
    assert {e.id for e in store.snapshot(A, EVERYTHING).entities} == {
        e.id for p in both for e in p.new_entities
    }
    assert {f.id for f in store.facts(A)} == {f.id for p in both for f in p.new_facts}
    assert len(store.possible_duplicates(A)) == 2 and len(store.episodes(A)) == 2
    nobody = Tenant(user_id="a", agent_id="bot")  # within A's filter, no record of its own
    assert store.snapshot(nobody, EVERYTHING, exact=True).entities == []
    assert store.facts(nobody, exact=True) == [] and store.episodes(nobody, exact=True) == []
    assert store.possible_duplicates(nobody, exact=True) == []


def test_tenant_isolation_for_every_read(store: Store, rng: np.random.Generator) -> None:
    pa, pb = chain(A, ["Alice", "Acme", "Berlin"], rng), chain(B, ["Bob", "Bmw"], rng)
    store.apply(pa)
    store.apply(pb)
    a_ents, a_rels = ids(pa.new_entities), ids(pa.new_relations)
    query = np.asarray(pa.new_relations[0].embedding, dtype=np.float32)
    assert store.get_entities(B, a_ents) == []
    assert store.get_relations(B, a_rels) == []
    assert store.find_entities(B, ["alice", "acme"]) == []
    assert all(e.tenant == B for e, _ in store.similar_entities(B, query, 10))
    assert all(r.tenant == B for r, _ in similar(store, B, query, 10, EVERYTHING))
    assert store.relations_touching(B, a_ents, EVERYTHING) == []
    assert walk(store, B, a_ents, 3, EVERYTHING, 100) == []
    assert store.siblings(B, [(a_ents[1], "r0", True)], EVERYTHING, 100, vector=query) == []
    assert ids(store.siblings(A, [(a_ents[1], "r0", True)], EVERYTHING, 100, vector=query)) == [
        a_rels[0]
    ]
    snap = store.snapshot(B, EVERYTHING)
    assert ids(snap.entities) == ids(pb.new_entities)
    assert ids(snap.relations) == ids(pb.new_relations)
    assert store.episodes(B) == [pb.episode]
    assert store.stats(B).entities == 2 and store.stats(B).relations == 1
    unknown = Tenant(user_id="nobody")
    assert store.snapshot(unknown, EVERYTHING).entities == []
    assert store.similar_entities(unknown, query, 5) == []
    assert store.stats(unknown).tenants == 0


# ---------------------------------------------------------------- vector search


def test_similar_entities_top_k_matches_brute_force(store: Store, rng: np.random.Generator) -> None:
    mine = [entity(A, f"e{i}", rng) for i in range(60)]
    store.apply(plan(A, mine[:30]))
    store.apply(plan(A, mine[30:]))
    store.apply(plan(B, [entity(B, f"b{i}", rng) for i in range(40)]))
    store.apply(plan(A, [Entity(tenant=A, name="no vector")]))
    matrix = np.array([e.embedding for e in mine], dtype=np.float32)
    for _ in range(5):
        query = unit(rng)
        scores = matrix @ query
        for k in (1, 7, 60, 100):
            expected = [mine[i].id for i in np.argsort(-scores)[:k]]
            got = store.similar_entities(A, query, k, exact=True)
            assert ids([e for e, _ in got]) == expected
            assert [s for _, s in got] == pytest.approx(sorted(scores, reverse=True)[:k], abs=1e-5)
    assert store.similar_entities(A, unit(rng), 0) == []
    # a write after a search must show up in the next search (cached matrices are dropped)
    late = entity(A, "late", rng)
    store.apply(plan(A, [late]))
    query = np.asarray(late.embedding, dtype=np.float32)
    assert store.similar_entities(A, query, 1)[0] == (late, pytest.approx(1.0, abs=1e-5))
    edge = relation(A, late, "knows", mine[0], rng)
    assert similar(store, A, query, 1, CURRENT) == []
    store.apply(plan(A, relations=[edge]))
    assert ids([r for r, _ in similar(store, A, query, 1, CURRENT)]) == [edge.id]
    with pytest.raises(StoreError):
        store.similar_entities(A, np.ones(DIMS + 1, dtype=np.float32), 3)


def test_similar_relations_respects_validity_and_over_fetches(
    store: Store, rng: np.random.Generator
) -> None:
    ents, rels = ring(A, 10, 50, rng)
    store.apply(plan(A, ents, rels))
    store.apply(plan(B, [entity(B, "x", rng)]))
    # The 20 edges closest to the query get invalidated, so a naive top-k would return nothing.
    query = unit(rng)
    matrix = np.array([r.embedding for r in rels], dtype=np.float32)
    scores = matrix @ query
    order = np.argsort(-scores)
    invalid_at = {rels[i].id: T0 + timedelta(days=60 + n) for n, i in enumerate(order[:20])}
    store.apply(
        plan(A, invalidations=[Invalidation(relation_id=r, invalid_at=t)
                               for r, t in invalid_at.items()])
    )  # fmt: skip
    stored = {r.id: r for r in store.get_relations(A, ids(rels))}

    def expected(validity: Validity, k: int) -> list[str]:
        ok = [i for i in order if validity.accepts(stored[rels[i].id])]
        return [rels[i].id for i in ok[:k]]

    for validity in (
        CURRENT,
        EVERYTHING,
        Validity(as_of=T0 + timedelta(days=65)),
        Validity(as_of=T0 + timedelta(days=10, hours=1)),
    ):
        for k in (1, 5, 30, 100):
            got = similar(store, A, query, k, validity)
            assert ids([r for r, _ in got]) == expected(validity, k), (validity, k)
            assert all(validity.accepts(r) for r, _ in got)
    assert len(similar(store, A, query, 10, CURRENT)) == 10
    assert len(similar(store, A, query, 100, CURRENT)) == 30
    assert similar(store, A, query, 5, Validity(as_of=T0 - timedelta(days=1))) == []


def test_snapshot_without_embeddings(store: Store, rng: np.random.Generator) -> None:
    """`get_all` and the dumps drop embeddings: a snapshot that leaves them in the store
    keeps a 100,000-edge user's read at a fraction of the memory (2.9 GB with them)."""
    p = chain(A, ["Alice", "Acme", "Berlin"], rng)
    store.apply(p)
    bare = store.snapshot(A, EVERYTHING, embeddings=False)
    assert ids(bare.entities) == ids(p.new_entities)
    assert ids(bare.relations) == ids(p.new_relations)
    assert all(r.embedding is None for r in [*bare.entities, *bare.relations])
    assert bare.relations[0].source == "Alice" and bare.relations[0].relation
    full = store.snapshot(A, EVERYTHING)
    assert all(r.embedding is not None for r in [*full.entities, *full.relations])
    kept = [r.model_copy(update={"embedding": None}) for r in full.relations]
    assert sorted(kept, key=lambda r: r.id) == sorted(bare.relations, key=lambda r: r.id)


# ---------------------------------------------------------------- validity and traversal


def test_validity_in_snapshot_and_relations_touching(
    store: Store, rng: np.random.Generator
) -> None:
    a, b = entity(A, "A", rng), entity(A, "B", rng)
    old = relation(A, a, "lived_in", b, rng, valid_from=T0)
    new = relation(A, a, "lives_in", b, rng, valid_from=T0 + timedelta(days=10))
    store.apply(plan(A, [a, b], [old, new]))
    cut = T0 + timedelta(days=10)
    store.apply(plan(A, invalidations=[Invalidation(relation_id=old.id, invalid_at=cut)]))
    assert ids(store.snapshot(A, CURRENT).relations) == [new.id]
    assert set(ids(store.snapshot(A, EVERYTHING).relations)) == {old.id, new.id}
    past = Validity(as_of=T0 + timedelta(days=5))
    assert ids(store.snapshot(A, past).relations) == [old.id]
    assert ids(store.relations_touching(A, [b.id], past)) == [old.id]
    assert ids(store.relations_touching(A, [a.id], CURRENT)) == [new.id]
    assert store.relations_touching(A, [a.id], Validity(as_of=T0 - timedelta(days=1))) == []
    assert len(store.relations_touching(A, [a.id, b.id], EVERYTHING)) == 2  # no duplicates
    stats = store.stats(A)
    assert (stats.relations, stats.valid_relations, stats.invalid_relations) == (2, 1, 1)


def test_update_candidates_identical_then_rivals_then_cosine(
    store: Store, rng: np.random.Generator
) -> None:
    """The edges an add's triple may replace, ranked by the store (the update resolver shows
    the LLM these): the identical edge, the same source's same relation, then the most similar
    of a hub's edges, only current ones of the exact tenant, at most k, without vectors."""
    diego, acme, contoso, home = (entity(A, n, rng) for n in ("Diego", "Acme", "Contoso", "Home"))
    staff = [entity(A, f"Staff {i}", rng) for i in range(12)]
    same = relation(A, diego, "works_at", acme, rng)
    rival = relation(A, diego, "works_at", contoso, rng)
    lives = relation(A, diego, "lives_in", home, rng)
    hub = [relation(A, s, "works_at", acme, rng) for s in staff]
    ended = relation(A, staff[0], "visited", acme, rng)
    store.apply(plan(A, [diego, acme, contoso, home, *staff], [same, rival, lives, *hub, ended]))
    store.apply(plan(A, invalidations=[Invalidation(relation_id=ended.id, invalid_at=T0)]))
    # another tenant's look-alike graph: never a candidate
    other = [entity(A_BOT, n, rng) for n in ("Diego", "Acme")]
    store.apply(plan(A_BOT, other, [relation(A_BOT, other[0], "works_at", other[1], rng)]))
    query = unit(rng)

    def cosine(rel: Relation) -> float:
        v = np.asarray(rel.embedding, dtype=np.float64)
        return float(np.dot(v, query) / (np.linalg.norm(v) * np.linalg.norm(query)))

    job = UpdateQuery(source_id=diego.id, relation="works_at", destination_id=acme.id,
                      vector=query.tolist())  # fmt: skip
    move = UpdateQuery(source_id=diego.id, relation="moved_to", destination_id="nowhere",
                       vector=query.tolist())  # fmt: skip
    blind = UpdateQuery(source_id=diego.id, relation="lives_in", destination_id=acme.id)
    got = store.update_candidates(A, [job, move, blind], 5)
    by_cosine = sorted([*hub, lives], key=lambda r: -cosine(r))  # neither identical nor rival
    assert ids(got[0]) == [same.id, rival.id, *ids(by_cosine[:3])]
    # no identical edge, no rival: Diego's own edges only (the destination is unknown)
    assert ids(got[1]) == ids(sorted([same, rival, lives], key=lambda r: -cosine(r)))
    # no vector: the rival first, then newest first
    assert ids(got[2])[0] == lives.id and len(got[2]) == 5
    assert ids(got[2])[1:] == ids(list(reversed([same, rival, *hub])))[:4]
    assert all(r.embedding is None and r.tenant == A for rows in got for r in rows)
    assert ended.id not in {r.id for rows in got for r in rows}
    assert store.update_candidates(A, [job], 100)[0][:2] == got[0][:2]
    assert len(store.update_candidates(A, [job], 100)[0]) == 3 + len(hub)  # Diego's, Acme's
    assert store.update_candidates(A, [], 5) == []


@pytest.mark.parametrize(
    "vector",
    [[0.0] * DIMS, [float("nan")] * DIMS, [1.0] * (DIMS + 1)],
    ids=["zero", "nan", "other-size"],
)
def test_update_candidates_query_without_direction_scores_0(
    store: Store, rng: np.random.Generator, vector: list[float]
) -> None:
    """A triple's vector that has no direction (zero, not finite) or not the store's size
    scores every edge 0, as a missing one does: its edges come newest first, not an error
    (Neo4j's vector.similarity.cosine refuses such a vector instead of returning null)."""
    diego, acme = entity(A, "Diego", rng), entity(A, "Acme", rng)
    store.apply(plan(A, [diego, acme], [relation(A, diego, f"r{i}", acme, rng) for i in range(3)]))
    for _ in range(2):
        store.apply(plan(A, [], [relation(A, diego, "r9", acme, rng)]))
    query = UpdateQuery(source_id=diego.id, relation="new", destination_id=acme.id)
    blind = store.update_candidates(A, [query], 10)
    shaky = query.model_copy(update={"vector": vector})
    assert ids(store.update_candidates(A, [shaky], 10)[0]) == ids(blind[0])
    assert len(blind[0]) == 5


def test_expand_hops_direction_and_validity(store: Store, rng: np.random.Generator) -> None:
    a, b, c, d, x = (entity(A, n, rng) for n in "abcdx")
    ab = relation(A, b, "knows", a, rng)  # points at the seed: direction must not matter
    bc = relation(A, b, "knows", c, rng)
    cd = relation(A, c, "knows", d, rng)
    ax = relation(A, a, "knew", x, rng)
    xd = relation(A, x, "knows", d, rng)
    store.apply(plan(A, [a, b, c, d, x], [ab, bc, cd, ax, xd]))
    store.apply(plan(A, invalidations=[Invalidation(relation_id=ax.id, invalid_at=T0)]))
    one = walk(store, A, [a.id], 1, CURRENT, 100)
    assert [(r.id, h) for r, h in one] == [(ab.id, 1)]
    two = walk(store, A, [a.id], 2, CURRENT, 100)
    assert [(r.id, h) for r, h in two] == [(ab.id, 1), (bc.id, 2)]
    three = {r.id: h for r, h in walk(store, A, [a.id], 3, CURRENT, 100)}
    assert three == {ab.id: 1, bc.id: 2, cd.id: 3}
    four = {r.id: h for r, h in walk(store, A, [a.id], 4, CURRENT, 100)}
    assert four == {**three, xd.id: 4}  # x is reached around the long way, not via a-x
    every = {r.id: h for r, h in walk(store, A, [a.id], 2, EVERYTHING, 100)}
    assert every == {ab.id: 1, ax.id: 1, bc.id: 2, xd.id: 2}
    assert len(walk(store, A, [a.id], 2, EVERYTHING, 3)) == 3
    assert walk(store, A, [a.id], 2, EVERYTHING, 0) == []
    assert walk(store, A, [a.id], 0, EVERYTHING, 10) == []
    assert walk(store, A, ["missing"], 2, EVERYTHING, 10) == []
    assert walk(store, Tenant(user_id="b"), [a.id], 2, EVERYTHING, 10) == []
    # seeds on both ends of an edge: it is reported once, at hop 1; per seed, newest first
    assert [(r.id, h) for r, h in walk(store, A, [b.id, c.id], 1, CURRENT, 10)] == [
        (bc.id, 1), (ab.id, 1), (cd.id, 1),
    ]  # fmt: skip


def test_expand_keeps_a_hubs_newest_edges(store: Store, rng: np.random.Generator) -> None:
    """A speaker's node gains edges with every message: the cut at `limit` keeps its newest
    (write order, both directions together, across plans and within one), so what the
    expansion sees of it keeps up with the conversation. Invalid edges are not counted."""
    me = entity(A, "me", rng)
    others = [entity(A, f"o{i}", rng) for i in range(12)]
    store.apply(plan(A, [me, *others]))
    written = []  # write order: three plans, edges pointing both ways, two to one neighbour
    for batch in range(3):
        rels = []
        for i in range(4):
            other = others[4 * batch + i]
            rels.append(relation(A, me, "likes", other, rng) if i % 2 else
                        relation(A, other, "knows", me, rng))  # fmt: skip
        rels.append(relation(A, me, "visited", others[0], rng))  # a second edge to o0
        store.apply(plan(A, relations=rels))
        written += rels
    store.apply(plan(A, invalidations=[Invalidation(relation_id=written[-2].id, invalid_at=T0)]))
    current = [r for r in written if r.id != written[-2].id]
    got = [r.id for r, _ in walk(store, A, [me.id], 1, CURRENT, 5)]
    assert got == [r.id for r in reversed(current)][:5]
    refs = store.expand(A, [me.id], 1, CURRENT, 5, vector=unit(rng))
    assert [ref.id for ref in refs] == got
    every = [r.id for r, _ in walk(store, A, [me.id], 1, EVERYTHING, 100)]
    assert every == [r.id for r in reversed(written)]
    later = relation(A, others[5], "knows", me, rng)  # after a walk: it comes first
    store.apply(plan(A, relations=[later]))
    again = [r.id for r, _ in walk(store, A, [me.id], 1, EVERYTHING, 3)]
    assert again == [later.id, *[r.id for r in reversed(written)][:2]]


def _hub_graph(store: Store, rng: np.random.Generator) -> list[Relation]:
    """A hub with 30 spokes (three relation names), spokes linked in pairs, some edges
    invalidated, one edge without an embedding, and another tenant's graph beside it."""
    hub = entity(A, "hub", rng)
    spokes = [entity(A, f"s{i}", rng) for i in range(30)]
    rels = [
        relation(A, s, f"r{i % 3}", hub, rng, valid_from=T0 + timedelta(days=i))
        for i, s in enumerate(spokes)
    ]
    rels += [relation(A, spokes[i], "knows", spokes[i + 1], rng) for i in range(0, 29, 2)]
    rels[4].embedding = None
    store.apply(plan(A, [hub, *spokes], rels))
    cut = [Invalidation(relation_id=rels[i].id, invalid_at=T0 + timedelta(days=i + 5))
           for i in (2, 7, 31)]  # fmt: skip
    store.apply(plan(A, invalidations=cut))
    store.apply(chain(A_BOT, ["x", "y", "z"], rng))
    return rels


def _score_tolerance(store: Store) -> float:
    """The embedded store scores with the retriever's own float32 arithmetic, to the bit;
    Neo4j scores light rows with its cosine in Cypher (no embeddings sent), to ~1e-7."""
    return 0.0 if isinstance(store, EmbeddedGraphStore) else 1e-6


def test_expand_with_a_vector_scores_the_same_walk(store: Store, rng: np.random.Generator) -> None:
    """`expand(..., vector=q)` walks the same edges whatever `q` is, and scores each the way
    the retriever scores a copied record (`edge_score`)."""
    embedded_store = store
    tol = _score_tolerance(store)
    rels = _hub_graph(embedded_store, rng)
    hub, spokes = rels[0].destination_id, [r.source_id for r in rels[:30]]
    cases = [([hub], 1, 100), ([hub], 2, 100), ([spokes[0]], 3, 100), ([hub], 2, 7),
             ([spokes[3], hub], 1, 10), ([hub], 1, 0), (["missing"], 2, 10)]  # fmt: skip
    scored_zero = False
    for validity in (CURRENT, EVERYTHING, Validity(as_of=T0 + timedelta(days=10))):
        for scope in (A, Tenant(user_id="a"), A_BOT):
            for seeds, hops, limit in cases:
                query = unit(rng)
                walked = walk(embedded_store, scope, seeds, hops, validity, limit)
                refs = embedded_store.expand(scope, seeds, hops, validity, limit, vector=query)
                assert all(isinstance(ref, EdgeRef) for ref in refs)
                want = [(r.id, r.source_id, r.relation, r.destination_id, h) for r, h in walked]
                assert [
                    (f.id, f.source_id, f.relation, f.destination_id, f.hop) for f in refs
                ] == want
                assert [f.score for f in refs] == pytest.approx(
                    [edge_score(query, r.embedding) for r, _ in walked], abs=tol, rel=0
                )
                scored_zero |= any(f.id == rels[4].id and f.score == 0.0 for f in refs)
    assert scored_zero  # the edge without an embedding is walked, scored 0


def test_light_similar_entities_are_the_same_hits_without_embeddings(
    store: Store, rng: np.random.Generator
) -> None:
    """`light=True` (entity linking): the same entities, order and scores, no embeddings."""
    tol = _score_tolerance(store)
    store.apply(plan(A, [entity(A, f"e{i}", rng) for i in range(40)]))
    store.apply(plan(A_BOT, [entity(A_BOT, f"bot{i}", rng) for i in range(20)]))
    store.apply(plan(B, [entity(B, f"b{i}", rng) for i in range(20)]))
    for scope, exact in ((A, False), (A, True), (B, False)):
        for k in (0, 1, 5, 100):
            query = unit(rng)
            full = store.similar_entities(scope, query, k, exact=exact)
            light = store.similar_entities(scope, query, k, exact=exact, light=True)
            assert [e.model_copy(update={"embedding": None}) for e, _ in full] == [
                e for e, _ in light
            ]
            assert all(e.embedding is not None for e, _ in full)
            assert all(e.embedding is None for e, _ in light)
            assert [s for _, s in light] == pytest.approx([s for _, s in full], abs=tol, rel=0)


def test_similar_relations_are_the_top_k_by_edge_score(
    store: Store, rng: np.random.Generator
) -> None:
    """The scored read ranks exactly as the retriever's arithmetic over the records would:
    the k best of the edges `validity` accepts (with an embedding), best first (the scores
    to float32 rounding: a matrix product sums in another order than one dot product)."""
    tol = 1e-6
    _hub_graph(store, rng)
    scope = Tenant(user_id="a")
    for validity in (CURRENT, EVERYTHING, Validity(as_of=T0 + timedelta(days=12))):
        edges = [r for r in store.snapshot(scope, validity).relations if r.embedding is not None]
        for k in (0, 1, 5, 100):
            query = unit(rng)
            refs = store.similar_relations(scope, query, k, validity)
            best = sorted(edges, key=lambda r: -edge_score(query, r.embedding))[:k]
            assert [tuple(ref)[:5] for ref in refs] == [
                (r.id, r.source_id, r.relation, r.destination_id, 0) for r in best
            ]
            assert [ref.score for ref in refs] == pytest.approx(
                [edge_score(query, r.embedding) for r in best], abs=tol, rel=0
            )


def test_siblings_read_one_relation_on_one_side_of_each_hub(
    store: Store, rng: np.random.Generator
) -> None:
    """`siblings`: per key (hub, relation, hub_is_destination) the edges into (True) or out of
    (False) the hub with that relation, in key order, then newest first; each edge once (its
    first key); only in-scope edges the validity accepts; cut to `limit`; hop 2; scored by
    `edge_score` (to the bit on the embedded store)."""
    tol = _score_tolerance(store)
    rels = _hub_graph(store, rng)
    hub, spokes = rels[0].destination_id, [r.source_id for r in rels[:30]]
    hub_e, s0 = store.get_entities(A, [hub, spokes[0]])
    # s0's second edge into the hub comes first (newest), though s0 is the hub's first
    # neighbour (the embedded store's adjacency lists a neighbour's edges together)
    late = relation(A, s0, "r1", hub_e, rng)
    store.apply(plan(A, relations=[late]))
    (bot_xy, bot_yz) = store.snapshot(A_BOT, EVERYTHING).relations
    # another tenant's look-alike hub: same name, same relation names
    b_hub = entity(B, "hub", rng)
    b_spokes = [entity(B, f"s{i}", rng) for i in range(4)]
    b_rels = [relation(B, s, f"r{i % 2}", b_hub, rng) for i, s in enumerate(b_spokes)]
    store.apply(plan(B, [b_hub, *b_spokes], b_rels))
    written = [*rels, bot_xy, bot_yz, late, *b_rels]  # write order
    stored = {r.id: r for r in store.get_relations(A, ids(written))}
    stored |= {r.id: r for r in store.get_relations(B, ids(b_rels))}
    assert len(stored) == len(written)

    def expected(
        scope: Tenant, keys: list[tuple[str, str, bool]], validity: Validity, limit: int
    ) -> list[Relation]:
        out: dict[str, Relation] = {}
        for hub_id, name, hub_is_destination in keys:
            for rel in (stored[r.id] for r in reversed(written)):  # newest first
                end = rel.destination_id if hub_is_destination else rel.source_id
                if (end == hub_id and rel.relation == name and rel.id not in out
                        and scope.matches(rel.tenant) and validity.accepts(rel)):  # fmt: skip
                    out[rel.id] = rel
        return list(out.values())[:limit]

    key_sets: list[list[tuple[str, str, bool]]] = [
        [(hub, "r1", True)],
        [(hub, "r1", True), (hub, "r0", True)],  # key order, then newest first
        [(hub, "r0", False)],  # the hub has no outgoing edges
        [(spokes[0], "r0", False), (hub, "r0", True)],  # s0's edge once, for the first key
        [(spokes[0], "knows", False), (spokes[1], "knows", True)],  # the same edge twice
        [(spokes[1], "knows", False)],  # s1 -knows-> nobody
        [(spokes[2], "knows", False), (spokes[2], "r2", False), (hub, "r2", True)],
        [(b_hub.id, "r0", True), (hub, "r0", True)],  # two tenants' hubs
        [(bot_xy.destination_id, "r0", True), (bot_xy.source_id, "r0", False)],
        [("missing", "r0", True), (hub, "r0", True), (hub, "r0", True)],
        [],
    ]
    validities = (CURRENT, EVERYTHING, Validity(as_of=T0 + timedelta(days=10)),
                  Validity(as_of=T0 + timedelta(days=40)))  # fmt: skip
    scopes = (A, A_BOT, B, Tenant(agent_id="bot"), Tenant(user_id="nobody"))
    found = 0
    for validity in validities:
        for scope in scopes:
            for keys in key_sets:
                for limit in (0, 1, 3, 100):
                    query = unit(rng)
                    got = store.siblings(scope, keys, validity, limit, vector=query)
                    want = expected(scope, keys, validity, limit)
                    assert all(isinstance(ref, EdgeRef) for ref in got)
                    assert [tuple(ref)[:5] for ref in got] == [
                        (r.id, r.source_id, r.relation, r.destination_id, 2) for r in want
                    ], (validity, scope, keys, limit)
                    assert [ref.score for ref in got] == pytest.approx(
                        [edge_score(query, r.embedding) for r in want], abs=tol, rel=0
                    )
                    found += len(got)
    assert found > 300

    # the cases above, spelled out
    query = unit(rng)
    r1_current = [late.id] + [rels[i].id for i in range(28, 0, -3) if i != 7]  # newest first
    got = store.siblings(A, [(hub, "r1", True)], CURRENT, 100, vector=query)
    assert ids(got) == r1_current
    assert next(ref.score for ref in got if ref.id == rels[4].id) == 0.0  # no embedding
    got = store.siblings(A, [(hub, "r1", True)], EVERYTHING, 100, vector=query)
    assert ids(got) == [late.id] + [rels[i].id for i in range(28, 0, -3)]
    as_of = Validity(as_of=T0 + timedelta(days=10))  # valid from day i; rels[7] cut on day 12
    got = store.siblings(A, [(hub, "r1", True)], as_of, 100, vector=query)
    assert ids(got) == [late.id] + [rels[i].id for i in (10, 7, 4, 1)]
    got = store.siblings(A, [(hub, "r1", True), (hub, "r0", True)], CURRENT, 12, vector=query)
    assert ids(got) == [*r1_current, rels[27].id, rels[24].id]
    got = store.siblings(A, [(spokes[0], "knows", False), (spokes[1], "knows", True)],
                         CURRENT, 10, vector=query)  # fmt: skip
    assert ids(got) == [rels[30].id]
    assert store.siblings(A, [(hub, "r0", False)], EVERYTHING, 10, vector=query) == []
    assert store.siblings(A, [(hub, "r0", True)], CURRENT, 0, vector=query) == []
    mixed = [(b_hub.id, "r0", True), (hub, "r0", True)]
    assert {r.tenant for r in store.get_relations(
        B, ids(store.siblings(B, mixed, EVERYTHING, 100, vector=query)))} == {B}  # fmt: skip
    assert ids(store.siblings(B, mixed, EVERYTHING, 100, vector=query)) == [
        b_rels[2].id, b_rels[0].id
    ]  # fmt: skip
    a_side = ids(store.siblings(A, mixed, EVERYTHING, 100, vector=query))
    assert a_side == [rels[i].id for i in range(27, -1, -3)]
    bot_keys = [(bot_xy.destination_id, "r0", True), (hub, "r0", True)]
    assert ids(store.siblings(A_BOT, bot_keys, EVERYTHING, 100, vector=query)) == [bot_xy.id]
    assert ids(store.siblings(A, bot_keys, EVERYTHING, 3, vector=query)) == [
        bot_xy.id, rels[27].id, rels[24].id
    ]  # fmt: skip


# ---------------------------------------------------------------- plan contents


def test_alias_updates_append_without_duplicates(store: Store, rng: np.random.Generator) -> None:
    bob = entity(A, "Robert", rng)
    bob.aliases, bob.keys = ["Rob"], ["robert", "rob"]
    store.apply(plan(A, [bob]))
    later = T0 + timedelta(days=3)
    update = AliasUpdate(entity_id=bob.id, aliases=["Bob", "Rob", "Bob"], keys=["bob", "rob"])
    store.apply(plan(A, alias_updates=[update], updated_at=later))
    got = store.get_entities(A, [bob.id])[0]
    assert got.aliases == ["Rob", "Bob"]
    assert got.keys == ["robert", "rob", "bob"]
    assert got.updated_at == later and got.created_at == bob.created_at
    assert got.embedding == bob.embedding
    assert ids(store.find_entities(A, ["bob"], exact=True)) == [bob.id]
    # an alias update may also target an entity created by the same plan
    carol = entity(A, "Caroline", rng)
    store.apply(plan(A, [carol], alias_updates=[AliasUpdate(entity_id=carol.id, aliases=["Caz"],
                                                             keys=["caz"])]))  # fmt: skip
    assert store.find_entities(A, ["caz"])[0].aliases == ["Caz"]


def test_mentions_and_invalidations(store: Store, rng: np.random.Generator) -> None:
    p = chain(A, ["Alice", "Acme"], rng)
    store.apply(p)
    rel = p.new_relations[0]
    query = np.asarray(rel.embedding, dtype=np.float32)
    assert similar(store, A, query, 1, CURRENT)[0][0].id == rel.id  # builds the matrix
    seen = [Provenance(episode_id=f"ep{i}", timestamp=T0 + timedelta(hours=i)) for i in range(2)]
    for i, prov in enumerate(seen):
        store.apply(plan(A, mentions=[MentionUpdate(relation_id=rel.id, provenance=prov)],
                         updated_at=T0 + timedelta(days=i + 1)))  # fmt: skip
    got = store.get_relations(A, [rel.id])[0]
    assert got.mentions == 3 and got.provenance == seen
    assert got.updated_at == T0 + timedelta(days=2) and got.invalid_at is None
    when = T0 + timedelta(days=9)
    store.apply(plan(A, invalidations=[Invalidation(relation_id=rel.id, invalid_at=when)],
                     updated_at=when))  # fmt: skip
    got = store.get_relations(A, [rel.id])[0]
    assert got.invalid_at == when and got.updated_at == when and got.mentions == 3
    assert similar(store, A, query, 5, CURRENT) == []
    assert similar(store, A, query, 5, EVERYTHING)[0][0].id == rel.id


@pytest.mark.parametrize(
    "bad",
    [
        "foreign_entity",
        "foreign_endpoint",
        "unknown_endpoint",
        "unknown_invalidation",
        "unknown_mention",
        "unknown_alias_target",
        "duplicate_entity",
        "duplicate_episode",
        "wrong_dims",
        "foreign_entity_event",
        "duplicate_entity_event",
    ],
)
def test_invalid_plans_are_rejected_whole(
    store: Store, open_store: Callable[..., Store], rng: np.random.Generator, bad: str
) -> None:
    base, other = chain(A, ["Alice", "Acme"], rng), chain(B, ["Bob"], rng)
    store.apply(base)
    store.apply(other)
    before = (store.snapshot(Tenant(user_id="a"), EVERYTHING), store.stats())
    fresh = entity(A, "Fresh", rng)
    alice, bob = base.new_entities[0], other.new_entities[0]
    renamed = EntityEvent(entity_id=fresh.id, tenant=A, event="RENAME", old_name="F", new_name="G")
    prov = Provenance(episode_id="e", timestamp=T0)
    kw: dict[str, Any] = {
        "foreign_entity": {"entities": [fresh, entity(B, "Sneaky", rng)]},
        "foreign_endpoint": {"entities": [fresh], "relations": [relation(A, alice, "x", bob, rng)]},
        "unknown_endpoint": {
            "entities": [fresh],
            "relations": [relation(A, alice, "x", entity(A, "Ghost", rng), rng)],
        },
        "unknown_invalidation": {"invalidations": [Invalidation(relation_id="no", invalid_at=T0)]},
        "unknown_mention": {"mentions": [MentionUpdate(relation_id="no", provenance=prov)]},
        "unknown_alias_target": {
            "alias_updates": [AliasUpdate(entity_id=bob.id, aliases=["x"], keys=["x"])]
        },
        "duplicate_entity": {"entities": [fresh, alice]},
        "duplicate_episode": {},
        "wrong_dims": {"entities": [fresh, Entity(tenant=A, name="W", embedding=[1.0, 0.0])]},
        # a restore's entity history (import): the plan's tenant's only, each event once
        "foreign_entity_event": {
            "entities": [fresh],
            "entity_events": [renamed.model_copy(update={"tenant": B})],
        },
        "duplicate_entity_event": {"entities": [fresh], "entity_events": [renamed, renamed]},
    }[bad]
    bad_plan = plan(A, **kw)
    if bad == "duplicate_episode":
        bad_plan.episode = base.episode
        bad_plan.new_entities = [fresh]
    with pytest.raises(StoreError):
        store.apply(bad_plan)
    assert (store.snapshot(Tenant(user_id="a"), EVERYTHING), store.stats()) == before
    assert store.find_entities(A, ["fresh"]) == []
    with open_store() as again:
        assert again.stats() == before[1]


def test_every_write_of_a_tenant_moves_its_version_and_a_stale_plan_writes_nothing(
    store: Store, open_store: Callable[..., Store], rng: np.random.Generator
) -> None:
    """The optimistic check of several writers (docs/architecture.md): a plan records the
    exact tenant's version it was made from; any write of that tenant (a plan, a fact edit, a
    merge, a split, a delete) moves the version, from this store or another connection, so
    the stale plan is refused with PlanConflict and nothing of it is written. Other tenants'
    writes leave the version alone."""
    seen = [store.tenant_version(A)]

    def moved() -> str:
        version = store.tenant_version(A)
        assert version not in seen
        seen.append(version)
        return version

    base = chain(A, ["Alice", "Acme", "Bob"], rng)
    base.based_on = seen[0]
    store.apply(base)
    stale = moved()
    store.apply(chain(A_BOT, ["Other"], rng))  # another exact tenant of the same user
    store.apply(chain(B, ["Bob"], rng))
    assert store.tenant_version(A) == stale
    note = fact(A, "Alice works at Acme", rng)
    store.apply(fact_plan(A, [note]))
    moved()
    store.apply(WritePlan(tenant=A, fact_changes=[FactChange(fact_id=note.id, text="Alice left")],
                          fact_events=[FactEvent(fact_id=note.id, tenant=A, event="UPDATE",
                                                 new_text="Alice left", at=T0)]))  # fmt: skip
    moved()
    _, acme, bob = base.new_entities
    merged = store.merge_entities(A, acme.id, bob.id)
    moved()
    store.split_entity(A, merged.merge_id)
    moved()
    with open_store() as other:  # another connection (another process's store)
        other.apply(chain(A, ["Carol"], rng))
    now = moved()
    before = (store.snapshot(Tenant(user_id="a"), EVERYTHING), store.stats())
    late = chain(A, ["Dora", "Eve"], rng)
    late.based_on = stale
    with pytest.raises(PlanConflict):
        store.apply(late)
    assert (store.snapshot(Tenant(user_id="a"), EVERYTHING), store.stats()) == before
    assert store.find_entities(A, ["dora"]) == [] and store.tenant_version(A) == now
    late.based_on = now
    store.apply(late)  # made again from the version it now reads: written
    assert len(store.find_entities(A, ["dora"])) == 1
    last = moved()
    store.delete_tenant(A)
    # (Neo4j: an empty tenant's version again, as before its first write; a plan made from
    # the empty tenant may apply to it, a plan made from what was deleted may not)
    assert store.tenant_version(A) != last
    gone = chain(A, ["Zed"], rng)
    gone.based_on = last
    with pytest.raises(PlanConflict):  # planned before the delete: never applied after it
        store.apply(gone)


def test_apply_many_writes_every_tenant_in_one_transaction(
    store: Store, open_store: Callable[..., Store], rng: np.random.Generator
) -> None:
    """A bulk load's batch (an archive import): several tenants' plans, graph and facts, each
    written as `apply` would, and each tenant's version moved."""
    tenants = [A, A_BOT, B]
    versions = [store.tenant_version(t) for t in tenants]
    plans = [chain(t, [f"P{i}", f"Q{i}"], rng) for i, t in enumerate(tenants)]
    for i, p in enumerate(plans):
        p.new_facts = [fact(p.tenant, f"fact {i}", rng)]
        p.fact_events = added(*p.new_facts)
    store.apply_many(plans)
    assert [store.tenant_version(t) for t in tenants] != versions
    for p in plans:
        assert store.get_entities(p.tenant, ids(p.new_entities)) == p.new_entities
        assert store.get_relations(p.tenant, ids(p.new_relations)) == p.new_relations
        assert texts(store.get_facts(p.tenant, ids(p.new_facts))) == [p.new_facts[0].text]
        assert [e for e in store.episodes(p.tenant) if e.tenant == p.tenant] == [p.episode]
    assert sorted(store.tenants(), key=lambda t: t.key) == sorted(tenants, key=lambda t: t.key)
    with open_store() as again:
        assert again.stats().entities == 6 and again.stats().episodes == 3
    store.apply_many([])  # nothing to write
    assert store.stats().entities == 6


@pytest.mark.parametrize("bad", ["stale_version", "unknown_endpoint", "same_tenant_twice"])
def test_apply_many_writes_nothing_when_one_plan_is_refused(
    store: Store, open_store: Callable[..., Store], rng: np.random.Generator, bad: str
) -> None:
    """All of a batch or none of it: the plans before and after the refused one are not
    written either."""
    store.apply(chain(A, ["Alice"], rng))
    before = (store.snapshot(Tenant(user_id="a"), EVERYTHING), store.stats(), store.tenants())
    good = [chain(A_BOT, ["P", "Q"], rng), chain(B, ["R"], rng)]
    good[1].new_facts = [fact(B, "kept nowhere", rng)]
    good[1].fact_events = added(*good[1].new_facts)
    if bad == "stale_version":
        refused = chain(A, ["Fresh"], rng)
        refused.based_on = "not the version"
    elif bad == "unknown_endpoint":
        fresh = entity(A, "Fresh", rng)
        refused = plan(
            A, entities=[fresh], relations=[relation(A, fresh, "x", entity(A, "G", rng), rng)]
        )
    else:
        refused = chain(A_BOT, ["Twice"], rng)
    with pytest.raises(StoreError):
        store.apply_many([good[0], refused, good[1]])
    assert (
        store.snapshot(Tenant(user_id="a"), EVERYTHING),
        store.stats(),
        store.tenants(),
    ) == before
    assert store.facts(B) == [] and store.episodes(B) == []
    with open_store() as again:
        assert again.stats() == before[1]


def test_reopen_restores_everything(
    open_store: Callable[..., Store], rng: np.random.Generator
) -> None:
    plus2 = timezone(timedelta(hours=2))
    store = open_store()
    p1 = chain(A, ["Alice", "Acme", "Berlin"], rng)
    p1.episode = Episode(
        tenant=A, messages=[Message(role="user", content="hi", name="al", timestamp=T0),
                            Message(role="assistant", content="hello")],
        timestamp=datetime(2024, 5, 1, 9, 30, tzinfo=plus2),
    )  # fmt: skip
    p1.new_relations[0].valid_from = datetime(2020, 2, 2, tzinfo=plus2)
    store.apply(p1)
    store.apply(chain(A_BOT, ["Robot"], rng))
    store.apply(chain(B, ["Bob", "Bmw"], rng))
    r0, r1 = p1.new_relations
    store.apply(plan(
        A,
        alias_updates=[AliasUpdate(entity_id=p1.new_entities[0].id, aliases=["Al"], keys=["al"])],
        invalidations=[Invalidation(relation_id=r0.id, invalid_at=datetime(2024, 6, 1,
                                                                         tzinfo=plus2))],
        mentions=[MentionUpdate(relation_id=r1.id,
                                provenance=Provenance(episode_id="e9", timestamp=T0))],
        updated_at=datetime(2024, 6, 2, 12, tzinfo=plus2),
    ))  # fmt: skip
    scopes = (A, A_BOT, B, Tenant(agent_id="bot"))
    before = {s: (store.snapshot(s, EVERYTHING), store.episodes(s)) for s in scopes}
    query = unit(rng)
    hits = similar(store, A, query, 3, EVERYTHING)
    stats, tenants = store.stats(), store.tenants()
    store.close()
    store.close()  # idempotent

    with open_store() as again:
        assert {s: (again.snapshot(s, EVERYTHING), again.episodes(s)) for s in scopes} == before
        assert again.stats() == stats and again.tenants() == tenants
        assert again.dims == DIMS
        assert similar(again, A, query, 3, EVERYTHING) == hits
        assert ids(again.find_entities(A, ["al"])) == [p1.new_entities[0].id]
        got = again.get_relations(A, [r0.id, r1.id])
        assert got[0].invalid_at == datetime(2024, 6, 1, tzinfo=plus2)
        # the same instants; the embedded store keeps the offset, Neo4j answers in UTC
        offset = timedelta(hours=2 if isinstance(again, EmbeddedGraphStore) else 0)
        assert got[0].invalid_at.utcoffset() == offset
        assert got[0].valid_from.utcoffset() == offset
        assert got[1].mentions == 2 and got[1].provenance[-1].episode_id == "e9"
        assert got[1].embedding == r1.embedding
        ep = again.episodes(A)[0]
        assert ep.timestamp.utcoffset() == offset
        assert ep.messages[0].name == "al" and ep.messages[1].role == "assistant"
        walked = walk(again, A, [p1.new_entities[2].id], 2, EVERYTHING, 10)
        assert [(r.id, hop) for r, hop in walked] == [(r1.id, 1), (r0.id, 2)]
    with pytest.raises(StoreError, match="dimensional"):
        open_store(dims=DIMS * 2).stats()  # the neo4j store connects on first use


# ---------------------------------------------------------------- concurrency and lifecycle


def test_concurrent_applies_produce_the_union(
    store: Store, open_store: Callable[..., Store], rng: np.random.Generator
) -> None:
    plans = [
        chain(A if i % 2 else Tenant(user_id="a", run_id=f"t{i % 4}"), [f"x{i}", f"y{i}"], rng)
        for i in range(120)
    ]
    errors: list[BaseException] = []
    query = unit(rng)

    def writer(mine: list[WritePlan]) -> None:
        try:
            for p in mine:
                store.apply(p)
                similar(store, A, query, 3, CURRENT)
        except BaseException as exc:  # pragma: no cover - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(plans[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    want_e = {e.id for p in plans for e in p.new_entities}
    want_r = {r.id for p in plans for r in p.new_relations}
    snap = store.snapshot(Tenant(user_id="a"), EVERYTHING)
    assert set(ids(snap.entities)) == want_e and set(ids(snap.relations)) == want_r
    assert store.stats().episodes == 120 and store.stats().entities == 240
    with open_store() as again:
        assert again.snapshot(Tenant(user_id="a"), EVERYTHING) == snap


def test_delete_tenant_leaves_others_intact(
    store: Store, open_store: Callable[..., Store], rng: np.random.Generator
) -> None:
    pa, pbot, pb = (chain(t, ["P", "Q", "R"], rng) for t in (A, A_BOT, B))
    for p in (pa, pbot, pb):
        store.apply(p)
    keep = (store.snapshot(B, EVERYTHING), store.episodes(B))
    assert store.delete_tenant(Tenant(user_id="a")) == 10  # 2 tenants x (3 entities + 2 edges)
    assert store.tenants() == [B]
    assert store.get_entities(A, ids(pa.new_entities)) == []
    assert store.find_entities(A, ["p"]) == [] and store.episodes(A) == []
    assert (store.snapshot(B, EVERYTHING), store.episodes(B)) == keep
    seed = pb.new_entities[0].id
    assert ids([r for r, _ in walk(store, B, [seed], 2, CURRENT, 10)]) == ids(pb.new_relations)
    assert len(store.similar_entities(B, unit(rng), 10)) == 3
    assert store.delete_tenant(Tenant(user_id="nobody")) == 0
    with open_store() as again:
        assert again.tenants() == [B] and again.stats().entities == 3
    store.apply(chain(A, ["P"], rng))  # ids of the deleted tenant can be reused later
    assert store.stats(A).entities == 1


def test_reset_empties_the_store(
    store: Store, open_store: Callable[..., Store], rng: np.random.Generator
) -> None:
    store.apply(chain(A, ["P", "Q"], rng))
    store.reset()
    assert store.stats().entities == 0 and store.tenants() == []
    with open_store() as again:
        assert again.stats().episodes == 0


def test_sees_commits_of_another_connection(
    store: Store, open_store: Callable[..., Store], rng: np.random.Generator
) -> None:
    store.apply(chain(A, ["P"], rng))
    with open_store() as other:
        other.apply(chain(B, ["Q", "R"], rng))
    assert store.tenants() == [A, B]
    assert store.stats(B).relations == 1


def test_closed_store_raises(store: Store, rng: np.random.Generator) -> None:
    p = chain(A, ["P", "Q"], rng)
    store.apply(p)
    store.close()
    store.close()
    vec = unit(rng)
    calls = [
        lambda: store.apply(chain(A, ["Z"], rng)),
        lambda: store.get_entities(A, ids(p.new_entities)),
        lambda: store.get_relations(A, ids(p.new_relations)),
        lambda: store.find_entities(A, ["p"]),
        lambda: store.similar_entities(A, vec, 3),
        lambda: similar(store, A, vec, 3, CURRENT),
        lambda: store.relations_touching(A, ids(p.new_entities), CURRENT),
        lambda: walk(store, A, ids(p.new_entities), 1, CURRENT, 5),
        lambda: store.siblings(A, [(p.new_entities[1].id, "r0", True)], CURRENT, 5, vector=vec),
        lambda: store.snapshot(A, CURRENT),
        lambda: store.episodes(A),
        lambda: store.delete_tenant(A),
        lambda: store.reset(),
        lambda: store.stats(),
        lambda: store.tenants(),
    ]
    for call in calls:
        with pytest.raises(StoreError, match="closed"):
            call()


# ---------------------------------------------------------------- the fact memory (Mem0)
# facts written through `apply` with their history, vector search, plan validation, atomicity
# with the graph part, the message window, summaries, durability, delete_tenant and reset

R1 = Tenant(user_id="a", run_id="r1")
R2 = Tenant(user_id="a", run_id="r2")


BAD_PLANS = [
    "unknown_change",
    "foreign_change",
    "wider_tenant_change",  # A_BOT's fact, in a plan of A: a change needs the exact tenant
    "change_after_delete",
    "foreign_new_fact",
    "duplicate_new_fact",
    "reused_deleted_fact_id",
    "foreign_event",
    "event_of_unknown_fact",
    "event_of_foreign_fact",
    "duplicate_event",
    "wrong_dims_new_fact",
    "wrong_dims_change",
]


def test_apply_facts_and_read_back(store: Store, rng: np.random.Generator) -> None:
    assert isinstance(store, GraphStore)
    first = [fact(A, "Likes tea", rng, created_at=T0), fact(A, "Lives in Berlin", rng)]
    p = chain(A, ["Alice", "Acme"], rng)
    p.new_facts, p.fact_events = first, added(*first)
    store.apply(p)
    older = fact(A, "Was born in 1990", rng, created_at=T0 - timedelta(days=1))
    store.apply(fact_plan(A, [older]))
    assert store.get_facts(A, [first[1].id, first[0].id, "missing"]) == [first[1], first[0]]
    assert store.facts(A) == [older, *first]  # oldest first
    assert store.get_facts(B, ids(first)) == [] and store.facts(B) == []
    history = store.fact_history(A, first[0].id)
    assert [(e.event, e.new_text, e.episode_id) for e in history] == [("ADD", "Likes tea", None)]
    assert store.snapshot(A, EVERYTHING).entities == p.new_entities  # the graph part too
    # reads are copies with the embedding attached
    got = store.get_facts(A, [first[0].id])[0]
    assert got.embedding == first[0].embedding
    got.embedding[0], got.text = 42.0, "changed"
    got.provenance.append(Provenance(episode_id="x", timestamp=T0))
    store.fact_history(A, first[0].id)[0].new_text = "changed"
    first[0].text = "changed after apply"
    again = store.get_facts(A, [first[0].id])[0]
    assert again.text == "Likes tea" and again.embedding[0] != 42.0 and again.provenance == []
    assert store.fact_history(A, first[0].id)[0].new_text == "Likes tea"


def test_update_and_delete_keep_history(
    store: Store, rng: np.random.Generator, reopen: Reopen
) -> None:
    tea, city = fact(A, "Likes tea", rng), fact(A, "Lives in Berlin", rng)
    ep = talk(A, "I moved")
    store.apply(fact_plan(A, [tea, city]))
    query = np.asarray(tea.embedding, dtype=np.float32)
    assert store.similar_facts(A, query, 1)[0][0].id == tea.id  # builds the matrix
    later, new_vec = T0 + timedelta(days=5), unit(rng)
    update = FactChange(fact_id=city.id, text="Lives in Paris", embedding=new_vec.tolist())
    relabel = FactChange(fact_id=tea.id, text="Likes green tea")  # keeps its embedding
    events = [
        FactEvent(fact_id=city.id, tenant=A, event="UPDATE", old_text="Lives in Berlin",
                  new_text="Lives in Paris", episode_id=ep.id, at=later),
        FactEvent(fact_id=tea.id, tenant=A, event="UPDATE", old_text="Likes tea",
                  new_text="Likes green tea", actor="user", at=later),
    ]  # fmt: skip
    store.apply(WritePlan(tenant=A, episode=ep, fact_changes=[update, relabel],
                          fact_events=events, updated_at=later))  # fmt: skip
    got = {f.id: f for f in store.facts(A)}
    assert got[city.id].text == "Lives in Paris" and got[city.id].updated_at == later
    assert got[city.id].created_at == city.created_at
    assert got[city.id].embedding == pytest.approx(new_vec.tolist())
    assert got[tea.id].text == "Likes green tea" and got[tea.id].embedding == tea.embedding
    hit, score = store.similar_facts(A, new_vec, 1)[0]
    assert hit.id == city.id and score == pytest.approx(1.0, abs=1e-5)  # new vector searched
    gone = FactEvent(fact_id=city.id, tenant=A, event="DELETE", old_text="Lives in Paris",
                     at=later + timedelta(days=1))  # fmt: skip
    store.apply(fact_plan(A, changes=[FactChange(fact_id=city.id)], events=[gone]))
    assert ids(store.facts(A)) == [tea.id]
    assert store.get_facts(A, [city.id]) == []
    assert city.id not in ids([f for f, _ in store.similar_facts(A, new_vec, 10)])
    history = store.fact_history(A, city.id)  # still there after the delete, in write order
    assert [(e.event, e.old_text, e.new_text) for e in history] == [
        ("ADD", None, "Lives in Berlin"),
        ("UPDATE", "Lives in Berlin", "Lives in Paris"),
        ("DELETE", "Lives in Paris", None),
    ]
    assert history[1].episode_id == ep.id and history[1].actor == "llm"
    assert store.fact_history(Tenant(user_id="a"), city.id) == history  # a filter scope
    assert store.fact_history(B, city.id) == [] and store.fact_history(A_BOT, city.id) == []
    assert store.fact_history(A, "missing") == []
    # the deleted fact's history keeps its tenant listed, live and after a reopen
    with reopen(store) as again:
        assert again.fact_history(A, city.id) == history
        assert again.facts(A) == store.facts(A)
        assert again.tenants() == store.tenants() == [A]


def test_changes_to_facts_new_in_the_same_plan(
    store: Store, rng: np.random.Generator, reopen: Reopen
) -> None:
    kept, dropped = fact(A, "draft", rng), fact(A, "mistake", rng)
    changes = [
        FactChange(fact_id=kept.id, text="first edit"),
        FactChange(fact_id=kept.id, text="final"),
        FactChange(fact_id=dropped.id),
    ]
    events = [*added(kept, dropped), FactEvent(fact_id=dropped.id, tenant=A, event="DELETE")]
    store.apply(fact_plan(A, [kept, dropped], changes, events))
    assert texts(store.facts(A)) == ["final"]
    assert [e.event for e in store.fact_history(A, dropped.id)] == ["ADD", "DELETE"]
    with reopen(store) as again:
        assert texts(again.facts(A)) == ["final"] and again.get_facts(A, [dropped.id]) == []


def test_similar_facts_matches_brute_force_within_scope(
    store: Store, rng: np.random.Generator
) -> None:
    mine = [fact(A, f"a{i}", rng) for i in range(60)]
    bots = [fact(A_BOT, f"bot{i}", rng) for i in range(15)]
    store.apply(fact_plan(A, mine[:30]))
    store.apply(fact_plan(A, mine[30:]))
    store.apply(fact_plan(A_BOT, bots))
    store.apply(fact_plan(B, [fact(B, f"b{i}", rng) for i in range(40)]))
    store.apply(fact_plan(A, [Fact(tenant=A, text="no vector")]))

    def brute(pool: list[Fact], query: np.ndarray, k: int) -> tuple[list[str], list[float]]:
        scores = np.array([f.embedding for f in pool], dtype=np.float32) @ query
        order = np.argsort(-scores)[:k]
        return [pool[i].id for i in order], [float(scores[i]) for i in order]

    for _ in range(5):
        query = unit(rng)
        for k in (1, 7, 60, 100):
            for scope, exact, pool in (
                (A, True, mine),
                (Tenant(user_id="a"), False, mine + bots),
                (A_BOT, True, bots),
                (Tenant(agent_id="bot"), False, bots),
            ):
                got = store.similar_facts(scope, query, k, exact=exact)
                want_ids, want_scores = brute(pool, query, k)
                assert ids([f for f, _ in got]) == want_ids, (scope, exact, k)
                assert [s for _, s in got] == pytest.approx(want_scores, abs=1e-5)
                assert all(f.embedding is not None for f, _ in got)
    assert all(f.tenant == B for f, _ in store.similar_facts(B, unit(rng), 100))
    assert store.similar_facts(Tenant(user_id="nobody"), unit(rng), 5) == []
    assert store.similar_facts(Tenant(user_id="a", agent_id="bot"), unit(rng), 5, exact=True) == []
    assert store.similar_facts(A, unit(rng), 0) == []
    # a write after a search shows up in the next one (the cached matrix is dropped)
    late = fact(A, "late", rng)
    store.apply(fact_plan(A, [late]))
    query = np.asarray(late.embedding, dtype=np.float32)
    assert store.similar_facts(A, query, 1, exact=True)[0] == (late, pytest.approx(1.0, abs=1e-5))
    with pytest.raises(StoreError):
        store.similar_facts(A, np.ones(DIMS + 1, dtype=np.float32), 3)


def test_similar_facts_with_a_hub_are_corrected_where_the_vectors_are(
    store: Store, rng: np.random.Generator
) -> None:
    """`similar_facts(hub=)`: the same k facts as without it, re-scored as cosine - penalty x
    cos(fact, centre) and re-sorted, and no embedding sent back; a fact without a vector, or
    with a zero one, is never nearer the centre than 0."""
    pool = [fact(A, f"a{i}", rng) for i in range(40)]
    zero = Fact(tenant=A, text="zero", embedding=[0.0] * DIMS)
    store.apply(fact_plan(A, [*pool, zero, Fact(tenant=A, text="no vector")]))
    store.apply(fact_plan(B, [fact(B, f"b{i}", rng) for i in range(20)]))
    by_id = {f.id: np.asarray(f.embedding, dtype=np.float32) for f in [*pool, zero]}
    for _ in range(4):
        query, centre = unit(rng), unit(rng)
        for k, penalty in ((5, 0.25), (20, 0.5), (60, 1.0)):
            plain = store.similar_facts(A, query, k)
            got = store.similar_facts(A, query, k, hub=Hub(centre, penalty))
            assert sorted(ids([f for f, _ in got])) == sorted(ids([f for f, _ in plain]))
            assert all(f.embedding is None and f.tenant == A for f, _ in got)
            want = sorted(
                ((f.id, score - penalty * float(by_id[f.id] @ centre)) for f, score in plain),
                key=lambda hit: -hit[1],
            )
            assert [score for _, score in got] == pytest.approx([s for _, s in want], abs=1e-5)
            assert ids([f for f, _ in got]) == [i for i, _ in want] or _near_ties(want)
    # the hub never leaks another tenant's facts in
    assert all(
        f.tenant == B for f, _ in store.similar_facts(B, unit(rng), 50, hub=Hub(unit(rng), 1))
    )


def _near_ties(ranking: list[tuple[str, float]]) -> bool:
    """Two neighbours within float error of each other may come in either order."""
    return any(abs(a[1] - b[1]) < 1e-5 for a, b in itertools.pairwise(ranking))


def test_similar_facts_follow_adds_updates_and_deletes(
    store: Store, rng: np.random.Generator, reopen: Reopen
) -> None:
    """Searches between writes see every add, re-embedding update and delete (the embedded
    store updates its fact matrix in place), and agree with a store opened afresh."""
    live: dict[str, tuple[Tenant, np.ndarray]] = {}  # fact id -> tenant, current vector

    def check(s: Store) -> None:
        query = unit(rng)
        for scope, exact, tenants in ((A, True, {A}), (USER_A, False, {A, A_BOT})):
            pool = [(i, v) for i, (t, v) in live.items() if t in tenants]
            scores = np.array([v for _, v in pool], dtype=np.float32).reshape(-1, DIMS) @ query
            order = np.argsort(-scores)[:10]
            got = s.similar_facts(scope, query, 10, exact=exact)
            assert ids([f for f, _ in got]) == [pool[i][0] for i in order]
            assert [sc for _, sc in got] == pytest.approx([scores[i] for i in order], abs=1e-5)
            # the kept sum of the scope's unit vectors (the hubness correction's centroid)
            total = s.fact_vector_sum(scope, exact=exact)
            want = np.sum([v / np.linalg.norm(v) for _, v in pool], axis=0, dtype=np.float64)
            assert total is not None and total == pytest.approx(want, abs=1e-5)
        assert s.fact_vector_sum(B) is None  # another user's scope: nothing of a's

    step = 0
    for round_ in range(6):
        for tenant in (A, A_BOT):
            new = [fact(tenant, f"fact {round_} {i}", rng) for i in range(8)]
            store.apply(fact_plan(tenant, new))
            live.update((f.id, (tenant, np.asarray(f.embedding, dtype=np.float32))) for f in new)
            check(store)
            mine = [i for i, (t, _) in live.items() if t == tenant]
            moved = [mine[j] for j in range(0, len(mine), 3)]
            changes = []
            for fact_id in moved:
                vec = unit(rng)
                changes.append(FactChange(fact_id=fact_id, text=f"moved {step}",
                                          embedding=vec.tolist()))  # fmt: skip
                live[fact_id] = (tenant, vec)
                step += 1
            gone = [i for i in mine if i not in moved][: 3 + round_]
            changes += [FactChange(fact_id=i) for i in gone]
            for fact_id in gone:
                del live[fact_id]
            store.apply(fact_plan(tenant, changes=changes, events=[]))
            check(store)
    with reopen(store) as again:
        check(again)
        check(store)


@pytest.mark.parametrize("bad", BAD_PLANS)
def test_invalid_fact_plans_write_nothing(
    store: Store, rng: np.random.Generator, reopen: Reopen, bad: str
) -> None:
    ours, theirs, bots = fact(A, "ours", rng), fact(B, "theirs", rng), fact(A_BOT, "bot", rng)
    old = fact(A, "old", rng)
    store.apply(fact_plan(A, [ours, old]))
    store.apply(fact_plan(B, [theirs]))
    store.apply(fact_plan(A_BOT, [bots]))
    store.apply(fact_plan(A, changes=[FactChange(fact_id=old.id)], events=[]))
    store.set_summary(Summary(tenant=A, text="s", messages_covered=1))
    before = scope_state(store)
    # every bad plan also carries a valid graph part and a valid new fact
    fresh = fact(A, "fresh", rng)
    p = chain(A, ["Fresh", "Newer"], rng)
    p.new_facts, p.fact_events = [fresh], added(fresh)
    event = FactEvent(fact_id=ours.id, tenant=A, event="UPDATE", new_text="x")
    if bad == "unknown_change":
        p.fact_changes = [FactChange(fact_id="missing", text="x")]
    elif bad == "foreign_change":
        p.fact_changes = [FactChange(fact_id=theirs.id, text="x")]
    elif bad == "wider_tenant_change":
        p.fact_changes = [FactChange(fact_id=bots.id)]
    elif bad == "change_after_delete":
        p.fact_changes = [FactChange(fact_id=ours.id), FactChange(fact_id=ours.id, text="x")]
    elif bad == "foreign_new_fact":
        p.new_facts.append(fact(B, "sneaky", rng))
    elif bad == "duplicate_new_fact":
        p.new_facts.append(ours.model_copy(update={"text": "again"}))
    elif bad == "reused_deleted_fact_id":
        p.new_facts.append(old.model_copy(update={"text": "again"}))
    elif bad == "foreign_event":
        p.fact_events.append(event.model_copy(update={"tenant": B}))
    elif bad == "event_of_unknown_fact":
        p.fact_events.append(event.model_copy(update={"fact_id": "missing"}))
    elif bad == "event_of_foreign_fact":
        p.fact_events.append(event.model_copy(update={"fact_id": theirs.id}))
    elif bad == "duplicate_event":
        p.fact_events.append(store.fact_history(A, ours.id)[0])
    elif bad == "wrong_dims_new_fact":
        p.new_facts.append(Fact(tenant=A, text="w", embedding=[1.0, 0.0]))
    elif bad == "wrong_dims_change":
        p.fact_changes = [FactChange(fact_id=ours.id, text="x", embedding=[1.0, 0.0])]
    sums = [store.fact_vector_sum(t, exact=True) for t in (A, A_BOT, B)]
    with pytest.raises(StoreError):
        store.apply(p)
    assert scope_state(store) == before
    for t, total in zip((A, A_BOT, B), sums, strict=True):  # the kept sums did not move
        assert store.fact_vector_sum(t, exact=True) == pytest.approx(total, abs=1e-9)
    assert store.get_facts(A, [fresh.id]) == [] and store.find_entities(A, ["fresh"]) == []
    assert texts(store.get_facts(Tenant(user_id="a"), [ours.id, bots.id])) == ["ours", "bot"]
    with reopen(store) as again:
        assert scope_state(again) == before


def test_plans_without_an_episode(store: Store, rng: np.random.Generator, reopen: Reopen) -> None:
    tea = fact(A, "Likes tea", rng)
    store.apply(fact_plan(A, [tea]))
    edit = FactEvent(fact_id=tea.id, tenant=A, event="UPDATE", old_text="Likes tea",
                     new_text="Likes coffee", actor="user")  # fmt: skip
    store.apply(fact_plan(A, changes=[FactChange(fact_id=tea.id, text="Likes coffee")],
                          events=[edit], episode=False))  # fmt: skip
    assert texts(store.facts(A)) == ["Likes coffee"]
    assert store.stats(A).episodes == 1 and store.message_count(A) == 1
    assert store.fact_history(A, tea.id)[-1].actor == "user"
    # a tenant whose only records come from direct edits (no conversation at all)
    solo = fact(B, "imported", rng)
    store.apply(fact_plan(B, [solo], episode=False))
    store.apply(WritePlan(tenant=B, new_entities=[entity(B, "Bob", rng)]))  # graph, no episode
    assert store.tenants() == [A, B] and store.episodes(B) == []
    assert store.message_count(B) == 0 and store.recent_messages(B, 5) == []
    store.apply(WritePlan(tenant=Tenant(user_id="empty")))  # an empty plan writes nothing
    with reopen(store) as again:
        assert again.tenants() == [A, B] and again.facts(B) == [solo]
        assert again.stats() == store.stats()


def test_message_window_per_exact_tenant(
    store: Store, rng: np.random.Generator, reopen: Reopen
) -> None:
    said: dict[Tenant, list[str]] = {R1: [], R2: [], A: []}
    episodes = [(R1, 3), (R2, 2), (R1, 1), (A, 2), (R1, 4), (R2, 1)]
    for n, (tenant, size) in enumerate(episodes):
        contents = [f"{tenant.run_id}-{n}-{i}" for i in range(size)]
        said[tenant].extend(contents)
        # a backdated episode is still the latest in conversation order (write order)
        when = T0 - timedelta(days=n)
        store.apply(WritePlan(tenant=tenant, episode=talk(tenant, *contents, when=when)))
    for tenant, contents in said.items():
        assert store.message_count(tenant) == len(contents)
        for limit in (0, 1, 3, 5, 8, 100):
            want = contents[-limit:] if limit else []
            assert [m.content for m in store.recent_messages(tenant, limit)] == want
        for offset in (-1, 0, 1, 3, len(contents), len(contents) + 5):
            want = contents[max(offset, 0) :]
            assert [m.content for m in store.messages_since(tenant, offset)] == want
    assert said[R1] == ["r1-0-0", "r1-0-1", "r1-0-2", "r1-2-0", "r1-4-0", "r1-4-1", "r1-4-2",
                        "r1-4-3"]  # fmt: skip
    nobody = Tenant(user_id="a", run_id="r3")
    assert store.message_count(nobody) == 0 and store.messages_since(nobody, 0) == []
    got = store.recent_messages(R1, 1)[0]
    got.content = "changed"
    assert store.recent_messages(R1, 1)[0].content == "r1-4-3"  # a copy
    with reopen(store) as again:
        for tenant, contents in said.items():
            assert [m.content for m in again.recent_messages(tenant, 100)] == contents
            assert again.message_count(tenant) == len(contents)


def test_summary_get_set_replace_and_isolation(
    store: Store, rng: np.random.Generator, reopen: Reopen
) -> None:
    assert store.get_summary(R1) is None
    first = Summary(tenant=R1, text="Alice likes tea.", messages_covered=3, updated_at=T0)
    store.set_summary(first)
    assert store.get_summary(R1) == first
    assert store.get_summary(R2) is None and store.get_summary(Tenant(user_id="a")) is None
    other = Summary(tenant=R2, text="Run two.", messages_covered=1)
    store.set_summary(other)
    second = Summary(tenant=R1, text="Alice likes tea and lives in Paris.", messages_covered=9)
    store.set_summary(second)
    assert store.get_summary(R1) == second and store.get_summary(R2) == other
    got = store.get_summary(R1)
    got.text = "changed"
    assert store.get_summary(R1) == second  # a copy
    assert store.tenants() == [R1, R2]
    with pytest.raises(StoreError):
        store.set_summary(Summary(tenant=R1, text="x", messages_covered=-1))
    assert store.get_summary(R1) == second
    with reopen(store) as again:
        assert again.get_summary(R1) == second and again.get_summary(R2) == other


def test_set_summary_beside_concurrent_applies(
    store: Store, rng: np.random.Generator, reopen: Reopen
) -> None:
    plans = [fact_plan(A, [fact(A, f"f{i}", rng)]) for i in range(60)]
    errors: list[BaseException] = []

    def run(work: Any) -> None:
        try:
            work()
        except BaseException as exc:  # pragma: no cover - surfaced below
            errors.append(exc)

    def writer(mine: list[WritePlan]) -> None:
        for p in mine:
            store.apply(p)

    def summariser() -> None:
        for i in range(60):
            store.set_summary(Summary(tenant=A, text=f"s{i}", messages_covered=i))

    threads = [threading.Thread(target=run, args=(lambda m=plans[i::3]: writer(m),))
               for i in range(3)]  # fmt: skip
    threads.append(threading.Thread(target=run, args=(summariser,)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert {f.text for f in store.facts(A)} == {f"f{i}" for i in range(60)}
    assert store.message_count(A) == 60 and store.get_summary(A).text == "s59"
    with reopen(store) as again:
        assert again.get_summary(A).text == "s59" and len(again.facts(A)) == 60


def test_reopen_restores_facts_events_and_summaries(
    store: Store, rng: np.random.Generator, reopen: Reopen
) -> None:
    prov = Provenance(episode_id="ep", timestamp=T0)
    facts = {t: [fact(t, f"{t.key} {i}", rng, provenance=[prov]) for i in range(4)]
             for t in (A, A_BOT, B)}  # fmt: skip
    for tenant, made in facts.items():
        store.apply(fact_plan(tenant, made))
        store.set_summary(Summary(tenant=tenant, text=f"about {tenant.key}", messages_covered=1))
    a0, a1 = facts[A][:2]
    store.apply(fact_plan(A, changes=[FactChange(fact_id=a0.id, text="edited"),
                                      FactChange(fact_id=a1.id)],
                          events=[FactEvent(fact_id=a0.id, tenant=A, event="UPDATE"),
                                  FactEvent(fact_id=a1.id, tenant=A, event="DELETE")]))  # fmt: skip
    scopes = (A, A_BOT, B, Tenant(user_id="a"), Tenant(agent_id="bot"))
    all_ids = [f.id for made in facts.values() for f in made]
    query = unit(rng)

    def everything(s: Store) -> Any:
        return (
            {scope: s.facts(scope) for scope in scopes},
            {(scope, i): s.fact_history(scope, i) for scope in scopes for i in all_ids},
            {t: s.get_summary(t) for t in (A, A_BOT, B)},
            {scope: s.similar_facts(scope, query, 5) for scope in scopes},
            s.get_facts(Tenant(user_id="a"), all_ids),
            s.tenants(),
            s.stats(),
        )

    before = everything(store)
    assert before[4][0].provenance == [prov]
    store.close()
    with reopen(store) as again:
        assert everything(again) == before
        assert again.dims == DIMS


def test_sees_fact_commits_of_another_connection(
    store: Store, rng: np.random.Generator, reopen: Reopen
) -> None:
    store.facts(A)
    with reopen(store) as other:
        other.apply(fact_plan(A, [fact(A, "from elsewhere", rng)]))
        other.set_summary(Summary(tenant=A, text="s", messages_covered=1))
    assert texts(store.facts(A)) == ["from elsewhere"]
    assert store.get_summary(A).text == "s" and store.message_count(A) == 1


def test_delete_tenant_takes_facts_history_and_summaries(
    store: Store, rng: np.random.Generator, reopen: Reopen
) -> None:
    made: dict[Tenant, Fact] = {}
    for tenant in (A, A_BOT, B):
        p = chain(tenant, ["P", "Q"], rng)
        made[tenant] = fact(tenant, f"of {tenant.key}", rng)
        p.new_facts, p.fact_events = [made[tenant]], added(made[tenant])
        store.apply(p)
        store.set_summary(Summary(tenant=tenant, text=tenant.key, messages_covered=1))
    solo = Tenant(user_id="a", run_id="facts-only")
    store.apply(fact_plan(solo, [fact(solo, "only a fact", rng)], episode=False))
    keep = (store.facts(B), store.fact_history(B, made[B].id), store.get_summary(B))
    assert store.delete_tenant(Tenant(user_id="a")) == 6  # entities + edges, as before
    assert store.tenants() == [B]
    assert store.facts(Tenant(user_id="a")) == [] and store.get_summary(A) is None
    assert store.fact_history(A, made[A].id) == [] and store.get_summary(A_BOT) is None
    assert store.similar_facts(Tenant(user_id="a"), unit(rng), 5) == []
    assert store.fact_vector_sum(Tenant(user_id="a")) is None
    b_vector = np.asarray(made[B].embedding, dtype=np.float64)
    assert store.fact_vector_sum(B) == pytest.approx(b_vector / np.linalg.norm(b_vector))
    assert (store.facts(B), store.fact_history(B, made[B].id), store.get_summary(B)) == keep
    with reopen(store) as again:
        assert again.tenants() == [B] and again.facts(Tenant(user_id="a")) == []
        assert again.get_summary(A) is None and again.fact_history(A, made[A].id) == []
        assert (again.facts(B), again.fact_history(B, made[B].id), again.get_summary(B)) == keep
    # the deleted fact's id can come back later, with a fresh history
    store.apply(fact_plan(A, [made[A]]))
    assert [e.event for e in store.fact_history(A, made[A].id)] == ["ADD"]
    a_vector = np.asarray(made[A].embedding, dtype=np.float64)  # the sum starts afresh
    assert store.fact_vector_sum(A) == pytest.approx(a_vector / np.linalg.norm(a_vector))


def _fact_counts(store: Store, scopes: tuple[Tenant, ...]) -> dict[str, tuple[int, int]]:
    """Per scope (and "all": the whole store), (`stats(...).facts`, the facts `facts` reads);
    the whole store's facts are those of every tenant's scope, as Memory.stats read them."""
    every = {f.id for t in store.tenants() for f in store.facts(t)}
    counts = {"all": (store.stats().facts, len(every))}
    return counts | {s.key: (store.stats(s).facts, len(store.facts(s))) for s in scopes}


def test_stats_count_the_current_facts_that_facts_reads(
    store: Store, rng: np.random.Generator, reopen: Reopen
) -> None:
    """`stats(scope).facts` is the store's own count (Memory.stats no longer reads every fact
    for it) and must equal `len(facts(scope))`: a filter scope covers its narrower tenants,
    an update changes nothing, deleted facts and deleted tenants are not counted."""
    a_agent = Tenant(user_id="a", agent_id="bot")  # user a's narrower tenants: it and A_BOT
    made = {t: [fact(t, f"{t.key} {i}", rng) for i in range(n)]
            for t, n in ((A, 3), (A_BOT, 2), (a_agent, 1), (B, 2))}  # fmt: skip
    p = chain(A, ["P", "Q"], rng)  # the graph beside the facts is not counted as facts
    p.new_facts, p.fact_events = made[A], added(*made[A])
    store.apply(p)
    for tenant in (A_BOT, a_agent, B):
        store.apply(fact_plan(tenant, made[tenant]))
    store.apply(fact_plan(Tenant(user_id="c"), episode=True))  # a tenant without facts
    scopes = (USER_A, A_BOT, a_agent, B, Tenant(agent_id="bot"), Tenant(user_id="c"),
              Tenant(user_id="nobody"))  # fmt: skip

    def check(expected: dict[str, int]) -> None:
        counts = _fact_counts(store, scopes)
        assert all(count == read for count, read in counts.values()), counts
        assert {k: counts[k][0] for k in expected} == expected

    check({"all": 8, USER_A.key: 6, A_BOT.key: 2, a_agent.key: 3, B.key: 2,
           Tenant(agent_id="bot").key: 3, Tenant(user_id="c").key: 0})  # fmt: skip
    first = made[A][0]
    update = FactChange(fact_id=first.id, text="changed")
    changed = FactEvent(fact_id=first.id, tenant=A, event="UPDATE", old_text=first.text,
                        new_text="changed")  # fmt: skip
    store.apply(fact_plan(A, changes=[update], events=[changed]))
    check({"all": 8, USER_A.key: 6})
    gone = made[A_BOT][0]
    delete = FactEvent(fact_id=gone.id, tenant=A_BOT, event="DELETE", old_text=gone.text)
    store.apply(fact_plan(A_BOT, changes=[FactChange(fact_id=gone.id)], events=[delete]))
    check({"all": 7, USER_A.key: 5, A_BOT.key: 1, a_agent.key: 2})
    store.delete_tenant(B)
    check({"all": 5, USER_A.key: 5, B.key: 0})
    with reopen(store) as again:
        assert _fact_counts(again, scopes) == _fact_counts(store, scopes)
        assert again.stats().facts == 5


def test_reset_empties_the_fact_memory(
    store: Store, rng: np.random.Generator, reopen: Reopen
) -> None:
    p = chain(A, ["P"], rng)
    p.new_facts = [fact(A, "x", rng)]
    store.apply(p)
    store.set_summary(Summary(tenant=A, text="s", messages_covered=1))
    store.reset()
    assert store.facts(A) == [] and store.get_summary(A) is None and store.tenants() == []
    assert store.fact_history(A, p.new_facts[0].id) == [] and store.message_count(A) == 0
    with reopen(store) as again:
        assert again.facts(A) == [] and again.get_summary(A) is None


def test_closed_store_raises_for_fact_reads(store: Store, rng: np.random.Generator) -> None:
    store.close()
    vec = unit(rng)
    calls = [
        lambda: store.get_facts(A, ["x"]),
        lambda: store.facts(A),
        lambda: store.similar_facts(A, vec, 3),
        lambda: store.fact_history(A, "x"),
        lambda: store.recent_messages(A, 3),
        lambda: store.message_count(A),
        lambda: store.messages_since(A, 0),
        lambda: store.get_summary(A),
        lambda: store.set_summary(Summary(tenant=A, text="s", messages_covered=0)),
    ]
    for call in calls:
        with pytest.raises(StoreError, match="closed"):
            call()
