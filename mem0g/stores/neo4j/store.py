"""`GraphStore` on a Neo4j 5.26+ server (Community is enough), behaving like the embedded store.

Every statement lives in ``cypher/*.cypher`` as a named block (``// name: x``), read once at
run time; values only ever travel as parameters, and labels are fixed (``:Entity``,
``:Episode``, ``:RELATES`` with the relation in its ``name`` property, as in the Cypher dump;
``:EntityKey`` nodes that index an entity's name/alias keys; the fact memory's ``:Fact``,
``:FactEvent`` and ``:Summary``, and ``:TenantSequence``).

Choices that make the two stores interchangeable:

* Datetimes are stored as Neo4j DATETIME normalised to UTC (Cypher orders equal instants with
  different offsets as unequal, so only one offset may ever be stored) and read back as
  timezone-aware UTC datetimes, equal to what went in.
* Vector search asks the HNSW index for ``want`` times a factor rows (it ranks every tenant;
  the factor, 1 up to ``overfetch``, is learned per scope),
  filters by tenant and validity, and falls back to an exact per-tenant scan when fewer than
  ``want`` survive (a scope whose scan found fewer than ``want`` in all goes straight to the
  scan next time); the candidates are then re-ranked in Python with the embedded store's
  float32 cosine, so both stores return the same ranking and scores.
* The entity resolver's candidates (``similar_entities(exact=True)``) do not come from the HNSW
  index, whose top k is not exact: the store holds the tenant's name vectors in memory
  (``entity_vectors.py``), brought up to date by plan number before each use, and scores them
  as the embedded store does.
* Rows carry ``written`` (the apply call, ns) and ``pos`` (position in its plan), so reads can
  return records in write order, as the embedded store does.
* A plan's transaction starts by taking its tenant's ``:TenantSequence`` lock and number
  (``seq``): writers of one tenant take turns, so a plan is checked against every earlier
  commit (as SQLite's single writer guarantees), and episodes and fact events carry ``seq``, so
  messages and fact histories come back in commit order even across processes, whose clocks
  (``written``) may disagree.
* The fact part of a plan is checked and written in the same transaction as the graph part,
  with the embedded store's rules; a deleted fact's node goes, its ``:FactEvent`` nodes stay.

This module is the contract, a few lines per method; the work is in the package's other
modules (see its __init__).
"""

from __future__ import annotations

import functools
import logging
import math
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import numpy as np
from neo4j import Driver, GraphDatabase, ManagedTransaction
from neo4j.exceptions import DriverError, TransientError

from mem0g.config import GraphStoreConfig
from mem0g.resources import read_text
from mem0g.stores.base import EdgeRef, StoreCapabilities, StoreError, StoreStats, WarmupStatus
from mem0g.stores.neo4j import lexical
from mem0g.stores.neo4j.entity_vectors import EntityVectors
from mem0g.stores.neo4j.indexes import VectorIndexes
from mem0g.stores.neo4j.links import LinkReads
from mem0g.stores.neo4j.repairs import EntityRepair
from mem0g.stores.neo4j.rows import (
    _ALL_ROWS,
    _check_dims,
    _db_time,
    _entity,
    _episode,
    _fact,
    _fact_event,
    _messages,
    _py_time,
    _relation,
    _scope,
    _summary,
    _tenant_from_key,
    _tenant_props,
    _validity,
    present,
)
from mem0g.stores.neo4j.session import _rows, shown_url
from mem0g.stores.neo4j.statements import CYPHER_FILES, parse_statements, statements
from mem0g.stores.neo4j.traffic import IDLE_GAP, Traffic
from mem0g.stores.neo4j.vector_search import VectorSearch
from mem0g.stores.neo4j.walk import OneTripWalk
from mem0g.stores.neo4j.warmup import (
    WARMUP_FILES,
    Warmup,
    shape_searches,
    warmup_params,
    warmup_statements,
)
from mem0g.stores.neo4j.writes import PlanWrites
from mem0g.stores.vectors import VectorBlock, as_vector, has_direction
from mem0g.types import (
    Entity,
    Episode,
    Fact,
    FactEvent,
    GraphSnapshot,
    Message,
    Relation,
    Summary,
    Tenant,
    UpdateQuery,
    Validity,
)

