"""scripts/bench_scale.py on tiny sizes: its report is complete and its figures are counts of
what was really stored (no timing is asserted). The LLM is the scripted TEST DOUBLE."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from script_module import load_script

from mem0g import Memory
from mem0g.testing import ScriptedLLMServer


def test_tiny_scale_run_writes_its_report(tmp_path: Path) -> None:
    bench = load_script("bench_scale")
    out = tmp_path / "scale.json"
    assert bench.main(["--names", "3,6", "--tenants", "2,5", "--searches", "3",
                       "--out", str(out)]) == 0  # fmt: skip
    report = json.loads(out.read_text())
    assert [(r["names"], r["entities"]) for r in report["names_per_add"]] == [(3, 3), (6, 6)]
    assert [r["tenants"] for r in report["tenants_per_store"]] == [2, 5]
    # first searches of tenants not searched before (2, then the 3 others of 5), then 3
    # repeated searches of those, timed apart
    assert [r["first"]["n"] for r in report["tenants_per_store"]] == [2, 3]
    assert [r["searched_tenants"] for r in report["tenants_per_store"]] == [2, 3]
    assert all(r["repeat"]["n"] == r["repeat_cpu"]["n"] == 3 for r in report["tenants_per_store"])
    assert all(r["loaded_before_first_search"] is not None for r in report["tenants_per_store"])
    # each repeated search beside one of the 10-tenant reference store, and their CPU ratio
    assert all(r["reference_cpu"]["n"] == 3 and r["repeat_cpu_vs_reference"] > 0
               for r in report["tenants_per_store"])  # fmt: skip
    assert report["reopen"]["tenants"] == 5 and report["reopen"]["open_s"] > 0
    # the whole store's stats on a fresh open: one fact per tenant
    stats = report["reopen"]["stats"]
    assert (stats["facts"], stats["tenants"]) == (5, 5) and stats["first_s"] > 0
    assert report["load_before"] is not None and report["machine"]["cpu_count"]


# ------------------------------------------------- the import fill stores what adds store

_ID = re.compile(r"\b[0-9a-f]{32}\b")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")
_MADE_AT = {"written", "epoch"}  # Neo4j: the write's clock (ns) and the tenant's epoch (uuid)


def _shape(value: Any) -> Any:
    """A stored value with its times and ids blanked: what is left must be equal."""
    if isinstance(value, str):
        return _ID.sub("<id>", _TIME.sub("<t>", value))
    if isinstance(value, list | tuple):
        return [_shape(v) for v in value]
    if hasattr(value, "iso_format"):  # neo4j.time.DateTime
        return "<t>"
    return value


def _canonical(tables: dict[str, list[dict[str, Any]]]) -> dict[str, list[Any]]:
    """Every row with its times blanked and its ids renamed in order of appearance (rows
    sorted by their shape first), so records that point at each other still do."""
    names: dict[str, str] = {}

    def rename(value: Any) -> Any:
        if isinstance(value, str):
            value = _TIME.sub("<t>", value)
            return _ID.sub(lambda m: names.setdefault(m.group(), f"id{len(names)}"), value)
        if isinstance(value, list | tuple):
            return [rename(v) for v in value]
        return _shape(value)

    out: dict[str, list[Any]] = {}
    for table in sorted(tables):
        rows = [{k: ("<made>" if k in _MADE_AT else v) for k, v in row.items()}
                for row in tables[table]]  # fmt: skip
        rows.sort(key=lambda row: repr(sorted((k, _shape(v)) for k, v in row.items())))
        out[table] = [sorted((k, rename(v)) for k, v in row.items()) for row in rows]
    return out


def _sqlite_tables(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Every scannable table of the store file, FTS5 indexes by their terms: the segments
    (`_data`, `_idx`) are laid out per commit, so one commit of many rows stores the same
    index in other pages than many commits do."""
    conn = sqlite3.connect(path / "graph.db")
    conn.row_factory = sqlite3.Row
    try:
        listed = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
        fts = {name for name, sql in listed if "USING fts5(" in (sql or "")}
        tables: dict[str, list[dict[str, Any]]] = {}
        for name, sql in listed:
            if name in fts or any(name in (f"{t}_data", f"{t}_idx") for t in fts):
                continue
            rowid = "" if "WITHOUT ROWID" in (sql or "") else "rowid AS rowid_, "
            tables[name] = [dict(r) for r in conn.execute(f'SELECT {rowid}* FROM "{name}"')]
        for name in fts:
            terms = f'temp."{name}_terms"'
            conn.execute(f'CREATE VIRTUAL TABLE {terms} USING fts5vocab(main, "{name}", instance)')
            tables[f"{name} terms"] = [dict(r) for r in conn.execute(f"SELECT * FROM {terms}")]
        return tables
    finally:
        conn.close()


