"""The `entity_linked_facts` ranking: the facts linked at add time (`resolve.links`) to the
entities a search linked its query to, so entity-centric search returns the facts about those
entities, not only their edges. Facts naming more of the query's entities come first, then
the closest to the query by cosine (the store scores them: `GraphStore.linked_facts`). No LLM.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from mem0g.config import RetrievalConfig
from mem0g.retrieve.fusion import Ranking
from mem0g.stores.base import GraphStore
from mem0g.types import Entity, EntityHit, Tenant

NAME = "entity_linked_facts"


def wanted(store: GraphStore, config: RetrievalConfig) -> bool:
    """The store keeps links and the recipe weighs the ranking (a zero weight skips the read)."""
    return store.capabilities.fact_links and config.fusion.weights.entity_linked_facts > 0


def linked_facts(
    store: GraphStore,
    scope: Tenant,
    entities: Sequence[EntityHit],
    qvec: np.ndarray,
    k: int,
) -> dict[str, Ranking]:
    """{NAME: ranking} of the facts linked to `entities` (empty when there are none)."""
    if not entities:
        return {}
    found = store.linked_facts(scope, [e.id for e in entities], qvec, k)
    return {NAME: [(fact_id, score) for fact_id, score, _ in found]}


def lexical_links(hits: Sequence[tuple[Entity, float]], known: Collection[str]) -> list[EntityHit]:
    """(`retrieval.link_lexical`) entities sharing a word with the query, by the store's BM25
    over names and aliases (`hits`: its `lexical_entities`), beyond those `known` already:
    "Caroline" reaches "Caroline Smith", which the exact n-gram match misses. Scored by BM25
    relative to the best match, below 1 (an exact name's score)."""
    top = max((score for _, score in hits), default=0.0)
    return [
        EntityHit(id=e.id, name=e.name, type=e.type, aliases=e.aliases,
                  score=0.99 * score / top, matched_by="lexical")
        for e, score in hits
        if e.id not in known and top > 0
    ]  # fmt: skip
