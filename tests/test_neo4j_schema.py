"""The Neo4j store's schema step at open (mem0g/stores/neo4j/schema_check.py): a database that
holds what cypher/ declares costs two reads, and anything missing (a dropped index or
constraint, an older layout, other vector dimensions) runs the whole DDL with its migrations,
also when several stores open at once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import neo4j
import numpy as np
import pytest
from builders import CURRENT, DIMS, A, chain

from mem0g.stores.base import StoreError
from mem0g.stores.neo4j import Neo4jGraphStore, statements
from mem0g.stores.neo4j.indexes import SCHEMA_VERSION
from mem0g.stores.neo4j.plan_rows import write_order
from mem0g.stores.neo4j.schema_check import (
    VECTOR_INDEXES,
    DeclaredSchema,
    check_schema,
    ddl_names,
    declared_schema,
    parse_declared,
)

Connect = Callable[..., Neo4jGraphStore]
SMALL = DeclaredSchema(frozenset({"mem0g_a_id"}), frozenset({"mem0g_a_key", "mem0g_a_text"}))


def _row(
    name: str, state: str = "ONLINE", owner: str | None = None, dims: int | None = None
) -> dict[str, Any]:
    """One row of the `schema_objects` read."""
    return {"name": name, "state": state, "constraint": owner, "dims": dims}


def _rows(dims: int | None = 8, **changed: dict[str, Any] | None) -> list[dict[str, Any]]:
    """What `schema_objects` returns for SMALL, complete and online, with `changed` rows
    replaced (None: the row is missing)."""
    rows: dict[str, dict[str, Any] | None] = {
        "mem0g_a_id": _row("mem0g_a_id", owner="mem0g_a_id"),
        "mem0g_a_key": _row("mem0g_a_key"),
        "mem0g_a_text": _row("mem0g_a_text"),
    }
    if dims is not None:
        rows.update({name: _row(name, dims=dims) for name in VECTOR_INDEXES})
    rows.update(changed)
    return [row for row in rows.values() if row is not None]


# ---------------------------------------------------------------- the check, without a server


def test_every_schema_statement_declares_one_named_object() -> None:
    declared = declared_schema()
    names = ddl_names(statements())
    assert len(declared.constraints) + len(declared.indexes) == len(names) >= 50
    assert {"mem0g_entity_id", "mem0g_relation_id", "mem0g_entity_event_id"} <= declared.constraints
    assert {"mem0g_entity_tenant_key", "mem0g_fact_words", "mem0g_possible_duplicate_pair"} <= (
        declared.indexes
    )
    assert not set(VECTOR_INDEXES) & declared.indexes  # made for the store's dims, apart
    with pytest.raises(ValueError, match="index_x"):
        parse_declared({"index_x": "CREATE INDEX mem0g_x FOR (n:X) ON (n.a)"})  # no IF NOT EXISTS
    with pytest.raises(ValueError, match="twice"):
        text = "CREATE INDEX mem0g_x IF NOT EXISTS FOR (n:X) ON (n.a)"
        parse_declared({"index_a": text, "index_b": text})


def test_a_complete_schema_has_no_gaps() -> None:
    found = check_schema(3, _rows(), 8, 3, SMALL)
    assert (found.gaps, found.dims) == ([], 8)
    found = check_schema(4, _rows(), None, 3, SMALL)  # a newer layout; dims from the indexes
    assert (found.gaps, found.dims) == ([], 8)
    found = check_schema(3, _rows(dims=None), None, 3, SMALL)  # nothing embedded yet
    assert (found.gaps, found.dims) == ([], None)


ENTITY_V, RELATION_V, FACT_V = VECTOR_INDEXES


@pytest.mark.parametrize(
    ("version", "rows", "dims", "gap"),
    [
        (None, _rows(), 8, "layout version 0, this mem0g writes 3"),
        (2, _rows(), 8, "layout version 2, this mem0g writes 3"),
        (3, _rows(mem0g_a_key=None), 8, "index mem0g_a_key missing"),
        (3, _rows(mem0g_a_id=None), 8, "constraint mem0g_a_id missing"),
        # an index of the constraint's name that no constraint owns is not the constraint
        (3, _rows(mem0g_a_id=_row("mem0g_a_id")), 8, "constraint mem0g_a_id missing"),
        (3, _rows(mem0g_a_text=_row("mem0g_a_text", "POPULATING")), 8,
         "index mem0g_a_text is POPULATING"),
        (3, _rows(**{FACT_V: None}), 8, f"vector index {FACT_V} missing"),
        (3, _rows(), 16, f"vector index {ENTITY_V} has 8 dimensions, not 16"),
        (3, _rows(dims=None), 8, f"vector index {RELATION_V} missing"),  # the store knows dims
        (3, _rows(**{RELATION_V: _row(RELATION_V, "FAILED", dims=8)}), None,
         f"vector index {RELATION_V} is FAILED"),
        # sizes that disagree: the DDL step reports them
        (3, _rows(**{RELATION_V: _row(RELATION_V, dims=4)}), None,
         "vector indexes of different sizes: ['4', '8']"),
    ],
)  # fmt: skip
def test_each_gap_is_named(
    version: int | None, rows: list[dict[str, Any]], dims: int | None, gap: str
) -> None:
    assert gap in check_schema(version, rows, dims, 3, SMALL).gaps


# ---------------------------------------------------------------- on a real Neo4j


@pytest.fixture
def driver(neo4j_server: Any) -> Iterator[neo4j.Driver]:
    auth = (neo4j_server.user, neo4j_server.password)
    with neo4j.GraphDatabase.driver(neo4j_server.uri, auth=auth) as d:
        yield d


def _cypher(driver: neo4j.Driver, query: str) -> list[dict[str, Any]]:
    records, _, _ = driver.execute_query(query)
    return [r.data() for r in records]


def _schema_statements(store: Neo4jGraphStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Open `store` (its schema step) and return the statements that step ran."""
    ran: list[str] = []
    real = store._auto

    def auto(driver: neo4j.Driver, name: str, params: dict[str, Any] | None = None) -> Any:
        ran.append(name)
        return real(driver, name, params)

    monkeypatch.setattr(store, "_auto", auto)
    store._ready()
    monkeypatch.undo()
    return ran


