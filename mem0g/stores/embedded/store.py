"""The default graph store: one SQLite file for durability, everything served from memory.

SQLite (WAL) is the source of truth; a tenant's rows are read into a networkx MultiDiGraph
plus per-tenant indexes and lazily built numpy matrices the first time a call touches the
tenant (loading.py), so reads after that never touch disk, opening costs little however many
tenants the file holds, and a vector search only scans the rows of the tenants in scope.
Writes go to SQLite in one transaction first and reach memory only after COMMIT, so a failure
leaves both unchanged.
The fact memory beside the graph (facts, their history, summaries) lives in the same file and
the same transactions; its in-memory side is `embedded.facts.FactIndex`.

This module holds the SQLite side (open, the write transaction of a plan) and the
contract's remaining methods; loading.py what is in memory; graph.py the in-memory graph
and its reads, repairs.py entity repair, facts.py the fact memory.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from mem0g.stores.base import (
    EdgeRef,
    IndexRebuild,
    StoreCapabilities,
    StoreError,
    StoreStats,
    WarmupStatus,
    check_index_kinds,
)
from mem0g.stores.embedded import lexical, links
from mem0g.stores.embedded.facts import FactWrites
from mem0g.stores.embedded.graph import GraphIndex, _locked
from mem0g.stores.embedded.links import LinkReads
from mem0g.stores.embedded.loading import TakenIds
from mem0g.stores.embedded.repairs import EntityRepair
from mem0g.stores.embedded.schema import (
    _COUNTS,
    _DELETE_ALL,
    _DELETE_TENANT,
    _SCHEMA,
    _UPSERT,
    SCHEMA_VERSION,
    _detached,
    _key,
    _take_turn,
    _to_row,
    _write_entity_event,
    _write_pairs,
)
from mem0g.stores.plan import Existing, FactOutcome, Owned, check_plan, distinct_tenants
from mem0g.stores.repair import rename_event, renamed
from mem0g.stores.vectors import Hub, hub_rescored, summed
from mem0g.stores.vectors import as_vector as _vec
from mem0g.types import (
    Entity,
    EntityEvent,
    Episode,
    Fact,
    FactEvent,
    Message,
    Relation,
    Summary,
    Tenant,
    Validity,
    WritePlan,
    plan_episodes,
)


@dataclass
class _Written:
    """A plan's rows, written inside the transaction: what memory takes after COMMIT."""

    plan: WritePlan
    entities: dict[str, Entity]
    relations: dict[str, Relation]
    facts: FactWrites
    vectors: dict[str, np.ndarray]  # the entity and edge vectors, by record id


