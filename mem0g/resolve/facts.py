"""Fact resolver (Mem0's update phase): ADD / UPDATE / DELETE / NOOP against similar facts.

Deterministic first: a fact whose normalised text equals a stored fact is a NOOP without asking.
The rest go to the LLM (`update_memory`) with the top `s` similar facts each, and only when such
facts exist. Nothing here writes; the result is merged into the add's WritePlan.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from datetime import datetime

import numpy as np
from pydantic import BaseModel, Field

from mem0g.embed import CachedEmbedder
from mem0g.llm.client import TaskCaller
from mem0g.llm.protocol import UPDATE_MEMORY, ExistingFact, NewFact, UpdateMemoryPayload
from mem0g.stores.base import GraphStore
from mem0g.types import Fact, FactChange, FactEvent, FactOp, FactResult, Provenance, Tenant, Usage

log = logging.getLogger(__name__)


class FactPlan(BaseModel):
    new_facts: list[Fact] = Field(default_factory=list)
    changes: list[FactChange] = Field(default_factory=list)
    events: list[FactEvent] = Field(default_factory=list)
    results: list[FactResult] = Field(default_factory=list)


_ENDS = " .,;:!?…。！？"


def _norm(text: str) -> str:
    """A fact's text up to case, runs of spaces and sentence punctuation at its ends; every
    other character counts ("A+" is not "A-", "C++" not "C#", "$50" not "£50")."""
    return re.sub(r"\s+", " ", text.casefold()).strip(_ENDS)


class _Planner:
    """Accumulates one add's fact decisions into a FactPlan."""

    def __init__(self, tenant: Tenant, provenance: Provenance, now: datetime) -> None:
        self.plan = FactPlan()
        self.tenant = tenant
        self.provenance = provenance
        self.now = now

    def event(self, fact_id: str, event: FactOp, old: str | None, new: str | None) -> None:
        self.plan.events.append(
            FactEvent(
                fact_id=fact_id,
                tenant=self.tenant,
                event=event,
                old_text=old,
                new_text=new,
                episode_id=self.provenance.episode_id,
                at=self.now,
            )
        )

    def add(self, text: str, vector: np.ndarray) -> None:
        fact = Fact(
            tenant=self.tenant,
            text=text,
            embedding=[float(x) for x in vector],
            created_at=self.now,
            updated_at=self.now,
            provenance=[self.provenance],
        )
        self.plan.new_facts.append(fact)
        self.event(fact.id, "ADD", None, text)
        self.plan.results.append(FactResult(event="ADD", id=fact.id, text=text))

    def noop(self, old: Fact) -> None:
        """A stored fact one result already reports (its change, or a NOOP) is not repeated."""
        if all(r.id != old.id for r in self.plan.results):
            self.plan.results.append(FactResult(event="NOOP", id=old.id, text=old.text))

    def changed(self, old: Fact) -> None:
        """A change of a fact replaces its NOOP result (a fact changes at most once)."""
        self.plan.results = [r for r in self.plan.results if r.id != old.id]

    def delete(self, old: Fact) -> None:
        self.changed(old)
        self.plan.changes.append(FactChange(fact_id=old.id, text=None))
        self.event(old.id, "DELETE", old.text, None)
        self.plan.results.append(FactResult(event="DELETE", id=old.id, text=old.text))

    def update(self, old: Fact, text: str, vector: np.ndarray) -> None:
        self.changed(old)
        self.plan.changes.append(
            FactChange(fact_id=old.id, text=text, embedding=[float(x) for x in vector],
                       provenance=self.provenance)
        )  # fmt: skip
        self.event(old.id, "UPDATE", old.text, text)
        self.plan.results.append(
            FactResult(event="UPDATE", id=old.id, text=text, previous_text=old.text)
        )


