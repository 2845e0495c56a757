"""Statistics the stores keep from their writes, checked against a recomputation from the
stored records after every step of random write sequences: each scope's fact vector sum
(`GraphStore.fact_vector_sum`), the scope's fact count behind `common_fact_words` (Neo4j:
`fact_count` on each :TenantSequence), and the embedded store's BM25 count tables
(stores/embedded/bm25.py) against a rebuild from the FTS index."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from builders import (
    A_BOT,
    DIMS,
    EVERYTHING,
    USER_A,
    A,
    B,
    Reopen,
    Store,
    entity,
    fact_plan,
    plan,
    relation,
    ring,
)
from neo4j import ManagedTransaction

from mem0g.stores.base import StoreError
from mem0g.stores.embedded import EmbeddedGraphStore, bm25
from mem0g.stores.neo4j import Neo4jGraphStore
from mem0g.types import Fact, FactChange, Tenant

WORDS = ["apple", "banana", "cherry", "grape", "melon"]
AGENT = Tenant(agent_id="bot")  # an agent-only tenant; as a scope: it and A_BOT
TENANTS = [A, A_BOT, B, AGENT]
SCOPES: list[tuple[Tenant, bool]] = [
    (A, True), (A_BOT, True), (B, True), (AGENT, True),
    (USER_A, False), (B, False), (AGENT, False), (Tenant(user_id="a", agent_id="bot"), False),
]  # fmt: skip
SHARE = 0.5


def _vector(rng: np.random.Generator) -> list[float] | None:
    roll = rng.random()
    if roll < 0.2:
        return None  # a fact stored without a vector
    if roll < 0.25:
        return [0.0] * DIMS  # a vector without a direction
    return (rng.standard_normal(DIMS) * rng.uniform(0.1, 5.0)).astype(np.float32).tolist()


def _text(rng: np.random.Generator) -> str:
    return " ".join(rng.choice(WORDS, size=int(rng.integers(1, 4))))  # duplicates happen


def _new_fact(tenant: Tenant, rng: np.random.Generator) -> Fact:
    return Fact(tenant=tenant, text=_text(rng), embedding=_vector(rng))


def _unit_sum(facts: list[Fact]) -> np.ndarray | None:
    rows = [np.asarray(f.embedding, dtype=np.float32) for f in facts if f.embedding is not None]
    if not rows:
        return None
    total = np.zeros(rows[0].shape[0], dtype=np.float64)
    for row in rows:
        norm = float(np.linalg.norm(row))
        total += (row / norm if norm > 0 else row).astype(np.float64)
    return total


def _scope_facts(store: Store, scope: Tenant, exact: bool) -> list[Fact]:
    facts = store.facts(scope)
    return [f for f in facts if f.tenant == scope] if exact else facts


def _common(facts: list[Fact]) -> list[str]:
    return [w for w in WORDS if sum(w in f.text.split() for f in facts) > len(facts) * SHARE]


def check(store: Store, step: str) -> None:
    """Every kept statistic equals its recomputation from the records."""
    for scope, exact in SCOPES:
        facts = _scope_facts(store, scope, exact)
        want = _unit_sum(facts)
        got = store.fact_vector_sum(scope, exact=exact)
        where = f"{step}: {scope.key} exact={exact}"
        if want is None:
            assert got is None, f"{where}: kept sum {got} for a scope without fact vectors"
        else:
            assert got is not None, f"{where}: no kept sum, want {want}"
            assert np.allclose(got, want, atol=1e-6), f"{where}: kept {got} != {want}"
        common = store.common_fact_words(scope, list(WORDS), SHARE, exact=exact)
        assert common == _common(facts), f"{where}: common words {common} != {_common(facts)}"
    if isinstance(store, Neo4jGraphStore):
        kept = _neo4j_counts(store)
        for key, (count, tenant) in kept.items():
            real = len(_scope_facts(store, tenant, True))
            assert count == real, f"{step}: {key} keeps fact_count {count}, holds {real}"
        for tenant in store.tenants():  # a tenant holding facts has its count
            if _scope_facts(store, tenant, True):
                assert tenant.key in kept, f"{step}: {tenant.key} has facts, no sequence node"
    if isinstance(store, EmbeddedGraphStore):
        _check_bm25(store, step)


def _neo4j_counts(store: Neo4jGraphStore) -> dict[str, tuple[int, Tenant]]:
    driver = store._ready()
    with driver.session() as session:
        found = session.run(
            "MATCH (q:TenantSequence) RETURN q.tenant_key AS key, "
            "coalesce(q.fact_count, 0) AS facts, q.user_id AS user_id, "
            "q.agent_id AS agent_id, q.run_id AS run_id"
        ).data()
    return {
        r["key"]: (
            r["facts"],
            Tenant(user_id=r["user_id"], agent_id=r["agent_id"], run_id=r["run_id"]),
        )
        for r in found
    }


_COUNT_TABLES = ("df", "tf", "len")


def _bm25_state(conn: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for table in ("facts", "relations", "entities"):
        for kind in _COUNT_TABLES:
            rows = conn.execute(f"SELECT * FROM {table}_bm25_{kind}").fetchall()
            out[f"{table}_{kind}"] = sorted(tuple(r) for r in rows)
    out["totals"] = sorted(tuple(r) for r in conn.execute("SELECT * FROM bm25_totals"))
    return out


def _check_bm25(store: EmbeddedGraphStore, step: str) -> None:
    """The kept BM25 counts equal a rebuild of them from the FTS tables' own index."""
    conn = store._connection()
    kept = _bm25_state(conn)
    conn.execute("BEGIN IMMEDIATE")
    try:
        for table in ("facts", "relations", "entities"):
            bm25.rebuild(conn, table)
        rebuilt = _bm25_state(conn)
    finally:
        conn.execute("ROLLBACK")
    for name in kept:
        assert kept[name] == rebuilt[name], f"{step}: BM25 counts {name} drifted"


