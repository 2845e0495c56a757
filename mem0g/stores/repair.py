"""Entity repair as pure functions, shared by both stores: what a merge, a split or a rename
changes, computed from records the store read inside its transaction. The stores only check,
read and persist, so the two cannot disagree on the rules.

Rules (why):

* A merge moves `other`'s name, aliases and keys onto `keep` (names are data; `keep`'s own
  name and embedding stay, so held entity vectors stay valid) and re-points every edge of
  `other`. An edge between the two would become a self-loop ("Robert knows Bob"): it is
  removed and kept whole in the MERGE's undo record, so a split can bring it back. Parallel
  edges that the merge creates (both had "works_at Acme") are kept: folding them would mix two
  histories of mentions that a split could not tell apart again.
* Edge embeddings are not recomputed (the store has no embedder, and a split must restore
  the edge exactly); their `source`/`destination` strings show the entity's current name.
* A split restores exactly what its merge moved: the other entity as it was, the aliases and
  keys the merge added (only those) go back, but not a name or key another merge still
  standing brought too (two "Bob" records merged into Robert, one split off again: Robert
  stays a "Bob"; the later split takes it), and the edges the merge re-pointed return if
  they still sit on `keep`; edges `keep` gained after the merge stay on `keep`. Other's
  possible-duplicate pairs with third entities, which the merge re-pointed onto `keep`, go
  back to `other` as recorded (the resolver never doubted `keep`); the pair of the two stays
  settled, since the split is the answer to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from mem0g.stores.base import CrossTenantError, RepairError, UnknownEntityError
from mem0g.types import (
    Entity,
    EntityEvent,
    MergeResult,
    MergeUndo,
    PossibleDuplicate,
    Relation,
    RepointedEdge,
    SplitResult,
    Tenant,
)


def _bare(entity: Entity) -> Entity:
    return entity.model_copy(
        update={"embedding": None, "aliases": list(entity.aliases), "keys": list(entity.keys)}
    )


def check_pair(
    scope: Tenant, keep_id: str, other_id: str, found: Iterable[Entity]
) -> tuple[Entity, Entity]:
    """`keep` and `other` among the entities read for the scope, or the repair's error."""
    if keep_id == other_id:
        raise RepairError(f"cannot merge entity {keep_id} into itself")
    by_id = {e.id: e for e in found if scope.matches(e.tenant)}
    for wanted in (keep_id, other_id):
        if wanted not in by_id:
            raise UnknownEntityError(f"no entity {wanted!r} in {describe(scope)}")
    keep, other = by_id[keep_id], by_id[other_id]
    if keep.tenant != other.tenant:
        raise CrossTenantError(
            f"entities {keep_id} ({describe(keep.tenant)}) and {other_id} "
            f"({describe(other.tenant)}) belong to different tenants; only entities of one "
            "exact tenant can be merged"
        )
    return keep, other


def describe(tenant: Tenant) -> str:
    ids = (("user", tenant.user_id), ("agent", tenant.agent_id), ("run", tenant.run_id))
    return ", ".join(f"{k} {v!r}" for k, v in ids if v)


@dataclass
class MergeChange:
    """What one merge writes: `keep` as it ends up, the edges re-pointed (as they end up),
    the edges removed, the possible-duplicate pairs changed, the MERGE event (with its undo)
    and the result to return."""

    keep: Entity
    moved: list[Relation]
    dropped: list[Relation]
    pairs: PairChange
    event: EntityEvent
    result: MergeResult


