"""Update resolver: decide, against existing edges sharing an endpoint, what each new triple is.

Deterministic first: a triple identical to a valid edge (same endpoints and relation) is a
duplicate without asking. The rest go to the LLM (`resolve_updates`) with at most `s` most
similar existing edges each, and only when such edges exist. Nothing here writes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime

from pydantic import BaseModel, Field

from mem0g.llm.client import TaskCaller
from mem0g.llm.protocol import (
    RESOLVE_UPDATES,
    ExistingTriple,
    NewTriple,
    ResolveUpdatesPayload,
    iso,
)
from mem0g.stores.base import GraphStore
from mem0g.types import (
    Event,
    Invalidation,
    MentionUpdate,
    Provenance,
    Relation,
    RelationChange,
    Tenant,
    UpdateQuery,
    Usage,
)

log = logging.getLogger(__name__)


class Decision(BaseModel):
    """The fate of one new triple: NOOP (a mention of `duplicate_of`, or nothing when the
    LLM named no edge), else stored, ending the edges it `supersedes` (UPDATE/INVALIDATE)."""

    event: Event = Event.ADD
    duplicate_of: Relation | None = None  # NOOP: the existing edge gaining a mention
    supersedes: list[Relation] = Field(default_factory=list)  # edges it invalidates
    invalid_at: datetime | None = None  # set when the new fact is older than what it contradicts


class EdgeWrites(BaseModel):
    """What the decisions of one add write to the edges, and how the add reports it."""

    new_relations: list[Relation] = Field(default_factory=list)
    invalidations: list[Invalidation] = Field(default_factory=list)
    mentions: list[MentionUpdate] = Field(default_factory=list)
    changes: list[RelationChange] = Field(default_factory=list)


class UpdateDecisions(BaseModel):
    decisions: list[Decision]  # one per new relation, same order
    orphan_invalidations: list[Relation] = Field(default_factory=list)  # INVALIDATE, no new_index

    def writes(self, new: list[Relation], provenance: Provenance, when: datetime) -> EdgeWrites:
        """The one place a Decision gets its meaning: a NOOP adds a mention (and provenance)
        to its duplicate; anything else stores the new edge (reported as UPDATE or ADD) and
        ends what it supersedes when the new fact starts; each edge is ended at most once and
        gains at most one mention (mentions count episodes, however often one repeats it)."""
        out = EdgeWrites()
        invalidated: set[str] = set()
        mentioned: set[str] = set()

        def invalidate(old: Relation, at: datetime) -> None:
            if old.id not in invalidated:
                invalidated.add(old.id)
                out.invalidations.append(Invalidation(relation_id=old.id, invalid_at=at))
                out.changes.append(change(Event.INVALIDATE, old, invalid_at=at))

        for rel, decision in zip(new, self.decisions, strict=True):
            if decision.event == Event.NOOP:
                if decision.duplicate_of is not None and decision.duplicate_of.id not in mentioned:
                    dup = decision.duplicate_of
                    mentioned.add(dup.id)
                    out.mentions.append(MentionUpdate(relation_id=dup.id, provenance=provenance))
                    out.changes.append(change(Event.NOOP, dup))
            else:
                rel.invalid_at = decision.invalid_at
                out.new_relations.append(rel)
                previous = decision.supersedes[0].id if decision.supersedes else None
                event = Event.UPDATE if decision.event == Event.UPDATE else Event.ADD
                out.changes.append(change(event, rel, previous_id=previous))
            for old in decision.supersedes:
                invalidate(old, rel.valid_from or when)
        for old in self.orphan_invalidations:
            invalidate(old, when)
        return out


def change(
    event: Event,
    rel: Relation,
    *,
    previous_id: str | None = None,
    invalid_at: datetime | None = None,
) -> RelationChange:
    """One line of the add's report about `rel`."""
    return RelationChange(
        event=event,
        id=rel.id,
        source=rel.source,
        relation=rel.relation,
        destination=rel.destination,
        valid_from=rel.valid_from,
        invalid_at=invalid_at or rel.invalid_at,
        previous_id=previous_id,
    )


def _shares_an_end(new: Relation, old: Relation) -> bool:
    return bool({new.source_id, new.destination_id} & {old.source_id, old.destination_id})


def _identical(new: Relation, old: Relation) -> bool:
    return (new.source_id, new.relation, new.destination_id) == (
        old.source_id,
        old.relation,
        old.destination_id,
    )


