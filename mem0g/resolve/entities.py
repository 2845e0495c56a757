"""Entity resolver: map each extracted name to an existing node of the tenant or a new one.

Cheapest checks first: exact normalised name or alias (no embedding needed to decide), then the
top-k name-embedding neighbours judged by `names.pick_merge_target` (types, name structure,
threshold). Never across tenants (exact tenant scope), never across incompatible types.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

import numpy as np
from pydantic import BaseModel, Field

from mem0g.embed import CachedEmbedder
from mem0g.resolve.names import canonical_type, normalize_name, pick_merge_target, types_compatible
from mem0g.stores.base import GraphStore
from mem0g.types import AliasUpdate, Entity, Tenant


class ResolvedEntities(BaseModel):
    ids: dict[str, str] = Field(default_factory=dict)  # extracted name -> entity id
    by_id: dict[str, Entity] = Field(default_factory=dict)  # every entity the add touches
    new_entities: list[Entity] = Field(default_factory=list)
    alias_updates: list[AliasUpdate] = Field(default_factory=list)


def _exact(candidates: list[Entity], type_: str) -> Entity | None:
    fitting = [e for e in candidates if types_compatible(e.type, type_)]
    same = [e for e in fitting if canonical_type(e.type) == canonical_type(type_)]
    return (same or fitting or [None])[0]


def resolve_entities(
    store: GraphStore,
    embedder: CachedEmbedder,
    tenant: Tenant,
    names: Mapping[str, str],
    *,
    threshold: float,
    k: int,
    now: datetime,
) -> ResolvedEntities:
    """Resolve `names` (name -> type) in order; later names may merge into earlier new ones."""
    out = ResolvedEntities()
    wanted = [(name, type_) for name, type_ in names.items() if normalize_name(name)]
    if not wanted:
        return out
    vectors = embedder.embed([name for name, _ in wanted])
    aliases_added: dict[str, list[str]] = {}

    def merge(name: str, key: str, entity: Entity) -> None:
        out.ids[name] = entity.id
        out.by_id.setdefault(entity.id, entity)
        if name == entity.name or name in entity.aliases:
            return
        entity.aliases.append(name)
        if key not in entity.keys:
            entity.keys.append(key)
        if entity not in out.new_entities:
            aliases_added.setdefault(entity.id, []).append(name)

    for (name, type_), vector in zip(wanted, vectors, strict=False):
        key = normalize_name(name)
        batch_hits = [e for e in out.new_entities if key in e.keys]
        stored = store.find_entities(tenant, [key], exact=True)
        hit = _exact(batch_hits + stored, type_)
        if hit is not None:
            merge(name, key, out.by_id.get(hit.id, hit))
            continue
        candidates = [
            (e.id, e.name, e.type, list(e.aliases), score)
            for e, score in store.similar_entities(tenant, vector, k, exact=True)
        ]
        candidates += [
            (e.id, e.name, e.type, list(e.aliases), float(np.dot(vector, e.embedding or vector)))
            for e in out.new_entities
        ]
        target = pick_merge_target(name, type_, candidates, threshold)
        if target is not None:
            existing = out.by_id.get(target) or next(
                iter(store.get_entities(tenant, [target])), None
            )
            if existing is None:  # the store no longer has it; treat the name as new
                target = None
            else:
                merge(name, key, existing)
                continue
        entity = Entity(
            tenant=tenant,
            name=name,
            type=(type_ or "").strip().lower() or "entity",
            keys=[key],
            embedding=[float(x) for x in vector],
            created_at=now,
            updated_at=now,
        )
        out.new_entities.append(entity)
        out.by_id[entity.id] = entity
        out.ids[name] = entity.id

    out.alias_updates = [
        AliasUpdate(entity_id=eid, aliases=added, keys=[normalize_name(a) for a in added])
        for eid, added in aliases_added.items()
    ]
    return out
