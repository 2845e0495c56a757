"""BM25 over facts, relations and entity names on Neo4j: its full-text (Lucene) indexes.

The indexes and reads live in cypher/lexical.cypher; `Neo4jGraphStore` creates the indexes
with its schema and forwards its `lexical_*` reads here. A full-text index ranks over every
tenant, so a read asks for `fetch` hits, keeps the scope's (and, for edges, those `validity`
accepts) in Cypher, and asks again with four times the fetch while the index returned all it
was asked for and too few survived, up to `max_fetch`. Scores are Lucene's BM25 (k1 1.2,
b 0.75), ties broken by id, as on the embedded store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mem0g.stores.base import EdgeRef
from mem0g.stores.lexical_query import lucene_query

INDEX_STATEMENTS = ("fulltext_index_facts", "fulltext_index_relations", "fulltext_index_entities")
MIN_FETCH = 50


def search(
    read: Callable[[str, dict[str, Any]], list[dict[str, Any]]],
    statement: str,
    params: dict[str, Any],
    words: list[str],
    k: int,
    max_fetch: int,
) -> list[dict[str, Any]]:
    """The scope's best `k` hits of one lexical statement (rows with `score`), best first."""
    query = lucene_query(words)
    if query is None or k <= 0:
        return []
    fetch = max(MIN_FETCH, 4 * k)
    while True:
        (row,) = read(statement, {**params, "query": query, "fetch": fetch, "want": k})
        found: list[dict[str, Any]] = row["found"]
        if len(found) >= k or row["fetched"] < fetch or fetch >= max_fetch:
            break
        fetch = min(4 * fetch, max_fetch)
    found.sort(key=lambda hit: (-hit["score"], _id(hit)))
    return found[:k]


def _id(hit: dict[str, Any]) -> str:
    for column in ("fact", "entity"):
        if column in hit:
            return str(hit[column]["id"])
    return str(hit["id"])


def edge_refs(hits: list[dict[str, Any]]) -> list[EdgeRef]:
    return [
        EdgeRef(h["id"], h["source_id"], h["name"], h["destination_id"], 0, float(h["score"]))
        for h in hits
    ]
