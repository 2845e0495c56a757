"""The embedded store's own fact-memory tests: fault injection at the SQL layer, the v1 -> v5
upgrade, the table layout. The fact memory's contract, which both stores pass, is in
tests/test_store_contract.py; tests/test_neo4j_store.py has the Neo4j-specific ones (fault
injection inside the transaction, the data model)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from builders import (
    A_BOT,
    EVERYTHING,
    A,
    B,
    Reopen,
    Store,
    added,
    chain,
    fact,
    fact_plan,
    fail_on,
    scope_state,
    texts,
    unit,
)

from mem0g.stores import EmbeddedGraphStore, StoreError
from mem0g.stores.embedded import SCHEMA_VERSION
from mem0g.types import (
    FactChange,
    FactEvent,
    Summary,
)

EMBEDDED_ONLY = pytest.mark.parametrize("store_kind", ["embedded"])

# ---------------------------------------------------------------- atomicity


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
    before = scope_state(store)
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
    assert scope_state(store) == before
    assert store.similar_facts(A, query, 3) == hits
    with reopen(store) as again:
        assert scope_state(again) == before
    monkeypatch.undo()
    store.apply(doomed)  # the same plan goes through once the fault is gone
    assert sorted(texts(store.facts(A))) == ["Paris", "new one", "new two", "tea"]
    assert store.stats(A).entities == 4


# ---------------------------------------------------------------- durability and schema


_V1_TABLES = {"schema_version", "entities", "relations", "episodes"}


def _downgrade_to_v1(path: Path) -> None:
    """Turn a store file into exactly what v1 wrote: v2 only added the fact memory's tables
    and v3 the entity repair's (and their indexes), v4 the tenant versions, v5 the FTS5
    tables and their triggers (and their BM25 counts, added in place in v7), v6 the fact
    links, so v1 is the current file without them, version 1."""
    conn = sqlite3.connect(path / "graph.db")
    with conn:
        for (trigger,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger'"
        ).fetchall():
            conn.execute(f"DROP TRIGGER {trigger}")
        for fts in ("facts_fts", "relations_fts", "entities_fts"):
            conn.execute(f"DROP TABLE {fts}")
            for part in ("df", "tf", "len", "tokc", "tok"):  # its BM25 counts (bm25.py)
                conn.execute(f"DROP TABLE {fts.replace('_fts', '_bm25_')}{part}")
        conn.execute("DROP TABLE bm25_totals")
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
    assert SCHEMA_VERSION == 7
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


def test_a_file_as_the_store_path_is_refused_untouched(tmp_path: Path) -> None:
    """graph_store.path names a directory: a file there is a StoreError that says so (it was
    a bare FileExistsError from mkdir), and the file is left as it was."""
    path = tmp_path / "notes.db"
    path.write_bytes(b"someone else's file")
    with pytest.raises(StoreError, match=r"is a file: graph_store\.path names a directory"):
        EmbeddedGraphStore(path)
    assert path.read_bytes() == b"someone else's file"


def test_fact_tables_layout(embedded_store: EmbeddedGraphStore) -> None:
    """The SQLite columns of the fact memory (the Neo4j data model: test_neo4j_store.py)."""
    store = embedded_store
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


def test_a_summary_is_one_row_per_exact_tenant(embedded_store: EmbeddedGraphStore) -> None:
    store = embedded_store
    for text in ("first", "second"):
        store.set_summary(Summary(tenant=A, text=text, messages_covered=1))
    store.set_summary(Summary(tenant=A_BOT, text="bot", messages_covered=1))
    rows = sqlite3.connect(store.path / "graph.db").execute("SELECT count(*) FROM summaries")
    assert rows.fetchone()[0] == 2  # replaced in place
    assert store.get_summary(A).text == "second"
