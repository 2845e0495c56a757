"""BM25 for the FTS5 tables from counts the store's own writes keep, so a search costs the
scope's matching rows and never the other tenants' (issue #14).

Why: FTS5's `bm25()` weighs each query word by the rows of the *whole table* that hold it
(docs/architecture.md: the statistics are store-wide), and counts them on every search by
walking that word's posting list. At 20,000 one-fact tenants all holding the searched words a
one-fact tenant's search cost 3.1x the CPU of 10 tenants, growing with every other tenant's
rows. FTS5 keeps no per-word count, and Python's sqlite3 cannot register an FTS5 auxiliary
function, so the numbers `bm25()` uses are kept beside each FTS table, written by the same
triggers in the same transaction as the row (atomic with the add, rolled back with it):

- `<table>_bm25_df` (term, df): how many rows' text holds the term (bm25()'s nHit);
- `<table>_bm25_tf` (rid, term, tf): a row's occurrences of each term of its text;
- `<table>_bm25_len` (rid, n): a row's tokens over all its columns (bm25()'s D);
- `bm25_totals` (fts, n_rows, n_tokens): the table's row and token counts (N, and avgdl).

The terms are FTS5's own, never re-derived in Python: the trigger that indexes a row also puts
its columns into `<table>_bm25_tok`, a contentless FTS5 table with the same tokenizer, reads
that row's terms and counts from its `fts5vocab` table, and empties it; a query word's term
comes from a temporary table of the same kind (and is cached). The read then evaluates
bm25()'s own formula (SQLite's fts5_aux.c: k1 = 1.2, b = 0.75, idf = ln((N - n + 0.5) /
(n + 0.5)) floored at 1e-6, the same operation order) over the scope's matches only, so the
scores equal bm25()'s (tests/test_lexical_bm25.py checks them against bm25() on random
stores). A query word FTS5 splits into several terms (or none) is a phrase these counts do not
cover; such a search, and a store whose counts are missing, use `bm25()` itself (same
scores, the store-wide walk). `rebuild` refills the counts from the FTS table's own
`fts5vocab` (a store from before these tables, or one whose FTS table was rebuilt).
"""

from __future__ import annotations

import functools
import json
import math
import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

K1, B = 1.2, 0.75  # bm25()'s constants (fts5_aux.c)
_IDF_FLOOR = 1e-6  # bm25() replaces an idf <= 0 (a word in over half the rows) by this
_CACHE_LIMIT = 1 << 16
_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]{0,40}")


def _checked(table: str) -> str:
    """Table names are spliced into SQL text (SQLite binds no identifiers): they are
    lexical.py's constants, and anything else is refused before it reaches SQL."""
    if not _IDENTIFIER.fullmatch(table):
        raise ValueError(f"not an FTS table name of the store: {table!r}")
    return table


def schema(table: str, tokenize: str) -> list[str]:
    """The count tables of one FTS table (`table` is a constant of lexical.py)."""
    _checked(table)
    return [
        """CREATE TABLE IF NOT EXISTS bm25_totals (fts TEXT PRIMARY KEY,
            n_rows INTEGER NOT NULL, n_tokens INTEGER NOT NULL)""",
        f"""CREATE TABLE IF NOT EXISTS {table}_bm25_df (term TEXT PRIMARY KEY,
            df INTEGER NOT NULL) WITHOUT ROWID""",
        f"""CREATE TABLE IF NOT EXISTS {table}_bm25_tf (rid INTEGER NOT NULL, term TEXT NOT NULL,
            tf INTEGER NOT NULL, PRIMARY KEY (rid, term)) WITHOUT ROWID""",
        f"""CREATE TABLE IF NOT EXISTS {table}_bm25_len (rid INTEGER PRIMARY KEY,
            n INTEGER NOT NULL)""",
        f"""CREATE VIRTUAL TABLE IF NOT EXISTS {table}_bm25_tok USING fts5(text, scope,
            content='', columnsize=0, tokenize="{tokenize}")""",
        f"""CREATE VIRTUAL TABLE IF NOT EXISTS {table}_bm25_tokc
            USING fts5vocab({table}_bm25_tok, col)""",
    ]


