"""Where the embedded store's scoped BM25 read spends its time as tenants grow (issue #14).

A real embedded store's file (its tables, FTS5 indexes and triggers), filled with plain SQL
inserts into `facts` (the triggers index each row and keep its BM25 counts), and the store's
scoped read of one tenant in four forms:

- `counted`: the store's read (`lexical.search`: the scope inside the MATCH, bm25()'s formula
  from the counts its writes keep, stores/embedded/bm25.py);
- `bm25`: the same MATCH ranked by FTS5's bm25() (the store's read before the counts; it
  counts each word's rows over the whole table per search);
- `match_only`: the same MATCH without a score;
- `word_row_count`: the count of the rows of the whole table holding the words.

Two shapes: `--tenants 10,1000,20000` one-fact tenants whose facts all hold the searched words
(the worst case for store-wide counts), and `--big 10000`: one tenant of that many facts, all
holding the words, beside 10 one-fact tenants (the scope's own size). `--write-ab` also times
the inserts with and without the count statements in the triggers (what the counts cost a
write), wall and CPU time, `--write-rounds` alternating pairs. Prints p50/p95 and writes JSON.

    PYTHONPATH=. .venv/bin/python scripts/bench_fts5_scope.py --tenants 10,1000,20000 --big 10000
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/: the bench package

from bench.timing import load_average, summary

from mem0g.stores import EmbeddedGraphStore
from mem0g.stores.embedded import lexical
from mem0g.types import Tenant

WORDS = ["locker", "code"]
_INSERT = (
    "INSERT INTO facts (id, user_id, agent_id, run_id, tenant_key, text, embedding, created_at, "
    "updated_at, provenance) VALUES (?, ?, NULL, NULL, ?, ?, NULL, '2024-01-01T00:00:00+00:00', "
    "'2024-01-01T00:00:00+00:00', '[]')"
)


def _uncounted(conn: sqlite3.Connection) -> None:
    """The facts insert trigger as it was before the counts (the FTS row only)."""
    fts, expr = lexical._SOURCES["facts"]
    conn.execute(f"DROP TRIGGER {fts}_ai")
    conn.execute(
        f"""CREATE TRIGGER {fts}_ai AFTER INSERT ON facts BEGIN
            INSERT INTO {fts} (rowid, text, scope, id, tenant_key) VALUES (new.rowid,
            {expr.format(row="new")}, {lexical._scope_sql("new")}, new.id, new.tenant_key); END"""
    )


def fill(conn: sqlite3.Connection, tenants: list[tuple[str, int]]) -> float:
    """Facts for (user id, count) pairs, all holding WORDS; returns the seconds it took."""
    started = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    n = 0
    for user, count in tenants:
        key = Tenant(user_id=user).key
        for _ in range(count):
            text = f"tenant {user} keeps locker code {n * 7919 % 10000} near hill {n % 13}"
            conn.execute(_INSERT, (f"f{n}", user, key, text))
            n += 1
    conn.execute("COMMIT")
    return time.perf_counter() - started


def forms(conn: sqlite3.Connection) -> dict[str, Callable[[str], Any]]:
    """The four reads of one tenant's key."""

    def counted(key: str) -> Any:
        return lexical.search(conn, "facts", [key], WORDS, 10)

    def ranked(key: str) -> Any:
        expression = lexical.match_expression([key], WORDS)
        return conn.execute(lexical._SEARCH["facts"], (expression, json.dumps([key]), 50, 0))

    def match_only(key: str) -> Any:
        return conn.execute(
            "SELECT id FROM facts_fts WHERE facts_fts MATCH ? AND tenant_key = ?",
            (lexical.match_expression([key], WORDS), key),
        ).fetchall()

    def word_row_count(key: str) -> Any:
        return conn.execute(
            "SELECT count(*) FROM facts_fts WHERE facts_fts MATCH ?", ('"locker" OR "code"',)
        ).fetchall()

    return {"counted": counted, "bm25": lambda k: ranked(k).fetchall(),
            "match_only": match_only, "word_row_count": word_row_count}  # fmt: skip