def plan_merge(
    keep: Entity,
    other: Entity,
    edges: Sequence[Relation],
    pairs: Iterable[PossibleDuplicate],
    at: datetime,
) -> MergeChange:
    """`edges`: every edge at `other` (either end, a self-loop once), with embeddings;
    `pairs`: the tenant's possible-duplicate pairs naming `keep` or `other` (or more)."""
    aliases_added = [
        a for a in dict.fromkeys([other.name, *other.aliases])
        if a != keep.name and a not in keep.aliases
    ]  # fmt: skip
    keys_added = [k for k in dict.fromkeys(other.keys) if k not in keep.keys]
    new_keep = keep.model_copy(
        update={
            "aliases": [*keep.aliases, *aliases_added],
            "keys": [*keep.keys, *keys_added],
            "updated_at": at,
        }
    )
    moved: list[Relation] = []
    dropped: list[Relation] = []
    repointed: list[RepointedEdge] = []
    for rel in edges:
        src, dst = rel.source_id == other.id, rel.destination_id == other.id
        new_src = keep.id if src else rel.source_id
        new_dst = keep.id if dst else rel.destination_id
        if new_src == new_dst:
            dropped.append(rel)
            continue
        moved.append(_ends(rel, new_src, keep.name if src else rel.source, new_dst,
                           keep.name if dst else rel.destination))  # fmt: skip
        repointed.append(RepointedEdge(id=rel.id, source=src, destination=dst))
    pair_change = repoint_pairs(pairs, keep.id, other.id)
    undo = MergeUndo(
        other=other.model_copy(deep=True),
        aliases_added=aliases_added,
        keys_added=keys_added,
        edges=repointed,
        dropped=[r.model_copy(deep=True) for r in dropped],
        pairs=[p.model_copy() for p in pair_change.moved],
        pairs_created=[pair_key(p.entity_id, p.candidate_id) for p in pair_change.creates],
    )
    event = EntityEvent(
        entity_id=keep.id,
        tenant=keep.tenant,
        event="MERGE",
        other_id=other.id,
        old_name=other.name,
        new_name=keep.name,
        at=at,
        undo=undo,
    )
    result = MergeResult(
        merge_id=event.id,
        keep=_bare(new_keep),
        removed_id=other.id,
        removed_name=other.name,
        moved_relations=[r.id for r in moved],
        dropped_relations=[r.id for r in dropped],
        aliases_added=aliases_added,
        keys_added=keys_added,
    )
    return MergeChange(new_keep, moved, dropped, pair_change, event, result)


def _ends(rel: Relation, source_id: str, source: str, dest_id: str, dest: str) -> Relation:
    return rel.model_copy(
        update={
            "source_id": source_id,
            "source": source,
            "destination_id": dest_id,
            "destination": dest,
            "provenance": [p.model_copy() for p in rel.provenance],
        }
    )


def find_merge(
    scope: Tenant, merge_id: str, events: Iterable[EntityEvent]
) -> tuple[EntityEvent, bool]:
    """The MERGE event `merge_id` among `events` (the history of its entity), and whether a
    SPLIT took it back already."""
    merge = next((e for e in events if e.id == merge_id and scope.matches(e.tenant)), None)
    if merge is None or merge.event != "MERGE" or merge.undo is None:
        raise UnknownEntityError(f"no merge event {merge_id!r} in {describe(scope)}")
    split = any(e.event == "SPLIT" and e.merge_id == merge_id for e in events)
    return merge, split


@dataclass
class SplitChange:
    keep: Entity
    restored: Entity  # with its embedding
    moved: list[Relation]  # edges re-pointed back, as they end up
    recreated: list[Relation]  # the merge's dropped edges, as they come back
    pairs: PairChange  # keep's pairs the merge made go, other's come back
    event: EntityEvent
    result: SplitResult


def plan_split(
    merge: EntityEvent,
    already_split: bool,
    keep: Entity | None,
    other_exists: bool,
    edges: Sequence[Relation],
    taken_edge_ids: Iterable[str],
    at: datetime,
    history: Sequence[EntityEvent] = (),
) -> SplitChange:
    """`keep`: the kept entity now (None: gone); `edges`: the merge's re-pointed edges that
    still exist; `taken_edge_ids`: which of the merge's dropped edge ids exist again;
    `history`: the kept entity's events (its other merges)."""
    undo = merge.undo
    assert undo is not None  # find_merge checked it
    if already_split:
        raise RepairError(f"merge {merge.id} was split already")
    if keep is None:
        raise RepairError(
            f"entity {merge.entity_id} that merge {merge.id} kept no longer exists (merged "
            "into another entity since?): split that later merge first"
        )
    if other_exists:
        raise RepairError(f"entity {undo.other.id} exists already")
    other = undo.other
    added_aliases, added_keys = _names_to_take(merge, history)
    new_keep = keep.model_copy(
        update={
            "aliases": [a for a in keep.aliases if a not in added_aliases],
            "keys": [k for k in keep.keys if k not in added_keys],
            "updated_at": at,
        }
    )
    ends = {e.id: e for e in undo.edges}
    moved = []
    for rel in edges:
        was = ends[rel.id]
        src = was.source and rel.source_id == keep.id
        dst = was.destination and rel.destination_id == keep.id
        if not (src or dst):
            continue
        moved.append(
            _ends(
                rel,
                other.id if src else rel.source_id,
                other.name if src else rel.source,
                other.id if dst else rel.destination_id,
                other.name if dst else rel.destination,
            )
        )
    taken = set(taken_edge_ids)
    names = {other.id: other.name, keep.id: keep.name}
    recreated = [
        _ends(rel, rel.source_id, names.get(rel.source_id, rel.source),
              rel.destination_id, names.get(rel.destination_id, rel.destination))
        for rel in undo.dropped if rel.id not in taken
    ]  # fmt: skip
    event = EntityEvent(
        entity_id=keep.id,
        tenant=keep.tenant,
        event="SPLIT",
        other_id=other.id,
        merge_id=merge.id,
        old_name=keep.name,
        new_name=other.name,
        at=at,
    )
    result = SplitResult(
        split_id=event.id,
        merge_id=merge.id,
        keep=_bare(new_keep),
        restored=_bare(other),
        moved_relations=[r.id for r in moved],
        restored_relations=[r.id for r in recreated],
    )
    pairs = PairChange(
        deletes=list(undo.pairs_created), creates=[p.model_copy() for p in undo.pairs]
    )
    return SplitChange(
        new_keep, other.model_copy(deep=True), moved, recreated, pairs, event, result
    )


