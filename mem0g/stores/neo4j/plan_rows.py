"""A checked `WritePlan` as the parameters of the write statements: one row
per record, with ``written`` (the apply call, ns) and ``pos`` (its place in the plan) so reads
return records in write order, as the embedded store does."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mem0g.stores.lexical_query import SCOPE_FIELD, WORDS_FIELD, indexed_words, scope_terms
from mem0g.stores.neo4j.rows import _db_time, _tenant_props, _vector
from mem0g.stores.plan import FactOutcome
from mem0g.stores.repair import pair_key
from mem0g.types import (
    Entity,
    EntityEvent,
    PossibleDuplicate,
    Relation,
    Tenant,
    WritePlan,
    plan_episodes,
)

# An edge's place in write order as one property: the reads that walk a hub's edges sort
# hundreds of candidates before their LIMIT, and one string key reads one property per edge
# where (written, pos, created_at, id) read four (at 100k edges the walk 10-15% faster, a
# warm search's p95 4-6% lower, docs/benchmarks.md). Written with the edge; schema v4 gives
# it to the edges of an older database (cypher/schema.cypher, `backfill_relation_order`,
# which builds the same string).
ORDER_FIELD = "ord"
_WRITTEN_DIGITS, _POS_DIGITS = 19, 9  # time_ns() until the year 2286; a plan's position


def write_order(written: int, pos: int, rel_id: str) -> str:
    """The sortable key of (written, pos, id): both numbers zero-padded to a fixed width, so
    comparing strings compares them; the id makes it unique (two applies of one nanosecond)."""
    if not 0 <= written < 10**_WRITTEN_DIGITS or not 0 <= pos < 10**_POS_DIGITS:
        raise ValueError(f"write order out of range: written={written}, pos={pos}")
    return f"{written:0{_WRITTEN_DIGITS}d}{pos:0{_POS_DIGITS}d}{rel_id}"


def _plan_rows(plan: WritePlan, written: int) -> dict[str, Any]:
    """The parameters of write.cypher for one plan; a plan's repeated updates of one record
    are merged here, so each statement touches a record once."""
    # a plan without a conversation (a direct edit) has no episode; a restore has several,
    # ordered by `written` as commits are
    episodes = [
        {
            "id": ep.id,
            **_tenant_props(ep.tenant),
            "messages": json.dumps([m.model_dump(mode="json") for m in ep.messages]),
            "message_count": len(ep.messages),
            "timestamp": _db_time(ep.timestamp),
            "created_at": _db_time(ep.created_at),
            "written": written + pos,
        }
        for pos, ep in enumerate(plan_episodes(plan))
    ]
    episode = episodes[0] if episodes else None
    entities = [_entity_row(e, written, pos) for pos, e in enumerate(plan.new_entities)]
    aliases: dict[str, dict[str, list[str]]] = {}
    names: dict[str, str] = {}  # display names (AliasUpdate.name): the last one wins
    for a in plan.alias_updates:
        row = aliases.setdefault(a.entity_id, {"aliases": [], "keys": []})
        row["aliases"] += a.aliases
        row["keys"] += a.keys
        if a.name is not None:
            names[a.entity_id] = a.name
    relations = [_relation_row(r, written, pos) for pos, r in enumerate(plan.new_relations)]
    invalid = {i.relation_id: _db_time(i.invalid_at) for i in plan.invalidations}  # last wins
    mentions: dict[str, dict[str, list[Any]]] = {}
    for m in plan.mentions:
        mention = mentions.setdefault(m.relation_id, {"episode_ids": [], "timestamps": []})
        mention["episode_ids"].append(m.provenance.episode_id)
        mention["timestamps"].append(_db_time(m.provenance.timestamp))
    return {
        "written": written,
        "episode": episode,
        "more_episodes": episodes[1:],
        "entities": entities,
        "aliases": [{"id": k, **v} for k, v in aliases.items()],
        "relations": relations,
        "renames": [{"id": k, "name": v} for k, v in names.items()],
        "pairs": _pair_rows(plan.tenant, plan.possible_duplicates, written),
        "invalidations": [{"id": k, "invalid_at": v} for k, v in invalid.items()],
        "mentions": [{"id": k, **v} for k, v in mentions.items()],
    }


def _entity_row(e: Entity, written: int, pos: int) -> dict[str, Any]:
    """create_entities' row for one entity."""
    vector, flat = _vector(e.embedding)
    props = {
        "id": e.id,
        **_tenant_props(e.tenant),
        SCOPE_FIELD: scope_terms(e.tenant),
        "name": e.name,
        "type": e.type,
        "aliases": list(e.aliases),
        "keys": list(e.keys),
        "created_at": _db_time(e.created_at),
        "updated_at": _db_time(e.updated_at),
        "written": written,
        "pos": pos,
        "embedding_zero": True if flat else None,
    }
    return {"props": props, "embedding": vector}


def _relation_row(r: Relation, written: int, pos: int) -> dict[str, Any]:
    """create_relations' row for one edge."""
    vector, flat = _vector(r.embedding)
    props = {
        "id": r.id,
        **_tenant_props(r.tenant),
        SCOPE_FIELD: scope_terms(r.tenant),
        "name": r.relation,
        "source": r.source,
        "destination": r.destination,
        "valid_from": _db_time(r.valid_from),
        "invalid_at": _db_time(r.invalid_at),
        "created_at": _db_time(r.created_at),
        "updated_at": _db_time(r.updated_at),
        "mentions": r.mentions,
        "episode_ids": [p.episode_id for p in r.provenance],
        "provenance_at": [_db_time(p.timestamp) for p in r.provenance],
        "written": written,
        "pos": pos,
        ORDER_FIELD: write_order(written, pos, r.id),
        "embedding_zero": True if flat else None,
    }
    return {
        "source_id": r.source_id,
        "destination_id": r.destination_id,
        "props": props,
        "embedding": vector,
    }


