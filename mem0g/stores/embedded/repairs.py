"""Entity repair on the embedded store (merge, split, history, possible
duplicates), each one SQLite transaction of the entities' exact tenant, memory updated after
COMMIT; the rules are the shared `stores.repair` ones.

`EntityRepair` is a mixin of `EmbeddedGraphStore`; only the embedded store's modules import it."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from mem0g.stores.embedded import links
from mem0g.stores.embedded.facts import FactIndex
from mem0g.stores.embedded.graph import GraphIndex, _locked
from mem0g.stores.embedded.loading import TakenIds, _Bucket
from mem0g.stores.embedded.schema import (
    _detached,
    _key,
    _take_turn,
    _write_entity_event,
    _write_pairs,
)
from mem0g.stores.repair import PairChange, check_pair, find_merge, plan_merge, plan_split
from mem0g.stores.vectors import as_vector as _vec
from mem0g.types import (
    Entity,
    EntityEvent,
    MergeResult,
    PossibleDuplicate,
    Relation,
    SplitResult,
    Tenant,
    utcnow,
)


class EntityRepair(GraphIndex):
    """Entity repair (a mixin of `EmbeddedGraphStore`)."""

    _lock: threading.RLock
    _facts: FactIndex
    _entities: dict[str, Entity]
    _relations: dict[str, Relation]
    _buckets: dict[str, _Bucket]

    if TYPE_CHECKING:  # provided by the store (store.py)

        def _transaction(self) -> AbstractContextManager[sqlite3.Connection]: ...
        def _connection(self) -> sqlite3.Connection: ...
        def _ready(self, target: Tenant | str | None = None) -> None: ...
        def _load(self) -> None: ...
        def _write(
            self, conn: sqlite3.Connection, table: str, record: Any, vec: np.ndarray | None
        ) -> None: ...

    @_locked
    def list_entities(self, scope: Tenant) -> list[Entity]:
        return [_detached(self._entities[i]) for key in self._scope_keys(scope)
                for i in self._buckets[key].entities]  # fmt: skip

    @_locked
    def merge_entities(
        self, scope: Tenant, keep_id: str, other_id: str, *, at: datetime | None = None
    ) -> MergeResult:
        """One SQLite transaction (see `repair.plan_merge` for the rules); memory follows
        after COMMIT, and is reloaded from the database if that fails."""
        at = at or utcnow()
        with self._transaction() as conn:
            self._ready(scope)
            found = [self._out(e) for i in (keep_id, other_id) if (e := self._entities.get(i))]
            keep, other = check_pair(scope, keep_id, other_id, found)
            _take_turn(conn, _key(keep.tenant), None)
            edges = [self._out(r) for r in self._edges_of(other_id)]
            change = plan_merge(keep, other, edges, self._pairs(conn, [_key(keep.tenant)]), at)
            self._write(conn, "entities", change.keep, None)
            for rel in change.moved:
                self._write(conn, "relations", rel, None)
            for rel in change.dropped:
                conn.execute("DELETE FROM relations WHERE id = ?", (rel.id,))
            links.merge(conn, keep_id, other_id)  # before other's row (and its links) goes
            conn.execute("DELETE FROM entities WHERE id = ?", (other_id,))
            _write_entity_event(conn, change.event)
            _change_pairs(conn, keep.tenant, change.pairs)
        try:
            for rel in change.moved:
                self._move_relation(rel)
            for rel in change.dropped:
                self._drop_relation(rel.id)
            self._drop_entity(other_id)
            self._set_entity(_detached(change.keep))
        except BaseException:
            self._load()
            raise
        return change.result

    @_locked
    def split_entity(
        self, scope: Tenant, merge_id: str, *, at: datetime | None = None
    ) -> SplitResult:
        """Take merge `merge_id` back in one transaction (rules: `repair.plan_split`)."""
        at = at or utcnow()
        with self._transaction() as conn:
            self._ready(scope)
            row = conn.execute(
                "SELECT entity_id FROM entity_events WHERE id = ?", (merge_id,)
            ).fetchone()
            events = [] if row is None else self._events(conn, row["entity_id"])
            merge, split = find_merge(scope, merge_id, events)
            assert merge.undo is not None
            stored = self._entities.get(merge.entity_id)
            keep = self._out(stored) if stored and stored.tenant == merge.tenant else None
            edges = [self._out(r) for e in merge.undo.edges
                     if (r := self._relations.get(e.id)) is not None]  # fmt: skip
            # ids taken by any tenant: the database knows, memory holds loaded tenants only
            held = TakenIds(conn, "relations")
            taken = [r.id for r in merge.undo.dropped if r.id in held]
            other_exists = merge.undo.other.id in TakenIds(conn, "entities")
            change = plan_split(merge, split, keep, other_exists, edges, taken, at, events)
            _take_turn(conn, _key(merge.tenant), None)
            restored_vec = _vec(change.restored.embedding)
            self._write(conn, "entities", change.restored, restored_vec)
            self._write(conn, "entities", change.keep, None)
            for rel in change.moved:
                self._write(conn, "relations", rel, None)
            for rel in change.recreated:
                self._write(conn, "relations", rel, _vec(rel.embedding))
            self._split_links(conn, change.keep, change.restored)
            _write_entity_event(conn, change.event)
            _change_pairs(conn, merge.tenant, change.pairs)
        try:
            self._add_entity(_detached(change.restored), restored_vec)
            self._set_entity(_detached(change.keep))
            for rel in change.moved:
                self._move_relation(rel)
            for rel in change.recreated:
                self._add_relation(_detached(rel), _vec(rel.embedding))
        except BaseException:
            self._load()
            raise
        return change.result

    def _split_links(self, conn: sqlite3.Connection, keep: Entity, restored: Entity) -> None:
        """The links of keep's facts between keep and the restored entity, recomputed from
        the texts and the two entities' keys as the split leaves them (`resolve.links`)."""
        from mem0g.resolve.links import split_links  # the matching rule (a stage's module)

        facts = self._facts.facts
        texts = {i: facts[i].text for i in links.linked_to(conn, keep.id) if i in facts}
        found = split_links(texts, keep, restored)
        links.relink(conn, _key(keep.tenant), list(texts), [keep.id, restored.id], found)

    def _events(self, conn: sqlite3.Connection, entity_id: str) -> list[EntityEvent]:
        rows = conn.execute(
            "SELECT data FROM entity_events WHERE entity_id = ? OR other_id = ? ORDER BY rowid",
            (entity_id, entity_id),
        )
        return [EntityEvent.model_validate_json(row["data"]) for row in rows]

    def _pairs(self, conn: sqlite3.Connection, keys: Iterable[str]) -> list[PossibleDuplicate]:
        found: list[tuple[int, PossibleDuplicate]] = []
        for key in keys:
            rows = conn.execute(
                "SELECT rowid, data FROM possible_duplicates WHERE tenant_key = ?", (key,)
            )
            found += [(r["rowid"], PossibleDuplicate.model_validate_json(r["data"])) for r in rows]
        return [pair for _, pair in sorted(found, key=lambda item: item[0])]

    @_locked
    def entity_history(self, scope: Tenant, entity_id: str) -> list[EntityEvent]:
        """Read from SQLite: repair records are rare and read by hand, so memory holds none."""
        events = self._events(self._connection(), entity_id)
        return [e for e in events if scope.matches(e.tenant)]

    @_locked
    def possible_duplicates(self, scope: Tenant, *, exact: bool = False) -> list[PossibleDuplicate]:
        pairs = self._pairs(self._connection(), self._scope_keys(scope, exact))
        held = self._entities
        return [p for p in pairs if p.entity_id in held and p.candidate_id in held]


def _change_pairs(conn: sqlite3.Connection, tenant: Tenant, change: PairChange) -> None:
    """A merge's or split's possible-duplicate pairs: the deletes, then the creates."""
    for pair in change.deletes:
        conn.execute(
            "DELETE FROM possible_duplicates WHERE tenant_key = ? AND pair = ?",
            (_key(tenant), pair),
        )
    _write_pairs(conn, tenant, change.creates)
