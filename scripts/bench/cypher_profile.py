"""Cypher PROFILE of the statements one search sends (`bench_search.py --cypher-profile N`):
the searches' reads are captured with their parameters, then each is run again as
`PROFILE <statement>` in a READ session, and its db hits (the sum over the plan's operators)
and rows are averaged per statement name. Run after the timed phases, on extra queries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from neo4j import READ_ACCESS

from bench.data import TARGET_USER
from mem0g import Memory
from mem0g.stores.neo4j.statements import statements


def _db_hits(plan: dict[str, Any]) -> int:
    return int(plan.get("dbHits", 0)) + sum(_db_hits(c) for c in plan.get("children", []))


def profile_searches(memory: Memory, queries: Sequence[str]) -> dict[str, Any]:
    """Per statement: mean db hits, mean rows returned, and how many runs it had per search."""
    store: Any = memory.store
    captured: list[tuple[str, dict[str, Any]]] = []
    real = store._read

    def capture(name: str, params: dict[str, Any]) -> Any:
        captured.append((name, params))
        return real(name, params)

    store._read = capture
    try:
        for query in queries:
            memory.search(query, user_id=TARGET_USER, limit=10)
    finally:
        del store._read  # the method again
    per: dict[str, dict[str, float]] = {}
    driver = store._ready()
    with store._session(driver, READ_ACCESS) as session:
        for name, params in captured:
            result = session.run("PROFILE " + statements()[name], params)
            rows = len(list(result))
            profile = result.consume().profile or {}
            entry = per.setdefault(name, {"runs": 0, "db_hits": 0.0, "rows": 0.0})
            entry["runs"] += 1
            entry["db_hits"] += _db_hits(profile)
            entry["rows"] += rows
    searches = max(len(queries), 1)
    return {
        name: {
            "per_search": round(e["runs"] / searches, 2),
            "mean_db_hits": round(e["db_hits"] / e["runs"], 1),
            "mean_rows": round(e["rows"] / e["runs"], 1),
        }
        for name, e in sorted(per.items())
    }