class EmbeddedGraphStore(LinkReads, EntityRepair, GraphIndex):
    """Server-less `GraphStore` in a directory (``graph.db``); safe across threads of a process.

    A commit by another connection to the same file is noticed (``PRAGMA data_version``) and
    triggers a reload, so a CLI can read a store that an app is writing to.
    """

    # reads are in-process (threads would only add overhead)
    capabilities = StoreCapabilities(
        concurrent_reads=False,
        lexical=True,
        fact_timeline=True,
        fact_links=True,
        fact_vector_sum=True,
    )

    def __init__(
        self, path: str | Path, dims: int | None = None, max_loaded_tenants: int | None = 1000
    ) -> None:
        self.path = Path(path).expanduser()
        if max_loaded_tenants is not None and max_loaded_tenants < 1:
            raise ValueError("max_loaded_tenants must be at least 1 (None: no bound)")
        self.max_loaded_tenants = max_loaded_tenants
        self._calls = 0  # public calls under way in this thread's lock (`_locked`)
        if self.path.exists() and not self.path.is_dir():
            raise StoreError(
                f"the embedded store's path {self.path} is a file: graph_store.path names a "
                "directory, which holds graph.db"
            )
        self.path.mkdir(parents=True, exist_ok=True)
        self.dims = dims
        self._lock = threading.RLock()
        # isolation_level=None: we issue BEGIN/COMMIT ourselves; timeout waits on other writers.
        conn = sqlite3.connect(
            self.path / "graph.db", timeout=30.0, isolation_level=None, check_same_thread=False
        )
        conn.row_factory = sqlite3.Row
        self._conn: sqlite3.Connection | None = conn
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            # FULL: a memory an agent was told it has must survive power loss too (NORMAL in WAL
            # mode may drop the last commits); one more fsync per plan is noise next to the LLM
            # calls that produced it.
            conn.execute("PRAGMA synchronous=FULL")
            with self._transaction():
                lexical.upgrade(conn)  # v7: FTS tables gain their scope column
                for statement in (*_SCHEMA, *lexical.SCHEMA, *links.SCHEMA):
                    conn.execute(statement)
                version = conn.execute("SELECT max(version) FROM schema_version").fetchone()[0]
                if version is None:
                    conn.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
                elif version > SCHEMA_VERSION:
                    raise StoreError(f"{self.path}: schema v{version} is newer than this mem0g")
                elif version < SCHEMA_VERSION:  # v2-v6 added tables (created above), v7 a column
                    conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
                lexical.sync(conn)  # FTS tables (re)filled from an older store's rows
            self._load()
            if version is not None and version < 6:  # v6's links, for an older store's facts
                self._ensure_all()  # once: the links need every tenant's facts and entities
                with self._transaction():
                    links.backfill(conn, self._facts.facts.values(), self._entities.values())
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> EmbeddedGraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE takes the write lock up front, so a transaction can't fail halfway on
        a lock upgrade; any exception rolls everything back."""
        conn = self._connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"database error, nothing was written: {exc}") from exc
            raise

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError("the store is closed")
        return self._conn

    def _ready(self, target: Tenant | str | None = None) -> None:
        """Fail on a closed store; forget memory when another connection committed since we
        looked; then have the tenants of `target` (a scope, or an exact key) in memory."""
        version = self._connection().execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:
            self._load()
        if isinstance(target, Tenant):
            self._ensure_scope(target)
        elif target is not None:
            self._ensure([target])

    @_locked
    def apply(self, plan: WritePlan) -> None:
        """Validate, write in one SQLite transaction, and only after COMMIT update memory."""
        self.apply_many([plan])

    @_locked
    def apply_many(self, plans: Sequence[WritePlan]) -> None:
        """Several tenants' plans in one SQLite transaction (one commit, one fsync), each
        validated as `apply` does; memory changes only after COMMIT, for all of them."""
        distinct_tenants(plans)
        dims: set[int] = set() if self.dims is None else {self.dims}
        with self._transaction() as conn:
            staged = [self._write_plan(conn, plan, dims) for plan in plans]
        try:
            for written in staged:
                self._commit_plan(written)
            self.dims = self.dims or next(iter(dims), None)
        except BaseException:
            self._load()  # memory must match the committed database, whatever happened
            raise

    def _write_plan(self, conn: sqlite3.Connection, plan: WritePlan, dims: set[int]) -> _Written:
        """One plan's rows, inside the caller's transaction; `dims` gathers the vector sizes
        of every plan of the transaction (one size per store)."""
        # another process may have committed before we got the write lock
        self._ready(_key(plan.tenant))
        _take_turn(conn, _key(plan.tenant), plan.based_on)
        entities, relations, outcome = self._planned_state(plan)
        renames = self._planned_renames(plan, entities, relations)
        pairs = list(plan.possible_duplicates)
        facts = self._facts.plan(plan, outcome)
        records: list[Entity | Relation] = [*plan.new_entities, *plan.new_relations]
        vectors = {r.id: v for r in records if (v := _vec(r.embedding)) is not None}
        all_vectors = (*vectors.values(), *facts.vectors.values())
        dims |= {v.shape[0] for v in all_vectors if v is not None}
        if len(dims) > 1:
            raise StoreError(f"embeddings of different sizes in one store: {dims}")
        for episode in plan_episodes(plan):
            self._write(conn, "episodes", episode, None)
        for entity in entities.values():
            self._write(conn, "entities", entity, vectors.get(entity.id))
        for rel in relations.values():
            self._write(conn, "relations", rel, vectors.get(rel.id))
        for fact_id in facts.deletes:
            conn.execute("DELETE FROM facts WHERE id = ?", (fact_id,))
        for fact in facts.upserts.values():
            self._write(conn, "facts", fact, facts.vectors[fact.id])
        for event in facts.events:
            self._write(conn, "fact_events", event, None)
        for entity_event in (*plan.entity_events, *renames):
            _write_entity_event(conn, entity_event)
        _write_pairs(conn, plan.tenant, pairs)
        links.write(conn, plan, _key(plan.tenant))
        return _Written(plan, entities, relations, facts, vectors)

    def _commit_plan(self, written: _Written) -> None:
        """Memory after COMMIT (the _add_* helpers also take an existing record: its vector
        is kept)."""
        plan, entities, relations, vectors = (
            written.plan, written.entities, written.relations, written.vectors
        )  # fmt: skip
        for episode in plan_episodes(plan):
            self._add_episode(episode.model_copy(deep=True))
        for entity in entities.values():
            if entity.id in self._entities:
                self._set_entity(entity)
            else:
                self._add_entity(entity, vectors.get(entity.id))
        for rel in relations.values():
            self._add_relation(rel, vectors.get(rel.id))
        if written.facts:
            self._facts.commit(written.facts)
            self._bucket(plan.tenant)

    def _write(
        self, conn: sqlite3.Connection, table: str, record: Any, vec: np.ndarray | None
    ) -> None:
        """Insert a record, or update the columns a plan may change if it exists."""
        conn.execute(_UPSERT[table], _to_row(table, record, vec))

    def _planned_state(
        self, plan: WritePlan
    ) -> tuple[dict[str, Entity], dict[str, Relation], FactOutcome]:
        """Copies of the entities and relations the plan creates or changes, as they will be
        after it, and its fact part; raises StoreError on a bad plan (`stores.plan` rules),
        before anything is written."""
        tenant = plan.tenant
        conn = self._connection()
        existing = Existing(
            episodes=TakenIds(conn, "episodes"),
            entities=TakenIds(conn, "entities"),
            relations=TakenIds(conn, "relations"),
            facts=TakenIds(conn, "facts"),
            fact_events=TakenIds(conn, "fact_events"),
            entity_events=TakenIds(conn, "entity_events"),
            own_entities=Owned(self._entities, tenant),
            own_relations=Owned(self._relations, tenant),
            **self._facts.existing(tenant),
        )
        facts = check_plan(plan, existing)
        entities: dict[str, Entity] = {}
        relations: dict[str, Relation] = {}

        def editable(pending: dict[str, Any], stored: dict[str, Any], record_id: str) -> Any:
            """The plan's working copy of a record of this tenant, from the plan or the store."""
            if record_id not in pending:
                pending[record_id] = stored[record_id].model_copy(deep=True)
            return pending[record_id]

        for entity in plan.new_entities:
            entities[entity.id] = _detached(entity)
        for alias in plan.alias_updates:
            entity = editable(entities, self._entities, alias.entity_id)
            entity.aliases = list(dict.fromkeys([*entity.aliases, *alias.aliases]))
            entity.keys = list(dict.fromkeys([*entity.keys, *alias.keys]))
            entity.updated_at = plan.updated_at
        for rel in plan.new_relations:
            relations[rel.id] = _detached(rel)
        for inv in plan.invalidations:
            rel = editable(relations, self._relations, inv.relation_id)
            rel.invalid_at, rel.updated_at = inv.invalid_at, plan.updated_at
        for mention in plan.mentions:
            rel = editable(relations, self._relations, mention.relation_id)
            rel.mentions += 1
            rel.provenance.append(mention.provenance.model_copy())
            rel.updated_at = plan.updated_at
        return entities, relations, facts

    def _planned_renames(
        self, plan: WritePlan, entities: dict[str, Entity], relations: dict[str, Relation]
    ) -> list[EntityEvent]:
        """`AliasUpdate.name`: the entity takes the new display name (the old one stays an
        alias) and every edge at it, stored or new in the plan, shows it; one RENAME event
        each. Embeddings stay as they are (a name vector never changes)."""
        events: list[EntityEvent] = []
        names: dict[str, str] = {}
        episode_id = plan.episode.id if plan.episode is not None else None
        for alias in plan.alias_updates:
            entity = entities[alias.entity_id]  # _planned_state made the working copy
            if alias.name is None or alias.name == entity.name:
                continue
            entities[entity.id] = renamed(entity, alias.name)
            events.append(
                rename_event(entity.id, plan.tenant, entity.name, alias.name, plan.updated_at,
                             episode_id)
            )  # fmt: skip
            names[entity.id] = alias.name
        for entity_id in names:
            for rel in self._edges_of(entity_id):
                relations.setdefault(rel.id, rel.model_copy(deep=True))
        for rel in relations.values():
            rel.source = names.get(rel.source_id, rel.source)
            rel.destination = names.get(rel.destination_id, rel.destination)
        return events

    @_locked
    def tenant_version(self, tenant: Tenant) -> str:
        row = (
            self._connection()
            .execute("SELECT version FROM tenant_versions WHERE tenant_key = ?", (_key(tenant),))
            .fetchone()
        )
        return str(row["version"] if row else 0)

    @_locked
    def delete_tenant(self, scope: Tenant) -> int:
        """Delete every record the scope filter matches, in one transaction."""
        with self._transaction() as conn:
            self._ready(scope)
            keys = self._scope_keys(scope)
            for key in keys:
                for statement in _DELETE_TENANT.values():  # graph, facts, repair records
                    conn.execute(statement, (key,))
                _take_turn(conn, key, None)
        removed = self._unload(keys)
        for key in keys:
            self._forget(key)
        return removed

    @_locked
    def reset(self) -> None:
        """Delete everything in this store (the file and schema stay)."""
        with self._transaction() as conn:
            for statement in _DELETE_ALL.values():
                conn.execute(statement)
        self._load()

    @property
    def warmup_status(self) -> WarmupStatus:
        return WarmupStatus(state="off")  # no server: nothing to warm

    def close(self) -> None:
        """Idempotent; every later call on the store raises StoreError."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @_locked
    def episodes(self, scope: Tenant, *, exact: bool = False) -> list[Episode]:
        """The scope's episodes in the order they were written."""
        ids = [i for key in self._scope_keys(scope, exact) for i in self._buckets[key].episodes]
        ids.sort(key=self._episode_rank.__getitem__)
        return [self._episodes[i].model_copy(deep=True) for i in ids]

    @_locked
    def get_facts(self, scope: Tenant, ids: Sequence[str]) -> list[Fact]:
        return self._facts.get(scope, ids)

    @_locked
    def facts(self, scope: Tenant, *, exact: bool = False) -> list[Fact]:
        return self._facts.all(self._scope_keys(scope, exact))

    @_locked
    def similar_facts(
        self,
        scope: Tenant,
        vector: np.ndarray,
        k: int,
        *,
        exact: bool = False,
        hub: Hub | None = None,
    ) -> list[tuple[Fact, float]]:
        """Numpy top-k over the rows of the scope's tenants only, like `similar_entities`."""
        blocks = [self._facts.block(key, self.dims) for key in self._scope_keys(scope, exact)]
        hits = self._search(blocks, vector, k, None)
        if hub is None:
            return [(self._facts.out(i), score) for i, score in hits]
        near = self._facts.cosines([i for i, _ in hits], hub.centre)
        return [(self._facts.out(i, light=True), score)
                for i, score in hub_rescored(hits, near, hub.penalty)]  # fmt: skip

    @_locked
    def fact_vector_sum(self, scope: Tenant, *, exact: bool = False) -> np.ndarray | None:
        """The sum of the scope's blocks' flagged rows (each block keeps its own sum)."""
        blocks = [self._facts.block(key, self.dims) for key in self._scope_keys(scope, exact)]
        return summed([block.total() for block in blocks if len(block.ids) > block.unflagged])

    @_locked
    def lexical_facts(
        self, scope: Tenant, words: list[str], k: int, *, exact: bool = False
    ) -> list[tuple[Fact, float]]:
        """BM25 top-k current facts for query terms (`lexical_query.query_terms`)."""
        keys = self._scope_keys(scope, exact)
        hits = lexical.search(self._connection(), "facts", keys, words, k)
        return [(self._facts.out(i), s) for i, s in hits if i in self._facts.facts]

    @_locked
    def common_fact_words(
        self, scope: Tenant, words: list[str], share: float, *, exact: bool = False
    ) -> list[str]:
        """The query words more than `share` of the scope's current facts hold (FTS5)."""
        keys = self._scope_keys(scope, exact)
        return lexical.common_words(self._connection(), "facts", keys, words, share)

    @_locked
    def lexical_relations(
        self, scope: Tenant, words: list[str], k: int, validity: Validity
    ) -> list[EdgeRef]:
        """BM25 top-k edges that `validity` accepts, as `EdgeRef`s (hop 0, score = bm25)."""
        rels = self._relations
        accept = lambda i: i in rels and validity.accepts(rels[i])  # noqa: E731
        hits = lexical.search(self._connection(), "relations", self._scope_keys(scope), words,
                              k, accept)  # fmt: skip
        return [EdgeRef(i, (r := rels[i]).source_id, r.relation, r.destination_id, 0, score)
                for i, score in hits]  # fmt: skip

    @_locked
    def lexical_entities(
        self, scope: Tenant, words: list[str], k: int
    ) -> list[tuple[Entity, float]]:
        """BM25 top-k entities by name and aliases, without their embeddings."""
        hits = lexical.search(self._connection(), "entities", self._scope_keys(scope), words, k)
        return [(_detached(self._entities[i]), s) for i, s in hits if i in self._entities]

    @_locked
    def fact_timeline(self, scope: Tenant) -> list[tuple[FactEvent, datetime | None]]:
        """Every fact event of the scope, per fact in write order, with its episode's time."""
        said = self._episodes
        return [(e, said[e.episode_id].timestamp if e.episode_id in said else None)
                for e in self._facts.events_of(self._scope_keys(scope))]  # fmt: skip

    @_locked
    def fact_history(self, scope: Tenant, fact_id: str) -> list[FactEvent]:
        return self._facts.history(scope, fact_id)

    def _messages(self, tenant: Tenant) -> list[Message]:
        """The exact tenant's messages, episodes in write order: that order only appends, so a
        summary's `messages_covered` stays a valid offset (a backdated episode can't shift it)."""
        bucket = self._buckets.get(_key(tenant))
        return [m for i in bucket.episodes for m in self._episodes[i].messages] if bucket else []

    @_locked
    def recent_messages(self, tenant: Tenant, limit: int) -> list[Message]:
        return [m.model_copy() for m in self._messages(tenant)[-limit:]] if limit > 0 else []

    @_locked
    def message_count(self, tenant: Tenant) -> int:
        return len(self._messages(tenant))

    @_locked
    def messages_since(self, tenant: Tenant, offset: int) -> list[Message]:
        return [m.model_copy() for m in self._messages(tenant)[max(offset, 0) :]]

    @_locked
    def get_summary(self, tenant: Tenant) -> Summary | None:
        return self._facts.summary(tenant)

    @_locked
    def set_summary(self, summary: Summary) -> None:
        """Upsert in its own transaction; the store lock orders it against `apply`."""
        if summary.messages_covered < 0:
            raise StoreError(f"a summary can't cover {summary.messages_covered} messages")
        with self._transaction() as conn:
            self._ready(_key(summary.tenant))
            self._write(conn, "summaries", summary, None)
        self._facts.set_summary(summary.model_copy(deep=True))
        self._bucket(summary.tenant)

    @_locked
    def tenants(self) -> list[Tenant]:
        """Every exact tenant holding at least one record, sorted by key."""
        return [self._known[key] for key in sorted(self._known)]

    def stats(self, scope: Tenant | None = None) -> StoreStats:
        """Counts of the scope's tenant keys (or the whole file), current facts included, by
        SQL COUNTs: not `@_locked`, which would read the scope's tenants into memory first,
        and no record is read for a count (O(tenants) for the whole store, not O(records))."""
        with self._lock:
            self._ready()  # open, and the tenant index up to date with other connections
            conn = self._connection()
            if scope is None:
                tenants = len(self._known)
                row = conn.execute(_COUNTS[False]).fetchone()
            else:
                keys = self._known_keys(scope)
                tenants = len(keys)
                row = conn.execute(_COUNTS[True], {"keys": json.dumps(keys)}).fetchone()
        return StoreStats.counted(row, tenants)

    def rebuild_vector_indexes(
        self,
        kinds: Sequence[str] | None = None,
        *,
        progress: Callable[[str, float], None] | None = None,
    ) -> list[IndexRebuild]:
        """Nothing to rebuild: vectors live in in-memory matrices, searched exactly."""
        check_index_kinds(kinds)
        return []