def _names_to_take(merge: EntityEvent, history: Sequence[EntityEvent]) -> tuple[set[str], set[str]]:
    """The aliases and keys a split of `merge` takes from keep: those the merge added, and
    other's own that an earlier merge into keep added (one split since left them for this
    merge), less those another standing merge into keep brought too."""
    undo = merge.undo
    assert undo is not None
    split = {e.merge_id for e in history if e.event == "SPLIT"}
    into_keep = [e for e in history if e.event == "MERGE" and e.entity_id == merge.entity_id]
    merges = [e.undo for e in into_keep if e.undo is not None]
    standing = [e.undo.other for e in into_keep
                if e.undo is not None and e.id != merge.id and e.id not in split]  # fmt: skip
    ever_aliases = {a for m in merges for a in m.aliases_added}
    ever_keys = {k for m in merges for k in m.keys_added}
    other = undo.other
    aliases = set(undo.aliases_added) | ({other.name, *other.aliases} & ever_aliases)
    keys = set(undo.keys_added) | (set(other.keys) & ever_keys)
    aliases -= {a for o in standing for a in (o.name, *o.aliases)}
    keys -= {k for o in standing for k in o.keys}
    return aliases, keys


def renamed(entity: Entity, name: str) -> Entity:
    """The entity under its new display name: the old name stays an alias (kept first-seen
    order), the new one is no longer listed as an alias of itself. (cypher/entities.cypher
    `rename_entities` applies the same rule on Neo4j.)"""
    aliases = [a for a in entity.aliases if a != name]
    if entity.name not in aliases:
        aliases.append(entity.name)
    return entity.model_copy(update={"name": name, "aliases": aliases})


def rename_event(
    entity_id: str,
    tenant: Tenant,
    old_name: str,
    new_name: str,
    at: datetime,
    episode_id: str | None,
) -> EntityEvent:
    """The RENAME of an `AliasUpdate.name` (a resolver's decision, made during an add)."""
    return EntityEvent(
        entity_id=entity_id,
        tenant=tenant,
        event="RENAME",
        old_name=old_name,
        new_name=new_name,
        actor="resolver",
        episode_id=episode_id,
        at=at,
    )


def pair_key(a: str, b: str) -> str:
    """A possible-duplicate pair's identity: unordered, so (a, b) and (b, a) are one pair."""
    return "|".join(sorted((a, b)))


@dataclass
class PairChange:
    """How a merge (or split) changes the tenant's possible-duplicate pairs (by `pair_key`):
    deletes first, then creates; `moved`: a merge's pairs of `other` and a third entity, as
    recorded (its undo)."""

    deletes: list[str] = field(default_factory=list)
    creates: list[PossibleDuplicate] = field(default_factory=list)
    moved: list[PossibleDuplicate] = field(default_factory=list)


def repoint_pairs(pairs: Iterable[PossibleDuplicate], keep_id: str, other_id: str) -> PairChange:
    """Pairs of `keep` and `other` are settled by the merge (deleted); a pair of `other` and a
    third entity becomes a pair of `keep` and it, unless `keep` has that pair already."""
    pairs = list(pairs)
    change = PairChange()
    existing = {pair_key(p.entity_id, p.candidate_id) for p in pairs}
    for p in pairs:
        key = pair_key(p.entity_id, p.candidate_id)
        if other_id not in (p.entity_id, p.candidate_id):
            continue
        change.deletes.append(key)
        ends = [keep_id if i == other_id else i for i in (p.entity_id, p.candidate_id)]
        if ends[0] == ends[1]:
            continue
        change.moved.append(p)
        new_key = pair_key(*ends)
        if new_key in existing:
            continue
        existing.add(new_key)
        change.creates.append(p.model_copy(update={"entity_id": ends[0], "candidate_id": ends[1]}))
    return change