def count_in(table: str, row: str, text: str) -> str:
    """Trigger statements adding the counts of row `row` (new), its text given as SQL. The
    helper holds the text only and its vocab is read once: a cursor over the helper is the
    most expensive step of a write's counting. The row's length adds its `scope` column,
    which is always one token (`lexical._scope_sql`: the tenant key's hex, written in the
    letters a-p, so the tokenizer never splits it), as bm25() counts every column's tokens.
    The term counts move by one upsert per term (an outer statement's `OR` conflict policy
    overrides a trigger's own `OR` policy, not an upsert; the store's writes use none)."""
    _checked(table)
    rid, vocab, tf = f"{row}.rowid", f"{table}_bm25_tokc", f"{table}_bm25_tf"
    return f"""
        INSERT INTO {table}_bm25_tok (rowid, text) VALUES ({rid}, {text});
        INSERT INTO {tf} (rid, term, tf) SELECT {rid}, term, cnt FROM {vocab} WHERE col = 'text';
        INSERT INTO {table}_bm25_len (rid, n) VALUES ({rid},
            coalesce((SELECT sum(tf) FROM {tf} WHERE rid = {rid}), 0) + 1);
        INSERT INTO {table}_bm25_df (term, df) SELECT term, 1 FROM {tf} WHERE rid = {rid}
            ON CONFLICT (term) DO UPDATE SET df = df + 1;
        UPDATE bm25_totals SET n_rows = n_rows + 1,
            n_tokens = n_tokens + (SELECT n FROM {table}_bm25_len WHERE rid = {rid})
            WHERE fts = '{table}_fts';
        INSERT INTO {table}_bm25_tok ({table}_bm25_tok) VALUES ('delete-all');"""


# in the insert trigger of today's counts only: an older store's triggers are made again
TRIGGER_MARK = "ON CONFLICT (term) DO UPDATE SET df = df + 1"


def count_out(table: str, row: str) -> str:
    """Trigger statements removing the counts of row `row` (old)."""
    _checked(table)
    rid, terms = f"{row}.rowid", f"(SELECT term FROM {table}_bm25_tf WHERE rid = {row}.rowid)"
    return f"""
        UPDATE {table}_bm25_df SET df = df - 1 WHERE term IN {terms};
        DELETE FROM {table}_bm25_df WHERE df <= 0 AND term IN {terms};
        UPDATE bm25_totals SET n_rows = n_rows - 1,
            n_tokens = n_tokens - coalesce((SELECT n FROM {table}_bm25_len WHERE rid = {rid}), 0)
            WHERE fts = '{table}_fts';
        DELETE FROM {table}_bm25_tf WHERE rid = {rid};
        DELETE FROM {table}_bm25_len WHERE rid = {rid};"""


def in_step(conn: sqlite3.Connection, table: str) -> bool:
    """Whether the counts describe the FTS table's rows: the totals exist, count its rows, and
    every FTS row has its length row (rowids renumbered since would break that pairing)."""
    _checked(table)
    row = conn.execute(
        f"""SELECT (SELECT n_rows FROM bm25_totals WHERE fts = '{table}_fts'),
                   (SELECT count(*) FROM {table}_fts),
                   (SELECT count(*) FROM {table}_bm25_len),
                   (SELECT count(*) FROM {table}_fts x JOIN {table}_bm25_len l
                     ON l.rid = x.rowid)"""
    ).fetchone()
    return row[0] is not None and row[0] == row[1] == row[2] == row[3]