# how long `close` waits for other threads' reads and writes under way before it closes the
# driver under them (a write waiting for its tenant's turn, or retried by the driver)
_CLOSE_WAIT = 60.0

log = logging.getLogger(__name__)


class Neo4jGraphStore(
    VectorIndexes, VectorSearch, OneTripWalk, PlanWrites, EntityRepair, LinkReads
):
    """`GraphStore` on a Neo4j server; thread-safe (the driver pools connections).

    `driver_or_uri` is a bolt/neo4j URI (the store then owns and closes its driver) or a
    `neo4j.Driver` the caller keeps owning. Schema is applied on first use.
    """

    # A read is a round trip to the server: a search may run its independent reads at once
    # (RetrievalConfig.concurrent_reads); the waits overlap, the GIL is free meanwhile.
    # `walk`: the walk, siblings, BM25 and the likely hits' records in one statement (walk.py)
    capabilities = StoreCapabilities(
        concurrent_reads=True,
        lexical=True,
        fact_timeline=True,
        fact_links=True,
        walk_statement=True,
        held_names=True,
        fact_vector_sum=True,
        restore_in_parts=True,
    )

    def __init__(
        self,
        driver_or_uri: str | Driver,
        auth: Any = None,
        database: str | None = None,
        dims: int | None = None,
        *,
        overfetch: int = 10,
        min_fetch: int = 50,
        max_fetch: int = 10_000,
        reset_batch: int = 10_000,
        index_check_interval: float = 1.0,
        entity_vectors: int = 250_000,
        warmup_seconds: float = 0.0,
        warmup_parallel: int = 2,
        cypher_options: str = "",
        packed_reads: bool = True,
        plan_log: int = 0,
        connect_timeout: float | None = None,
    ) -> None:
        # (a bad value is refused before connecting)
        self._use_cypher_options(cypher_options, packed_reads)
        self.database = database
        self._user = (
            auth[0] if isinstance(auth, tuple) and auth else getattr(auth, "principal", None)
        )
        if isinstance(driver_or_uri, str):
            self.url = shown_url(driver_or_uri)
            self._driver: Driver | None = _driver(driver_or_uri, self.url, auth, connect_timeout)
            self._owns_driver = True
        else:
            self._driver, self._owns_driver = driver_or_uri, False
        self.dims = _check_dims(dims)
        self.overfetch = max(1, overfetch)
        self.max_fetch = max(1, max_fetch)
        self.min_fetch = min(max(1, min_fetch), self.max_fetch)
        self.reset_batch = max(1, reset_batch)
        self.plan_log_keep = max(0, plan_log)  # plans kept per tenant (writes.py, log_plan)
        self._lock = threading.RLock()
        self._gate = threading.Condition()  # sessions in flight (session.py, _session)
        self._in_flight = 0
        self._schema_ready = False
        self._vector_indexes = False
        self._fetch_factor: dict[tuple[Any, ...], float] = {}  # see _from_index
        # rebuild markers (see rebuild_vector_indexes) are read at most this often
        self.index_check_interval = max(0.0, index_check_interval)
        self._paused: dict[str, float] = {}  # kind -> monotonic time its index is asked again
        self._rebuilding: frozenset[str] = frozenset()  # kinds with a live marker, as last read
        self._markers_read = -math.inf
        # the resolver's exact candidates: tenants' name vectors, at most this many in all
        self._entity_vectors = EntityVectors(entity_vectors)
        self._name_scopes: dict[Tenant, tuple[str, ...]] = {}  # see name_ranker
        self._names_checked: set[Tenant] = set()
        self._names_loading: dict[str, Future[VectorBlock | None]] = {}
        self._names_loader: ThreadPoolExecutor | None = None
        self._names_too_large: set[tuple[str, str]] = set()
        # the server's read paths warmed in the background (warmup.py); 0: none
        self._warmup: Warmup | None = None
        self._traffic = Traffic()  # real reads and writes in flight: the warm-up yields to them
        self._warmup_budget = warmup_seconds
        self.warmup_parallel = max(1, warmup_parallel)
        if warmup_seconds > 0:
            self.start_warmup(warmup_seconds)

    @classmethod
    def from_config(cls, config: GraphStoreConfig, dims: int | None = None) -> Neo4jGraphStore:
        """Settings first, then NEO4J_URI / NEO4J_USERNAME / NEO4J_PASSWORD."""
        url = config.resolved_url().value
        if not url:
            raise StoreError("the neo4j store needs graph_store.url (or NEO4J_URI)")
        username = config.resolved_username().value or "neo4j"
        password = config.resolved_password().value
        auth = (username, password) if password is not None else None
        return cls(
            url, auth, database=config.database, dims=dims, entity_vectors=config.entity_vectors,
            warmup_seconds=config.warmup_seconds if config.warmup else 0.0,
            warmup_parallel=config.warmup_parallel, cypher_options=config.cypher_options,
            packed_reads=config.packed_reads,
            plan_log=config.plan_log_keep if config.logs_plans() else 0,
            connect_timeout=config.connect_timeout,
        )  # fmt: skip

    def __enter__(self) -> Neo4jGraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start_warmup(self, budget: float) -> Warmup:
        """Warm the server's read paths in the background for at most `budget` seconds (see
        mem0g.stores.neo4j.warmup); a warm-up already running is stopped first."""
        if self._warmup is not None:
            self._warmup.stop()
        self._traffic.forget_background_reads()  # this warm-up's own record

        def plan() -> tuple[list[str], dict[str, Any]]:
            self._ready()  # the schema, and the dims the data holds
            params = warmup_params(self.dims)
            files = {name: parse_statements(read_text("cypher", f"{name}.cypher"))
                     for name in WARMUP_FILES if name in CYPHER_FILES}  # fmt: skip
            return warmup_statements(files, params), params

        self._warmup = Warmup(
            self._read, plan, budget, searches=lambda: shape_searches(self),
            quiet=self._traffic.wait_quiet, background=self._traffic.mark_background,
            idle=functools.partial(self._traffic.quiet, IDLE_GAP),
            real_calls=lambda: self._traffic.calls,
            covered=self._traffic.background_reads, parallel=self.warmup_parallel,
        )  # fmt: skip
        self._warmup.start()
        return self._warmup

    @property
    def warmup_status(self) -> WarmupStatus:
        return self._warmup.status if self._warmup is not None else WarmupStatus(state="off")

    def close(self) -> None:
        """Idempotent; every later call raises StoreError. A caller's driver stays open."""
        if self._warmup is not None:  # its read under way ends first (a cold JVM's first
            self._warmup.stop(wait=60.0)  # reads take seconds), as the names read's below
        with self._lock, self._gate:  # (no session opens after this)
            driver, self._driver = self._driver, None
            loader, self._names_loader = self._names_loader, None
        if loader is not None:  # queued reads are dropped; the one under way ends first, since
            # closing a driver while another thread sends on its connection breaks the driver
            # ("BufferError: Existing exports of data"); its later reads fail on the closed store
            loader.shutdown(wait=True, cancel_futures=True)
        # other threads' reads and writes under way end first, for the same reason, and so a
        # write commits whole rather than dying between its round trips
        if driver is not None and not self._await_sessions(_CLOSE_WAIT):
            log.warning("closing the Neo4j store while %d of its sessions are still open "
                        "after %.0f s", self._in_flight, _CLOSE_WAIT)  # fmt: skip
        if driver is not None and self._owns_driver:
            driver.close()

    def get_entities(self, scope: Tenant, ids: Sequence[str]) -> list[Entity]:
        params = {**_scope(scope), "ids": list(dict.fromkeys(ids)), "light": False}
        rows = self._read("get_entities", params)
        return [_entity(row["entity"]) for row in rows if present(row["entity"])]

    def get_relations(self, scope: Tenant, ids: Sequence[str]) -> list[Relation]:
        rows = self._read("get_relations", {**_scope(scope), "ids": list(dict.fromkeys(ids))})
        return [_relation(row["relation"]) for row in rows if present(row["relation"])]

    def find_entities(
        self, scope: Tenant, keys: Sequence[str], *, exact: bool = False
    ) -> list[Entity]:
        self._ready()
        if not keys:
            return []
        rows = self._read("find_entities", {**_scope(scope, exact), "keys": list(keys)})
        return [_entity(row["entity"]) for row in rows if present(row["entity"])]

    def relations_touching(
        self, scope: Tenant, entity_ids: Sequence[str], validity: Validity, *, exact: bool = False
    ) -> list[Relation]:
        self._ready()
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return []
        params = {
            **_scope(scope, exact),
            **_validity(validity),
            "ids": ids,
            "vector": None,
            "row_limit": _ALL_ROWS,
            "newest_first": False,
        }
        found: dict[str, Relation] = {}
        for row in self._read("edges_at", params):
            rel_id = row["relation"].get("id")
            if present(row["relation"]) and rel_id not in found:
                found[rel_id] = _relation(row["relation"])
        return list(found.values())

    def update_candidates(
        self, tenant: Tenant, queries: Sequence[UpdateQuery], k: int
    ) -> list[list[Relation]]:
        """The contract's order, computed by the server (cypher/read.cypher): only `k` rows
        a query come back, however many edges a hub endpoint holds."""
        self._ready()
        if not queries or k <= 0:
            return [[] for _ in queries]
        # a vector without a direction (zero, not finite) scores 0 as a missing one does:
        # vector.similarity.cosine refuses it (an error, not null)
        rows = [
            {**q.model_dump(), "vector": q.vector if _has_direction(q.vector) else None}
            for q in queries
        ]
        found = self._read("update_candidates", {"tenant_key": tenant.key, "rows": rows, "k": k})
        out: list[list[Relation]] = [[] for _ in queries]
        for row in found:
            out[row["i"]] = [_relation(edge) for edge in row["edges"] if present(edge)]
        return out

    def expand(
        self,
        scope: Tenant,
        entity_ids: Sequence[str],
        hops: int,
        validity: Validity,
        limit: int,
        *,
        vector: np.ndarray,
    ) -> list[EdgeRef]:
        """Breadth-first, direction ignored, walking only accepted in-scope edges; one query
        per hop, the bookkeeping as in the embedded store so both return the same order.
        Light `EdgeRef`s scored in Cypher by the cosine to `vector` (equal to `edge_score`
        for unit vectors, to ~1e-7), so a hub's edges cost no embedding transfer."""
        self._ready()
        result: list[EdgeRef] = []
        if limit <= 0:
            return result
        seen: set[str] = set()
        frontier = list(dict.fromkeys(entity_ids))
        visited = set(frontier)
        query = np.asarray(vector, dtype=np.float32).ravel().tolist()
        base = {**_scope(scope), **_validity(validity), "vector": query, "newest_first": True}
        for hop in range(1, hops + 1):
            if not frontier:
                break
            next_frontier: list[str] = []
            # An edge comes at most twice in a hop (both ends in the frontier), and so may each
            # edge already taken: these rows hold every edge the bookkeeping below can take.
            row_limit = 2 * (limit - len(result)) + 2 * len(seen)
            params = {**base, "ids": frontier, "row_limit": row_limit}
            for row in self._read("edges_at", params):
                props = row["relation"]
                if props["id"] in seen:
                    continue
                if len(result) >= limit:
                    return result
                seen.add(props["id"])
                result.append(
                    EdgeRef(
                        props["id"],
                        props["source_id"],
                        props["name"],
                        props["destination_id"],
                        hop,
                        float(props["score"]),
                    )
                )
                node = frontier[row["i"]]
                other = (
                    props["destination_id"] if props["source_id"] == node else props["source_id"]
                )
                if other not in visited:
                    visited.add(other)
                    next_frontier.append(other)
            frontier = next_frontier
        return result

    def siblings(
        self,
        scope: Tenant,
        keys: Sequence[tuple[str, str, bool]],
        validity: Validity,
        limit: int,
        *,
        vector: np.ndarray,
    ) -> list[EdgeRef]:
        """One read (`sibling_edges`): per key, the hub is sought by id and only the edges in
        the key's direction with the key's relation name are read; cut to `limit` in Cypher
        and returned light, scored by Cypher's cosine as `expand(vector=)` is."""
        self._ready()
        if limit <= 0 or not keys:
            return []
        params = {
            **_scope(scope),
            **_validity(validity),
            "keys": [
                {"hub_id": hub, "relation": name, "hub_is_destination": bool(hub_is_destination)}
                for hub, name, hub_is_destination in keys
            ],
            "limit": limit,
            "vector": np.asarray(vector, dtype=np.float32).ravel().tolist(),
        }
        refs = []
        for row in self._read("sibling_edges", params):
            props = row["relation"]
            refs.append(
                EdgeRef(
                    props["id"],
                    props["source_id"],
                    props["name"],
                    props["destination_id"],
                    2,
                    float(props["score"]),
                )
            )
        return refs

    def snapshot(
        self, scope: Tenant, validity: Validity, *, embeddings: bool = True, exact: bool = False
    ) -> GraphSnapshot:
        params = {**_scope(scope, exact), **_validity(validity), "embeddings": embeddings}
        rows = self._read("snapshot_entities", params)
        entities = [_entity(row["entity"]) for row in rows if present(row["entity"])]
        rows = self._read("snapshot_relations", params)
        relations = [_relation(r["relation"]) for r in rows if present(r["relation"])]
        return GraphSnapshot(entities=entities, relations=relations)

    def episodes(self, scope: Tenant, *, exact: bool = False) -> list[Episode]:
        """The scope's episodes in the order they were written."""
        rows = self._read("episodes", _scope(scope, exact))
        return [_episode(row["episode"]) for row in rows if present(row["episode"])]

    def get_facts(self, scope: Tenant, ids: Sequence[str]) -> list[Fact]:
        rows = self._read("get_facts", {**_scope(scope), "ids": list(dict.fromkeys(ids))})
        return [_fact(row["fact"]) for row in rows if present(row["fact"])]

    def facts(self, scope: Tenant, *, exact: bool = False) -> list[Fact]:
        """All current facts of the scope, oldest first (ties keep write order)."""
        rows = self._read("facts", _scope(scope, exact))
        return [_fact(row["fact"]) for row in rows if present(row["fact"])]

    def lexical_facts(
        self, scope: Tenant, words: list[str], k: int, *, exact: bool = False
    ) -> list[tuple[Fact, float]]:
        """BM25 top-k current facts for query terms (lexical.py)."""
        self._ready()
        hits = lexical.search(self._read, "lexical_facts", _scope(scope, exact), words, k,
                              self.max_fetch, scope, exact)  # fmt: skip
        return [(_fact(h["fact"]), float(h["score"])) for h in hits if present(h["fact"])]

    def common_fact_words(
        self, scope: Tenant, words: list[str], share: float, *, exact: bool = False
    ) -> list[str]:
        """The query words more than `share` of the scope's current facts hold (Lucene)."""
        self._ready()
        return lexical.common_words(self._read, _scope(scope, exact), words, share, scope, exact)

    def lexical_relations(
        self, scope: Tenant, words: list[str], k: int, validity: Validity
    ) -> list[EdgeRef]:
        self._ready()
        params = {**_scope(scope), **_validity(validity)}
        hits = lexical.search(
            self._read, "lexical_relations", params, words, k, self.max_fetch, scope
        )
        return lexical.edge_refs(hits)

    def lexical_entities(
        self, scope: Tenant, words: list[str], k: int
    ) -> list[tuple[Entity, float]]:
        self._ready()
        hits = lexical.search(self._read, "lexical_entities", _scope(scope), words, k,
                              self.max_fetch, scope)  # fmt: skip
        return [(_entity(h["entity"]), float(h["score"])) for h in hits if present(h["entity"])]

    def fact_timeline(self, scope: Tenant) -> list[tuple[FactEvent, datetime | None]]:
        """Every fact event of the scope, per fact in write order, with its episode's time."""
        rows = self._read("fact_timeline", _scope(scope))
        return [
            (_fact_event(r["event"]), _py_time(r["said"])) for r in rows if r["event"].get("id")
        ]

    def fact_history(self, scope: Tenant, fact_id: str) -> list[FactEvent]:
        """Every event of one fact in write order, also after the fact was deleted."""
        rows = self._read("fact_history", {**_scope(scope), "fact_id": fact_id})
        return [_fact_event(row["event"]) for row in rows if row["event"].get("id")]

    def recent_messages(self, tenant: Tenant, limit: int) -> list[Message]:
        """The last `limit` messages of the exact tenant, from at most `limit` episodes."""
        self._ready()
        if limit <= 0:
            return []
        rows = self._read("recent_episodes", {"tenant_key": tenant.key, "limit": limit})
        return [Message.model_validate(m) for m in _messages(rows[::-1])[-limit:]]

    def message_count(self, tenant: Tenant) -> int:
        (row,) = self._read("message_count", {"tenant_key": tenant.key})
        return int(row["n"])

    def messages_since(self, tenant: Tenant, offset: int) -> list[Message]:
        """The exact tenant's messages after the first `offset`: the episode sizes say which
        episodes hold them, and only those are read (one transaction, one snapshot)."""
        offset = max(offset, 0)

        def work(tx: ManagedTransaction) -> list[dict[str, Any]]:
            sizes = _rows(tx.run(statements()["episode_sizes"], {"tenant_key": tenant.key}))
            wanted: list[str] = []
            seen = skip = 0
            for row in sizes:
                count = row["n"] or 0
                if seen + count > offset:
                    if not wanted:
                        skip = offset - seen  # messages of the first episode already covered
                    wanted.append(row["id"])
                seen += count
            if not wanted:
                return []
            rows = _rows(tx.run(statements()["episode_messages"], {"ids": wanted}))
            return _messages(rows)[skip:]

        return [Message.model_validate(m) for m in self._read_tx("messages_since", work)]

    def get_summary(self, tenant: Tenant) -> Summary | None:
        rows = self._read("get_summary", {"tenant_key": tenant.key})
        return _summary(rows[0]["summary"]) if rows else None

    def set_summary(self, summary: Summary) -> None:
        """Replace the exact tenant's summary in its own small transaction."""
        self._ready()
        if summary.messages_covered < 0:
            raise StoreError(f"a summary can't cover {summary.messages_covered} messages")
        props = {
            **_tenant_props(summary.tenant),
            "text": summary.text,
            "messages_covered": summary.messages_covered,
            "updated_at": _db_time(summary.updated_at),
        }
        params = {"tenant_key": summary.tenant.key, "props": props}

        def work(tx: ManagedTransaction) -> None:
            (row,), _ = self._run(tx, "set_summary", params)
            if row["text"] is None:  # as in _write_plan: a delete_tenant got there first
                raise TransientError("the summary was deleted while this write waited for it")

        self._write("set_summary", work)

    def tenants(self) -> list[Tenant]:
        """Every exact tenant holding at least one record, sorted by key."""
        keys = sorted(row["key"] for row in self._read("tenants", {}))
        return [_tenant_from_key(key) for key in keys]

    def stats(self, scope: Tenant | None = None) -> StoreStats:
        if scope is None:
            (row,) = self._read("stats_all", {})
            tenants = len(self._read("tenants", {}))
        else:
            (row,) = self._read("stats_scope", _scope(scope))
            tenants = len(set(row["keys"]))
        return StoreStats.counted(row, tenants)


