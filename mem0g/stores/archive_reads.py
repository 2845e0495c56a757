"""The store reads a full backup needs beyond the `GraphStore` protocol: every fact event of
an exact tenant, those of deleted facts included (`fact_history` needs the fact's id, and a
deleted fact is in no other read), and every entity event (`entity_history` is per entity,
and a merged-away entity is in no other read). Kept out of the store modules (it reads
their internals on purpose)."""

from __future__ import annotations

from typing import Any

from mem0g.stores.base import StoreError
from mem0g.types import EntityEvent, FactEvent, Tenant


def fact_events(store: Any, tenant: Tenant) -> list[FactEvent]:
    """Every fact event of exactly `tenant`, each fact's in write order."""
    from mem0g.stores.embedded import EmbeddedGraphStore

    if isinstance(store, EmbeddedGraphStore):
        with store._lock:
            store._ready(tenant.key)
            return [e.model_copy(deep=True) for e in store._facts.events_of([tenant.key])]
    try:
        from mem0g.stores.neo4j import Neo4jGraphStore
        from mem0g.stores.neo4j.rows import _fact_event
    except ImportError:  # the neo4j driver is optional
        Neo4jGraphStore = None  # type: ignore[assignment,misc]
    if Neo4jGraphStore is not None and isinstance(store, Neo4jGraphStore):
        rows = store._read("archive_fact_events", {"tenant_key": tenant.key})
        return [_fact_event(row["event"]) for row in rows]
    raise StoreError(f"{type(store).__name__} cannot be exported (no full-history read)")


def entity_events(store: Any, tenant: Tenant) -> list[EntityEvent]:
    """Every entity event of exactly `tenant`, in write order."""
    from mem0g.stores.embedded import EmbeddedGraphStore

    if isinstance(store, EmbeddedGraphStore):
        with store._lock:
            cursor = store._connection().execute(
                "SELECT data FROM entity_events WHERE tenant_key = ? ORDER BY rowid",
                (tenant.key,),
            )
            return [EntityEvent.model_validate_json(row["data"]) for row in cursor]
    try:
        from mem0g.stores.neo4j import Neo4jGraphStore
    except ImportError:  # the neo4j driver is optional
        Neo4jGraphStore = None  # type: ignore[assignment,misc]
    if Neo4jGraphStore is not None and isinstance(store, Neo4jGraphStore):
        rows = store._read("archive_entity_events", {"tenant_key": tenant.key})
        return [EntityEvent.model_validate_json(row["data"]) for row in rows]
    raise StoreError(f"{type(store).__name__} cannot be exported (no full-history read)")