def resolve_updates(
    llm: TaskCaller,
    store: GraphStore,
    tenant: Tenant,
    new: list[Relation],
    *,
    reference_time: datetime,
    max_existing: int,
    usage: Usage | None = None,
    renamed: Mapping[str, str] | None = None,
) -> UpdateDecisions:
    """One Decision per new relation (same order). At most one LLM call. `renamed`: entity
    id -> the display name this add gives it, so existing edges are shown under the same
    names as the new triples ("Sam" lives_in London beside "Sam Okafor" lives_in Paris would
    look like two people)."""
    renamed = renamed or {}
    decisions = [Decision() for _ in new]
    # the store ranks each triple's touching edges (a hub endpoint holds hundreds or
    # thousands) and sends only the best: identical first, then rivals, then the most similar
    queries = [
        UpdateQuery(source_id=r.source_id, relation=r.relation, destination_id=r.destination_id,
                    vector=r.embedding)
        for r in new
    ]  # fmt: skip
    ranked = store.update_candidates(tenant, queries, max_existing)

    asked: list[int] = []
    candidates: dict[int, list[Relation]] = {}
    for i, (rel, found) in enumerate(zip(new, ranked, strict=True)):
        if found and _identical(rel, found[0]):
            decisions[i] = Decision(event=Event.NOOP, duplicate_of=found[0])
            continue
        if found:
            candidates[i] = found
            asked.append(i)
    out = UpdateDecisions(decisions=decisions)
    # edges this add restates verbatim: the LLM is not shown those triples, so it may try to
    # end such an edge for another triple; what the add says stays true
    restated = {d.duplicate_of.id for d in decisions if d.duplicate_of is not None}
    if not asked:
        return out

    short: dict[str, Relation] = {}
    for i in asked:
        for edge in candidates[i]:
            if edge.id not in {r.id for r in short.values()}:
                short[f"e{len(short) + 1}"] = edge
    payload = ResolveUpdatesPayload(
        reference_time=reference_time.isoformat(),
        new=[
            NewTriple(
                index=i,
                source=new[i].source,
                relation=new[i].relation,
                destination=new[i].destination,
                valid_from=iso(new[i].valid_from),
            )
            for i in asked
        ],
        existing=[
            ExistingTriple(
                id=sid,
                source=renamed.get(old.source_id, old.source),
                relation=old.relation,
                destination=renamed.get(old.destination_id, old.destination),
                valid_from=iso(old.valid_from),
                created_at=old.created_at.isoformat(),
            )
            for sid, old in short.items()
        ],
    )
    answer = llm.call(RESOLVE_UPDATES, payload, usage)
    usable = []
    for op in answer.operations:
        index_ok = op.new_index is None or op.new_index in asked
        if not index_ok or (op.existing_id is not None and op.existing_id not in short):
            log.warning("resolve_updates: ignoring operation with unknown index or id: %s", op)
            continue
        # a new fact only contradicts or repeats an edge about one of its entities; a
        # pairing across (another triple's candidate) would end an unrelated edge
        paired = op.new_index is not None and op.existing_id is not None
        if paired and not _shares_an_end(new[op.new_index], short[op.existing_id]):  # type: ignore[index]
            log.warning("resolve_updates: ignoring a pairing of unrelated edges: %s", op)
            continue
        usable.append(op)
    # Precedence, whatever the answer's order: UPDATE, then INVALIDATE (one naming a new
    # triple before one that does not), then NOOP, then ADD. An edge is ended at most once,
    # and a NOOP is dropped when its new triple replaces an edge or its duplicate is being
    # ended in this add: the triple is then stored, so contradictory operations can never
    # end an edge without the fact that replaces it (no "no valid residence").
    usable.sort(key=lambda op: (_RANK[op.op], op.new_index is None))
    claimed: set[str] = set()
    changed: set[int] = set()
    for op in usable:
        old = short.get(op.existing_id) if op.existing_id is not None else None
        if op.op == "ADD" or (op.new_index is None and op.op != "INVALIDATE"):
            continue
        if op.op == "NOOP":
            if op.new_index in changed or (old is not None and old.id in claimed):
                log.info("resolve_updates: NOOP overridden by a change in the same answer: %s", op)
                continue
            assert op.new_index is not None  # a NOOP naming no new triple was skipped above
            target = decisions[op.new_index]
            if target.event == Event.NOOP:
                continue  # the first NOOP of a triple wins
            target.event = Event.NOOP
            target.duplicate_of = old  # None: the LLM named no edge, nothing is written
        elif old is not None and old.id in restated:
            log.info("resolve_updates: not ending an edge this add restates: %s", op)
        elif old is not None and old.id not in claimed:
            if op.new_index is None and _starts_after(old, reference_time):
                log.info("resolve_updates: INVALIDATE before the edge starts, ignored: %s", op)
                continue
            claimed.add(old.id)
            if op.new_index is None:
                out.orphan_invalidations.append(old)
            else:
                changed.add(op.new_index)
                _supersede(
                    decisions[op.new_index],
                    new[op.new_index],
                    old,
                    reference_time,
                    op.op == "UPDATE",
                )
    return out


_RANK = {"UPDATE": 0, "INVALIDATE": 1, "NOOP": 2, "ADD": 3}


def _starts_after(old: Relation, when: datetime) -> bool:
    """`old` began after `when`: an episode from before an edge (a backdated add, an import of
    old history) cannot end it, or the edge would end before it starts and be in no view."""
    return old.valid_from is not None and when < old.valid_from


def _supersede(
    decision: Decision, rel: Relation, old: Relation, reference_time: datetime, is_update: bool
) -> None:
    """Record that `old` stops being true when the new fact starts; a new fact older than
    `old` does not end it but becomes history itself (invalid from the start of the earliest
    such `old`, whatever the answer's order)."""
    if _starts_after(old, rel.valid_from or reference_time):
        assert old.valid_from is not None  # _starts_after is False without it
        ends = decision.invalid_at
        decision.invalid_at = old.valid_from if ends is None else min(ends, old.valid_from)
        return
    decision.supersedes.append(old)
    if decision.event != Event.NOOP:
        decision.event = Event.UPDATE if is_update else Event.INVALIDATE