class Walk:
    """A random sequence of writes through the store contract."""

    def __init__(self, store: Store, rng: np.random.Generator, reopen: Reopen) -> None:
        self.store, self.rng, self.reopen = store, rng, reopen
        self.opened: list[Store] = []

    def pick(self, tenant: Tenant) -> Fact | None:
        own = [f for f in self.store.facts(tenant) if f.tenant == tenant]
        return own[int(self.rng.integers(len(own)))] if own else None

    def step(self) -> str:
        rng, store = self.rng, self.store
        tenant = TENANTS[int(rng.integers(len(TENANTS)))]
        roll = rng.random()
        if roll < 0.3:
            new = [_new_fact(tenant, rng) for _ in range(int(rng.integers(1, 4)))]
            store.apply(fact_plan(tenant, new))
            return f"add {len(new)} to {tenant.key}"
        if roll < 0.45:
            old = self.pick(tenant)
            if old is None:
                return "update: nothing"
            vector = _vector(rng) if rng.random() < 0.7 else None  # None: text only
            change = FactChange(fact_id=old.id, text=_text(rng), embedding=vector)
            store.apply(fact_plan(tenant, changes=[change], events=[], episode=False))
            return f"update {old.id} of {tenant.key} (vector {vector is not None})"
        if roll < 0.57:
            old = self.pick(tenant)
            if old is None:
                return "delete: nothing"
            store.apply(fact_plan(tenant, changes=[FactChange(fact_id=old.id)], events=[]))
            return f"delete {old.id} of {tenant.key}"
        if roll < 0.65:  # within one plan: new facts changed and deleted, stored ones too
            new = [_new_fact(tenant, rng) for _ in range(3)]
            changes = [
                FactChange(fact_id=new[0].id, text=_text(rng), embedding=_vector(rng)),
                FactChange(fact_id=new[1].id),
            ]
            old = self.pick(tenant)
            if old is not None:
                changes.append(FactChange(fact_id=old.id, text=_text(rng), embedding=None))
                changes.append(FactChange(fact_id=old.id, text=_text(rng), embedding=_vector(rng)))
                if rng.random() < 0.5:
                    changes.append(FactChange(fact_id=old.id))
            store.apply(fact_plan(tenant, new, changes=changes))
            return f"mixed plan on {tenant.key}"
        if roll < 0.75:  # a plan refused after its facts were planned: nothing changes
            new = [_new_fact(tenant, rng) for _ in range(2)]
            old = self.pick(tenant)
            changes = [] if old is None else [FactChange(fact_id=old.id)]
            a, b = entity(tenant, "p", rng), entity(tenant, "q", rng)
            bad = relation(tenant, a, "knows", b, rng)  # its ends are not in the store
            with pytest.raises(StoreError):
                store.apply(fact_plan(tenant, new, changes=changes, new_relations=[bad]))
            return f"refused plan on {tenant.key}"
        if roll < 0.82:
            scope = [A, USER_A, B, AGENT, Tenant(agent_id="bot"), A_BOT][int(rng.integers(6))]
            store.delete_tenant(scope)
            return f"delete_tenant {scope.key}"
        if roll < 0.85:
            store.reset()
            return "reset"
        if roll < 0.9:
            self.store = self.reopen(store)
            self.opened.append(self.store)
            return "reopen"
        return "nothing"

    def close(self) -> None:
        for s in self.opened:
            s.close()


