"""What only the embedded store must show: atomicity under faults injected at the SQL layer,
a process killed mid-apply, the edge matrix's validity intervals, and the SQLite statements'
tenant indexes. The contract both stores pass is tests/test_store_contract.py."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from builders import (
    CURRENT,
    DIMS,
    EVERYTHING,
    T0,
    A,
    added,
    chain,
    entity,
    fact,
    fail_on,
    ids,
    plan,
    relation,
    ring,
    similar,
    unit,
)

from mem0g.stores import EmbeddedGraphStore, StoreError
from mem0g.types import (
    AliasUpdate,
    Invalidation,
    MentionUpdate,
    Provenance,
    Tenant,
    Validity,
)

ROOT = Path(__file__).resolve().parents[1]


def test_the_database_is_one_file_in_wal_mode(
    embedded_store: EmbeddedGraphStore, rng: np.random.Generator
) -> None:
    """Readers beside a writer need WAL; the store is the one graph.db in its directory."""
    embedded_store.apply(chain(A, ["Alice", "Acme"], rng))
    assert (embedded_store.path / "graph.db").exists()
    conn = sqlite3.connect(embedded_store.path / "graph.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


# ---------------------------------------------------------------- atomicity and durability


@pytest.mark.parametrize("exc", [RuntimeError("boom"), sqlite3.OperationalError("disk I/O")])
def test_failure_mid_transaction_changes_nothing(
    embedded_store: EmbeddedGraphStore,
    rng: np.random.Generator,
    monkeypatch: pytest.MonkeyPatch,
    exc: BaseException,
) -> None:
    store = embedded_store
    base = chain(A, ["Alice", "Acme", "Berlin"], rng)
    store.apply(base)
    r0, r1 = base.new_relations
    before_snap, before_eps = store.snapshot(A, EVERYTHING), store.episodes(A)
    fresh = [entity(A, "Fresh", rng), entity(A, "Newer", rng)]
    doomed = plan(
        A, fresh, [relation(A, fresh[0], "x", fresh[1], rng)],
        alias_updates=[AliasUpdate(entity_id=base.new_entities[0].id, aliases=["Al"], keys=["al"])],
        invalidations=[Invalidation(relation_id=r0.id, invalid_at=T0)],
        mentions=[MentionUpdate(relation_id=r1.id, provenance=Provenance(episode_id="e",
                                                                         timestamp=T0))],
    )  # fmt: skip
    # relations are written last: new edge, then the invalidated r0, then fail on r1's mention
    written = fail_on(store, monkeypatch, "relations", 3, exc)
    with pytest.raises(StoreError if isinstance(exc, sqlite3.Error) else RuntimeError):
        store.apply(doomed)
    assert written == ["episodes", "entities", "entities", "entities", "relations", "relations"]
    assert store.snapshot(A, EVERYTHING) == before_snap
    assert store.episodes(A) == before_eps
    assert store.find_entities(A, ["al", "fresh"]) == []
    assert store.stats().relations == 2 and store.stats().valid_relations == 2
    with EmbeddedGraphStore(store.path) as again:  # what is on disk
        assert again.snapshot(A, EVERYTHING) == before_snap
        assert again.episodes(A) == before_eps
    monkeypatch.undo()
    store.apply(doomed)  # the same plan goes through once the fault is gone
    assert store.get_relations(A, [r0.id])[0].invalid_at == T0
    assert store.get_relations(A, [r1.id])[0].mentions == 2


_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, sys.argv[1])
    from mem0g.stores.embedded import EmbeddedGraphStore
    from mem0g.types import WritePlan

    store = EmbeddedGraphStore(sys.argv[2])
    plan = WritePlan.model_validate_json(open(sys.argv[3]).read())
    real = store._write
    def dying(conn, table, record, vec):
        real(conn, table, record, vec)
        if table == "relations":  # episode, entities and one edge are in the open transaction
            open(sys.argv[4], "w").write("in transaction")
            os.kill(os.getpid(), signal.SIGKILL)
    store._write = dying
    store.apply(plan)
    """
)


