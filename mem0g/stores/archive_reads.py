"""The store reads a full backup needs beyond the `GraphStore` protocol: every fact event of
an exact tenant, those of deleted facts included (`fact_history` needs the fact's id, and a
deleted fact is in no other read), and every entity event (`entity_history` is per entity,
and a merged-away entity is in no other read). Kept out of the store modules (it reads
their internals on purpose)."""

from __future__ import annotations

from typing import Any, NamedTuple

from mem0g.stores.base import StoreError
from mem0g.types import (
    Entity,
    EntityEvent,
    Episode,
    Fact,
    FactEvent,
    PossibleDuplicate,
    Relation,
    Summary,
    Tenant,
)


class TenantRecords(NamedTuple):
    """Everything of one exact tenant, as the separate reads return it (every relation,
    invalid ones too)."""

    entities: list[Entity]
    relations: list[Relation]
    episodes: list[Episode]
    facts: list[Fact]
    duplicates: list[PossibleDuplicate]
    fact_events: list[FactEvent]
    entity_events: list[EntityEvent]
    summary: Summary | None


ONE_READ_RECORDS = 1_000
"""The most entities, edges, episodes and fact events a tenant may have to be read in one
statement: its parts are collected in the server's heap (with their vectors), where the
separate reads stream their rows."""


def _neo4j(store: Any) -> Any:
    """`store` if it is a Neo4j store, else None (the neo4j driver is optional)."""
    try:
        from mem0g.stores.neo4j import Neo4jGraphStore
    except ImportError:
        return None
    return store if isinstance(store, Neo4jGraphStore) else None


def tenant_records(store: Any, tenant: Tenant, *, embeddings: bool) -> TenantRecords | None:
    """A small Neo4j tenant in one statement (`archive_tenant`): eight reads a tenant cost
    the client about a millisecond of driver work each, most of an export of many small
    tenants. None for a larger tenant, or a store without such a read: the caller then makes
    the separate reads."""
    if _neo4j(store) is None:
        return None
    from mem0g.stores.neo4j.rows import (
        _entity,
        _episode,
        _fact,
        _fact_event,
        _relation,
        _summary,
        present,
    )

    params = {"tenant_key": tenant.key, "embeddings": embeddings, "most": ONE_READ_RECORDS}
    rows = store._read("archive_tenant", params)
    if not rows:  # too large to collect in one row
        return None
    (row,) = rows
    return TenantRecords(
        entities=[_entity(e) for e in row["entities"] if present(e)],
        relations=[_relation(r) for r in row["relations"] if present(r)],
        episodes=[_episode(e) for e in row["episodes"] if present(e)],
        facts=[_fact(f) for f in row["facts"] if present(f)],
        duplicates=[PossibleDuplicate.model_validate_json(d) for d in row["duplicates"]],
        fact_events=[_fact_event(e) for e in row["fact_events"]],
        entity_events=[EntityEvent.model_validate_json(d) for d in row["entity_events"]],
        summary=_summary(row["summary"]) if row["summary"] else None,
    )


def fact_events(store: Any, tenant: Tenant) -> list[FactEvent]:
    """Every fact event of exactly `tenant`, each fact's in write order."""
    from mem0g.stores.embedded import EmbeddedGraphStore

    if isinstance(store, EmbeddedGraphStore):
        with store._lock:
            store._ready(tenant.key)
            return [e.model_copy(deep=True) for e in store._facts.events_of([tenant.key])]
    if _neo4j(store) is not None:
        from mem0g.stores.neo4j.rows import _fact_event

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
    if _neo4j(store) is not None:
        rows = store._read("archive_entity_events", {"tenant_key": tenant.key})
        return [EntityEvent.model_validate_json(row["data"]) for row in rows]
    raise StoreError(f"{type(store).__name__} cannot be exported (no full-history read)")