def _driver(uri: str, shown: str, auth: Any, connect_timeout: float | None) -> Driver:
    """The driver for `uri`; a URL it cannot use is a StoreError naming it (`shown`: without
    a password written into it, which the driver's own message would repeat).
    `connect_timeout` (None: the driver's 30 s and 60 s) bounds both reaching the server and
    getting a connection: the Bolt handshake waits under the latter."""
    timeouts: dict[str, Any] = {}
    if connect_timeout is not None:
        timeouts = {"connection_timeout": connect_timeout,
                    "connection_acquisition_timeout": connect_timeout}  # fmt: skip
    scheme = urlsplit(uri).scheme.lower()
    if scheme in ("http", "https"):  # the driver's HTTP support is a preview: Bolt only
        raise StoreError(
            "the neo4j store speaks Bolt: graph_store.url must be bolt:// or neo4j:// "
            f"(the server's Bolt port, 7687 by default), not {shown}"
        )
    try:
        return GraphDatabase.driver(uri, auth=auth, **timeouts)
    except (DriverError, ValueError, TypeError) as exc:
        text = " ".join(str(exc).replace(uri, shown).split())
        raise StoreError(f"graph_store.url {shown!r} is not a Neo4j URL: {text}") from None


def _has_direction(vector: Sequence[float] | None) -> bool:
    """Whether an `UpdateQuery` vector can be compared by cosine (float32, as stored)."""
    return vector is not None and has_direction(as_vector(vector))
