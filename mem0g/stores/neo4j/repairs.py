"""Entity repair on Neo4j (merge, split, history, possible duplicates), each one
transaction of the entities' exact tenant; the rules are the shared `stores.repair` ones.

`EntityRepair` is a mixin of `Neo4jGraphStore`; only the store's own modules use it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from neo4j import ManagedTransaction
from neo4j.exceptions import TransientError

from mem0g.stores.base import StoreError
from mem0g.stores.neo4j import links
from mem0g.stores.neo4j.entity_vectors import EntityVectors
from mem0g.stores.neo4j.plan_rows import (
    _ends_rows,
    _entity_row,
    _event_rows,
    _names_row,
    _pair_rows,
    _relation_row,
)
from mem0g.stores.neo4j.rows import (
    _ALL_ROWS,
    _entity,
    _relation,
    _scope,
    _tenant_props,
    _validity,
    present,
)
from mem0g.stores.neo4j.session import _T, Neo4jSession
from mem0g.stores.repair import PairChange, check_pair, find_merge, plan_merge, plan_split
from mem0g.types import (
    Entity,
    EntityEvent,
    MergeResult,
    PossibleDuplicate,
    Relation,
    SplitResult,
    Tenant,
    Validity,
    utcnow,
)


class EntityRepair(Neo4jSession):
    """Entity repair (a mixin of `Neo4jGraphStore`)."""

    _lock: threading.RLock
    _entity_vectors: EntityVectors

    if TYPE_CHECKING:  # provided by the store (store.py)

        def get_entities(self, scope: Tenant, ids: Sequence[str]) -> list[Entity]: ...

    def _repair(
        self, what: str, tenant: Tenant, work: Callable[[ManagedTransaction, int], _T]
    ) -> _T:
        """One managed transaction of an exact tenant: its turn and a new epoch first
        (repair_lock), then `work(tx, seq)`; held entity vectors of the tenant are dropped
        after, here and (by the epoch) in every other store."""

        def run(tx: ManagedTransaction) -> _T:
            (turn,), _ = self._run(tx, "repair_lock", _tenant_props(tenant))
            if turn["seq"] is None:  # as in _write_plan: a delete_tenant got there first
                raise TransientError("the tenant was deleted while this repair waited")
            self._run(tx, "drop_plan_log", {"tenant_key": tenant.key})  # of the old epoch
            return work(tx, turn["seq"])

        try:
            return self._write(what, run)
        finally:
            with self._lock:
                self._entity_vectors.forget(tenant.key)

    def _tx_entities(self, tx: ManagedTransaction, scope: Tenant, ids: list[str]) -> list[Entity]:
        rows, _ = self._run(tx, "get_entities", {**_scope(scope), "ids": ids, "light": False})
        return [_entity(row["entity"]) for row in rows]

    def list_entities(self, scope: Tenant) -> list[Entity]:
        """The scope's entities in write order (the dump's read), without embeddings."""
        params = {**_scope(scope), "embeddings": False}
        rows = [row["entity"] for row in self._read("snapshot_entities", params)
                if present(row["entity"])]  # fmt: skip
        rows.sort(
            key=lambda e: (e.get("written") or 0, e.get("pos") or 0, e["created_at"], e["id"])
        )
        return [_entity(props) for props in rows]

    def merge_entities(
        self, scope: Tenant, keep_id: str, other_id: str, *, at: datetime | None = None
    ) -> MergeResult:
        """One managed transaction (rules: `repair.plan_merge`): the pair is read and checked
        under the tenant's lock, then keep's names, the re-pointed and dropped edges, the
        deletion of other, the MERGE event and the possible-duplicate pairs are written."""
        at = at or utcnow()
        # which tenant to lock: read once outside, and again under the lock
        keep, _ = check_pair(
            scope, keep_id, other_id, self.get_entities(scope, [keep_id, other_id])
        )
        tenant = keep.tenant

        def work(tx: ManagedTransaction, seq: int) -> MergeResult:
            found = self._tx_entities(tx, scope, [keep_id, other_id])
            keep, other = check_pair(scope, keep_id, other_id, found)
            if keep.tenant != tenant:
                raise TransientError("the entity moved while this merge waited")
            params = {**_scope(tenant, True), **_validity(Validity(include_invalid=True))}
            edges, _ = self._run(
                tx,
                "edges_at",
                {
                    **params,
                    "ids": [other_id],
                    "vector": None,
                    "row_limit": _ALL_ROWS,
                    "newest_first": False,
                },
            )
            key = tenant.key
            pairs_rows, _ = self._run(
                tx, "pairs_of", {"tenant_key": key, "ids": [keep_id, other_id]}
            )
            change = plan_merge(
                keep,
                other,
                [_relation(row["relation"]) for row in edges],
                [PossibleDuplicate.model_validate_json(r["data"]) for r in pairs_rows],
                at,
            )
            self._run(
                tx, "set_entity_names", {"rows": [_names_row(change.keep, keep)], "tenant_key": key}
            )
            if change.moved:
                self._repoint(tx, key, change.moved)
            if change.dropped:
                _, counters = self._run(
                    tx,
                    "delete_relations",
                    {"ids": [r.id for r in change.dropped], "tenant_key": key},
                )
                if counters.relationships_deleted != len(change.dropped):
                    raise StoreError("not every dropped relation was deleted")
            links.merge(self._run, tx, key, keep_id, other_id)  # before other goes
            _, counters = self._run(tx, "delete_entity", {"id": other_id, "tenant_key": key})
            if counters.nodes_deleted < 1:
                raise StoreError(f"entity {other_id} was not deleted")
            written = time.time_ns()
            self._run(
                tx,
                "create_entity_events",
                {"rows": _event_rows([change.event], written), "seq": seq},
            )
            self._change_pairs(tx, tenant, change.pairs, written)
            return change.result

        return self._repair("merge_entities", tenant, work)

    def _change_pairs(
        self, tx: ManagedTransaction, tenant: Tenant, change: PairChange, written: int
    ) -> None:
        """A merge's or split's possible-duplicate pairs: the deletes, then the creates."""
        key = tenant.key
        if change.deletes:
            self._run(tx, "delete_pairs", {"pairs": change.deletes, "tenant_key": key})
        if change.creates:
            rows = _pair_rows(tenant, change.creates, written)
            self._run(tx, "create_pairs", {"rows": rows, "tenant_key": key})

    def _repoint(self, tx: ManagedTransaction, key: str, relations: Sequence[Relation]) -> None:
        _, counters = self._run(
            tx, "repoint_relations", {"rows": _ends_rows(relations), "tenant_key": key}
        )
        moved = len(relations)
        if (counters.relationships_deleted, counters.relationships_created) != (moved, moved):
            raise StoreError("not every relation was re-pointed")

    def split_entity(
        self, scope: Tenant, merge_id: str, *, at: datetime | None = None
    ) -> SplitResult:
        """One managed transaction (rules: `repair.plan_split`)."""
        at = at or utcnow()
        rows = self._read("merge_event_entity", {"id": merge_id})
        events = self.entity_history(scope, rows[0]["entity_id"]) if rows else []
        merge, _ = find_merge(scope, merge_id, events)

        def work(tx: ManagedTransaction, seq: int) -> SplitResult:
            history, _ = self._run(
                tx, "entity_history", {**_scope(scope), "entity_id": merge.entity_id}
            )
            events = [EntityEvent.model_validate_json(row["data"]) for row in history]
            merge_now, split = find_merge(scope, merge_id, events)
            undo = merge_now.undo
            assert undo is not None
            found = {
                e.id: e
                for e in self._tx_entities(tx, merge.tenant, [merge.entity_id, undo.other.id])
            }
            keep = found.get(merge.entity_id)
            exact = {
                **_scope(merge.tenant),
                "ids": [e.id for e in undo.edges] + [r.id for r in undo.dropped],
            }
            rel_rows, _ = self._run(tx, "get_relations", exact)
            stored = {row["relation"]["id"]: _relation(row["relation"]) for row in rel_rows}
            edges = [stored[e.id] for e in undo.edges if e.id in stored]
            taken = [r.id for r in undo.dropped if r.id in stored]
            exists = undo.other.id in found
            change = plan_split(merge_now, split, keep, exists, edges, taken, at, events)
            key = merge.tenant.key
            written = time.time_ns()
            _, counters = self._run(
                tx,
                "create_entities",
                {"rows": [_entity_row(change.restored, written, 0)], "seq": seq},
            )
            if counters.nodes_created != 1 + len(change.restored.keys):
                raise StoreError("the entity was not restored")
            assert keep is not None  # plan_split refused otherwise
            self._run(
                tx, "set_entity_names", {"rows": [_names_row(change.keep, keep)], "tenant_key": key}
            )
            if change.moved:
                self._repoint(tx, key, change.moved)
            if change.recreated:
                recreated = [
                    _relation_row(r, written, pos) for pos, r in enumerate(change.recreated)
                ]
                _, counters = self._run(tx, "create_relations", {"rows": recreated})
                if counters.relationships_created != len(recreated):
                    raise StoreError("not every dropped relation was restored")
            links.split(self._run, tx, change.keep, change.restored)
            self._run(
                tx,
                "create_entity_events",
                {"rows": _event_rows([change.event], written), "seq": seq},
            )
            self._change_pairs(tx, merge.tenant, change.pairs, written)
            return change.result

        return self._repair("split_entity", merge.tenant, work)

    def entity_history(self, scope: Tenant, entity_id: str) -> list[EntityEvent]:
        rows = self._read("entity_history", {**_scope(scope), "entity_id": entity_id})
        return [EntityEvent.model_validate_json(row["data"]) for row in rows]

    def possible_duplicates(self, scope: Tenant, *, exact: bool = False) -> list[PossibleDuplicate]:
        rows = self._read("possible_duplicates", _scope(scope, exact))
        return [PossibleDuplicate.model_validate_json(row["data"]) for row in rows]
