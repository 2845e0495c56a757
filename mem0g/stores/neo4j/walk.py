"""`walk` on Neo4j in one statement (cypher/walk.cypher): the walk around the linked
entities, the siblings at the best hubs, BM25 and the records of the likely hits, where the
separate reads took four round trips, three of them in sequence (mem0g/stores/walk.py).

One statement answers `hops == 1` (the default); deeper walks take the separate reads
(`walk_in_turn`). When the full-text index returned all it was asked for and too few of them
survived (the index returns the scope's rows only, stores/neo4j/lexical.py; the validity
filter may drop some), BM25 is asked again by `lexical_relations` (its growing fetch).

`OneTripWalk` is a mixin of `Neo4jGraphStore`; only the store's own modules use it."""

from __future__ import annotations

from typing import Any

import numpy as np

from mem0g.stores.base import EdgeRef
from mem0g.stores.lexical_query import lucene_scoped
from mem0g.stores.neo4j import lexical
from mem0g.stores.neo4j.rows import _relation, _scope, _validity, present
from mem0g.stores.walk import WalkRequest, WalkResult, walk_in_turn
from mem0g.types import Tenant


def _refs(rows: list[dict[str, Any]], hop: int) -> list[EdgeRef]:
    return [
        EdgeRef(p["id"], p["source_id"], p["name"], p["destination_id"], hop, float(p["score"]))
        for p in rows
    ]


class OneTripWalk:
    """`GraphStore.walk` (a mixin of `Neo4jGraphStore`)."""

    max_fetch: int

    def walk(self, scope: Tenant, request: WalkRequest) -> WalkResult:
        if request.hops != 1:
            return walk_in_turn(self, scope, request)  # type: ignore[arg-type]
        self._ready()  # type: ignore[attr-defined]
        limit = max(request.limit, 0) if request.seeds else 0
        words = list(request.words) if request.words is not None else None
        query = lucene_scoped(words, scope) if words is not None else None
        k = max(request.lexical_k, 0)
        fetch = max(lexical.MIN_FETCH, 4 * k)
        params = {
            **_scope(scope),
            **_validity(request.validity),
            "ids": list(dict.fromkeys(request.seeds)) if limit else [],
            "vector": np.asarray(request.vector, dtype=np.float32).ravel().tolist(),
            "row_limit": 2 * limit,
            "limit": limit,
            "hubs": max(request.sibling_hubs, 0) if request.sibling_limit > 0 else 0,
            "sibling_limit": max(request.sibling_limit, 0),
            "query": query if k > 0 else None,
            "fetch": fetch,
            "want": k,
            "rows": list(dict.fromkeys(request.rows)),
            "top": max(request.top, 0),
        }
        (row,) = self._read("walk", params)  # type: ignore[attr-defined]
        result = WalkResult(walked=_refs(row["hop1"], 1) + _refs(row["siblings"], 2))
        found = row["found"]
        if params["query"] is not None and (
            len(found) < k and row["fetched"] >= fetch and fetch < self.max_fetch
        ):  # too few of the scope among the index's first hits: the growing fetch
            result.lexical = self.lexical_relations(  # type: ignore[attr-defined]
                scope, list(request.words or ()), k, request.validity
            )
        else:
            result.lexical = lexical.edge_refs(lexical.best_first(found)[:k])
        result.records = {p["id"]: _relation(p) for p in row["records"] if present(p)}
        return result