def _complete(driver: neo4j.Driver, dims: int) -> list[str]:
    """The gaps a store of `dims` would find now (empty: the schema is all there)."""
    (row,) = _cypher(driver, statements()["schema_version"])
    objects = _cypher(driver, statements()["schema_objects"])
    return check_schema(row["version"], objects, dims, SCHEMA_VERSION).gaps


@pytest.mark.neo4j
def test_a_database_with_the_schema_costs_two_reads(
    neo4j_connect: Connect,
    driver: neo4j.Driver,
    monkeypatch: pytest.MonkeyPatch,
    rng: np.random.Generator,
) -> None:
    neo4j_connect(dims=DIMS)._ready()  # whatever the tests before left: now complete
    assert _complete(driver, DIMS) == []
    store = neo4j_connect(dims=DIMS)
    assert _schema_statements(store, monkeypatch) == ["schema_version", "schema_objects"]
    written = chain(A, ["Alice", "Bob", "Carol"], rng)
    store.apply(written)  # the vector index serves as before
    vector = np.asarray(written.new_relations[1].embedding, dtype=np.float32)
    hits = store.similar_relations(A, vector, 1, CURRENT)
    assert [r.id for r in hits] == [written.new_relations[1].id]
    # a store that does not know its dims takes the indexes' own, without the DDL
    unknowing = neo4j_connect()
    assert _schema_statements(unknowing, monkeypatch) == ["schema_version", "schema_objects"]
    assert unknowing.dims == DIMS


@pytest.mark.neo4j
@pytest.mark.parametrize(
    ("kind", "name", "statement"),
    [
        ("INDEX", "mem0g_entity_tenant_key", "index_entity_tenant_key"),  # range
        ("INDEX", "mem0g_possible_duplicate_pair", "index_possible_duplicate_pair"),
        ("INDEX", "mem0g_fact_words", "fulltext_index_facts"),  # full-text
        ("INDEX", "mem0g_fact_embedding", "vector_index_facts"),  # vector
        ("CONSTRAINT", "mem0g_fact_id", "constraint_fact_id"),  # and its own index with it
    ],
)
def test_an_object_dropped_by_hand_is_made_again(
    neo4j_connect: Connect,
    driver: neo4j.Driver,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    name: str,
    statement: str,
) -> None:
    neo4j_connect(dims=DIMS)._ready()
    _cypher(driver, f"DROP {kind} {name}")  # a fixed name of ours, from the parameters
    assert any(name in gap for gap in _complete(driver, DIMS))
    ran = _schema_statements(neo4j_connect(dims=DIMS), monkeypatch)
    assert statement in ran and "set_schema_version" not in ran  # the layout was current
    assert _complete(driver, DIMS) == []
    listing = "SHOW CONSTRAINTS YIELD name" if kind == "CONSTRAINT" else "SHOW INDEXES YIELD name"
    assert name in {r["name"] for r in _cypher(driver, listing)}
    assert _schema_statements(neo4j_connect(dims=DIMS), monkeypatch) == [
        "schema_version",
        "schema_objects",
    ]