def rebuild(conn: sqlite3.Connection, table: str) -> None:
    """Inside a write transaction: the counts again from the FTS table's own index (its
    `fts5vocab` tables: one walk of the index, as bm25() makes per search today)."""
    _checked(table)
    fts = f"{table}_fts"
    col, inst = f"temp.{fts}_vcol", f"temp.{fts}_vins"
    for statement in (
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {col} USING fts5vocab(main, {fts}, col)",
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {inst} USING fts5vocab(main, {fts}, instance)",
        f"DELETE FROM {table}_bm25_df",
        f"DELETE FROM {table}_bm25_tf",
        f"DELETE FROM {table}_bm25_len",
        f"INSERT INTO {table}_bm25_df (term, df) SELECT term, doc FROM {col} WHERE col = 'text'",
        f"""INSERT INTO {table}_bm25_tf (rid, term, tf) SELECT doc, term, count(*)
            FROM {inst} WHERE col = 'text' GROUP BY doc, term""",
        f"""INSERT INTO {table}_bm25_len (rid, n) SELECT x.rowid, coalesce(c.n, 0)
            FROM {fts} x LEFT JOIN (SELECT doc, count(*) AS n FROM {inst} GROUP BY doc) c
            ON c.doc = x.rowid""",
        f"""INSERT OR REPLACE INTO bm25_totals (fts, n_rows, n_tokens) VALUES ('{fts}',
            (SELECT count(*) FROM {table}_bm25_len),
            (SELECT coalesce(sum(n), 0) FROM {table}_bm25_len))""",
        f"DROP TABLE {col}",
        f"DROP TABLE {inst}",
    ):
        conn.execute(statement)


_TERMS: dict[tuple[str, str], tuple[str, ...]] = {}  # (table, word) -> FTS5's terms of it


def query_terms(
    conn: sqlite3.Connection, table: str, tokenize: str, words: Sequence[str]
) -> list[tuple[str, ...]]:
    """FTS5's terms of each query word as `table`'s tokenizer makes them (a temporary
    contentless table of the same tokenizer, read through `fts5vocab`; cached)."""
    _checked(table)
    missing = [w for w in dict.fromkeys(words) if (table, w) not in _TERMS]
    if missing:
        tok = f"temp.{table}_bm25_q"
        conn.execute(
            f"""CREATE VIRTUAL TABLE IF NOT EXISTS {tok} USING fts5(text, content='',
                tokenize="{tokenize}")"""
        )
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {tok}_v "
            f"USING fts5vocab(temp, {table}_bm25_q, instance)"
        )
        conn.executemany(f"INSERT INTO {tok} (rowid, text) VALUES (?, ?)", enumerate(missing, 1))
        found: dict[int, list[str]] = {}
        for doc, term in conn.execute(f"SELECT doc, term FROM {tok}_v ORDER BY doc, offset"):
            found.setdefault(doc, []).append(term)
        conn.execute(f"INSERT INTO {tok} ({table}_bm25_q) VALUES ('delete-all')")
        if len(_TERMS) + len(missing) > _CACHE_LIMIT:
            _TERMS.clear()
        for i, word in enumerate(missing, 1):
            _TERMS[(table, word)] = tuple(found.get(i, ()))
    return [_TERMS[(table, w)] for w in words]


def scope_bounds(
    conn: sqlite3.Connection, table: str, tokenize: str, words: Sequence[str], rows: int
) -> dict[str, tuple[int, int]]:
    """(at least, at most) rows of a scope of `rows` rows that hold each word, from the
    counts: df rows of the table hold it, and all but `rows` of the table's rows are other
    tenants'. Words FTS5 makes several terms of (a phrase), and a table without counts, are
    left out (the caller counts them)."""
    totals = conn.execute(
        "SELECT n_rows FROM bm25_totals WHERE fts = ?", (f"{_checked(table)}_fts",)
    ).fetchone()
    if totals is None or totals[0] < rows:  # no counts, or not in step with the rows
        return {}
    single = {w: t[0] for w, t in zip(words, query_terms(conn, table, tokenize, words),
                                       strict=True) if len(t) == 1}  # fmt: skip
    df = dict(
        conn.execute(
            f"SELECT term, df FROM {table}_bm25_df WHERE term IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(set(single.values()))),),
        ).fetchall()
    )
    other = totals[0] - rows
    return {w: (max(0, df.get(t, 0) - other), min(df.get(t, 0), rows)) for w, t in single.items()}


