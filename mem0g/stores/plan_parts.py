"""A restore's plan cut into consecutive plans of bounded size, for a store that cannot write
a huge tenant in one transaction (`StoreCapabilities.restore_in_parts`: a Neo4j server
refuses a transaction past its transaction memory; a 100,000-edge tenant did not fit a 512
MiB heap). Pure: it only regroups the plan's records.

Each part refers only to records of the parts before it or of itself, so each passes the
plan rules (`stores.plan`) once those are written: episodes first, then entities, then edges,
then facts, each with its own fact changes, events and links (a deleted fact is created and
deleted within one plan, its history with it), then possible duplicates and entity events.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from mem0g.types import FactChange, FactEvent, FactLink, WritePlan

__all__ = ["plan_parts", "plan_size", "splittable"]


def plan_size(plan: WritePlan) -> int:
    """How many records a plan writes (an episode, entity, edge, fact, event or link each)."""
    return (
        (plan.episode is not None) + len(plan.more_episodes) + len(plan.new_entities)
        + len(plan.new_relations) + len(plan.new_facts) + len(plan.fact_changes)
        + len(plan.fact_events) + len(plan.fact_links) + len(plan.possible_duplicates)
        + len(plan.entity_events)
    )  # fmt: skip


def splittable(plan: WritePlan) -> bool:
    """Only a plan that creates (a new tenant's restore): a plan that also changes stored
    records (aliases, invalidations, mentions, a stored fact) is one change, kept whole."""
    created = {f.id for f in plan.new_facts}
    return (
        not plan.alias_updates
        and not plan.invalidations
        and not plan.mentions
        and all(change.fact_id in created for change in plan.fact_changes)
        and plan.based_on is None
    )


def plan_parts(plan: WritePlan, size: int) -> list[WritePlan]:
    """`plan` as plans of about `size` records each (a fact with its events and links is
    never cut, so a part can be larger), in write order. One part when it is small enough or
    not `splittable`."""
    if size < 1:
        raise ValueError(f"size must be at least 1, got {size}")
    if plan_size(plan) <= size or not splittable(plan):
        return [plan]
    episodes = [*([plan.episode] if plan.episode is not None else []), *plan.more_episodes]
    parts: list[WritePlan] = []

    def part(**fields: Any) -> None:
        parts.append(WritePlan(tenant=plan.tenant, updated_at=plan.updated_at, **fields))

    for chunk in _chunks(episodes, size):
        part(episode=chunk[0], more_episodes=chunk[1:])
    for entities in _chunks(plan.new_entities, size):
        part(new_entities=entities)
    for relations in _chunks(plan.new_relations, size):
        part(new_relations=relations)
    for facts, changes, events, links in _fact_units(plan, size):
        part(new_facts=facts, fact_changes=changes, fact_events=events, fact_links=links)
    for pairs in _chunks(plan.possible_duplicates, size):
        part(possible_duplicates=pairs)
    for entity_events in _chunks(plan.entity_events, size):  # in their order
        part(entity_events=entity_events)
    return parts


def _chunks(items: Sequence[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _fact_units(
    plan: WritePlan, size: int
) -> Iterator[tuple[list[Any], list[FactChange], list[FactEvent], list[FactLink]]]:
    """Facts with their changes, events and links, about `size` records a group; events and
    links of no fact of the plan go with the last group."""
    changes: dict[str, list[FactChange]] = {}
    events: dict[str, list[FactEvent]] = {}
    links: dict[str, list[FactLink]] = {}
    for change in plan.fact_changes:
        changes.setdefault(change.fact_id, []).append(change)
    for event in plan.fact_events:
        events.setdefault(event.fact_id, []).append(event)
    for link in plan.fact_links:
        links.setdefault(link.fact_id, []).append(link)
    own = {f.id for f in plan.new_facts}
    facts: list[Any] = []
    their_changes: list[FactChange] = []
    their_events: list[FactEvent] = []
    their_links: list[FactLink] = []
    for fact in plan.new_facts:
        facts.append(fact)
        their_changes += changes.get(fact.id, [])
        their_events += events.get(fact.id, [])
        their_links += links.get(fact.id, [])
        if len(facts) + len(their_changes) + len(their_events) + len(their_links) >= size:
            yield facts, their_changes, their_events, their_links
            facts, their_changes, their_events, their_links = [], [], [], []
    their_events += [e for e in plan.fact_events if e.fact_id not in own]
    their_links += [link for link in plan.fact_links if link.fact_id not in own]
    if facts or their_changes or their_events or their_links:
        yield facts, their_changes, their_events, their_links
