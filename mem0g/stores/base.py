"""The `GraphStore` seam: everything the pipeline needs from storage, and nothing more.

Scopes: every read takes a `Tenant` used as a filter (ids that are set must match, unset ids
match anything), unless `exact=True`, where the record's tenant must equal the scope exactly
(the resolvers use that: entities merge only inside one exact tenant). Writes arrive only as a
`WritePlan`, applied all-or-nothing.

Vectors are unit-length float32 numpy arrays, so cosine similarity is a dot product.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel

from mem0g.types import (
    Entity,
    Episode,
    Fact,
    FactEvent,
    GraphSnapshot,
    Message,
    Relation,
    Summary,
    Tenant,
    Validity,
    WritePlan,
)


class StoreStats(BaseModel):
    entities: int
    relations: int
    valid_relations: int
    invalid_relations: int
    episodes: int
    tenants: int


class StoreError(RuntimeError):
    """A store could not do what was asked; nothing was written."""


@runtime_checkable
class GraphStore(Protocol):
    def apply(self, plan: WritePlan) -> None:
        """Write the whole plan in one transaction, or nothing (then raise)."""

    def get_entities(self, scope: Tenant, ids: Sequence[str]) -> list[Entity]: ...

    def get_relations(self, scope: Tenant, ids: Sequence[str]) -> list[Relation]: ...

    def find_entities(
        self, scope: Tenant, keys: Sequence[str], *, exact: bool = False
    ) -> list[Entity]:
        """Entities having any of these normalised keys (name or alias)."""

    def similar_entities(
        self, scope: Tenant, vector: np.ndarray, k: int, *, exact: bool = False
    ) -> list[tuple[Entity, float]]:
        """Top-k entities by name-embedding cosine, best first."""

    def relations_touching(
        self, scope: Tenant, entity_ids: Sequence[str], validity: Validity, *, exact: bool = False
    ) -> list[Relation]:
        """Edges with either endpoint in `entity_ids` (one hop, both directions)."""

    def expand(
        self, scope: Tenant, entity_ids: Sequence[str], hops: int, validity: Validity, limit: int
    ) -> list[tuple[Relation, int]]:
        """Edges reachable within `hops` from the seeds (ignoring direction), with their hop
        distance (1 = touches a seed). Traversal walks only edges that `validity` accepts."""

    def similar_relations(
        self, scope: Tenant, vector: np.ndarray, k: int, validity: Validity
    ) -> list[tuple[Relation, float]]:
        """Top-k edges by triple-embedding cosine among those `validity` accepts, best first."""

    def snapshot(self, scope: Tenant, validity: Validity) -> GraphSnapshot:
        """All entities of the scope and the edges `validity` accepts."""

    def episodes(self, scope: Tenant) -> list[Episode]: ...

    # ---- the fact memory (Mem0) beside the graph; written through `apply` like the graph

    def get_facts(self, scope: Tenant, ids: Sequence[str]) -> list[Fact]: ...

    def facts(self, scope: Tenant) -> list[Fact]:
        """All current (not deleted) facts of the scope, oldest first."""

    def similar_facts(
        self, scope: Tenant, vector: np.ndarray, k: int, *, exact: bool = False
    ) -> list[tuple[Fact, float]]:
        """Top-k current facts by text-embedding cosine, best first."""

    def fact_history(self, scope: Tenant, fact_id: str) -> list[FactEvent]:
        """Every event of one fact, oldest first; still there after the fact is deleted."""

    def recent_messages(self, tenant: Tenant, limit: int) -> list[Message]:
        """The last `limit` messages of the exact tenant's episodes, in conversation order."""

    def message_count(self, tenant: Tenant) -> int:
        """How many messages the exact tenant's episodes hold."""

    def messages_since(self, tenant: Tenant, offset: int) -> list[Message]:
        """The exact tenant's messages after the first `offset` (episode order)."""

    def get_summary(self, tenant: Tenant) -> Summary | None: ...

    def set_summary(self, summary: Summary) -> None:
        """Replace the exact tenant's summary (its own small transaction)."""

    def tenants(self) -> list[Tenant]:
        """Every exact tenant that has records, sorted by key."""

    def delete_tenant(self, scope: Tenant) -> int:
        """Delete every record the scope matches; returns how many entities+edges went."""

    def reset(self) -> None:
        """Delete everything in this store."""

    def stats(self, scope: Tenant | None = None) -> StoreStats: ...

    def close(self) -> None: ...
