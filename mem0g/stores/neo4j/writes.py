"""The write path of the Neo4j store: `apply` checks a plan (`stores.plan` rules, on one
`plan_check` read inside the transaction) and writes it with one batched statement per kind of
change, after taking the tenant's `:TenantSequence` turn; deletes and reset.

`PlanWrites` is a mixin of `Neo4jGraphStore`; only the store's own modules use it."""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from neo4j import Driver, ManagedTransaction
from neo4j.exceptions import Neo4jError, TransientError

from mem0g.stores.base import StoreError
from mem0g.stores.neo4j import links
from mem0g.stores.neo4j.entity_vectors import EntityVectors
from mem0g.stores.neo4j.plan_rows import _event_rows, _fact_refs, _fact_rows, _FactRows, _plan_rows
from mem0g.stores.neo4j.rows import _check_version, _db_time, _scope, _tenant_props, _version
from mem0g.stores.neo4j.session import _MEMORY_POOL, Neo4jSession
from mem0g.stores.plan import Existing, check_plan, check_records, distinct_tenants, is_empty
from mem0g.stores.repair import rename_event
from mem0g.stores.vectors import vector_sum_change
from mem0g.types import Entity, Fact, FactChange, Relation, Tenant, WritePlan, plan_episodes


class PlanWrites(Neo4jSession):
    """Plans, deletes and reset (a mixin of `Neo4jGraphStore`)."""

    dims: int | None
    reset_batch: int
    plan_log_keep: int  # plans kept per tenant for other clients' copies (log_plan); 0: none
    _lock: threading.RLock
    _vector_indexes: bool
    _entity_vectors: EntityVectors
    _names_checked: set[Tenant]

    if TYPE_CHECKING:  # provided by the store's other mixins (indexes.py)

        def _ensure_vector_indexes(
            self, driver: Driver, found: dict[str, int] | None = None
        ) -> None: ...

        def _recount_facts(self, tx: ManagedTransaction, key: str) -> None: ...

    def tenant_version(self, tenant: Tenant) -> str:
        (row,) = self._read("tenant_version", {"tenant_key": tenant.key})
        return _version(row["epoch"], row["seq"])

    def scope_versions(self, scope: Tenant) -> dict[str, str]:
        """`tenant_version` of every exact tenant of the scope, by tenant key, in one read (a
        tenant never written, or deleted, is not there)."""
        rows = self._read("scope_versions", _scope(scope))
        return {row["key"]: _version(row["epoch"], row["seq"]) for row in rows}

    def apply(self, plan: WritePlan) -> None:
        """Validate, then write the whole plan in one transaction; a bad plan writes nothing."""
        self.apply_many([plan])

    def apply_many(self, plans: Sequence[WritePlan]) -> None:
        """Plans of distinct tenants in one transaction, each checked and written as `apply`
        does (its tenant's turn, `plan_check`, the batched statements), in tenant-key order so
        that two such transactions take their tenants' locks in the same order. One commit:
        the full-text and vector indexes it touched are refreshed once, not once per plan."""
        driver = self._ready()
        distinct_tenants(plans)
        for plan in plans:
            check_records(plan)
        plans = sorted((p for p in plans if not is_empty(p)), key=lambda p: p.tenant.key)
        if not plans:
            return
        records: list[Entity | Relation | Fact | FactChange] = []
        for plan in plans:
            records += [*plan.new_entities, *plan.new_relations, *plan.new_facts]
            records += plan.fact_changes
        sizes: set[int | None] = {len(r.embedding) for r in records if r.embedding is not None}
        sizes |= {self.dims} - {None}
        if len(sizes) > 1:
            raise StoreError(f"embeddings of different sizes in one store: {sizes}")
        if sizes and not self._vector_indexes:
            with self._lock:
                self.dims = self.dims or sizes.pop()
                with self._errors("could not create the vector indexes"):
                    self._ensure_vector_indexes(driver)
        rows = [(plan, _plan_rows(plan, time.time_ns()), self._logged(plan)) for plan in plans]

        episodes = [{"id": e.id, "tenant_key": plan.tenant.key}
                    for plan in plans for e in plan_episodes(plan)]  # fmt: skip
        attempts = 0

        def work(tx: ManagedTransaction) -> None:
            nonlocal attempts
            attempts += 1
            # The driver runs this again after a connection error, also one that came after
            # the server had committed an earlier attempt: the plans' episodes (new ids) are
            # then there, and writing them again would fail on taken ids or take a turn twice.
            if attempts > 1 and episodes:
                found, _ = self._run(tx, "committed_episodes", {"episodes": episodes})
                if found[0]["n"] == len(episodes):
                    return
            for plan, plan_rows, logged in rows:
                self._write_plan(tx, plan, plan_rows, logged)

        self._write("apply", work)

    def _logged(self, plan: WritePlan) -> bytes | None:
        """The plan as the log keeps it (log_plan), or None when this store keeps none."""
        if not self.plan_log_keep:
            return None
        return zlib.compress(plan.model_dump_json(exclude={"based_on"}).encode())

    def plans_since(self, tenant: Tenant, have: str, want: str) -> list[WritePlan] | None:
        """The logged plans that take exact `tenant` from version `have` to `want` (both of
        one epoch, `have` the earlier), in order; None when any of them is not in the log (a
        writer that keeps none, a plan past the kept window, or another epoch)."""
        epoch, _, start = have.rpartition(":")
        until_epoch, _, until = want.rpartition(":")
        if epoch != until_epoch or int(until) <= int(start):
            return None
        params = {"tenant_key": tenant.key, "seq": int(start), "until": int(until)}
        rows = self._read("plan_log_since", params)
        seqs = [row["seq"] for row in rows]
        if seqs != list(range(int(start) + 1, int(until) + 1)):
            return None
        if any(row["epoch"] != epoch for row in rows):
            return None
        return [WritePlan.model_validate_json(zlib.decompress(row["plan"])) for row in rows]

    def _write_plan(
        self, tx: ManagedTransaction, plan: WritePlan, rows: dict[str, Any], logged: bytes | None
    ) -> None:
        """The transaction function: take the tenant's turn, check the plan against the
        database, then write it with one batched statement per kind of change, and log it when
        the store keeps a plan log (a retry runs all of it again)."""
        (turn,), _ = self._run(tx, "lock_tenant", _tenant_props(plan.tenant))
        seq = turn["seq"]
        if seq is None:
            # MERGE found the sequence node, then waited for the lock while a delete_tenant
            # deleted it (the SET was then a no-op): no turn was taken, so the driver must
            # run the whole function again, which starts the tenant's sequence afresh.
            raise TransientError("the tenant was deleted while this plan waited for its turn")
        _check_version(plan.based_on, turn["epoch"], seq)
        facts = self._check_plan(tx, plan, rows["written"])
        updated_at = _db_time(plan.updated_at)
        if rows["episode"] is not None:
            _, counters = self._run(tx, "create_episode", {"props": rows["episode"], "seq": seq})
            if counters.nodes_created != 1:
                raise StoreError("the episode was not created")
        for row in rows["more_episodes"]:  # a restore (the id constraint refuses a taken one)
            self._run(tx, "create_episode", {"props": row, "seq": seq})
        if rows["entities"]:
            _, counters = self._run(tx, "create_entities", {"rows": rows["entities"], "seq": seq})
            keys = sum(len(row["props"]["keys"]) for row in rows["entities"])
            if counters.nodes_created != len(rows["entities"]) + keys:  # entities, their keys
                raise StoreError("not every entity was created")
        if rows["aliases"]:
            self._run(tx, "update_aliases", {"rows": rows["aliases"], "updated_at": updated_at})
        if rows["relations"]:
            _, counters = self._run(tx, "create_relations", {"rows": rows["relations"]})
            if counters.relationships_created != len(rows["relations"]):
                raise StoreError("not every relation was created")
        if plan.entity_events:  # a restore's histories, before any rename of this plan
            rows_ = _event_rows(plan.entity_events, time.time_ns())
            self._run(tx, "create_entity_events", {"rows": rows_, "seq": seq})
        if rows["renames"]:
            self._rename(tx, plan, rows["renames"], seq)
        if rows["pairs"]:
            self._run(tx, "create_pairs", {"rows": rows["pairs"], "tenant_key": plan.tenant.key})
        if rows["invalidations"]:
            self._run(
                tx,
                "invalidate_relations",
                {"rows": rows["invalidations"], "updated_at": updated_at},
            )
        if rows["mentions"]:
            self._run(tx, "add_mentions", {"rows": rows["mentions"], "updated_at": updated_at})
        gone: list[Any] = []  # embeddings the tenant's kept vector sum loses
        if facts.deletes:
            found, counters = self._run(tx, "delete_facts", {"ids": facts.deletes})
            if counters.nodes_deleted != len(facts.deletes):
                raise StoreError("not every deleted fact was found")
            gone += [row["embedding"] for row in found]
        if facts.creates:
            _, counters = self._run(tx, "create_facts", {"rows": facts.creates, "seq": seq})
            if counters.nodes_created != len(facts.creates):
                raise StoreError("not every fact was created")
        if facts.updates:
            found, _ = self._run(
                tx, "update_facts", {"rows": facts.updates, "updated_at": updated_at}
            )
            gone += [row["old"] for row in found]
        came = [row["embedding"] for row in (*facts.creates, *facts.updates)]
        change = vector_sum_change(came, gone)
        made = len(facts.creates) - len(facts.deletes)  # the tenant's kept fact count
        if change is not None or made:
            count, delta = change if change is not None else (0, None)
            self._run(
                tx,
                "add_fact_vectors",
                {"tenant_key": plan.tenant.key, "count": count, "delta": delta, "facts": made},
            )
        if facts.events:
            _, counters = self._run(tx, "create_fact_events", {"rows": facts.events, "seq": seq})
            if counters.nodes_created != len(facts.events):
                raise StoreError("not every fact event was created")
        links.write(self._run, tx, plan)
        if logged is not None:
            params = {**_tenant_props(plan.tenant), "epoch": turn["epoch"], "seq": seq,
                      "plan": logged, "keep": self.plan_log_keep}  # fmt: skip
            self._run(tx, "log_plan", params)

    def _check_plan(self, tx: ManagedTransaction, plan: WritePlan, written: int) -> _FactRows:
        """The embedded store's checks, inside the writing transaction: new ids are free, and
        every id the plan refers to exists and belongs to the plan's exact tenant. Returns the
        fact part's rows."""
        new_entities = {e.id for e in plan.new_entities}
        new_relations = {r.id for r in plan.new_relations}
        pair_ends = [i for p in plan.possible_duplicates for i in (p.entity_id, p.candidate_id)]
        entity_refs = (
            [a.entity_id for a in plan.alias_updates]
            + [end for r in plan.new_relations for end in (r.source_id, r.destination_id)]
            + pair_ends
            + [link.entity_id for link in plan.fact_links]
        )
        relation_refs = [i.relation_id for i in plan.invalidations] + [
            m.relation_id for m in plan.mentions
        ]
        (check,), _ = self._run(
            tx,
            "plan_check",
            {
                "episode_id": plan.episode.id if plan.episode is not None else None,
                "new_entity_ids": sorted(new_entities),
                "new_relation_ids": sorted(new_relations),
                "entity_refs": sorted(set(entity_refs) - new_entities),
                "relation_refs": sorted(set(relation_refs) - new_relations),
                **_fact_refs(plan),
                "new_entity_event_ids": [e.id for e in plan.entity_events],
                "tenant_key": plan.tenant.key,
            },
        )
        existing = Existing(
            episodes={check["episode_id"]} if check["episode_taken"] else set(),
            entities=set(check["entities_taken"]),
            relations=set(check["relations_taken"]),
            facts=set(check["facts_taken"]),
            fact_events=set(check["events_taken"]),
            entity_events=set(check["entity_events_taken"]),
            own_entities=set(check["entities_owned"]),
            own_relations=set(check["relations_owned"]),
            own_facts=set(check["facts_owned"]),
            own_fact_history=set(check["facts_with_history"]),
        )
        return _fact_rows(plan, check_plan(plan, existing), written)

    def _rename(
        self, tx: ManagedTransaction, plan: WritePlan, rows: list[dict[str, Any]], seq: int
    ) -> None:
        """Display names (`AliasUpdate.name`), after the plan's edges exist so that they show
        the new name too; one RENAME event per entity whose name changed."""
        params = {"rows": rows, "tenant_key": plan.tenant.key}
        done, _ = self._run(
            tx, "rename_entities", {**params, "updated_at": _db_time(plan.updated_at)}
        )
        episode_id = plan.episode.id if plan.episode is not None else None
        events = [
            rename_event(
                row["id"], plan.tenant, row["old"], row["name"], plan.updated_at, episode_id
            )
            for row in done
        ]
        if events:
            self._run(
                tx,
                "create_entity_events",
                {"rows": _event_rows(events, time.time_ns()), "seq": seq},
            )

    def delete_tenant(self, scope: Tenant) -> int:
        """Delete every record the scope filter matches, in one transaction when it can be
        one (all or nothing). An exact tenant of the scope of more than `reset_batch`
        records, or every one of them when the server refuses to delete the scope in one
        transaction (its `db.memory.transaction.max`; the total limit, 70% of the heap by
        default, stopped a 100,000-edge user on a 512 MiB heap), is thinned first (`_thin`),
        in transactions of at most `reset_batch` records, and the one transaction deletes
        what is left: a failure midway leaves part of the scope, every kept count still
        true, and the same call again finishes it."""
        keys = sorted(self.scope_versions(scope))
        thinned = 0  # edges and entities deleted before the one transaction
        if keys:  # the large tenants (a user of 20,000 small runs stays one transaction)
            sizes = self._read("thin_tenant_size", {"keys": keys})
            large = [row["key"] for row in sizes if int(row["records"]) > self.reset_batch]
            if large:
                thinned = self._thin_all(sorted(large))
        try:
            deleted = self._delete_rest(scope)
        except StoreError as exc:
            if not (keys and _too_large_for_one(exc)):
                raise
            thinned += self._thin_all(keys)
            deleted = self._delete_rest(scope)
        with self._lock:  # (other stores see the tenant's new epoch when it is written again)
            self._entity_vectors.forget()
        return thinned + deleted

    def _delete_rest(self, scope: Tenant) -> int:
        """What `delete_tenant` does in its one transaction."""
        params = _scope(scope)

        def work(tx: ManagedTransaction) -> int:
            (turns,), _ = self._run(tx, "delete_tenant_sequences", params)  # first: waits
            if turns["keys"]:  # for writers; then their logged plans
                self._run(tx, "delete_plan_logs", {"keys": turns["keys"]})
            (rels,), _ = self._run(tx, "delete_tenant_relations", params)
            (ents,), _ = self._run(tx, "delete_tenant_entities", params)
            names = ("episodes", "facts", "fact_events", "summaries", "entity_events",
                     "possible_duplicates")  # fmt: skip
            for name in names:
                self._run(tx, f"delete_tenant_{name}", params)
            # a new tenant's first plan may have committed meanwhile (nothing to wait on):
            # its sequence node is still here and its kept counts must say what is left
            left, _ = self._run(tx, "delete_tenant_recount", params)
            for row in left:
                self._recount_facts(tx, row["key"])
                # its logged plans are of the old epoch, which no copy can catch up from
                self._run(tx, "drop_plan_log", {"tenant_key": row["key"]})
            return int(rels["deleted"]) + int(ents["deleted"])

        return self._write_unbounded("delete_tenant", work)

    def _thin_all(self, keys: list[str]) -> int:
        try:
            return sum(self._thin(key) for key in keys)
        except StoreError as exc:
            raise StoreError(
                "delete_tenant stopped midway: part of the scope is deleted, and the same "
                f"call again deletes the rest ({exc})"
            ) from exc

    def _thin(self, key: str) -> int:
        """Delete most of one exact tenant, at most `reset_batch` records a transaction (fewer
        after a batch the server finds too large: `_Batch`): a new epoch first (held
        entity vectors and copies read it afresh), then its edges, entities, episodes and fact
        events, then its facts, each batch of facts with its change to the tenant's kept fact
        count and vector sum (cypher/delete.cypher, thin_tenant_*). Returns how many edges
        and entities it held when it began."""
        driver = self._ready()

        def begin(tx: ManagedTransaction) -> int:
            found, _ = self._run(tx, "thin_tenant_begin", {"tenant_key": key})
            self._run(tx, "drop_plan_log", {"tenant_key": key})
            return sum(int(row["graph"]) for row in found)

        held = self._write("delete_tenant", begin)
        with self._lock:
            self._entity_vectors.forget()
        batch = _Batch(self.reset_batch)
        for name in ("relations", "entities", "episodes", "fact_events"):
            params = {"tenant_key": key}
            self._batched(driver, f"thin_tenant_{name}", params, batch, "a batch failed")

        def facts(tx: ManagedTransaction) -> int:
            params = {"tenant_key": key, "batch": batch.size}
            gone, _ = self._run(tx, "thin_tenant_facts", params)
            change = vector_sum_change([], [row["embedding"] for row in gone])
            if gone:
                count, delta = change if change is not None else (0, None)
                params = {"tenant_key": key, "count": count, "delta": delta, "facts": -len(gone)}
                self._run(tx, "add_fact_vectors", params)
            return len(gone)

        while True:
            try:
                if not self._write_unbounded("delete_tenant", facts):
                    return held
            except StoreError as exc:
                batch.smaller(exc)

    def _batched(
        self, driver: Driver, name: str, params: dict[str, Any], batch: _Batch, what: str
    ) -> None:
        """An auto-commit statement of `CALL ... IN TRANSACTIONS OF $batch ROWS`, again with a
        quarter of the batch while the server refuses one for its memory (the batches
        committed before stay done)."""
        while True:
            try:
                with self._errors(what):
                    self._auto(driver, name, {**params, "batch": batch.size})
                return
            except StoreError as exc:
                batch.smaller(exc)

    def reset(self) -> None:
        """Delete every node of mem0g's labels (and the edges between entities); schema and
        the layout version (:Mem0gSchema) stay, and nodes of other labels are left alone.
        Batched, so a large store does not need one huge transaction (smaller batches while
        the server refuses one for its memory): unlike `apply` it is not atomic, and a
        failure midway leaves part of the data (run it again)."""
        driver = self._ready()
        batch = _Batch(self.reset_batch)
        self._batched(driver, "reset_relations", {}, batch, "reset failed")
        self._batched(driver, "reset_nodes", {}, batch, "reset failed")
        with self._lock:
            self._entity_vectors.forget()
            self._names_checked.clear()  # whatever is written next is checked afresh


def _too_large_for_one(exc: StoreError) -> bool:
    """The server refused a transaction for its memory: the per-transaction limit, or the
    total one (transient, but a delete that large meets it again)."""
    cause = exc.__cause__
    return isinstance(cause, Neo4jError) and cause.code == _MEMORY_POOL


class _Batch:
    """A batch size that shrinks to a quarter each time the server refuses a batch for its
    memory (`db.memory.transaction.max`, or the total), down to one row; any other failure,
    or a refused single row, is raised."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)

    def smaller(self, exc: StoreError) -> None:
        if self.size == 1 or not _too_large_for_one(exc):
            raise exc
        self.size = max(1, self.size // 4)