def _pair_rows(
    tenant: Tenant, pairs: Sequence[PossibleDuplicate], written: int
) -> list[dict[str, Any]]:
    """create_pairs' rows."""
    rows = []
    for pos, p in enumerate(pairs):
        props = {
            **_tenant_props(tenant),
            "entity_id": p.entity_id,
            "candidate_id": p.candidate_id,
            "data": p.model_dump_json(),
            "written": written,
            "pos": pos,
        }
        rows.append({"pair": pair_key(p.entity_id, p.candidate_id), "props": props})
    return rows


def _event_rows(events: Sequence[EntityEvent], written: int) -> list[dict[str, Any]]:
    """create_entity_events' rows."""
    return [
        {
            "id": ev.id,
            **_tenant_props(ev.tenant),
            "entity_id": ev.entity_id,
            "other_id": ev.other_id,
            "event": ev.event,
            "data": ev.model_dump_json(),
            "at": _db_time(ev.at),
            "written": written,
            "pos": pos,
        }
        for pos, ev in enumerate(events)
    ]


def _names_row(new: Entity, old: Entity) -> dict[str, Any]:
    """set_entity_names' row: `old` as stored, `new` as it ends up."""
    return {
        "id": new.id,
        "name": new.name,
        "aliases": list(new.aliases),
        "keys": list(new.keys),
        "updated_at": _db_time(new.updated_at),
        "removed_keys": [k for k in old.keys if k not in new.keys],
        "added_keys": [k for k in new.keys if k not in old.keys],
    }


def _ends_rows(relations: Sequence[Relation]) -> list[dict[str, Any]]:
    """repoint_relations' rows."""
    return [
        {
            "id": r.id,
            "source_id": r.source_id,
            "source": r.source,
            "destination_id": r.destination_id,
            "destination": r.destination,
        }
        for r in relations
    ]


@dataclass
class _FactRows:
    """A plan's fact part as create_facts, update_facts, delete_facts and create_fact_events
    write it, after the checks against the database."""

    deletes: list[str] = field(default_factory=list)  # stored facts that go away
    creates: list[dict[str, Any]] = field(default_factory=list)  # new facts, as they end up
    updates: list[dict[str, Any]] = field(default_factory=list)  # stored facts that change
    events: list[dict[str, Any]] = field(default_factory=list)


def _fact_refs(plan: WritePlan) -> dict[str, list[str]]:
    """plan_check's fact parameters: the ids the plan creates, and the fact ids it refers to."""
    new_ids = {f.id for f in plan.new_facts}
    refs = {c.fact_id for c in plan.fact_changes} | {e.fact_id for e in plan.fact_events}
    refs |= {link.fact_id for link in plan.fact_links}
    return {
        "new_fact_ids": sorted(new_ids),
        "new_event_ids": sorted({e.id for e in plan.fact_events}),
        "fact_refs": sorted(refs - new_ids),
    }


def _words(text: str | None) -> str | None:
    """The indexed words of a fact's text (None stays None, as its text does)."""
    return None if text is None else indexed_words(text)


def _fact_rows(plan: WritePlan, outcome: FactOutcome, written: int) -> _FactRows:
    """The fact part's rows, from its checked outcome (`stores.plan`)."""
    live = outcome.live
    rows = _FactRows(deletes=list(outcome.deletes))
    for pos, f in enumerate(plan.new_facts):
        if f.id not in live:  # deleted again within the plan
            continue
        state = live[f.id]
        vector, flat = _vector(state.embedding)
        updated = plan.updated_at if state.changed else f.updated_at
        props = {
            "id": f.id,
            **_tenant_props(f.tenant),
            SCOPE_FIELD: scope_terms(f.tenant),
            "text": state.text,
            WORDS_FIELD: _words(state.text),
            "created_at": _db_time(f.created_at),
            "updated_at": _db_time(updated),
            "episode_ids": [p.episode_id for p in [*f.provenance, *state.said]],
            "provenance_at": [_db_time(p.timestamp) for p in [*f.provenance, *state.said]],
            "written": written,
            "pos": pos,
            "embedding_zero": True if flat else None,
        }
        rows.creates.append({"props": props, "embedding": vector})
    created = {f.id for f in plan.new_facts}
    for fact_id, state in live.items():
        if fact_id not in created:
            vector, flat = _vector(state.embedding)
            row = {
                "id": fact_id,
                "text": state.text,
                WORDS_FIELD: _words(state.text),
                "embedding": vector,
                # the episodes that said the new text, appended to the fact's provenance
                "episode_ids": [p.episode_id for p in state.said],
                "provenance_at": [_db_time(p.timestamp) for p in state.said],
            }
            rows.updates.append({**row, "embedding_zero": True if flat else None})
    for pos, ev in enumerate(plan.fact_events):
        rows.events.append(
            {
                "id": ev.id,
                "fact_id": ev.fact_id,
                **_tenant_props(ev.tenant),
                "event": ev.event,
                "old_text": ev.old_text,
                "new_text": ev.new_text,
                "actor": ev.actor,
                "episode_id": ev.episode_id,
                "at": _db_time(ev.at),
                "written": written,
                "pos": pos,
            }
        )
    return rows
