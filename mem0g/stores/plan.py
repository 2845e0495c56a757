"""The `WritePlan` rules, as pure functions both stores apply before writing anything.

A plan is refused whole (`StoreError`, nothing written) when one of its records is another
tenant's, an id it creates is taken (in the plan or in the store), or an id it refers to is
not the exact tenant's (an alias update's entity, an edge's ends, an invalidated or mentioned
edge, a possible duplicate's entities, a changed fact, a fact event's fact, a fact link's
ends). The stores differ
only in how they learn what exists: the embedded store looks in its memory, the Neo4j store
asks once per transaction (`plan_check` in cypher/write.cypher); each hands the answers over
as an `Existing`. The fact part's outcome (which texts and embeddings the plan leaves, which
stored facts go) is computed here too, so both stores write the same facts.

Imports only `mem0g.types` and `stores.base`; the stores import it.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mem0g.stores.base import StoreError
from mem0g.types import (
    Entity,
    EntityEvent,
    Episode,
    Fact,
    FactEvent,
    Provenance,
    Relation,
    Tenant,
    WritePlan,
    plan_episodes,
)

__all__ = [
    "Existing",
    "FactOutcome",
    "FactState",
    "Owned",
    "check_plan",
    "check_records",
    "distinct_tenants",
    "is_empty",
]

_NOTHING: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Existing:
    """What the store holds, as far as a plan's checks need: ids taken by any tenant, and ids
    that are the plan's exact tenant's. Any container works (a set of the answers, or a view
    over the store's memory)."""

    episodes: Container[str] = _NOTHING  # taken episode ids
    entities: Container[str] = _NOTHING  # taken entity ids
    relations: Container[str] = _NOTHING  # taken relation ids
    facts: Container[str] = _NOTHING  # fact ids taken: a fact or a fact history has them
    fact_events: Container[str] = _NOTHING  # taken fact event ids
    entity_events: Container[str] = _NOTHING  # taken entity event ids
    own_entities: Container[str] = _NOTHING  # entities of the exact tenant
    own_relations: Container[str] = _NOTHING  # relations of the exact tenant
    own_facts: Container[str] = _NOTHING  # current facts of the exact tenant
    # ids of the exact tenant's deleted facts (no current fact, but events of the tenant)
    own_fact_history: Container[str] = _NOTHING


@dataclass(frozen=True)
class Owned:
    """The ids of a store's records (id -> record with a `tenant`) that are one exact tenant's:
    a container view for `Existing`, so a store need not build sets of its memory."""

    records: Mapping[str, Any]
    tenant: Tenant

    def __contains__(self, item: object) -> bool:
        found = self.records.get(item) if isinstance(item, str) else None
        return found is not None and found.tenant == self.tenant


@dataclass
class FactState:
    """A fact the plan creates or changes and does not delete, as the plan leaves it."""

    text: str | None  # None: a stored fact's text, unchanged
    embedding: Sequence[float] | None  # None: unchanged (a stored fact keeps its vector)
    changed: bool = False  # a fact change touched it (its updated_at becomes the plan's)
    said: list[Provenance] = field(default_factory=list)  # the changes' episodes, to append


@dataclass
class FactOutcome:
    """The fact part of a checked plan: `live` in write order (the plan's new facts, then the
    stored facts it changes), and the stored facts it deletes."""

    live: dict[str, FactState] = field(default_factory=dict)
    deletes: list[str] = field(default_factory=list)


def is_empty(plan: WritePlan) -> bool:
    """A plan that writes nothing (a store takes no lock for it and leaves no trace)."""
    parts = (
        plan.new_entities,
        plan.alias_updates,
        plan.new_relations,
        plan.invalidations,
        plan.mentions,
        plan.possible_duplicates,
        plan.new_facts,
        plan.fact_changes,
        plan.fact_events,
        plan.entity_events,
        plan.fact_links,
    )
    return not plan_episodes(plan) and not any(parts)


def distinct_tenants(plans: Sequence[WritePlan]) -> None:
    """`apply_many` takes one plan per exact tenant: a plan is checked against the store as it
    was before the transaction (the embedded store's memory changes only after COMMIT), so a
    second plan of the same tenant could not see the first."""
    seen: set[Tenant] = set()
    for plan in plans:
        if plan.tenant in seen:
            raise StoreError(f"two plans of {plan.tenant.key} in one transaction")
        seen.add(plan.tenant)


def check_records(plan: WritePlan) -> None:
    """What needs no store: every record is the plan's tenant's, no id is created twice."""
    tenant = plan.tenant
    records: tuple[Episode | Entity | Relation | Fact | FactEvent | EntityEvent, ...] = (
        *plan_episodes(plan), *plan.new_entities, *plan.new_relations, *plan.new_facts,
        *plan.fact_events, *plan.entity_events,
    )  # fmt: skip
    for record in records:
        if record.tenant != tenant:
            raise StoreError(f"{type(record).__name__} {record.id} is not of {tenant.key}")
    kinds = (
        ("entity", plan.new_entities),
        ("relation", plan.new_relations),
        ("fact", plan.new_facts),
        ("fact event", plan.fact_events),
        ("entity event", plan.entity_events),
    )
    for kind, group in kinds:
        seen: set[str] = set()
        for record in group:
            if record.id in seen:
                raise StoreError(f"{kind} {record.id} already exists")
            seen.add(record.id)


def check_plan(plan: WritePlan, existing: Existing) -> FactOutcome:
    """Every rule (`check_records` first); raises StoreError on a bad plan. Returns the fact
    part's outcome."""
    check_records(plan)
    key = plan.tenant.key
    for episode in plan_episodes(plan):
        if episode.id in existing.episodes:
            raise StoreError(f"episode {episode.id} already exists")
    new_entities = {e.id for e in plan.new_entities}
    new_relations = {r.id for r in plan.new_relations}
    for entity in plan.new_entities:
        if entity.id in existing.entities:
            raise StoreError(f"entity {entity.id} already exists")
    for rel in plan.new_relations:
        if rel.id in existing.relations:
            raise StoreError(f"relation {rel.id} already exists")
    for event in plan.entity_events:
        if event.id in existing.entity_events:
            raise StoreError(f"entity event {event.id} already exists")

    def entity_known(entity_id: str) -> bool:
        return entity_id in new_entities or entity_id in existing.own_entities

    for alias in plan.alias_updates:
        if not entity_known(alias.entity_id):
            raise StoreError(f"unknown id {alias.entity_id} for tenant {key}")
    for rel in plan.new_relations:
        for end in (rel.source_id, rel.destination_id):
            if not entity_known(end):
                raise StoreError(f"relation {rel.id}: no entity {end} in {key}")
    refs = [i.relation_id for i in plan.invalidations] + [m.relation_id for m in plan.mentions]
    for rel_id in refs:
        if rel_id not in new_relations and rel_id not in existing.own_relations:
            raise StoreError(f"unknown id {rel_id} for tenant {key}")
    for pair in plan.possible_duplicates:
        if pair.entity_id == pair.candidate_id:
            raise StoreError(f"possible duplicate of {pair.entity_id} with itself")
        for entity_id in (pair.entity_id, pair.candidate_id):
            if not entity_known(entity_id):
                raise StoreError(f"possible duplicate: no entity {entity_id} in {key}")
    facts = _facts(plan, existing)
    for link in plan.fact_links:  # both ends are the tenant's and exist after the plan
        if not entity_known(link.entity_id):
            raise StoreError(f"fact link: no entity {link.entity_id} in {key}")
        live = link.fact_id in facts.live or (
            link.fact_id in existing.own_facts and link.fact_id not in facts.deletes
        )
        if not live:
            raise StoreError(f"fact link: no current fact {link.fact_id} in {key}")
    return facts


def _facts(plan: WritePlan, existing: Existing) -> FactOutcome:
    """A new fact's id is free (no fact and no history has it); a change names a current fact
    of exactly the plan's tenant or one new in the plan, and nothing after deleting it (a fact
    new in the plan and deleted in it is never written); an event's id is free and its fact is
    named by the plan or is (or was) the tenant's."""
    key = plan.tenant.key
    out = FactOutcome()
    for fact in plan.new_facts:
        if fact.id in existing.facts:
            raise StoreError(f"fact {fact.id} already exists")
        out.live[fact.id] = FactState(fact.text, fact.embedding)
    named = set(out.live)
    for change in plan.fact_changes:
        fact_id = change.fact_id
        if fact_id not in out.live:
            if fact_id not in existing.own_facts or fact_id in out.deletes:
                raise StoreError(f"no current fact {fact_id} for tenant {key}")
            out.live[fact_id] = FactState(None, None)
        named.add(fact_id)
        if change.text is None:
            del out.live[fact_id]
            if fact_id in existing.own_facts:
                out.deletes.append(fact_id)
            continue
        state = out.live[fact_id]
        state.text, state.changed = change.text, True
        if change.embedding is not None:
            state.embedding = change.embedding
        if change.provenance is not None:
            state.said.append(change.provenance)
    for event in plan.fact_events:
        if event.id in existing.fact_events:
            raise StoreError(f"fact event {event.id} already exists")
        fact_id = event.fact_id
        known = (
            fact_id in named
            or fact_id in existing.own_facts
            or fact_id in existing.own_fact_history
        )
        if not known:
            raise StoreError(f"event {event.id}: no fact {event.fact_id} in {key}")
    return out