def test_kept_statistics_follow_random_writes(store: Store, reopen: Reopen) -> None:
    """Three random sequences on the embedded store, one on the server (its time)."""
    seeds = [1] if isinstance(store, Neo4jGraphStore) else [1, 2, 3]
    for seed in seeds:
        if seed != seeds[0]:
            store.reset()
        walk = Walk(store, np.random.default_rng(seed), reopen)
        try:
            for n in range(60):
                step = walk.step()
                check(walk.store, f"seed {seed} step {n} ({step})")
        finally:
            walk.close()


@contextlib.contextmanager
def _failing(store: Store, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The next plan fails after its facts were written, before it commits."""
    if isinstance(store, EmbeddedGraphStore):
        real_write = store._write

        def flaky_write(conn: Any, table: str, record: Any, vec: Any) -> None:
            if table == "fact_events":
                raise RuntimeError("injected")
            real_write(conn, table, record, vec)

        monkeypatch.setattr(store, "_write", flaky_write)
    else:
        real_run = store._run

        def flaky_run(tx: ManagedTransaction, name: str, params: Any = None) -> Any:
            if name == "create_fact_events":
                raise RuntimeError("injected")
            return real_run(tx, name, params)

        monkeypatch.setattr(store, "_run", flaky_run)
    yield
    monkeypatch.undo()


def test_a_plan_that_fails_midway_leaves_the_kept_statistics(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(7)
    store.apply(fact_plan(A, [_new_fact(A, rng) for _ in range(4)]))
    check(store, "before")
    old = store.facts(A)[0]
    new = [_new_fact(A, rng) for _ in range(3)]
    changes = [FactChange(fact_id=old.id, text="melon melon", embedding=_vector(rng))]
    with _failing(store, monkeypatch), pytest.raises((RuntimeError, StoreError)):
        store.apply(fact_plan(A, new, changes=changes))
    check(store, "after the failed plan")


def test_concurrent_writers_keep_the_statistics(store: Store) -> None:
    """Writers of one tenant and of its neighbours at once, deletes among them."""
    errors: list[BaseException] = []

    def writer(tenant: Tenant, seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            for _ in range(8):
                store.apply(fact_plan(tenant, [_new_fact(tenant, rng) for _ in range(2)]))
                own = [f for f in store.facts(tenant) if f.tenant == tenant]
                if own and rng.random() < 0.5:
                    gone = own[int(rng.integers(len(own)))]
                    with contextlib.suppress(StoreError):  # another writer deleted it first
                        store.apply(
                            fact_plan(tenant, changes=[FactChange(fact_id=gone.id)], events=[])
                        )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t, s))
               for s, t in enumerate([A, A, A_BOT, A_BOT, B])]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    check(store, "after the concurrent writers")


def test_delete_tenant_racing_a_new_tenants_first_plan(
    store: Store, reopen: Reopen, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scope's deletion and the first plan of a new tenant of that scope, committed while
    the deletion runs (after it locked the scope's sequence nodes): whatever survives, the
    kept counts and sums must describe the facts that are left."""
    rng = np.random.default_rng(11)
    store.apply(fact_plan(A, [_new_fact(A, rng) for _ in range(2)]))
    late = Tenant(user_id="a", agent_id="late")
    other = reopen(store)
    try:
        if isinstance(store, Neo4jGraphStore):
            real_run = store._run
            done: list[bool] = []
            raced: list[str] = []  # the late tenant's version its plan committed

            def racing_run(tx: ManagedTransaction, name: str, params: Any = None) -> Any:
                out = real_run(tx, name, params)
                if name == "delete_tenant_sequences" and not done:
                    done.append(True)
                    writer = threading.Thread(
                        target=other.apply,
                        args=(fact_plan(late, [_new_fact(late, rng) for _ in range(2)]),),
                    )
                    writer.start()
                    writer.join(30)
                    assert not writer.is_alive()
                    raced.append(other.tenant_version(late))
                return out

            monkeypatch.setattr(store, "_run", racing_run)
        else:  # SQLite serialises the two: the plan lands before or after the deletion
            other.apply(fact_plan(late, [_new_fact(late, rng) for _ in range(2)]))
        store.delete_tenant(USER_A)
        monkeypatch.undo()
        if isinstance(store, Neo4jGraphStore):
            # its sequence node outlived the deletion, with a new epoch: other clients' held
            # vectors and copies of the version the plan made hold records deleted since
            assert late.key in _neo4j_counts(store) and len(raced) == 1
            assert store.tenant_version(late).split(":")[0] != raced[0].split(":")[0]
        for scope, exact in [(late, True), (USER_A, False)]:
            facts = _scope_facts(store, scope, exact)
            want = _unit_sum(facts)
            got = store.fact_vector_sum(scope, exact=exact)
            assert (got is None) == (want is None), (scope.key, got, want)
            if isinstance(store, Neo4jGraphStore):
                kept = _neo4j_counts(store).get(late.key, (0, None))[0]
                assert kept == len(_scope_facts(store, late, True)), (kept, facts)
        # and the next write of the tenant starts from the truth
        store.apply(fact_plan(late, [_new_fact(late, rng)]))
        check_scopes = [(late, True), (USER_A, False)]
        for scope, exact in check_scopes:
            facts = _scope_facts(store, scope, exact)
            assert len(facts) == 1 or scope == USER_A
            got_common = store.common_fact_words(scope, list(WORDS), SHARE, exact=exact)
            assert got_common == _common(facts), (scope.key, got_common, facts)
    finally:
        other.close()


def _memory_config(
    store: Store, path: Any, server: Any, request: pytest.FixtureRequest
) -> dict[str, Any]:
    if isinstance(store, Neo4jGraphStore):  # the suite's server, however it was started
        neo4j = request.getfixturevalue("neo4j_server")
        graph = {"provider": "neo4j", "url": neo4j.uri, "username": neo4j.user,
                 "password": neo4j.password}  # fmt: skip
    else:
        graph = {"provider": "embedded", "path": str(path)}
    return {"llm": {"base_url": server.base_url, "api_key": "test", "max_retries": 0},
            "graph_store": graph}  # fmt: skip


def test_memory_writes_and_an_import_keep_the_statistics(
    store: Store, tmp_path: Any, llm_server: Any, hashing: Any, request: pytest.FixtureRequest
) -> None:
    """Through `Memory`: verbatim adds, updates, deletes, delete_all, then an export imported
    into a fresh store, and merged into one that holds part of it."""
    from mem0g import Memory

    rng = np.random.default_rng(5)
    ids = [("a", None), ("a", "bot"), ("b", None), ("a", "bot")]
    with Memory(_memory_config(store, tmp_path / "m", llm_server, request), embedder=hashing) as m:
        for n in range(30):
            user, agent = ids[int(rng.integers(len(ids)))]
            who = {"user_id": user, "agent_id": agent}
            own = [f for f in m.store.facts(Tenant(**who)) if f.tenant == Tenant(**who)]
            roll = rng.random()
            if roll < 0.5 or not own:
                m.add([{"role": "user", "content": _text(rng)} for _ in range(2)], infer=False,
                      **who)  # fmt: skip
            elif roll < 0.75:
                m.update(own[int(rng.integers(len(own)))].id, _text(rng), **who)
            elif roll < 0.95:
                m.delete(own[int(rng.integers(len(own)))].id, **who)
            else:
                m.delete_all(**who)
            check(m.store, f"memory step {n}")
        archive = tmp_path / "all.jsonl"
        m.export(archive)
        m.reset()
        check(m.store, "after reset")
        m.import_archive(archive, batch=2)
        check(m.store, "after the import")
        m.delete_all(user_id="a", agent_id="bot")
        m.import_archive(archive, merge=True)
        check(m.store, "after the merge")


@pytest.mark.parametrize("store_kind", [pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_reads_racing_deletes_return_what_is_left(store: Store) -> None:
    """Neo4j reads are read-committed: a fact another transaction deleted after a read
    matched it came back without properties, and `facts` raised KeyError('id') (seen in the
    concurrent-writers test above). Such a fact is gone, as if deleted just before."""
    rng = np.random.default_rng(11)
    facts = [_new_fact(A, rng) for _ in range(120)]
    store.apply(fact_plan(A, facts))
    errors: list[BaseException] = []
    done = threading.Event()

    def deleter() -> None:
        try:
            for f in facts:
                store.apply(fact_plan(A, changes=[FactChange(fact_id=f.id)], events=[]))
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=deleter)
    thread.start()
    seen = []
    try:
        while not done.is_set():
            ids = [f.id for f in store.facts(A)]
            got = store.get_facts(A, [f.id for f in facts])
            seen.append(len(ids))
            assert all(f.id for f in got)
    finally:
        thread.join()
    assert not errors, errors
    assert store.facts(A) == [] and seen and seen[0] >= seen[-1]


def test_a_row_deleted_between_two_keys_of_its_projection_is_gone() -> None:
    """Neo4j reads `.*` and then each computed key: a fact deleted in between came back with
    its id and text but `created_at` null, and `_fact` raised a ValidationError (CI, stop 43).
    The same holds for an edge whose end was deleted after `r {.*}` was read."""
    from mem0g.stores.neo4j.rows import present

    fact = {"id": "f1", "text": "likes tea", "tenant_key": '["a", null, null]',
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"}  # fmt: skip
    assert present(fact)
    assert not present({**fact, "created_at": None, "updated_at": None, "provenance_at": []})
    assert not present({"created_at": None}) and not present({}) and not present(None)
    edge = {**fact, "source_id": "e1", "destination_id": "e2", "source_name": "a",
            "destination_name": "b"}  # fmt: skip
    assert present(edge)
    assert not present({**edge, "destination_id": None, "destination_name": None})


@pytest.mark.neo4j
def test_a_scope_larger_than_a_batch_is_deleted_in_batches_and_an_interrupted_one_resumes(
    neo4j_connect: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scope of more than `reset_batch` records is deleted a batch at a time (a 100,000-edge
    user did not fit one transaction of a 512 MiB server). Stopped midway, what is left keeps
    true counts and sums; the same call again deletes the rest, and no other user is touched."""
    store = neo4j_connect(dims=DIMS, reset_batch=3)
    rng = np.random.default_rng(5)
    for tenant in (A, A_BOT, B):
        ents, rels = ring(tenant, 4, 7, rng)
        store.apply(plan(tenant, ents, rels))
        store.apply(fact_plan(tenant, [_new_fact(tenant, rng) for _ in range(8)]))
    before_b = (store.snapshot(B, EVERYTHING), store.facts(B), store.episodes(B))
    check(store, "written")
    real_run = store._run
    ran: list[str] = []

    def failing_run(tx: ManagedTransaction, name: str, params: Any = None) -> Any:
        ran.append(name)
        if name == "thin_tenant_facts" and ran.count(name) == 2:
            raise StoreError("injected: the server went away")
        return real_run(tx, name, params)

    monkeypatch.setattr(store, "_run", failing_run)
    with pytest.raises(StoreError, match="stopped midway"):
        store.delete_tenant(USER_A)
    monkeypatch.undo()
    assert "delete_tenant_sequences" not in ran  # the one transaction never began
    left = store.facts(USER_A)
    assert len(left) == 16 - 3  # a batch of the first tenant's facts went, the rest stayed
    assert len(store.snapshot(USER_A, EVERYTHING).relations) == 7  # its edges went first
    check(store, "after the interrupted deletion")
    assert store.delete_tenant(USER_A) > 0
    assert store.facts(USER_A) == [] and store.episodes(USER_A) == []
    assert store.snapshot(USER_A, EVERYTHING).entities == []
    assert USER_A.key not in [t.key for t in store.tenants()]
    assert (store.snapshot(B, EVERYTHING), store.facts(B), store.episodes(B)) == before_b
    check(store, "after the deletion")
    # and the deleted user writes again from a clean slate
    store.apply(fact_plan(A, [_new_fact(A, rng)]))
    check(store, "written again")
    assert len(store.facts(A)) == 1


@pytest.mark.neo4j
def test_a_scope_of_tenants_each_within_a_batch_is_deleted_in_one_transaction(
    neo4j_connect: Any,
) -> None:
    """Only a tenant larger than a batch is thinned: a user of many small runs, together
    over a batch, is still deleted all or nothing (thinning each would cost round trips
    per run)."""
    store = neo4j_connect(dims=DIMS, reset_batch=20)
    rng = np.random.default_rng(6)
    for tenant in (A, A_BOT):  # 4 entities, 7 edges, 3 facts, their events, 2 episodes
        ents, rels = ring(tenant, 4, 7, rng)
        store.apply(plan(tenant, ents, rels))
        store.apply(fact_plan(tenant, [_new_fact(tenant, rng) for _ in range(3)]))
    ran: list[str] = []
    real_run = store._run

    def spying_run(tx: ManagedTransaction, name: str, params: Any = None) -> Any:
        ran.append(name)
        return real_run(tx, name, params)

    store._run = spying_run  # type: ignore[method-assign]
    assert store.delete_tenant(USER_A) == 22  # 2 x (7 edges and 4 entities)
    assert "delete_tenant_sequences" in ran
    assert not [name for name in ran if name.startswith("thin_tenant")]
    assert store.facts(USER_A) == []
