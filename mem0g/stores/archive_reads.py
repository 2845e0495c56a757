"""The store reads a full backup needs beyond the `GraphStore` protocol: every fact event of
an exact tenant, those of deleted facts included (`fact_history` needs the fact's id, and a
deleted fact is in no other read). Kept out of the store modules, which issue #13 splits; it
reads their internals on purpose and moves with them."""

from __future__ import annotations

from typing import Any

from mem0g.stores.base import StoreError
from mem0g.types import FactEvent, Tenant


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
