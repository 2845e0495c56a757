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


def _operators(plan: dict[str, Any], out: dict[str, float], path: str = "") -> None:
    """db hits per operator of a plan, keyed by its position and what it works on."""
    args = plan.get("args", {}) or {}
    details = str(args.get("Details", ""))[:80]
    key = f"{path}/{plan.get('operatorType', '?')} {details}".strip()
    out[key] = out.get(key, 0.0) + int(plan.get("dbHits", 0))
    for i, child in enumerate(plan.get("children", [])):
        _operators(child, out, f"{path}{i}")


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
    operators: dict[str, dict[str, float]] = {}
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
            _operators(profile, operators.setdefault(name, {}))
    searches = max(len(queries), 1)
    return {
        name: {
            "per_search": round(e["runs"] / searches, 2),
            "mean_db_hits": round(e["db_hits"] / e["runs"], 1),
            "mean_rows": round(e["rows"] / e["runs"], 1),
            # the operators with the most db hits, mean per run (plan position, type, details)
            "top_operators": {
                op: round(hits / e["runs"], 1)
                for op, hits in sorted(operators[name].items(), key=lambda kv: -kv[1])[:8]
                if hits
            },
        }
        for name, e in sorted(per.items())
    }
