"""BM25 over facts, relations and entity names on Neo4j: its full-text (Lucene) indexes.

The indexes and reads live in cypher/lexical.cypher; `Neo4jGraphStore` creates the indexes
with its schema and forwards its `lexical_*` reads here. Each indexed row carries its scope
terms (`lex_scope`, stores/lexical_query.py) and the Lucene query requires the scope's at
boost 0, so the index returns the scope's best hits only, however many tenants share the
words (before, it ranked every tenant and a small tenant's hits could fall past `max_fetch`).
Cypher still checks the scope's ids (a second guard) and, for edges, `validity`; while the
index returned all it was asked for and too few survived (a tenant's invalidated edges), it
is asked again with four times the fetch, up to `max_fetch`. Scores are Lucene's BM25 (k1 1.2,
b 0.75), ties broken by text then id for facts and edges (by id for names), as on the
embedded store. The statistics behind them (document
frequencies, average lengths) are the whole index's: see docs/architecture.md, "Tenants".

`backfill_scope_terms` gives rows written before schema v3 their scope terms, and
`backfill_fact_words` facts written before v7 their indexed words (indexes.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from mem0g.stores.base import EdgeRef
from mem0g.stores.lexical_query import SCOPE_FIELD, indexed_words, lucene_scoped, scope_terms
from mem0g.types import Tenant

INDEX_STATEMENTS = ("fulltext_index_facts", "fulltext_index_relations", "fulltext_index_entities")
MIN_FETCH = 50
SCOPED_VERSION = 3  # the schema version (indexes.py) from which every indexed row is scoped
WORDED_VERSION = 7  # ... from which facts are indexed by their words (`lex_text`)
_INDEXES = {"facts": "mem0g_fact_words", "relations": "mem0g_relation_text",
            "entities": "mem0g_entity_text"}  # fmt: skip
_IDS = ("user_id", "agent_id", "run_id")
log = logging.getLogger(__name__)

Statement = Callable[[str, dict[str, Any]], list[dict[str, Any]]]


def backfill_scope_terms(
    auto: Statement,
    ddl: Callable[[str], None],
    batch: int,
    progress: Callable[[str, int, int], None] | None = None,
) -> int:
    """Schema v3 on a database written before it: drop the full-text indexes that lack
    `lex_scope`, give every entity, edge and fact without scope terms its terms (at most
    about `batch` rows per call, committed `batch` at a time; `progress(kind, done, total)`
    after each call, else a log line), and create the indexes again, which then populate in
    one pass. Idempotent; returns the rows given terms."""
    for row in auto("show_fulltext_indexes", {}):
        if SCOPE_FIELD not in (row["properties"] or []):
            kind = next(k for k, name in _INDEXES.items() if name == row["name"])
            ddl(f"drop_fulltext_index_{kind}")
    written = 0
    for kind in _INDEXES:
        groups = [g for g in auto(f"scope_terms_missing_{kind}", {}) if any(g[i] for i in _IDS)]
        total = sum(int(g["rows"]) for g in groups)
        done = 0
        for chunk in _chunks(groups, batch):
            params = [
                {**{i: g[i] for i in _IDS},
                 "terms": scope_terms(Tenant(**{i: g[i] for i in _IDS}))}
                for g in chunk
            ]  # fmt: skip
            auto(f"backfill_scope_terms_{kind}", {"groups": params, "batch": batch})
            done += sum(int(g["rows"]) for g in chunk)
            if progress is not None:
                progress(kind, done, total)
            else:
                log.info("mem0g schema v3: scope terms of %s: %d of %d rows", kind, done, total)
        written += done
    for statement in INDEX_STATEMENTS:
        ddl(statement)
    return written


def backfill_fact_words(
    auto: Statement,
    ddl: Callable[[str], None],
    batch: int,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Schema v7 on a database written before it: drop the index of the facts' texts (its
    successor indexes their words, lexical.cypher) and give every fact without words its
    words, `batch` ids at a time in id order (`progress(done)` after each page with some,
    else a log line). A fact whose text changed since its page was read is left to the
    writer that changed it (which writes its words). Idempotent; returns the facts given
    words."""
    ddl("drop_fulltext_index_fact_text")
    after, written = "", 0
    while True:
        page = auto("facts_without_words", {"after": after, "batch": batch})
        if not page:
            return written
        after = page[-1]["id"]
        rows = [{"id": r["id"], "text": r["text"], "words": indexed_words(r["text"] or "")}
                for r in page if r["missing"]]  # fmt: skip
        if rows:
            auto("set_fact_words", {"rows": rows})
            written += len(rows)
            if progress is not None:
                progress(written)
            else:
                log.info("mem0g schema v7: the words of %d facts indexed", written)


def _chunks(groups: list[dict[str, Any]], batch: int) -> Iterator[list[dict[str, Any]]]:
    """Runs of tenants of at most `batch` rows together (one tenant per run if larger)."""
    chunk: list[dict[str, Any]] = []
    rows = 0
    for group in groups:
        if chunk and rows + int(group["rows"]) > batch:
            yield chunk
            chunk, rows = [], 0
        chunk.append(group)
        rows += int(group["rows"])
    if chunk:
        yield chunk


def search(
    read: Callable[[str, dict[str, Any]], list[dict[str, Any]]],
    statement: str,
    params: dict[str, Any],
    words: list[str],
    k: int,
    max_fetch: int,
    scope: Tenant,
    exact: bool = False,
) -> list[dict[str, Any]]:
    """The scope's best `k` hits of one lexical statement (rows with `score`), best first."""
    query = lucene_scoped(words, scope, exact)
    if query is None or k <= 0:
        return []
    fetch = max(MIN_FETCH, 4 * k)
    while True:
        (row,) = read(statement, {**params, "query": query, "fetch": fetch, "want": k})
        found: list[dict[str, Any]] = row["found"]
        if len(found) >= k or row["fetched"] < fetch or fetch >= max_fetch:
            break
        fetch = min(4 * fetch, max_fetch)
    return best_first(found)[:k]


def common_words(
    read: Callable[[str, dict[str, Any]], list[dict[str, Any]]],
    params: dict[str, Any],
    words: list[str],
    share: float,
    scope: Tenant,
    exact: bool = False,
) -> list[str]:
    """The words more than `share` of the scope's current facts hold (`fact_word_counts`:
    one round trip; each word a scoped Lucene query, as `search` builds them)."""
    queries = [(w, q) for w in words if (q := lucene_scoped([w], scope, exact)) is not None]
    if not queries:
        return []
    (row,) = read("fact_word_counts",
                  {**params, "queries": [q for _, q in queries], "share": share})  # fmt: skip
    facts = int(row["facts"])
    return [w for (w, _), n in zip(queries, row["counts"], strict=True) if n > facts * share]


def best_first(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Hits by score, best first; a stable sort, so equal scores keep the statement's order
    (cypher/lexical.cypher: facts and edges by text, then id; names by id)."""
    found.sort(key=lambda hit: -hit["score"])
    return found


def edge_refs(hits: list[dict[str, Any]]) -> list[EdgeRef]:
    return [
        EdgeRef(h["id"], h["source_id"], h["name"], h["destination_id"], 0, float(h["score"]))
        for h in hits
    ]