@pytest.mark.neo4j
def test_an_older_layout_runs_its_migrations(
    neo4j_connect: Connect, driver: neo4j.Driver, monkeypatch: pytest.MonkeyPatch
) -> None:
    neo4j_connect(dims=DIMS)._ready()
    _cypher(driver, "MATCH (m:Mem0gSchema) SET m.version = 1")
    ran = _schema_statements(neo4j_connect(dims=DIMS), monkeypatch)
    assert {"backfill_entity_keys", "show_fulltext_indexes", "set_schema_version"} <= set(ran)
    version = _cypher(driver, "MATCH (m:Mem0gSchema) RETURN m.version AS v")
    assert version == [{"v": SCHEMA_VERSION}]
    assert _complete(driver, DIMS) == []


@pytest.mark.neo4j
def test_stores_opening_at_once_on_a_partial_schema_all_succeed(
    neo4j_connect: Connect, driver: neo4j.Driver
) -> None:
    """Several stores, each with its own driver (as separate processes would be), find the
    same gaps at the same time: each runs the DDL, the losers of a race get "already exists"
    or find the object made, and every one ends with the schema complete."""
    neo4j_connect(dims=DIMS)._ready()
    for listing in ("DROP CONSTRAINT mem0g_fact_event_id", "DROP INDEX mem0g_entity_text",
                    "DROP INDEX mem0g_relation_embedding"):  # fmt: skip
        _cypher(driver, listing)
    _cypher(driver, "MATCH (m:Mem0gSchema) SET m.version = 2")  # a migration to run as well
    stores = [neo4j_connect(dims=DIMS) for _ in range(4)]
    start = threading.Barrier(len(stores))
    errors: list[BaseException] = []

    def open_one(store: Neo4jGraphStore) -> None:
        try:
            start.wait()
            store._ready()
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=open_one, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    assert all(s._schema_ready and s._vector_indexes for s in stores)
    assert _complete(driver, DIMS) == []
    assert _cypher(driver, "MATCH (m:Mem0gSchema) RETURN count(m) AS n") == [{"n": 1}]


def test_write_order_sorts_as_its_numbers_and_id() -> None:
    """`ord` compares as (written, pos, id) do, for any widths of the numbers (no server)."""
    rows = [
        (0, 0, "b"), (0, 0, "c"), (0, 1, "a"), (9, 0, "a"), (10, 0, "a"), (10, 99, "a"),
        (10, 100, "a"), (1_796_312_503_308_062_288, 0, "z"), (1_796_312_503_308_062_288, 12, "a"),
        (10**19 - 1, 10**9 - 1, "a"),
    ]  # fmt: skip
    keys = [write_order(*row) for row in rows]
    assert sorted(keys) == keys and len({len(k) for k in keys}) == 1
    assert write_order(7, 1_234_567, "id") == "0000000000000000007001234567id"
    for written, pos in ((-1, 0), (10**19, 0), (0, -1), (0, 10**9)):
        with pytest.raises(ValueError, match="write order out of range"):
            write_order(written, pos, "x")


@pytest.mark.neo4j
def test_a_newer_layout_is_refused_and_left_untouched(
    neo4j_connect: Connect, driver: neo4j.Driver, rng: np.random.Generator
) -> None:
    """A database a later mem0g wrote (its layout version above ours) is refused with one
    clear error, before any DDL, migration or write: an older mem0g would write rows in the
    layout the newer one replaced. A missing index makes the schema step want to run its DDL,
    which must not run either."""
    neo4j_connect(dims=DIMS)._ready()
    newer = SCHEMA_VERSION + 1
    _cypher(driver, "DROP INDEX mem0g_entity_text")
    _cypher(driver, f"MATCH (m:Mem0gSchema) SET m.version = {newer}")
    try:
        store = neo4j_connect(dims=DIMS)
        with pytest.raises(StoreError, match=f"layout version {newer}.*newer") as refused:
            store.apply(chain(A, ["Alice", "Bob"], rng))
        assert "\n" not in str(refused.value)
        with pytest.raises(StoreError, match="newer"):
            store.stats()
        assert _cypher(driver, "MATCH (m:Mem0gSchema) RETURN m.version AS v") == [{"v": newer}]
        assert "mem0g_entity_text" not in {
            r["name"] for r in _cypher(driver, "SHOW INDEXES YIELD name")
        }
        assert _cypher(driver, "MATCH (n) WHERE NOT n:Mem0gSchema RETURN count(n) AS n") == [
            {"n": 0}
        ]
    finally:  # the shared server's layout as the other tests expect it
        _cypher(driver, f"MATCH (m:Mem0gSchema) SET m.version = {SCHEMA_VERSION}")
        neo4j_connect(dims=DIMS)._ready()
    assert _complete(driver, DIMS) == []
