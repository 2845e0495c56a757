"""BM25 over facts, relations and entity names in the embedded store's SQLite file (FTS5).

Three FTS5 tables mirror the text of `facts`, `relations` ("source relation destination") and
`entities` (name and aliases), kept in step by triggers, so every write transaction updates
them with the rows it writes (atomic with the add, rolled back with it) and no Python code path
can forget one. Each FTS row has its base row's rowid (the triggers' key) and its record id (to
verify the pairing: VACUUM may renumber the rowids of a table without an INTEGER PRIMARY KEY).
`sync` runs when a store is opened: it checks the pairing in one pass and rebuilds a table
whose rows do not match (a store written before schema v5, or one renumbered since).

Tokenizer: `unicode61` with digits as separators and diacritics kept, which splits text the
way Lucene's `simple` analyzer does on Neo4j (letter runs, lower-cased), so both stores rank
alike (`stores.lexical_query`); fact texts are also Porter-stemmed (`porter`, as Lucene's
`english` analyzer on Neo4j's fact index), so "researching" finds "research". Relations and
names are not stemmed (names are not English words). Scores are FTS5's `bm25()` negated,
computed from counts the same triggers keep (`bm25.py`: FTS5's bm25() itself walks every
tenant's rows holding a query word, on every search).

Tenant scoping happens inside FTS5: each row's `scope` column holds one letters-only token
spelling its tenant key (the key's UTF-8 hex with digits mapped to g-p: injective, so two keys
never share a token, and computed by the triggers in plain SQL). A search matches
`scope : (its keys' tokens) AND text : (its words)`, so FTS5 merges the scope's posting list
with the words' and never visits another tenant's rows; `scope` has weight 0 in `bm25()`, so
the scores are those of the text alone. Schema v7 added the column (older FTS tables are
dropped and rebuilt when the store opens).
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable, Sequence

from mem0g.stores.embedded import bm25
from mem0g.stores.lexical_query import fts5_query

_LETTERS = "unicode61 remove_diacritics 0 separators '0123456789'"
_TOKENIZE = {"facts": f"porter {_LETTERS}", "relations": _LETTERS, "entities": _LETTERS}
# table -> (the FTS table, the SQL expression of a base row's text, with `{row}` for new/old)
_SOURCES = {
    "facts": ("facts_fts", "{row}.text"),
    "relations": (
        "relations_fts",
        "{row}.source || ' ' || {row}.relation || ' ' || {row}.destination",
    ),
    "entities": ("entities_fts", "{row}.name || ' ' || {row}.aliases"),
}
_WATCHED = {  # the columns whose change re-indexes a row
    "facts": "text",
    "relations": "source, relation, destination",
    "entities": "name, aliases",
}


_DIGITS_AS_LETTERS = str.maketrans("0123456789", "ghijklmnop")
# beyond this many tenant keys a scope filters on the FTS rows' tenant_key instead (a scope over
# thousands of keys, e.g. one agent across every user, would make a huge MATCH expression)
MAX_SCOPE_TOKENS = 64
# text counts; scope, id and tenant_key do not. Given per query (`rank MATCH`), not as the
# table's stored rank setting: SQLite 3.40 fails a connection's next ranked read with "SQL logic
# error" after another connection rewrote that setting (every open would rewrite it).
_RANK = "bm25(1.0, 0.0, 0.0, 0.0)"


def scope_token(tenant_key: str) -> str:
    """The `scope` column's token of a tenant key, as the triggers' SQL spells it."""
    return tenant_key.encode("utf-8").hex().translate(_DIGITS_AS_LETTERS)


def _scope_sql(row: str) -> str:
    expr = f"lower(hex({row}.tenant_key))"
    for digit, letter in zip("0123456789", "ghijklmnop", strict=True):
        expr = f"replace({expr}, '{digit}', '{letter}')"
    return expr


def _schema() -> tuple[str, ...]:
    statements: list[str] = []
    for table, (fts, expr) in _SOURCES.items():
        new = expr.format(row="new")
        scope = _scope_sql("new")
        statements += [
            f"""CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5(text, scope, id UNINDEXED,
                tenant_key UNINDEXED, tokenize="{_TOKENIZE[table]}")""",
            *bm25.schema(table, _TOKENIZE[table]),
            f"""CREATE TRIGGER IF NOT EXISTS {fts}_ai AFTER INSERT ON {table} BEGIN
                INSERT INTO {fts} (rowid, text, scope, id, tenant_key)
                VALUES (new.rowid, {new}, {scope}, new.id, new.tenant_key);
                {bm25.count_in(table, "new", new)} END""",
            f"""CREATE TRIGGER IF NOT EXISTS {fts}_ad AFTER DELETE ON {table} BEGIN
                DELETE FROM {fts} WHERE rowid = old.rowid;
                {bm25.count_out(table, "old")} END""",
            f"""CREATE TRIGGER IF NOT EXISTS {fts}_au AFTER UPDATE OF {_WATCHED[table]}
                ON {table} BEGIN
                UPDATE {fts} SET text = {new} WHERE rowid = old.rowid;
                {bm25.count_out(table, "old")}
                {bm25.count_in(table, "new", new)} END""",
        ]
    return tuple(statements)


SCHEMA = _schema()  # constant text: table names and expressions above, never user input
_CHECK = {
    table: f"""SELECT (SELECT count(*) FROM {table}) AS base,
                      (SELECT count(*) FROM {fts}) AS indexed,
                      (SELECT count(*) FROM {table} b JOIN {fts} x
                        ON x.rowid = b.rowid AND x.id = b.id) AS paired"""
    for table, (fts, _) in _SOURCES.items()
}
_REBUILD = {
    table: (
        f"DELETE FROM {fts}",
        f"""INSERT INTO {fts} (rowid, text, scope, id, tenant_key)
            SELECT rowid, {expr.format(row=table)}, {_scope_sql(table)}, id, tenant_key
            FROM {table}""",
    )
    for table, (fts, expr) in _SOURCES.items()
}
# The scope is part of the MATCH expression (see the module docstring): FTS5 ranks only the
# scope's rows. Two earlier forms were not flat: filtering on the FTS rows' unindexed
# tenant_key ranked every tenant's matches first (93 ms a search at 20k tenants sharing a
# word), and `rowid IN (the scope's base rows)` made FTS5 evaluate the MATCH once per row of
# the scope (730 ms p95 for one 10k-edge tenant). The tenant_key check stays as a second guard
# of the tenant boundary, and is the whole filter above MAX_SCOPE_TOKENS keys.
_SEARCH = {
    table: f"""SELECT id, -rank AS score FROM {fts}
               WHERE {fts} MATCH ? AND rank MATCH '{_RANK}'
                 AND tenant_key IN (SELECT value FROM json_each(?))
               ORDER BY rank, {", ".join(bm25.TIES[table])} LIMIT ? OFFSET ?"""
    for table, (fts, _) in _SOURCES.items()
}


def upgrade(conn: sqlite3.Connection) -> list[str]:
    """Before SCHEMA runs: drop FTS tables (and their triggers) of a store older than v7,
    which had no `scope` column, and the triggers that keep no BM25 counts or keep them in
    an older, dearer way (bm25.py; the counts themselves are the same); SCHEMA recreates
    them and `sync` refills what needs it."""
    dropped = []
    for fts, _ in _SOURCES.values():
        trigger = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", (f"{fts}_ai",)
        ).fetchone()
        if trigger is not None and bm25.TRIGGER_MARK not in trigger[0]:  # older counting
            for suffix in ("ai", "ad", "au"):
                conn.execute(f"DROP TRIGGER IF EXISTS {fts}_{suffix}")
        row = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (fts,)
        ).fetchone()
        if row is not None and "scope" not in row[0]:
            for suffix in ("ai", "ad", "au"):
                conn.execute(f"DROP TRIGGER IF EXISTS {fts}_{suffix}")
            conn.execute(f"DROP TABLE {fts}")
            dropped.append(fts)
    return dropped


def sync(conn: sqlite3.Connection) -> list[str]:
    """Inside the opening transaction: rebuild each FTS table whose rows do not pair one to
    one with its base table's, and the BM25 counts of a table rebuilt or not in step with its
    FTS table (a store older than the counts); returns the FTS tables rebuilt."""
    rebuilt = []
    for table, check in _CHECK.items():
        row = conn.execute(check).fetchone()
        if not (row[0] == row[1] == row[2]):
            for statement in _REBUILD[table]:
                conn.execute(statement)
            rebuilt.append(table)
        if table in rebuilt or not bm25.in_step(conn, table):
            bm25.rebuild(conn, table)
    return rebuilt


def match_expression(tenant_keys: Sequence[str], words: list[str]) -> str | None:
    """The MATCH expression of a search: the scope's tokens (up to MAX_SCOPE_TOKENS keys) and
    the words; None when nothing can match."""
    expression = fts5_query(words)
    if expression is None or not tenant_keys:
        return None
    if len(tenant_keys) <= MAX_SCOPE_TOKENS:
        scope = " OR ".join('"' + scope_token(key) + '"' for key in tenant_keys)
        return f"scope : ({scope}) AND text : ({expression})"
    return f"text : ({expression})"


def search(
    conn: sqlite3.Connection,
    table: str,
    tenant_keys: Sequence[str],
    words: list[str],
    k: int,
    accept: Callable[[str], bool] | None = None,
    *,
    bounded: bool = True,
) -> list[tuple[str, float]]:
    """The k best (id, bm25) of `table` among the tenant keys, best first (ties: `bm25.TIES`);
    `accept(id)` filters rows (an edge's validity), reading on until k pass or none is left.
    `bounded`: try the rarer words' rows first (`_bounded`; the same hits, fewer rows scored)."""
    expression = match_expression(tenant_keys, words)
    if expression is None or k <= 0:
        return []
    keys = json.dumps(list(tenant_keys))
    terms = bm25.query_terms(conn, table, _TOKENIZE[table], words)
    found: list[tuple[str, float]] = []
    with bm25.snapshot(conn):
        counted = None
        first: tuple[str | float, ...]
        if all(len(t) == 1 for t in terms):  # else a phrase of several terms: bm25() ranks
            counted = bm25.weights(conn, table, [t[0] for t in terms])
        if counted is None:
            statement, first = _SEARCH[table], (expression, keys)
        else:
            statement = bm25.scored(table, len(counted.phrases))
            phrases = tuple(x for phrase in counted.phrases for x in phrase)
            if bounded and accept is None:
                top = _bounded(conn, statement, phrases, counted, tenant_keys, words, keys, k)
                if top is not None:
                    return top
            first = (*phrases, expression, counted.avgdl, keys)
        page = max(k, 50)
        offset = 0
        while len(found) < k:
            rows = conn.execute(statement, (*first, page, offset)).fetchall()
            found += [(r[0], float(r[1])) for r in rows if accept is None or accept(r[0])]
            if len(rows) < page:
                break
            offset += page
            page *= 2
    return found[:k]


MAX_BOUNDED_READS = 2  # tries of the rarer words before the full read


def _bounded(
    conn: sqlite3.Connection,
    statement: str,
    phrases: tuple[str | float, ...],
    counted: bm25.Weights,
    tenant_keys: Sequence[str],
    words: list[str],
    keys: str,
    k: int,
) -> list[tuple[str, float]] | None:
    """The exact top k from the rows of the rarer words only, or None (MaxScore): score the
    rows holding the j words of highest bound (each row's full score); when the other words'
    bounds sum below the k-th score read, no row lacking the j words can reach the top k,
    ties included, so these k rows are the answer. Why: a common word beside rare ones made
    the read score every row of the scope holding it (6 ms at 20,000 facts in one scope).
    A try needs the j words' bounds to outweigh the others' (else it would rarely answer) and
    the tries together read fewer rows than the commonest word (store-wide df), which the
    full read reads at least; so when every word is as common as the others none is made."""
    bounds = [bm25.bound(idf, n) for (_, idf), n in zip(counted.phrases, counted.df, strict=True)]
    live = sorted((i for i, b in enumerate(bounds) if b > 0.0), key=lambda i: -bounds[i])
    budget = max((counted.df[i] for i in live), default=0)
    for j in range(1, min(len(live), MAX_BOUNDED_READS + 1)):
        rest = math.fsum(bounds[i] for i in live[j:])
        if rest >= math.fsum(bounds[i] for i in live[:j]):
            continue
        budget -= sum(counted.df[i] for i in live[:j])  # the rows this try reads, at most
        if budget <= 0:
            break
        expression = match_expression(tenant_keys, [words[i] for i in live[:j]])
        rows = conn.execute(statement, (*phrases, expression, counted.avgdl, keys, k, 0)).fetchall()
        if len(rows) == k and rest * (1.0 + 1e-9) < float(rows[-1][1]):
            return [(r[0], float(r[1])) for r in rows]
    return None


def common_words(
    conn: sqlite3.Connection,
    table: str,
    tenant_keys: Sequence[str],
    words: list[str],
    share: float,
) -> list[str]:
    """The words more than `share` of the tenant keys' rows of `table` hold (FTS5's own
    analysis: a fact word by its Porter stem). Most words are settled by the counts the
    writes keep (`bm25.py`): a word in `df` rows of a table whose other tenants hold `other`
    rows is in at least df - other and at most df of the scope's, so a store of one tenant
    (the scope is the table) never counts. Only a word those bounds leave open is counted,
    and each count stops at the first row past the share, so a word most of a large scope
    holds costs no more than that share's rows."""
    if not words or not tenant_keys:
        return []
    keys = json.dumps(list(tenant_keys))
    with bm25.snapshot(conn):
        (rows,) = conn.execute(_SCOPE_ROWS[table], (keys,)).fetchone()
        if rows == 0:
            return []
        bounds = bm25.scope_bounds(conn, table, _TOKENIZE[table], words, rows)
        common = []
        for word in words:
            expression = match_expression(tenant_keys, [word])
            if expression is None:
                continue
            low, high = bounds.get(word, (0, rows))
            if low > rows * share or (
                high > rows * share and scope_count(conn, table, expression, keys, rows, share)
            ):
                common.append(word)
    return common


def scope_count(
    conn: sqlite3.Connection, table: str, expression: str, keys: str, rows: int, share: float
) -> bool:
    """Whether more than `share` of the scope's `rows` rows match `expression`, counted on the
    FTS table and stopped at the first row past the share."""
    fts = _SOURCES[table][0]
    (n,) = conn.execute(
        f"""SELECT count(*) FROM (SELECT 1 FROM {fts} JOIN {fts}_content c
            ON c.id = {fts}.rowid WHERE {fts} MATCH ? AND c.{bm25.CONTENT["tenant_key"]}
            IN (SELECT value FROM json_each(?)) LIMIT ?)""",
        (expression, keys, int(rows * share) + 1),
    ).fetchone()
    return bool(n > rows * share)


_SCOPE_ROWS = {  # the base rows of a scope's tenant keys (each base table has tenant_key)
    table: f"SELECT count(*) FROM {table} WHERE tenant_key IN (SELECT value FROM json_each(?))"
    for table in _SOURCES
}
