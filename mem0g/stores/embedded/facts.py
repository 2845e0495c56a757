"""The fact memory (Mem0) of the embedded store, held in memory beside the graph.

`FactIndex` is plain state with no lock and no SQL: `EmbeddedGraphStore` owns the lock, the
tables and the transaction, asks `FactIndex.plan` to validate a plan's fact part before writing,
and calls `FactIndex.commit` only after COMMIT, exactly as it does for the graph part.
"""

from __future__ import annotations

import itertools
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from mem0g.stores.plan import FactOutcome, Owned
from mem0g.stores.vectors import VectorBlock, as_vector, centre_cosines
from mem0g.types import Fact, FactEvent, Summary, Tenant, WritePlan


@dataclass
class FactWrites:
    """A plan's fact part after validation: the rows to write, and the memory change after."""

    upserts: dict[str, Fact] = field(default_factory=dict)  # as they will be, no embedding
    vectors: dict[str, np.ndarray | None] = field(default_factory=dict)  # of each upsert
    deletes: list[str] = field(default_factory=list)  # stored facts that go away
    events: list[FactEvent] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.upserts or self.deletes or self.events)


class FactIndex:
    """Current facts (per exact tenant key, in write order), every fact's history and the
    summaries. Records are held without embeddings; vectors are float32 arrays apart."""

    def __init__(self, first_rank: int = 1) -> None:
        self.facts: dict[str, Fact] = {}
        self.vectors: dict[str, np.ndarray] = {}
        self.tenants: dict[str, Tenant] = {}  # every key with a fact, an event or a summary
        self._current: dict[str, dict[str, None]] = {}  # key -> current fact ids, write order
        self._blocks: dict[str, VectorBlock] = {}  # key -> unit rows, built lazily, then kept
        self._events: dict[str, list[FactEvent]] = {}  # fact id -> its events, write order
        # key -> the ids of facts with events, each with its first event's place in write
        # order (a rowid when loaded; new events count on): a scope's histories come back in
        # write order across tenants, whichever tenant was read into memory first
        self._event_facts: dict[str, dict[str, int]] = {}
        self._next_rank = itertools.count(first_rank)
        self._summaries: dict[str, Summary] = {}

    # ---- building (load and commit)

    def _key(self, tenant: Tenant) -> str:
        key = tenant.key
        self.tenants.setdefault(key, tenant)
        return key

    def add_fact(self, fact: Fact, vector: np.ndarray | None) -> None:
        """Insert or replace a fact held without its embedding (None keeps no vector)."""
        key = self._key(fact.tenant)
        self.facts[fact.id] = fact
        if vector is None:
            self.vectors.pop(fact.id, None)
        else:
            self.vectors[fact.id] = vector
        self._current.setdefault(key, {})[fact.id] = None
        self._index_vector(key, fact.id, vector)

    def remove_fact(self, fact_id: str) -> None:
        fact = self.facts.pop(fact_id)
        self.vectors.pop(fact_id, None)
        key = fact.tenant.key
        del self._current[key][fact_id]
        self._index_vector(key, fact_id, None)

    def _index_vector(self, key: str, fact_id: str, vector: np.ndarray | None) -> None:
        """Keep a built block in step with a write (or drop it when it can't be, or when more
        than half its rows are dead; it is rebuilt on the next search)."""
        block = self._blocks.get(key)
        if block is None:
            return
        if vector is None:
            block.unflag(fact_id)
        elif vector.shape[0] == block.rows.shape[1]:
            block.upsert(fact_id, vector, True, replace=True)
        else:
            del self._blocks[key]
            return
        if block.unflagged > max(16, len(block.ids) // 2):
            del self._blocks[key]

    def add_event(self, event: FactEvent, rank: int | None = None) -> None:
        key = self._key(event.tenant)
        self._events.setdefault(event.fact_id, []).append(event)
        ranks = self._event_facts.setdefault(key, {})
        if event.fact_id not in ranks:
            ranks[event.fact_id] = next(self._next_rank) if rank is None else rank

    def set_summary(self, summary: Summary) -> None:
        self._summaries[self._key(summary.tenant)] = summary

    def commit(self, writes: FactWrites) -> None:
        for fact_id in writes.deletes:
            self.remove_fact(fact_id)
        for fact in writes.upserts.values():
            self.add_fact(fact, writes.vectors.get(fact.id))
        for event in writes.events:
            self.add_event(event)

    def drop(self, keys: Iterable[str]) -> None:
        """Forget every fact, event and summary of these exact tenant keys."""
        keys = set(keys)
        for key in keys:
            for fact_id in self._current.pop(key, {}):
                del self.facts[fact_id]
                self.vectors.pop(fact_id, None)
            self._blocks.pop(key, None)
            self._summaries.pop(key, None)
            self.tenants.pop(key, None)
            for fact_id in self._event_facts.pop(key, {}):
                self._events.pop(fact_id, None)

    # ---- validation

    def existing(self, tenant: Tenant) -> dict[str, Container[str]]:
        """The exact tenant's part of the plan rules' `Existing`, as views over the held state
        (ids taken by any tenant are the store's question: not every tenant is in memory)."""
        return {
            "own_facts": Owned(self.facts, tenant),
            "own_fact_history": _History(self, tenant),
        }

    def plan(self, plan: WritePlan, outcome: FactOutcome) -> FactWrites:
        """The plan's fact part as it will be written, from its checked `outcome`: records
        held without embeddings, and the vectors apart."""
        writes = FactWrites(deletes=list(outcome.deletes))
        new = {f.id: f for f in plan.new_facts}
        for fact_id, state in outcome.live.items():
            created = new.get(fact_id)
            if created is not None:
                provenance = [p.model_copy() for p in created.provenance]  # not the vector
                fact = created.model_copy(update={"embedding": None, "provenance": provenance})
            else:
                fact = self.facts[fact_id].model_copy(deep=True)
            if state.changed and state.text is not None:
                fact.text, fact.updated_at = state.text, plan.updated_at
                fact.provenance += [p.model_copy() for p in state.said]
            writes.upserts[fact_id] = fact
            if created is None and state.embedding is None:
                writes.vectors[fact_id] = self.vectors.get(fact_id)
            else:
                writes.vectors[fact_id] = as_vector(state.embedding)
        writes.events = [event.model_copy(deep=True) for event in plan.fact_events]
        return writes

    def owned_history(self, fact_id: str, tenant: Tenant) -> bool:
        """The fact is gone but has history of this exact tenant (it was one of its facts)."""
        if fact_id in self.facts:
            return False
        return any(e.tenant == tenant for e in self._events.get(fact_id, ()))

    # ---- reads (records come back as copies with their embedding attached)

    def out(self, fact_id: str, *, light: bool = False) -> Fact:
        """A copy of the record, with its embedding unless `light`."""
        vector = None if light else self.vectors.get(fact_id)
        fact = self.facts[fact_id]
        provenance = [p.model_copy() for p in fact.provenance]  # no list shared with the store
        embedding = None if vector is None else vector.tolist()
        return fact.model_copy(update={"embedding": embedding, "provenance": provenance})

    def cosines(self, ids: Sequence[str], centre: np.ndarray) -> list[float]:
        """Each fact's cosine to a unit `centre`, 0 for one without a vector (`Hub`)."""
        return centre_cosines([self.vectors.get(i) for i in ids], centre)

    def get(self, scope: Tenant, ids: Sequence[str]) -> list[Fact]:
        found = (self.facts.get(i) for i in dict.fromkeys(ids))
        return [self.out(f.id) for f in found if f is not None and scope.matches(f.tenant)]

    def all(self, keys: Iterable[str]) -> list[Fact]:
        """Current facts of these tenant keys, oldest first (ties keep write order)."""
        facts = [self.facts[i] for key in keys for i in self._current.get(key, {})]
        facts.sort(key=lambda f: f.created_at)
        return [self.out(f.id) for f in facts]

    def current_ids(self, keys: Iterable[str]) -> list[str]:
        """Ids of the current facts of these tenant keys, per key in write order."""
        return [i for key in keys for i in self._current.get(key, {})]

    def block(self, key: str, dims: int | None) -> VectorBlock:
        """The unit rows of the tenant's current facts that have a vector (flagged; a deleted
        fact's row stays, unflagged), built on first use and then kept in step with writes."""
        found = self._blocks.get(key)
        if found is None:
            ids = [i for i in self._current.get(key, {}) if i in self.vectors]
            vectors = [self.vectors[i] for i in ids]
            found = self._blocks[key] = VectorBlock.build(ids, vectors, [True] * len(ids), dims)
        return found

    def history(self, scope: Tenant, fact_id: str) -> list[FactEvent]:
        """In write order, which is the order the changes happened in even when a caller's `at`
        values disagree (an ADD stamped now, an UPDATE stamped with the conversation's time)."""
        events = self._events.get(fact_id, ())
        return [e.model_copy(deep=True) for e in events if scope.matches(e.tenant)]

    def events_of(self, keys: Iterable[str]) -> list[FactEvent]:
        """Every event of these tenant keys' facts (deleted ones too), per fact in write
        order (of each fact's first event)."""
        ranked = sorted((rank, fact_id) for key in keys
                        for fact_id, rank in self._event_facts.get(key, {}).items())  # fmt: skip
        return [e.model_copy() for _, fact_id in ranked for e in self._events[fact_id]]

    def summary(self, tenant: Tenant) -> Summary | None:
        found = self._summaries.get(tenant.key)
        return None if found is None else found.model_copy(deep=True)


@dataclass(frozen=True)
class _History:
    index: FactIndex
    tenant: Tenant

    def __contains__(self, item: object) -> bool:
        return isinstance(item, str) and self.index.owned_history(item, self.tenant)