def test_process_killed_mid_apply_leaves_nothing(tmp_path: Path, rng: np.random.Generator) -> None:
    path = tmp_path / "store"
    with EmbeddedGraphStore(path) as store:
        kept = chain(A, ["Alice", "Acme"], rng)
        store.apply(kept)
        expected = store.snapshot(A, EVERYTHING)
    doomed = chain(A, ["Zed", "Zoo", "Zurich"], rng)
    doomed.invalidations = [Invalidation(relation_id=kept.new_relations[0].id, invalid_at=T0)]
    plan_file, marker = tmp_path / "plan.json", tmp_path / "marker"
    plan_file.write_text(doomed.model_dump_json())
    child = subprocess.run(
        [sys.executable, "-c", _CHILD, str(ROOT), str(path), str(plan_file), str(marker)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert marker.read_text() == "in transaction"
    conn = sqlite3.connect(path / "graph.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with EmbeddedGraphStore(path) as store:
        assert store.snapshot(A, EVERYTHING) == expected
        assert ids(store.episodes(A)) == [kept.episode.id]
        assert store.find_entities(A, ["zed", "zoo"]) == []
        store.apply(doomed)  # and the store is writable again
        assert store.stats().entities == 5


def test_as_of_search_follows_writes(
    embedded_store: EmbeddedGraphStore, rng: np.random.Generator
) -> None:
    """The edge matrix keeps its validity intervals in step with new edges and invalidations
    (and rebuilds them the same after a reopen); boundaries as in `Relation.valid_at`."""
    store = embedded_store
    ents, rels = ring(A, 12, 70, rng)
    rels[5].valid_from = None
    store.apply(plan(A, ents, rels[:25]))
    query = unit(rng)
    similar(store, A, query, 1, CURRENT)  # builds the matrix, without intervals
    store.apply(plan(A, relations=rels[25:30]))  # the matrix grows: room for more rows
    whens = [T0 + timedelta(days=d, hours=h) for d in (0, 3, 12, 30, 45) for h in (0, 1)]
    whens.append(T0 - timedelta(microseconds=1))

    def check(s: EmbeddedGraphStore) -> None:
        stored = s.get_relations(A, ids(rels))
        for when in whens:
            validity = Validity(as_of=when)
            accepted = [r for r in stored if r.valid_at(when)]
            scores = np.array([r.embedding for r in accepted], dtype=np.float32) @ query
            expected = [accepted[i].id for i in np.argsort(-scores)]
            got = similar(s, A, query, 100, validity)
            assert ids([r for r, _ in got]) == expected, when

    check(store)  # builds the intervals
    store.apply(plan(A, relations=rels[30:]))  # the matrix and its intervals grow
    cut = [Invalidation(relation_id=rels[i].id, invalid_at=T0 + timedelta(days=d))
           for i, d in ((1, 12), (5, 3), (26, 30), (30, 45))]  # fmt: skip
    store.apply(plan(A, invalidations=cut))
    assert len(similar(store, A, query, 100, Validity(as_of=T0 + timedelta(days=12)))) < 13
    check(store)
    with EmbeddedGraphStore(store.path) as again:
        check(again)


def test_every_table_has_its_tenant_index_and_deletes() -> None:
    """The SQLite statements are literal text; a table added later must get all of them."""
    from mem0g.stores.embedded import links
    from mem0g.stores.embedded import schema as embedded

    tables = {*embedded._COLUMNS, *embedded._REPAIR_TABLES, *links.TABLES}
    assert set(embedded._DELETE_TENANT) == set(embedded._DELETE_ALL) == tables
    statements = (*embedded._SCHEMA, *links.SCHEMA)
    indexed = {s.split(" ON ")[1].split()[0] for s in statements if "CREATE INDEX" in s}
    assert indexed == tables - {"summaries", "possible_duplicates"}  # keyed by tenant_key
    for table in tables:
        assert embedded._DELETE_TENANT[table] == f"DELETE FROM {table} WHERE tenant_key = ?"


def _tenant_state(store: EmbeddedGraphStore, scope: Tenant) -> tuple[object, ...]:
    """What a caller reads of a scope (stats and the tenant list are the store's)."""
    facts = store.facts(scope)
    query = np.asarray(store.snapshot(scope, EVERYTHING).relations[0].embedding)
    return (
        facts,
        {f.id: store.fact_history(scope, f.id) for f in facts},
        store.snapshot(scope, EVERYTHING),
        store.episodes(scope),
        store.find_entities(scope, ["alice"]),
        [(r.id, s) for r, s in similar(store, scope, query, 5, EVERYTHING)],
        store.recent_messages(scope, 10) if scope.run_id or scope.user_id else None,
    )


def test_tenants_used_longest_ago_leave_memory_and_read_back_the_same(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    """`max_loaded_tenants`: a long-running process touching tenant after tenant (a service,
    a whole-store export) kept every one in memory (20,000 small tenants: 2.4 GB). Past the
    bound the tenants used longest ago leave memory; what every read returns is unchanged,
    as writes, refusals and deletes of a tenant that left memory are."""
    bounded = EmbeddedGraphStore(tmp_path / "s", dims=DIMS, max_loaded_tenants=4)
    tenants = [Tenant(user_id=f"u{i}") for i in range(8)] + [
        Tenant(user_id="w", run_id=f"run-{i}") for i in range(6)
    ]
    made = {}
    for t in tenants:
        p = chain(t, ["Alice", "Acme", "Berlin"], rng)
        p.new_facts = [fact(t, f"a fact of {t.key}", rng)]
        p.fact_events = added(*p.new_facts)
        bounded.apply(p)
        made[t] = p
        assert len(bounded._buckets) <= 4 + 1  # the bound, and the tenant just written
    scopes = [*tenants[:8], Tenant(user_id="w")]  # w: one scope over six tenants
    unbounded = EmbeddedGraphStore(tmp_path / "s", dims=DIMS, max_loaded_tenants=None)
    expected = {s: _tenant_state(unbounded, s) for s in scopes}
    assert len(unbounded._buckets) == len(tenants)
    for _ in range(2):  # every scope read twice over, each time after the others
        for s in scopes:
            assert _tenant_state(bounded, s) == expected[s]
            assert len(bounded._buckets) <= max(4, len(bounded._scope_keys(s))) + 1
    assert len(bounded._buckets) < len(tenants)  # tenants left memory meanwhile
    first, *others = tenants[:8]
    for t in [first, *others[:3], first]:  # first: loaded before the others, used after
        bounded.facts(t)
    for t in others[3:6]:
        bounded.facts(t)
        assert first.key in bounded._buckets  # used last but one: not the first to leave
    gone = next(t for t in tenants if t.key not in bounded._buckets)
    again = made[gone].model_copy(deep=True)  # its ids are taken, though not in memory
    with pytest.raises(StoreError):
        bounded.apply(again)
    later = fact(gone, "written after it left memory", rng)
    bounded.apply(plan(gone, new_facts=[later], fact_events=added(later)))
    assert [f.text for f in bounded.facts(gone)][-1] == "written after it left memory"
    other = next(t for t in tenants[:8] if t != gone)
    for s in scopes:  # `other` leaves memory, then is deleted from the file
        bounded.facts(s)
    assert bounded.delete_tenant(other) == 5
    assert bounded.snapshot(other, EVERYTHING).entities == [] and other not in bounded.tenants()
    unbounded.close()
    reopened = EmbeddedGraphStore(tmp_path / "s", dims=DIMS, max_loaded_tenants=None)
    assert [f.text for f in reopened.facts(gone)][-1] == "written after it left memory"
    assert other not in reopened.tenants() and len(reopened.tenants()) == len(tenants) - 1
    reopened.close()
    bounded.close()
    with pytest.raises(ValueError, match="max_loaded_tenants"):
        EmbeddedGraphStore(tmp_path / "t", max_loaded_tenants=0)
