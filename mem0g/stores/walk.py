"""The graph half of a search after linking, as one store call: `GraphStore.walk`.

A search used to send, after linking, one read per step in sequence: the walk around the
linked entities (`expand`), the siblings at the best hubs (`siblings`), and at the end the
records of the hits returned (`get_relations`); BM25 (`lexical_relations`) beside them. On a
server each is a round trip that pays Bolt and planning. A store that declares
`StoreCapabilities.walk_statement` answers all of it in one statement (Neo4j:
cypher/walk.cypher); every store can answer `walk` by its separate reads (`walk_in_turn`, the
embedded store's), and both answers are the same (tests/test_store_walk.py).

The rules the two share live here: which hubs' siblings are read (`sibling_keys`), the graph
ranking (`graph_ranking`) and which records come back (`wanted_ids`). The records are those of
the edges the caller names (the best dense hits) and of the best `top` of the graph and BM25
rankings: the fused top is nearly always among them; any other hit's record the retriever
reads after fusion, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from mem0g.types import Relation, Validity

if TYPE_CHECKING:
    from mem0g.stores.base import EdgeRef, GraphStore
    from mem0g.types import Tenant


@dataclass(frozen=True)
class WalkRequest:
    """What the retriever asks after linking (its config, the linked ids, the query)."""

    seeds: Sequence[str]  # linked entity ids, best first
    validity: Validity
    vector: np.ndarray  # the query embedding: every walked edge is scored against it
    hops: int = 1
    limit: int = 500  # edges walked at most (`expansion_limit`)
    sibling_hubs: int = 8  # hubs whose siblings are read; 0: no siblings
    sibling_limit: int = 50
    words: Sequence[str] | None = None  # BM25 words; None: no BM25 read
    lexical_k: int = 50
    rows: Sequence[str] = ()  # edges whose records are wanted anyway (the best dense hits)
    top: int = 10  # also the records of the best `top` of the walk and of BM25


@dataclass
class WalkResult:
    walked: list[EdgeRef] = field(default_factory=list)  # expand's edges, then the siblings
    lexical: list[EdgeRef] = field(default_factory=list)  # BM25 hits, best first
    records: dict[str, Relation] = field(default_factory=dict)  # without embeddings


def sibling_keys(
    walked: Sequence[EdgeRef], seeds: set[str], cap: int
) -> list[tuple[str, str, bool]]:
    """(hub, relation, hub_is_destination) of the `cap` best-scoring hop-1 edges, best first.
    A stable sort on scores rounded to 5 digits: near-equal ones (the stores agree to ~1e-7)
    keep the walk's order, so both stores pick the same hubs."""
    hubs: dict[tuple[str, str, bool], None] = {}
    for rel in sorted((r for r in walked if r.hop == 1), key=lambda r: -round(r.score, 5)):
        if len(hubs) >= cap:
            break
        if rel.source_id in seeds:
            hubs[(rel.destination_id, rel.relation, True)] = None
        if rel.destination_id in seeds and len(hubs) < cap:
            hubs[(rel.source_id, rel.relation, False)] = None
    return list(hubs)


def graph_ranking(walked: Sequence[EdgeRef]) -> list[tuple[str, float]]:
    """The `graph_expansion` ranking: each edge once (its first, nearest sighting), scored
    cosine / hop, best first (ties keep the walk's order)."""
    seen: set[str] = set()
    ranking = []
    for rel in walked:
        if rel.id not in seen:
            seen.add(rel.id)
            ranking.append((rel.id, rel.score / rel.hop))
    ranking.sort(key=lambda item: -item[1])
    return ranking


def wanted_ids(
    request: WalkRequest, walked: Sequence[EdgeRef], lexical: Sequence[EdgeRef]
) -> list[str]:
    """The edges whose records `walk` returns, each once, in this order."""
    best = [rid for rid, _ in graph_ranking(walked)[: request.top]]
    return list(dict.fromkeys([*request.rows, *best, *(r.id for r in lexical[: request.top])]))


def light(rel: Relation) -> Relation:
    """A record as `walk` returns it: no embedding (a hit never shows one)."""
    return rel.model_copy(update={"embedding": None})


def walk_in_turn(store: GraphStore, scope: Tenant, request: WalkRequest) -> WalkResult:
    """`walk` by the separate reads, one after another (and the reference the one-statement
    walk is tested against)."""
    result = WalkResult()
    if request.seeds and request.hops > 0 and request.limit > 0:
        walked = store.expand(
            scope, request.seeds, request.hops, request.validity, request.limit,
            vector=request.vector,
        )  # fmt: skip
        result.walked = list(walked)  # type: ignore[arg-type]  # EdgeRefs: a vector was given
        keys = sibling_keys(result.walked, set(request.seeds), request.sibling_hubs)
        if keys and request.sibling_limit > 0:
            result.walked += store.siblings(
                scope, keys, request.validity, request.sibling_limit, vector=request.vector
            )
    if request.words is not None and store.capabilities.lexical:
        result.lexical = store.lexical_relations(
            scope, list(request.words), request.lexical_k, request.validity
        )
    wanted = wanted_ids(request, result.walked, result.lexical)
    result.records = {r.id: light(r) for r in store.get_relations(scope, wanted)} if wanted else {}
    return result
