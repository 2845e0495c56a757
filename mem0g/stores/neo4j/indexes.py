"""Schema and vector-index DDL of the Neo4j store: constraints and indexes applied
once (only when the database lacks some of them: schema_check.py), the three vector indexes
(entities, relations, facts) created for the store's dims, and
`rebuild_vector_indexes` (drop and re-create in turn, behind a :Mem0gRebuild marker so every
store answers that kind by the exact scan meanwhile).

`VectorIndexes` is a mixin of `Neo4jGraphStore`; only the store's own modules use it."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from neo4j import Driver, ManagedTransaction
from neo4j.exceptions import ClientError

from mem0g.stores.base import VECTOR_KINDS, IndexRebuild, StoreError, check_index_kinds
from mem0g.stores.neo4j import lexical
from mem0g.stores.neo4j.rows import _check_dims
from mem0g.stores.neo4j.schema_check import check_schema, ddl_names
from mem0g.stores.neo4j.session import Neo4jSession
from mem0g.stores.neo4j.statements import statements
from mem0g.stores.vectors import vector_sum_change

if TYPE_CHECKING:
    from mem0g.stores.neo4j.warmup import Warmup

log = logging.getLogger(__name__)

_VECTOR_KINDS = VECTOR_KINDS  # one vector index each, named in cypher/schema.cypher:


_INDEX_NAMES = {
    "entities": "mem0g_entity_embedding",
    "relations": "mem0g_relation_embedding",
    "facts": "mem0g_fact_embedding",
}


# how long a store answers a kind by its exact scan after its index failed a query (missing,
# still populating after a rebuild that died, failed), before it asks the index again
_INDEX_ERROR_PAUSE = 30.0


# the server's answers when an index cannot be queried (Neo4j 5.26)
_INDEX_DOWN = ("no such vector schema index", "come online", "failed state")


# the data layout (cypher/schema.cypher): 2 = with :EntityKey nodes, 3 = full-text indexes
# scoped by each row's `lex_scope` terms (lexical.py), 4 = each edge's write order in one
# sortable property, `ord` (plan_rows.write_order), 5 = each tenant's fact vector sum kept on
# its :TenantSequence (cypher/facts.cypher, add_fact_vectors), 6 = beside it the number of its
# facts, `fact_count` (the same statement), 7 = the facts' full-text index over their
# letter-run words, `lex_text` (lexical.WORDED_VERSION)
ORDERED_VERSION = 4
SUMMED_VERSION = 5
COUNTED_VERSION = 6
SCHEMA_VERSION = lexical.WORDED_VERSION


def _index_down(exc: StoreError) -> bool:
    """Whether a failed index query means the index is missing, populating or failed."""
    cause = exc.__cause__
    return (
        isinstance(cause, ClientError)
        and cause.code == "Neo.ClientError.Procedure.ProcedureCallFailed"
        and any(text in (cause.message or "").lower() for text in _INDEX_DOWN)
    )


class VectorIndexes(Neo4jSession):
    """The schema and the vector indexes (a mixin of `Neo4jGraphStore`)."""

    dims: int | None
    reset_batch: int
    index_check_interval: float
    _lock: threading.RLock
    _vector_indexes: bool
    _paused: dict[str, float]
    _rebuilding: frozenset[str]
    _markers_read: float
    _warmup_budget: float

    if TYPE_CHECKING:  # provided by the store (store.py)

        def start_warmup(self, budget: float) -> Warmup: ...

    def _apply_schema(self, driver: Driver) -> None:
        """The schema step of a store's first use: two reads when the database already holds
        what cypher/ declares (schema_check.py), else every DDL statement, the migrations of
        older layouts and the vector indexes, all idempotent (concurrent opens agree)."""
        (row,) = self._auto(driver, "schema_version")
        if (row["version"] or 0) > SCHEMA_VERSION:
            # a later mem0g's layout: this one's DDL, migrations and writes would mix its
            # older layout in (as the embedded store, refused before anything is written)
            raise StoreError(
                f"the database holds mem0g's data layout version {row['version']}, newer "
                f"than this mem0g's ({SCHEMA_VERSION}): upgrade mem0g; nothing was written"
            )
        objects = self._auto(driver, "schema_objects")
        held = check_schema(row["version"], objects, self.dims, SCHEMA_VERSION)
        self.schema_gaps = tuple(held.gaps)
        if not held.gaps:
            if self.dims is None:
                self.dims = _check_dims(held.dims)
            self._vector_indexes = self.dims is not None
            return
        log.info("mem0g schema: applying the DDL (%s)", "; ".join(held.gaps))
        for name in ddl_names(statements()):
            self._ddl(driver, name)
        (row,) = self._auto(driver, "schema_version")
        version = row["version"] or 0  # 0: an empty database, or one of an early mem0g
        if version < 2:
            self._auto(driver, "backfill_entity_keys", {"batch": self.reset_batch})
        if version < lexical.SCOPED_VERSION:
            lexical.backfill_scope_terms(
                lambda name, params: self._auto(driver, name, params),
                lambda name: self._ddl(driver, name),
                self.reset_batch,
            )
            self._auto(driver, "await_indexes", {"seconds": 300})
        if version < ORDERED_VERSION:  # about 2.5 s per 100k edges (docs/benchmarks.md)
            began = time.monotonic()
            log.info("mem0g schema v4: giving every edge its write-order key (once)")
            self._auto(driver, "backfill_relation_order", {"batch": self.reset_batch})
            log.info("mem0g schema v4: write-order keys given in %.1f s", time.monotonic() - began)
        if version < COUNTED_VERSION:  # v5's sums, and since v6 the counts beside them
            self._sum_fact_vectors(driver)
        if version < lexical.WORDED_VERSION:
            lexical.backfill_fact_words(
                lambda name, params: self._auto(driver, name, params),
                lambda name: self._ddl(driver, name),
                self.reset_batch,
            )
        if version < SCHEMA_VERSION:
            self._auto(driver, "set_schema_version", {"version": SCHEMA_VERSION})
        found = {r["name"]: r["dims"] for r in self._auto(driver, "vector_index_dims")}
        if self.dims is None and found:
            sizes = set(found.values())
            if len(sizes) > 1:
                raise StoreError(f"mem0g vector indexes of different sizes: {found}")
            self.dims = _check_dims(sizes.pop())
        self._ensure_vector_indexes(driver, found)

    def _sum_fact_vectors(self, driver: Driver) -> None:
        """Schemas v5 and v6: each tenant's fact vector sum and fact count, from its facts,
        once; per tenant in one transaction that holds the tenant's lock, so a plan written
        meanwhile waits and then adds its change to them."""
        keys = [row["key"] for row in self._auto(driver, "fact_tenant_keys")]
        if keys:
            log.info("mem0g schema v6: summing the fact vectors of %d tenants (once)", len(keys))

        def work(tx: ManagedTransaction, key: str) -> None:
            locked, _ = self._run(tx, "lock_fact_vectors", {"tenant_key": key})
            if not locked:
                return  # no sequence node: the tenant's next plan starts the sum
            self._recount_facts(tx, key)

        for key in keys:
            with self._session(driver) as session:
                session.execute_write(work, key)

    def _recount_facts(self, tx: ManagedTransaction, key: str) -> None:
        """Inside a transaction that holds the tenant's sequence node lock: its kept fact
        vector sum and fact count set whole from the facts it holds (the v5/v6 upgrade, and
        `delete_tenant` for a tenant whose first plan committed while the deletion ran)."""
        found, _ = self._run(tx, "tenant_fact_embeddings", {"tenant_key": key})
        change = vector_sum_change([row["embedding"] for row in found], [])
        count, total = change if change is not None else (None, None)
        params = {"tenant_key": key, "count": count, "total": total, "facts": len(found)}
        self._run(tx, "set_fact_vectors", params)

    def _ensure_vector_indexes(self, driver: Driver, found: dict[str, int] | None = None) -> None:
        """Create the vector indexes (entities, relations, facts) for `self.dims`; one of
        another size is replaced only while no embedding is stored (a reset store may change
        embedders)."""
        if self.dims is None:
            return
        if found is None:
            found = {r["name"]: r["dims"] for r in self._auto(driver, "vector_index_dims")}
        if any(size != self.dims for size in found.values()):
            if self._auto(driver, "stored_embeddings")[0]["found"]:
                raise StoreError(
                    f"the database holds embeddings that are not {self.dims}-dimensional "
                    f"(vector indexes: {found})"
                )
            for kind in _VECTOR_KINDS:
                self._ddl(driver, f"drop_vector_index_{kind}")
        for kind in _VECTOR_KINDS:
            self._ddl(driver, f"vector_index_{kind}", {"options": self._vector_options()})
        if not self._auto(driver, "rebuilding_kinds")[0]["kinds"]:
            # (during a rebuild the index populates for minutes: searches scan meanwhile)
            self._auto(driver, "await_indexes", {"seconds": 300})
        self._vector_indexes = True

    def _vector_options(self) -> dict[str, Any]:
        return {
            "indexConfig": {
                "vector.dimensions": self.dims,
                "vector.similarity_function": "cosine",
                # exact float32 distances: candidates are re-ranked exactly anyway, and
                # quantized scores would need a larger over-fetch to find the same ones
                "vector.quantization.enabled": False,
            }
        }

    def rebuild_vector_indexes(
        self,
        kinds: Sequence[str] | None = None,
        *,
        progress: Callable[[str, float], None] | None = None,
        timeout: float = 3600.0,
        lease: float = 60.0,
        poll: float = 1.0,
    ) -> list[IndexRebuild]:
        """Drop and re-create each vector index in turn, so the server populates it in one
        pass. Why: Neo4j writes an index fed by many small transactions as many small Lucene
        segments, and every HNSW query visits each of them; on the 100k-edge benchmark a
        rebuild cut the server's CPU per search by up to 2.3x (docs/benchmarks.md).

        A query on a populating index blocks for 30 s and then fails, so first a marker
        (:Mem0gRebuild) tells every store, within its `index_check_interval`, to answer that
        kind by the exact tenant scan until the index is online: searches stay correct, only
        slower. The marker is a lease of `lease` seconds, renewed every `poll` while the index
        populates, so one left by a rebuild that died lapses by itself. Raises StoreError if an
        index fails or is still populating after `timeout` seconds."""
        chosen = check_index_kinds(kinds)
        driver = self._ready()
        if self.dims is None:  # nothing was ever embedded: there is no index yet
            return []
        rebuilt: list[IndexRebuild] = []
        for kind in chosen:
            begin = time.monotonic()
            with self._errors(f"rebuilding the {kind} vector index failed"):
                self._auto(driver, "mark_rebuild", {"kind": kind, "lease": lease})
                with self._lock:
                    self._paused[kind] = math.inf
                try:
                    time.sleep(1.5 * self.index_check_interval)  # every store saw the marker
                    self._ddl(driver, f"drop_vector_index_{kind}")
                    options = {"options": self._vector_options()}
                    self._ddl(driver, f"vector_index_{kind}", options)
                    self._await_online(driver, kind, begin + timeout, lease, poll, progress)
                    self._auto(driver, "clear_rebuild", {"kind": kind})
                finally:  # after a failure the marker lapses, then the error pause protects
                    with self._lock:
                        self._paused.pop(kind, None)
            rebuilt.append(
                IndexRebuild(
                    kind=kind,
                    index=_INDEX_NAMES[kind],
                    seconds=round(time.monotonic() - begin, 3),
                )
            )
        if self._warmup_budget > 0 and rebuilt:  # new indexes: their query plans are cold
            self.start_warmup(self._warmup_budget)
        return rebuilt

    def _await_online(
        self,
        driver: Driver,
        kind: str,
        deadline: float,
        lease: float,
        poll: float,
        progress: Callable[[str, float], None] | None,
    ) -> None:
        """Poll the index's state until it is online, renewing the rebuild marker."""
        while True:
            states = {r["name"]: r for r in self._auto(driver, "vector_index_states")}
            state = states.get(_INDEX_NAMES[kind])
            if state is None:
                raise StoreError(f"the {kind} vector index disappeared while it was rebuilt")
            if state["state"] == "ONLINE":
                if progress is not None:
                    progress(kind, 100.0)
                return
            if state["state"] == "FAILED":
                raise StoreError(f"the {kind} vector index failed: {state['failure']}")
            if progress is not None:
                progress(kind, float(state["percent"] or 0.0))
            if time.monotonic() > deadline:
                raise StoreError(
                    f"the {kind} vector index is still populating "
                    f"({float(state['percent'] or 0.0):.0f}%); searches use the exact scan "
                    "until it is online"
                )
            self._auto(driver, "mark_rebuild", {"kind": kind, "lease": lease})
            time.sleep(poll)

    def _index_usable(self, kind: str) -> bool:
        """False while `kind`'s index is being rebuilt (a live marker, read at most once per
        `index_check_interval`) or paused after it failed a query."""
        now = time.monotonic()
        if now - self._markers_read >= self.index_check_interval:
            (row,) = self._read("rebuilding_kinds", {})
            with self._lock:
                self._rebuilding = frozenset(row["kinds"])
                self._markers_read = now
        return kind not in self._rebuilding and self._paused.get(kind, 0.0) <= now