def _neo4j_tables(server: Any) -> dict[str, list[dict[str, Any]]]:
    """Every node by its labels, every relationship by its type, with all properties."""
    from neo4j import GraphDatabase

    with GraphDatabase.driver(server.uri, auth=(server.user, server.password)) as driver:
        nodes, _, _ = driver.execute_query("MATCH (n) RETURN labels(n) AS l, properties(n) AS p")
        rels, _, _ = driver.execute_query(
            "MATCH (a)-[r]->(b) RETURN type(r) AS t, properties(r) AS p, a.id AS a, b.id AS b"
        )
    tables: dict[str, list[dict[str, Any]]] = {}
    for n in nodes:
        tables.setdefault(":".join(sorted(n["l"])), []).append(dict(n["p"]))
    for r in rels:
        tables.setdefault(r["t"], []).append({**dict(r["p"]), "from": r["a"], "to": r["b"]})
    return tables


def test_the_import_fill_stores_exactly_what_adds_store(
    store_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """`--fill import` (the same tenants as an archive, 3 per transaction) leaves every
    stored row as `--fill adds` does: records, vectors, full-text terms and BM25 counts, and
    on Neo4j every node's properties (lex_scope, embeddings, sequence numbers); only ids and
    times differ. And the searches answer the same."""
    bench = load_script("bench_scale")
    results = []
    for how in ("adds", "import"):
        server = None
        store = None
        if store_kind == "neo4j":
            server = request.getfixturevalue("neo4j_server")
            request.getfixturevalue("neo4j_resetter").reset()
            store = {"provider": "neo4j", "url": server.uri, "username": server.user,
                     "password": server.password}  # fmt: skip
        with ScriptedLLMServer() as llm:
            config = bench._config(llm, tmp_path / how, store)
            config["memory"]["facts"] = True
            with Memory(config) as memory:
                bench._fill(memory, 0, 7, 1, how, 3)
                searches = [
                    [(f.text, sorted(f.sources), round(f.score, 9))
                     for f in memory.search(q, user_id=f"user-{i}").facts]
                    for i in range(7) for q in ("locker code", bench._own_word(i))
                ]  # fmt: skip
        tables = _neo4j_tables(server) if server else _sqlite_tables(tmp_path / how)
        results.append((_canonical(tables), searches))
    (adds, add_searches), (imported, import_searches) = results
    assert imported == adds
    assert import_searches == add_searches
    rows = {table: len(rows) for table, rows in adds.items()}
    if store_kind == "neo4j":
        assert rows["Fact"] == rows["Episode"] == rows["FactEvent"] == rows["TenantSequence"] == 7
        assert all(dict(row)["lex_scope"] and dict(row)["embedding"] for row in adds["Fact"])
    else:
        assert rows["facts"] == rows["episodes"] == rows["fact_events"] == 7
        assert rows["facts_bm25_len"] == 7 and rows["facts_bm25_df"] > 7
        assert rows["facts_fts terms"] >= 7 * 6
    assert all(len(hits) == 1 for hits in add_searches)  # each tenant finds its own fact