def measure(conn: sqlite3.Connection, users: list[str], repeats: int) -> dict[str, Any]:
    row: dict[str, Any] = {"load": load_average()}
    for name, read in forms(conn).items():
        times = []
        for r in range(repeats):
            key = Tenant(user_id=users[(r * 37) % len(users)]).key
            started = time.perf_counter()
            read(key)
            times.append(time.perf_counter() - started)
        row[name] = summary(times)
    counted = forms(conn)["counted"](Tenant(user_id=users[0]).key)
    expression = lexical.match_expression([Tenant(user_id=users[0]).key], WORDS)
    ranked = conn.execute(
        lexical._SEARCH["facts"], (expression, json.dumps([Tenant(user_id=users[0]).key]), 10, 0)
    ).fetchall()
    row["same_ranking"] = [i for i, _ in counted] == [r[0] for r in ranked]
    return row


def _line(label: str, row: dict[str, Any]) -> str:
    cells = ", ".join(f"{name} p50 {row[name]['p50_ms']:.3f} ms"
                      for name in ("counted", "bm25", "match_only", "word_row_count"))  # fmt: skip
    return f"{label}: {cells}; same ranking: {row['same_ranking']} (load {row['load']})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", default="10,1000,20000", help="one-fact tenant counts")
    parser.add_argument("--big", type=int, default=0, help="facts of one big tenant (0: skip)")
    parser.add_argument("--write-ab", action="store_true", help="time inserts with/without counts")
    parser.add_argument("--write-rounds", type=int, default=3, help="A/B pairs of --write-ab")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--out", type=Path, default=Path("bench-results/fts5-scope.json"))
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"tenants": [], "big": None, "writes": None}
    with tempfile.TemporaryDirectory(prefix="mem0g-fts5-") as tmp:
        for n in [int(x) for x in args.tenants.split(",") if x]:
            with EmbeddedGraphStore(Path(tmp) / f"t{n}") as store:
                conn = store._connection()
                users = [f"user-{i}" for i in range(n)]
                seconds = fill(conn, [(u, 1) for u in users])
                row = {
                    "tenants": n,
                    "fill_s": round(seconds, 3),
                    **measure(conn, users, args.repeats),
                }
            result["tenants"].append(row)
            print(_line(f"tenants {n:>6} (filled in {seconds:.1f} s)", row))
        if args.big:
            with EmbeddedGraphStore(Path(tmp) / "big") as store:
                conn = store._connection()
                others = [(f"user-{i}", 1) for i in range(10)]
                seconds = fill(conn, [("big", args.big), *others])
                row = {"facts": args.big, "fill_s": round(seconds, 3),
                       **measure(conn, ["big"], args.repeats)}  # fmt: skip
            result["big"] = row
            print(_line(f"one tenant of {args.big} facts", row))
        if args.write_ab:
            writes: dict[str, dict[str, Any]] = {}
            for r in range(args.write_rounds):  # alternating: the machine's load moves
                for name in ("with_counts", "without_counts"):
                    with EmbeddedGraphStore(Path(tmp) / f"w-{name}-{r}") as store:
                        conn = store._connection()
                        if name == "without_counts":
                            _uncounted(conn)
                        cpu = time.process_time()
                        seconds = fill(conn, [(f"user-{i}", 1) for i in range(5000)])
                        cpu = time.process_time() - cpu
                    runs = writes.setdefault(name, {"rows": 5000, "us_per_row": [],
                                                    "cpu_us_per_row": []})  # fmt: skip
                    runs["us_per_row"].append(round(seconds / 5000 * 1e6, 1))
                    runs["cpu_us_per_row"].append(round(cpu / 5000 * 1e6, 1))
            result["writes"] = {**writes, "load": load_average()}
            on, off = writes["with_counts"], writes["without_counts"]
            print(f"5000 fact inserts, CPU us/row: with the counts {on['cpu_us_per_row']}, "
                  f"without {off['cpu_us_per_row']}; wall us/row: with {on['us_per_row']}, "
                  f"without {off['us_per_row']} (load {result['writes']['load']})")  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