# Equal scores: facts and edges by their indexed text, then id (as on Neo4j), so the same
# content gives the same hits whatever the (random) ids; entities by id.
TIES = {"facts": ("text", "id"), "relations": ("text", "id"), "entities": ("id",)}
# The FTS tables' columns in their content table (`<fts>_content`, FTS5's shadow table of an
# ordinary FTS5 table: its rowid is `id`, column i of the declaration is `c<i>`; part of the
# on-disk format SQLite keeps). lexical.py declares (text, scope, id, tenant_key).
CONTENT = {"text": "c0", "id": "c2", "tenant_key": "c3"}


@functools.cache
def scored(table: str, phrases: int) -> str:
    """The scoring read for `phrases` query words: bm25()'s formula over the MATCH's rows
    (the scope's only), from the counts. Parameters, in this order: term and idf of each
    phrase (query order), the MATCH expression, avgdl, the tenant keys (JSON), limit,
    offset. The sum runs over the phrases in query order with bm25()'s operation order, so
    the scores are bm25()'s. The MATCH yields rowids only: a matched row's id, text and tenant
    key are read from the content table by rowid (a plain b-tree read), not through the FTS5
    cursor, which fetches a row's content with a statement of its own per row (at 2,000
    matches of a common word that was over half of the read's time)."""
    _checked(table)
    fts = f"{table}_fts"
    values = ", ".join(["(?, ?)"] * phrases)
    ties = ", ".join(f"c.{CONTENT[column]}" for column in TIES[table])
    return f"""WITH q (term, idf) AS MATERIALIZED (VALUES {values}),
        m (rid) AS MATERIALIZED (SELECT rowid FROM {fts} WHERE {fts} MATCH ?)
        SELECT c.{CONTENT["id"]}, coalesce((SELECT sum(q.idf * ((t.tf * ({K1} + 1.0))
                                 / (t.tf + {K1} * (1 - {B} + {B} * coalesce(l.n, 0) / ?))))
                          FROM q CROSS JOIN {table}_bm25_tf t
                          WHERE t.rid = m.rid AND t.term = q.term), 0.0) AS score
        FROM m JOIN {fts}_content c ON c.id = m.rid
        LEFT JOIN {table}_bm25_len l ON l.rid = m.rid
        WHERE c.{CONTENT["tenant_key"]} IN (SELECT value FROM json_each(?))
        ORDER BY score DESC, {ties} LIMIT ? OFFSET ?"""


@contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[None]:
    """The counts and the matches read in one snapshot (a read transaction), unless the
    caller is inside a transaction already."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


class Weights(NamedTuple):
    phrases: list[tuple[str, float]]  # (term, idf) per query word, in query order
    avgdl: float
    df: list[int]  # rows of the table holding each phrase's term


def weights(conn: sqlite3.Connection, table: str, terms: list[str]) -> Weights | None:
    """(term, idf) per phrase, avgdl and each term's df as bm25() computes them, from the
    counts; None when the table holds no counts (then bm25() itself ranks)."""
    _checked(table)
    totals = conn.execute(
        "SELECT n_rows, n_tokens FROM bm25_totals WHERE fts = ?", (f"{table}_fts",)
    ).fetchone()
    if totals is None or not totals[0]:
        return None
    rows, tokens = totals
    df = dict(
        conn.execute(
            f"SELECT term, df FROM {table}_bm25_df WHERE term IN (SELECT value FROM json_each(?))",
            (json.dumps(terms),),
        ).fetchall()
    )
    out = []
    for term in terms:
        n = df.get(term, 0)
        idf = math.log((rows - n + 0.5) / (n + 0.5))
        out.append((term, idf if idf > 0.0 else _IDF_FLOOR))
    return Weights(out, tokens / rows, [df.get(term, 0) for term in terms])


def bound(idf: float, df: int) -> float:
    """More than any row's share of a phrase's score can be: tf (K1 + 1) / (tf + K1 (...))
    stays below K1 + 1 for every tf and length; 0 for a term no row holds."""
    return idf * (K1 + 1.0) if df else 0.0
