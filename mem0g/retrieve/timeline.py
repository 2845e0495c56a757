"""When each fact was true: the shared clock behind `as_of` (a hard filter) and the query's
time window (a soft boost, `retrieve.timewin`).

A fact exists from when it was said (its first provenance's conversation time; the creation
time when it has none) until it was updated or deleted; an update's time is the conversation
time of the episode that caused it, or, for a user's direct edit, when the edit was made. Each
stretch between changes is a `FactVersion` with the text true then, so `as_of=T` returns a
fact as it read at T (an updated fact's old text), and nothing said after T. Edges follow the
same rule with their own fields (`valid_from <= T < invalid_at`, `Validity.accepts`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from pydantic import BaseModel

from mem0g.types import Fact, FactEvent, Tenant


class FactVersion(BaseModel):
    """One text of one fact and the stretch of time it was the fact's text: [start, end)."""

    fact_id: str
    tenant: Tenant
    text: str
    start: datetime
    end: datetime | None = None  # None: still current
    fact: Fact | None = None  # the current record, when this version is its current text

    def true_at(self, when: datetime) -> bool:
        return self.start <= when and (self.end is None or when < self.end)


def said_at(fact: Fact) -> datetime:
    """When a fact was said: its earliest provenance's conversation time, else its creation."""
    times = [p.timestamp for p in fact.provenance if p.timestamp is not None]
    return min(times) if times else fact.created_at


def versions(
    current: Sequence[Fact], timeline: Iterable[tuple[FactEvent, datetime | None]]
) -> list[FactVersion]:
    """Every version of every fact of a scope: the current facts and the events of all its
    facts (deleted ones included), per fact in write order, each with its episode's time."""
    events: dict[str, list[tuple[FactEvent, datetime | None]]] = {}
    for event, said in timeline:
        events.setdefault(event.fact_id, []).append((event, said))
    records = {f.id: f for f in current}
    out: list[FactVersion] = []
    for fact_id in dict.fromkeys([*events, *records]):
        fact = records.get(fact_id)
        text: str | None = None
        start: datetime | None = None
        for event, said in events.get(fact_id, []):
            when = said or event.at
            if event.event == "ADD":
                text = event.new_text
                start = said_at(fact) if fact is not None and fact.provenance else when
                continue
            if text is not None and start is not None:
                end = max(when, start)  # a backdated change cannot end a text before it began
                out.append(FactVersion(fact_id=fact_id, tenant=event.tenant, text=text,
                                       start=start, end=end))  # fmt: skip
                start = end
            else:  # history before the ADD is unknown: the change's old text from then on
                start = when
            text = event.new_text if event.event == "UPDATE" else None
        if fact is not None:  # the current text, from its last change (or when it was said)
            begin = start if start is not None and text is not None else said_at(fact)
            out.append(FactVersion(fact_id=fact_id, tenant=fact.tenant, text=fact.text,
                                   start=begin, fact=fact))  # fmt: skip
    return out


def as_of(found: Iterable[FactVersion], when: datetime) -> list[FactVersion]:
    """The versions true at `when`: at most one per fact."""
    return [v for v in found if v.true_at(when)]


def as_fact(version: FactVersion) -> Fact:
    """A version as a `Fact` record (without embedding): the current record, or the old text
    with its stretch's start as its times."""
    if version.fact is not None:
        return version.fact.model_copy(update={"embedding": None})
    return Fact(id=version.fact_id, tenant=version.tenant, text=version.text,
                created_at=version.start, updated_at=version.start)  # fmt: skip
