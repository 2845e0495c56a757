"""The fact memory (Mem0) of the embedded store, held in memory beside the graph.

`FactIndex` is plain state with no lock and no SQL: `EmbeddedGraphStore` owns the lock, the
tables and the transaction, asks `FactIndex.plan` to validate a plan's fact part before writing,
and calls `FactIndex.commit` only after COMMIT, exactly as it does for the graph part.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from mem0g.stores.base import StoreError
from mem0g.types import Fact, FactEvent, Summary, Tenant, WritePlan


def as_vector(values: Sequence[float] | None) -> np.ndarray | None:
    """Embeddings live as float32 arrays (4 bytes a value) instead of lists of Python floats."""
    return None if values is None else np.asarray(values, dtype=np.float32).reshape(-1)


def unit_rows(vectors: Sequence[np.ndarray], dims: int | None) -> np.ndarray:
    """The vectors stacked and scaled to unit length, so cosine is one matrix product."""
    if not vectors:
        return np.zeros((0, dims or 0), dtype=np.float32)
    matrix = np.vstack(vectors)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix /= np.where(norms == 0, np.float32(1), norms)
    return matrix


@dataclass
class VectorBlock:
    """A tenant's embedding matrix: row i is the unit vector of record ids[i], and flags[i] says
    whether the row is selected by default (an edge without invalid_at, a fact not deleted).
    It changes in place (capacity doubling) as records are written, instead of being rebuilt.
    An edge block may also hold `spans`: per row the [valid_from, invalid_at) interval as int64
    microseconds, so an `as_of` search selects rows with one comparison instead of a loop."""

    ids: list[str]
    rows: np.ndarray  # capacity x dims; the first len(ids) rows are in use
    flags: np.ndarray  # bool per row
    index: dict[str, int] = field(default_factory=dict)
    unflagged: int = 0  # rows whose flag is False
    spans: np.ndarray | None = None  # capacity x 2 int64, set by the owner when first needed

    def __post_init__(self) -> None:
        self.index = {record_id: row for row, record_id in enumerate(self.ids)}
        self.unflagged = len(self.ids) - int(np.count_nonzero(self.flags[: len(self.ids)]))

    @classmethod
    def build(
        cls, ids: list[str], vectors: Sequence[np.ndarray], flags: Sequence[bool], dims: int | None
    ) -> VectorBlock:
        return cls(ids, unit_rows(vectors, dims), np.array(flags, dtype=bool).reshape(-1))

    @property
    def matrix(self) -> np.ndarray:
        return self.rows[: len(self.ids)]

    @property
    def current(self) -> np.ndarray:
        return self.flags[: len(self.ids)]

    def selected(self) -> np.ndarray | None:
        """Indices of the flagged rows; None when that is every row."""
        return None if self.unflagged == 0 else np.flatnonzero(self.current)

    def _flag(self, row: int, flag: bool) -> None:
        if bool(self.flags[row]) != flag:
            self.unflagged += -1 if flag else 1
            self.flags[row] = flag

    def upsert(
        self,
        record_id: str,
        vector: np.ndarray,
        flag: bool,
        *,
        replace: bool = False,
        span: tuple[int, int] | None = None,
    ) -> None:
        """Add a row, or set an existing row's flag and span (and, with `replace`, its vector:
        a fact's text and embedding may change; an entity's or edge's embedding never does).
        Without a `span`, held spans are dropped (the owner rebuilds them when needed)."""
        row = self.index.get(record_id)
        if row is None:
            row = len(self.ids)
            if row == self.rows.shape[0]:
                grown = max(16, row * 2)
                self.rows = np.resize(self.rows, (grown, self.rows.shape[1]))
                self.flags = np.resize(self.flags, grown)
                if self.spans is not None:
                    self.spans = np.resize(self.spans, (grown, 2))
            self.flags[row] = True
            self.ids.append(record_id)
            self.index[record_id] = row
            replace = True
        if replace:
            self.rows[row] = unit_rows([vector], vector.shape[0])[0]
        self._flag(row, flag)
        if self.spans is not None:
            if span is None:
                self.spans = None
            else:
                self.spans[row] = span

    def unflag(self, record_id: str) -> None:
        """The record is gone or has no vector any more: its row is never selected again."""
        row = self.index.get(record_id)
        if row is not None:
            self._flag(row, False)


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

    def __init__(self) -> None:
        self.facts: dict[str, Fact] = {}
        self.vectors: dict[str, np.ndarray] = {}
        self.tenants: dict[str, Tenant] = {}  # every key with a fact, an event or a summary
        self._current: dict[str, dict[str, None]] = {}  # key -> current fact ids, write order
        self._blocks: dict[str, VectorBlock] = {}  # key -> unit rows, built lazily, then kept
        self._events: dict[str, list[FactEvent]] = {}  # fact id -> its events, write order
        self._event_ids: set[str] = set()
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

    def add_event(self, event: FactEvent) -> None:
        self._key(event.tenant)
        self._events.setdefault(event.fact_id, []).append(event)
        self._event_ids.add(event.id)

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
        for fact_id, events in list(self._events.items()):
            kept = [e for e in events if e.tenant.key not in keys]
            self._event_ids.difference_update(e.id for e in events if e.tenant.key in keys)
            if kept:
                self._events[fact_id] = kept
            else:
                del self._events[fact_id]

    # ---- validation

    def plan(self, plan: WritePlan) -> FactWrites:
        """The plan's fact part as it will be written; raises StoreError on a bad plan (a
        foreign record, an unknown or foreign fact id, a duplicate id) before any write."""
        tenant = plan.tenant
        writes = FactWrites()
        named: set[str] = set()  # fact ids this plan creates or changes
        for fact in plan.new_facts:
            if fact.tenant != tenant:
                raise StoreError(f"Fact {fact.id} is not of {tenant.key}")
            if fact.id in self.facts or fact.id in self._events or fact.id in named:
                raise StoreError(f"fact {fact.id} already exists")
            named.add(fact.id)
            provenance = [p.model_copy() for p in fact.provenance]  # no deep copy of the vector
            writes.upserts[fact.id] = fact.model_copy(
                update={"embedding": None, "provenance": provenance}
            )
            writes.vectors[fact.id] = as_vector(fact.embedding)
        for change in plan.fact_changes:
            fact_id = change.fact_id
            if fact_id not in writes.upserts:
                stored = self.facts.get(fact_id)
                if stored is None or stored.tenant != tenant or fact_id in writes.deletes:
                    raise StoreError(f"no current fact {fact_id} for tenant {tenant.key}")
                writes.upserts[fact_id] = stored.model_copy(deep=True)
                writes.vectors[fact_id] = self.vectors.get(fact_id)
            named.add(fact_id)
            if change.text is None:  # a fact new in this plan is then never inserted
                del writes.upserts[fact_id], writes.vectors[fact_id]
                if fact_id in self.facts:
                    writes.deletes.append(fact_id)
                continue
            fact = writes.upserts[fact_id]
            fact.text, fact.updated_at = change.text, plan.updated_at
            if change.embedding is not None:
                writes.vectors[fact_id] = as_vector(change.embedding)
        event_ids: set[str] = set()
        for event in plan.fact_events:
            if event.tenant != tenant:
                raise StoreError(f"FactEvent {event.id} is not of {tenant.key}")
            if event.id in self._event_ids or event.id in event_ids:
                raise StoreError(f"fact event {event.id} already exists")
            if not (event.fact_id in named or self._owned(event.fact_id, tenant)):
                raise StoreError(f"event {event.id}: no fact {event.fact_id} in {tenant.key}")
            event_ids.add(event.id)
            writes.events.append(event.model_copy(deep=True))
        return writes

    def _owned(self, fact_id: str, tenant: Tenant) -> bool:
        """The fact is, or was (it has history), one of this exact tenant's."""
        stored = self.facts.get(fact_id)
        if stored is not None:
            return stored.tenant == tenant
        return any(e.tenant == tenant for e in self._events.get(fact_id, ()))

    # ---- reads (records come back as copies with their embedding attached)

    def out(self, fact_id: str) -> Fact:
        vector = self.vectors.get(fact_id)
        fact = self.facts[fact_id]
        provenance = [p.model_copy() for p in fact.provenance]  # no list shared with the store
        embedding = None if vector is None else vector.tolist()
        return fact.model_copy(update={"embedding": embedding, "provenance": provenance})

    def get(self, scope: Tenant, ids: Sequence[str]) -> list[Fact]:
        found = (self.facts.get(i) for i in dict.fromkeys(ids))
        return [self.out(f.id) for f in found if f is not None and scope.matches(f.tenant)]

    def all(self, keys: Iterable[str]) -> list[Fact]:
        """Current facts of these tenant keys, oldest first (ties keep write order)."""
        facts = [self.facts[i] for key in keys for i in self._current.get(key, {})]
        facts.sort(key=lambda f: f.created_at)
        return [self.out(f.id) for f in facts]

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

    def events_of(self, scope: Tenant) -> list[FactEvent]:
        """Every event of the scope's facts (deleted ones too), per fact in write order."""
        return [e.model_copy() for events in self._events.values() for e in events
                if scope.matches(e.tenant)]  # fmt: skip

    def summary(self, tenant: Tenant) -> Summary | None:
        found = self._summaries.get(tenant.key)
        return None if found is None else found.model_copy(deep=True)
