"""Where the embedded store's scoped BM25 read spends its time as tenants grow (issue #14).

One FTS5 table made as the embedded store makes its fact index (porter unicode61, digits as
separators, rowids paired with a base table indexed by tenant), N one-fact tenants whose
facts all hold the searched words (the worst case), and the store's scoped query for one
tenant in five forms: the store's read (`scope_in_match`: the tenant's scope token inside the
MATCH, `stores/embedded/lexical.py`), and four earlier or partial forms over the scope's rowids:
FTS5's `ORDER BY rank`, `bm25()` ordered by SQLite, the match without a score, and the count
of the rows holding the words (what `bm25()` needs for its store-wide document frequencies).
Prints p50/p95 and writes JSON.

    PYTHONPATH=. .venv/bin/python scripts/bench_fts5_scope.py --tenants 10,1000,20000
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/: the bench package

from bench.timing import load_average, summary

from mem0g.stores.embedded.lexical import scope_token
from mem0g.stores.lexical_query import fts5_query

_SCOPE = "rowid IN (SELECT rowid FROM facts WHERE tenant_key IN (SELECT value FROM json_each(?)))"
FORMS = {
    "scope_in_match": "SELECT id, -rank FROM facts_fts WHERE facts_fts MATCH ? AND rank MATCH "
    "'bm25(1, 0, 0, 0)' AND tenant_key IN (SELECT value FROM json_each(?)) "
    "ORDER BY rank, id LIMIT 50",
    "order_by_rank": f"SELECT id, -rank FROM facts_fts WHERE facts_fts MATCH ? AND {_SCOPE} "
    "ORDER BY rank, id LIMIT 50",
    "order_by_bm25": f"SELECT id, -bm25(facts_fts) FROM facts_fts WHERE facts_fts MATCH ? "
    f"AND {_SCOPE} ORDER BY bm25(facts_fts), id LIMIT 50",
    "match_only": f"SELECT id FROM facts_fts WHERE facts_fts MATCH ? AND {_SCOPE}",
    "word_row_count": "SELECT count(*) FROM facts_fts WHERE facts_fts MATCH ? AND ? IS NOT NULL",
}


def build(n: int) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE facts (id TEXT, tenant_key TEXT, text TEXT)")
    conn.execute("CREATE INDEX facts_tenant ON facts (tenant_key)")
    conn.execute(
        "CREATE VIRTUAL TABLE facts_fts USING fts5(text, scope, id UNINDEXED, tenant_key "
        "UNINDEXED, tokenize=\"porter unicode61 remove_diacritics 0 separators '0123456789'\")"
    )
    for i in range(n):
        key = json.dumps([f"user-{i}", None, None])
        text = f"tenant {i} keeps locker code {i * 7919 % 10000}"
        conn.execute("INSERT INTO facts VALUES (?, ?, ?)", (f"f{i}", key, text))
        conn.execute(
            "INSERT INTO facts_fts (rowid, text, scope, id, tenant_key) "
            "VALUES (last_insert_rowid(), ?, ?, ?, ?)",
            (text, scope_token(key), f"f{i}", key),
        )
    conn.commit()
    return conn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tenants", default="10,1000,20000")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--out", type=Path, default=Path("bench-results/fts5-scope.json"))
    args = parser.parse_args(argv)
    query = fts5_query(["locker", "code"])
    rows = []
    for n in [int(x) for x in args.tenants.split(",") if x]:
        conn = build(n)
        row: dict[str, object] = {"tenants": n, "load": load_average()}
        for name, sql in FORMS.items():
            times = []
            for r in range(args.repeats):
                key = json.dumps([f"user-{(r * 37) % n}", None, None])
                scope = json.dumps([key])
                match = query
                if name == "scope_in_match":  # as lexical.search builds it
                    match = f'scope : ("{scope_token(key)}") AND text : ({query})'
                started = time.perf_counter()
                conn.execute(sql, (match, scope)).fetchall()
                times.append(time.perf_counter() - started)
            row[name] = summary(times)
        rows.append(row)
        print(f"tenants {n:>6}: " + ", ".join(
            f"{name} p50 {row[name]['p50_ms']:.3f} ms" for name in FORMS  # type: ignore[index]
        ))  # fmt: skip
        conn.close()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rows": rows}, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