def resolve_facts(
    llm: TaskCaller,
    store: GraphStore,
    embedder: CachedEmbedder,
    tenant: Tenant,
    texts: Sequence[str],
    *,
    reference_time: datetime,
    provenance: Provenance,
    max_existing: int,
    min_similarity: float,
    now: datetime,
    usage: Usage | None = None,
) -> FactPlan:
    """Decide the fate of each new fact; at most one LLM call. Facts of one answer that
    are the same by normalised text are one fact (the first spelling), as a stored one is."""
    planner = _Planner(tenant, provenance, now)
    first: dict[str, str] = {}
    for text in texts:
        first.setdefault(_norm(text), text)
    texts = list(first.values())
    if not texts:
        return planner.plan
    vectors = embedder.embed(list(texts))
    similar: dict[int, list[Fact]] = {}
    for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        found = store.similar_facts(tenant, vector, max_existing, exact=True)
        same = next((f for f, _ in found if _norm(f.text) == _norm(text)), None)
        if same is not None:
            planner.noop(same)
            continue
        related = [f for f, score in found if score >= min_similarity]
        if related:
            similar[i] = related
        else:
            planner.add(text, vector)
    if similar:
        _ask(llm, planner, texts, vectors, similar, embedder, reference_time, usage)
    return planner.plan


def _ask(
    llm: TaskCaller,
    planner: _Planner,
    texts: Sequence[str],
    vectors: np.ndarray,
    similar: dict[int, list[Fact]],
    embedder: CachedEmbedder,
    reference_time: datetime,
    usage: Usage | None,
) -> None:
    """The `update_memory` call and the application of its operations."""
    short: dict[str, Fact] = {}
    for facts in similar.values():
        for fact in facts:
            if fact not in short.values():
                short[f"m{len(short) + 1}"] = fact
    payload = UpdateMemoryPayload(
        reference_time=reference_time.isoformat(),
        new=[NewFact(index=i, text=texts[i]) for i in similar],
        existing=[
            ExistingFact(id=sid, text=f.text, created_at=f.created_at.isoformat())
            for sid, f in short.items()
        ],
    )
    answer = llm.call(UPDATE_MEMORY, payload, usage)
    handled: set[int] = set()
    touched: set[str] = set()
    updates: list[tuple[Fact, str]] = []
    for op in answer.operations:
        old = short.get(op.existing_id) if op.existing_id is not None else None
        if (op.new_index is not None and op.new_index not in similar) or (
            op.existing_id is not None and old is None
        ):
            log.warning("update_memory: ignoring operation with unknown index or id: %s", op)
            continue
        if op.op == "ADD":  # every new fact no UPDATE or NOOP handles is added below, once
            continue
        if op.op == "NOOP" or old is None or old.id in touched:
            if op.op == "NOOP":
                handled.update([op.new_index] if op.new_index is not None else [])
                if old is not None:
                    planner.noop(old)
            else:
                log.warning("update_memory: %s needs an unused existing_id: %s", op.op, op)
            continue
        touched.add(old.id)
        if op.op == "DELETE":  # the contradicting new fact is added below unless handled
            planner.delete(old)
            continue
        text = (op.text or "").strip() or (texts[op.new_index] if op.new_index is not None else "")
        if not text:
            log.warning("update_memory: UPDATE without any text ignored: %s", op)
            touched.discard(old.id)
            continue
        if op.new_index is not None:
            handled.add(op.new_index)
        updates.append((old, text))
    # the texts the plan leaves, so that no two facts have one: an UPDATE to its own text (up
    # to case and punctuation) changes nothing, one to a text another fact has or gets deletes
    # the fact instead, a new fact with such a text is a NOOP of that fact
    kept = {_norm(f.text): f for f in [*planner.plan.new_facts, *short.values()]
            if f.id not in touched}  # fmt: skip
    changes: list[tuple[Fact, str]] = []
    for old, text in updates:
        same = old if _norm(text) == _norm(old.text) else kept.get(_norm(text))
        if same is old:
            planner.noop(old)
        elif same is not None:
            planner.delete(old)
            continue
        else:
            changes.append((old, text))
        kept[_norm(text)] = old
    if changes:
        for (old, text), vector in zip(
            changes, embedder.embed([t for _, t in changes]), strict=True
        ):
            planner.update(old, text, vector)
    for i in similar:
        if i in handled:
            continue
        same = kept.get(_norm(texts[i]))
        if same is not None:
            planner.noop(same)
        else:
            planner.add(texts[i], vectors[i])
