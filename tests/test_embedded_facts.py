"""The stores' fact memory (Mem0 beside the graph): facts written through `apply` with their
history, vector search, plan validation, atomicity with the graph part, the message window,
summaries, durability, delete_tenant and reset.

Store-level tests run on both stores (`store_kind`, see conftest.py), with the same
expectations; the SQLite-specific ones (fault injection at the SQL layer, the v1 -> v2 upgrade,
table layout) run on the embedded store only. tests/test_neo4j_store.py has the Neo4j-specific
ones (fault injection inside the transaction, the data model)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import (
    A_BOT,
    DIMS,
    EVERYTHING,
    T0,
    A,
    B,
    Store,
    added,
    chain,
    entity,
    fact,
    fact_plan,
    fail_on,
    ids,
    talk,
    texts,
    unit,
)

from mem0g.stores import EmbeddedGraphStore, GraphStore, StoreError
from mem0g.stores.embedded import SCHEMA_VERSION
from mem0g.types import (
    Fact,
    FactChange,
    FactEvent,
    Provenance,
    Summary,
    Tenant,
    WritePlan,
)

R1 = Tenant(user_id="a", run_id="r1")
R2 = Tenant(user_id="a", run_id="r2")
USER_A = Tenant(user_id="a")  # a filter scope: A, A_BOT, R1, R2


@pytest.fixture
def reopen(open_store: Callable[..., Store]) -> Callable[[Store], Store]:
    """Another store on the same data as the one under test (its dims read from the data)."""
    return lambda store: open_store()


EMBEDDED_ONLY = pytest.mark.parametrize("store_kind", ["embedded"])
Reopen = Callable[[Store], Store]


def state(store: Store, scope: Tenant = USER_A) -> tuple:
    """Everything of a scope a failed write must leave as it was."""
    facts = store.facts(scope)
    return (
        facts,
        {f.id: store.fact_history(scope, f.id) for f in facts},
        store.snapshot(scope, EVERYTHING),
        store.episodes(scope),
        store.stats(),
        store.tenants(),
    )


# ---------------------------------------------------------------- write and read back


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
    if not isinstance(store, EmbeddedGraphStore):
        return  # the Neo4j data model: test_neo4j_store.py
    columns = {
        table: [row[1] for row in sqlite3.connect(store.path / "graph.db").execute(
            f"PRAGMA table_info({table})")]
        for table in ("facts", "fact_events", "summaries")
    }  # fmt: skip
    assert columns == {
        "facts": ["id", "user_id", "agent_id", "run_id", "tenant_key", "text", "embedding",
                  "created_at", "updated_at", "provenance"],
        "fact_events": ["id", "fact_id", "user_id", "agent_id", "run_id", "tenant_key", "event",
                        "old_text", "new_text", "actor", "episode_id", "at"],
        "summaries": ["user_id", "agent_id", "run_id", "tenant_key", "text", "messages_covered",
                      "updated_at"],
    }  # fmt: skip


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


# ---------------------------------------------------------------- vector search


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


# ---------------------------------------------------------------- validation and atomicity


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
    before = state(store)
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
    with pytest.raises(StoreError):
        store.apply(p)
    assert state(store) == before
    assert store.get_facts(A, [fresh.id]) == [] and store.find_entities(A, ["fresh"]) == []
    assert texts(store.get_facts(Tenant(user_id="a"), [ours.id, bots.id])) == ["ours", "bot"]
    with reopen(store) as again:
        assert state(again) == before


@EMBEDDED_ONLY
@pytest.mark.parametrize("exc", [RuntimeError("boom"), sqlite3.OperationalError("disk I/O")])
def test_failure_mid_write_leaves_graph_and_facts_untouched(
    store: Store,
    reopen: Reopen,
    rng: np.random.Generator,
    monkeypatch: pytest.MonkeyPatch,
    exc: BaseException,
) -> None:
    tea, city, gone = (fact(A, t, rng) for t in ("tea", "Berlin", "gone"))
    base = chain(A, ["Alice", "Acme"], rng)
    base.new_facts, base.fact_events = [tea, city, gone], added(tea, city, gone)
    store.apply(base)
    query = np.asarray(tea.embedding, dtype=np.float32)
    hits = store.similar_facts(A, query, 3)  # the matrix is built and must stay right
    before = state(store)
    doomed = chain(A, ["Fresh", "Newer"], rng)
    new = [fact(A, "new one", rng), fact(A, "new two", rng)]
    doomed.new_facts = new
    doomed.fact_changes = [
        FactChange(fact_id=city.id, text="Paris", embedding=unit(rng).tolist()),
        FactChange(fact_id=gone.id),
    ]
    doomed.fact_events = [
        *added(*new),
        FactEvent(fact_id=city.id, tenant=A, event="UPDATE", old_text="Berlin", new_text="Paris"),
        FactEvent(fact_id=gone.id, tenant=A, event="DELETE", old_text="gone"),
    ]
    # episode, 2 entities, 1 edge, the delete, 3 fact rows, then the 2nd of 4 events fails
    written = fail_on(store, monkeypatch, "fact_events", 2, exc)
    with pytest.raises(StoreError if isinstance(exc, sqlite3.Error) else RuntimeError):
        store.apply(doomed)
    assert written == ["episodes", "entities", "entities", "relations", "facts", "facts",
                       "facts", "fact_events"]  # fmt: skip
    assert state(store) == before
    assert store.similar_facts(A, query, 3) == hits
    with reopen(store) as again:
        assert state(again) == before
    monkeypatch.undo()
    store.apply(doomed)  # the same plan goes through once the fault is gone
    assert sorted(texts(store.facts(A))) == ["Paris", "new one", "new two", "tea"]
    assert store.stats(A).entities == 4


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


# ---------------------------------------------------------------- messages and summaries


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
    if isinstance(store, EmbeddedGraphStore):
        rows = sqlite3.connect(store.path / "graph.db").execute("SELECT count(*) FROM summaries")
        assert rows.fetchone()[0] == 2  # replaced in place, one row per exact tenant
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


# ---------------------------------------------------------------- durability and schema


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


_V1_TABLES = {"schema_version", "entities", "relations", "episodes"}


def _downgrade_to_v1(path: Path) -> None:
    """Turn a store file into exactly what v1 wrote: v2 only added the fact memory's tables
    and v3 the entity repair's (and their indexes), v4 the tenant versions, v5 the FTS5
    tables and their triggers, v6 the fact links, so v1 is v6 without them, version 1."""
    conn = sqlite3.connect(path / "graph.db")
    with conn:
        for (trigger,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger'"
        ).fetchall():
            conn.execute(f"DROP TRIGGER {trigger}")
        for fts in ("facts_fts", "relations_fts", "entities_fts"):
            conn.execute(f"DROP TABLE {fts}")
        for table in (
            "facts",
            "fact_events",
            "summaries",
            "entity_events",
            "possible_duplicates",
            "tenant_versions",
            "fact_links",
        ):
            conn.execute(f"DROP TABLE {table}")
        conn.execute("UPDATE schema_version SET version = 1")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    assert tables == _V1_TABLES


def test_v1_file_is_upgraded_in_place(tmp_path: Path, rng: np.random.Generator) -> None:
    path = tmp_path / "store"
    with EmbeddedGraphStore(path) as store:
        store.apply(chain(A, ["Alice", "Acme", "Berlin"], rng))
        store.apply(chain(B, ["Bob"], rng))
        before = (store.snapshot(A, EVERYTHING), store.episodes(A), store.stats(), store.tenants())
    _downgrade_to_v1(path)
    with EmbeddedGraphStore(path) as store:
        assert (store.snapshot(A, EVERYTHING), store.episodes(A), store.stats(),
                store.tenants()) == before  # fmt: skip
        assert store.facts(A) == [] and store.message_count(A) == 1
        tea = fact(A, "Likes tea", rng)
        store.apply(fact_plan(A, [tea]))
        store.set_summary(Summary(tenant=A, text="s", messages_covered=2))
    conn = sqlite3.connect(path / "graph.db")
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    assert SCHEMA_VERSION == 6
    conn.close()
    with EmbeddedGraphStore(path) as store:
        assert store.facts(A) == [tea] and store.get_summary(A).text == "s"
        assert store.snapshot(A, EVERYTHING) == before[0]


def test_newer_schema_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "store"
    EmbeddedGraphStore(path).close()
    conn = sqlite3.connect(path / "graph.db")
    with conn:
        conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError, match="newer"):
        EmbeddedGraphStore(path)
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION + 1,)]
    conn.close()


# ---------------------------------------------------------------- delete_tenant and reset


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
    assert (store.facts(B), store.fact_history(B, made[B].id), store.get_summary(B)) == keep
    with reopen(store) as again:
        assert again.tenants() == [B] and again.facts(Tenant(user_id="a")) == []
        assert again.get_summary(A) is None and again.fact_history(A, made[A].id) == []
        assert (again.facts(B), again.fact_history(B, made[B].id), again.get_summary(B)) == keep
    # the deleted fact's id can come back later, with a fresh history
    store.apply(fact_plan(A, [made[A]]))
    assert [e.event for e in store.fact_history(A, made[A].id)] == ["ADD"]


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
