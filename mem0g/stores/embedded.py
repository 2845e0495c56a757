"""The default graph store: one SQLite file for durability, everything served from memory.

SQLite (WAL) is the source of truth; on open the whole graph is loaded into a networkx
MultiDiGraph plus per-tenant indexes and lazily built numpy matrices, so reads never touch disk
and a vector search only scans the rows of the tenants in scope. Writes go to SQLite in one
transaction first and reach memory only after COMMIT, so a failure leaves both unchanged.
The fact memory beside the graph (facts, their history, summaries) lives in the same file and
the same transactions; its in-memory side is `embedded_facts.FactIndex`.
"""

from __future__ import annotations

import functools
import itertools
import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import networkx as nx
import numpy as np

from mem0g.stores import lexical_embedded as lexical
from mem0g.stores.base import (
    EdgeRef,
    IndexRebuild,
    PlanConflict,
    StoreError,
    StoreStats,
    WarmupStatus,
    check_index_kinds,
)
from mem0g.stores.embedded_facts import FactIndex
from mem0g.stores.plan import Existing, FactOutcome, Owned, check_plan
from mem0g.stores.repair import (
    check_pair,
    find_merge,
    pair_key,
    plan_merge,
    plan_split,
    rename_event,
    renamed,
    repoint_pairs,
)
from mem0g.stores.vectors import VectorBlock, row_scores, top_k, unit_vector
from mem0g.stores.vectors import as_vector as _vec
from mem0g.types import (
    Entity,
    EntityEvent,
    Episode,
    Fact,
    FactEvent,
    GraphSnapshot,
    MergeResult,
    Message,
    PossibleDuplicate,
    Relation,
    SplitResult,
    Summary,
    Tenant,
    Validity,
    WritePlan,
    plan_episodes,
    utcnow,
)

# v2 added the fact memory's tables, v3 the entity repair's (entity_events,
# possible_duplicates), v4 tenant_versions, v5 the FTS5 tables (stores/lexical_embedded.py);
# an older file is upgraded in place when opened.
SCHEMA_VERSION = 5

_TENANT_COLS = ("user_id", "agent_id", "run_id", "tenant_key")
_COLUMNS: dict[str, tuple[str, ...]] = {
    "episodes": ("id", *_TENANT_COLS, "messages", "timestamp", "created_at"),
    "entities": ("id", *_TENANT_COLS, "name", "type", "aliases", "keys", "embedding",
                 "created_at", "updated_at"),
    "relations": ("id", *_TENANT_COLS, "source_id", "source", "relation", "destination_id",
                  "destination", "embedding", "valid_from", "invalid_at", "created_at",
                  "updated_at", "mentions", "provenance"),
    "facts": ("id", *_TENANT_COLS, "text", "embedding", "created_at", "updated_at", "provenance"),
    "fact_events": ("id", "fact_id", *_TENANT_COLS, "event", "old_text", "new_text", "actor",
                    "episode_id", "at"),
    "summaries": (*_TENANT_COLS, "text", "messages_covered", "updated_at"),
}  # fmt: skip
_JSON_COLS = frozenset({"messages", "aliases", "keys", "provenance"})
# Columns a write may change on an existing row (graph embeddings and creation data never do);
# tables without an entry are insert-only. A summary is one row per exact tenant key.
_MUTABLE: dict[str, tuple[str, ...]] = {
    "entities": ("name", "aliases", "keys", "updated_at"),  # name: a rename
    # the ends and their names change when a merge or split re-points an edge
    "relations": (
        "source_id",
        "source",
        "destination_id",
        "destination",
        "invalid_at",
        "mentions",
        "provenance",
        "updated_at",
    ),
    "facts": ("text", "embedding", "updated_at"),
    "summaries": ("text", "messages_covered", "updated_at"),
}
_CONFLICT = {"summaries": "tenant_key"}  # the unique column an upsert meets; "id" otherwise
_NOT_FIELDS = frozenset({*_TENANT_COLS, "embedding"})
_Record = Entity | Relation | Episode | Fact | FactEvent | Summary
_MODELS: dict[str, type[_Record]] = {
    "episodes": Episode, "entities": Entity, "relations": Relation, "facts": Fact,
    "fact_events": FactEvent, "summaries": Summary,
}  # fmt: skip
_TENANT_SQL = "user_id TEXT, agent_id TEXT, run_id TEXT, tenant_key TEXT NOT NULL"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    f"""CREATE TABLE IF NOT EXISTS entities (id TEXT PRIMARY KEY, {_TENANT_SQL},
        name TEXT NOT NULL, type TEXT NOT NULL, aliases TEXT NOT NULL, keys TEXT NOT NULL,
        embedding BLOB, created_at TEXT NOT NULL, updated_at TEXT NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS relations (id TEXT PRIMARY KEY, {_TENANT_SQL},
        source_id TEXT NOT NULL, source TEXT NOT NULL, relation TEXT NOT NULL,
        destination_id TEXT NOT NULL, destination TEXT NOT NULL, embedding BLOB,
        valid_from TEXT, invalid_at TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        mentions INTEGER NOT NULL, provenance TEXT NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS episodes (id TEXT PRIMARY KEY, {_TENANT_SQL},
        messages TEXT NOT NULL, timestamp TEXT NOT NULL, created_at TEXT NOT NULL)""",
    # v2: the fact memory
    f"""CREATE TABLE IF NOT EXISTS facts (id TEXT PRIMARY KEY, {_TENANT_SQL},
        text TEXT NOT NULL, embedding BLOB, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        provenance TEXT NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS fact_events (id TEXT PRIMARY KEY, fact_id TEXT NOT NULL,
        {_TENANT_SQL}, event TEXT NOT NULL, old_text TEXT, new_text TEXT, actor TEXT NOT NULL,
        episode_id TEXT, at TEXT NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS summaries ({_TENANT_SQL}, text TEXT NOT NULL,
        messages_covered INTEGER NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY (tenant_key))""",
    # v3: the entity repair's records. An event is its EntityEvent as JSON (a MERGE carries
    # its undo record); a pair is unordered (`pair` = repair.pair_key), first record wins.
    f"""CREATE TABLE IF NOT EXISTS entity_events (id TEXT PRIMARY KEY, entity_id TEXT NOT NULL,
        other_id TEXT, {_TENANT_SQL}, event TEXT NOT NULL, data TEXT NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS possible_duplicates ({_TENANT_SQL}, pair TEXT NOT NULL,
        entity_id TEXT NOT NULL, candidate_id TEXT NOT NULL, data TEXT NOT NULL,
        PRIMARY KEY (tenant_key, pair))""",
    # v4: each exact tenant's write counter (tenant_version): kept through a delete, so a plan
    # computed before the delete can never pass for one computed after it
    """CREATE TABLE IF NOT EXISTS tenant_versions (tenant_key TEXT PRIMARY KEY,
        version INTEGER NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS entity_events_tenant ON entity_events (tenant_key)",
    "CREATE INDEX IF NOT EXISTS entity_events_entity ON entity_events (entity_id)",
    "CREATE INDEX IF NOT EXISTS entity_events_other ON entity_events (other_id)",
    "CREATE INDEX IF NOT EXISTS episodes_tenant ON episodes (tenant_key)",
    "CREATE INDEX IF NOT EXISTS entities_tenant ON entities (tenant_key)",
    "CREATE INDEX IF NOT EXISTS relations_tenant ON relations (tenant_key)",
    "CREATE INDEX IF NOT EXISTS facts_tenant ON facts (tenant_key)",
    "CREATE INDEX IF NOT EXISTS fact_events_tenant ON fact_events (tenant_key)",
    # summaries and possible_duplicates: their primary keys start with tenant_key already
)  # fmt: skip
_REPAIR_TABLES = ("entity_events", "possible_duplicates")  # written by their own statements
# Deletes per table, written out in full: statements are literal text, values go in as ?.
_DELETE_TENANT = {
    "episodes": "DELETE FROM episodes WHERE tenant_key = ?",
    "entities": "DELETE FROM entities WHERE tenant_key = ?",
    "relations": "DELETE FROM relations WHERE tenant_key = ?",
    "facts": "DELETE FROM facts WHERE tenant_key = ?",
    "fact_events": "DELETE FROM fact_events WHERE tenant_key = ?",
    "summaries": "DELETE FROM summaries WHERE tenant_key = ?",
    "entity_events": "DELETE FROM entity_events WHERE tenant_key = ?",
    "possible_duplicates": "DELETE FROM possible_duplicates WHERE tenant_key = ?",
}
_DELETE_ALL = {
    "episodes": "DELETE FROM episodes",
    "entities": "DELETE FROM entities",
    "relations": "DELETE FROM relations",
    "facts": "DELETE FROM facts",
    "fact_events": "DELETE FROM fact_events",
    "summaries": "DELETE FROM summaries",
    "entity_events": "DELETE FROM entity_events",
    "possible_duplicates": "DELETE FROM possible_duplicates",
}
# Upserts (built from the constant column names above; values always go in as ? parameters).
# ON CONFLICT updates in place, so a record keeps its rowid and the load order stays stable.
_UPSERT = {
    table: f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
    + (f" ON CONFLICT ({_CONFLICT.get(table, 'id')}) DO UPDATE SET " if table in _MUTABLE else "")
    + ", ".join(f"{c} = excluded.{c}" for c in _MUTABLE.get(table, ()))
    for table, cols in _COLUMNS.items()
}


def _tenant_ids(tenant: Tenant) -> list[tuple[str, str]]:
    """The ids a tenant sets (a scope's filter), as index keys."""
    ids = (("user_id", tenant.user_id), ("agent_id", tenant.agent_id), ("run_id", tenant.run_id))
    return [(field, value) for field, value in ids if value is not None]


def _take_turn(conn: sqlite3.Connection, tenant_key: str, based_on: str | None) -> None:
    """Inside a write transaction (BEGIN IMMEDIATE holds SQLite's one write lock, across
    processes): check the plan's version, then move the tenant's version on."""
    row = conn.execute(
        "SELECT version FROM tenant_versions WHERE tenant_key = ?", (tenant_key,)
    ).fetchone()
    version = row["version"] if row else 0
    if based_on is not None and based_on != str(version):
        raise PlanConflict(
            f"the tenant changed since this plan was made (version {based_on} -> {version})"
        )
    conn.execute(
        "INSERT INTO tenant_versions VALUES (?, 1) ON CONFLICT (tenant_key) "
        "DO UPDATE SET version = version + 1",
        (tenant_key,),
    )


def _vec_blob(blob: bytes | None) -> np.ndarray | None:
    return None if blob is None else np.frombuffer(blob, dtype=np.float32).copy()


@functools.lru_cache(maxsize=4096)
def _key(tenant: Tenant) -> str:
    """`Tenant.key` re-serialises JSON on every call; a store asks for it once per record."""
    return tenant.key


@functools.lru_cache(maxsize=1 << 16)  # a smaller cache thrashes on a 20k-tenant reopen
def _tenant(key: str) -> Tenant:
    """One shared (frozen) Tenant per key while loading, instead of one per row."""
    return Tenant.from_key(key)


def _detached(record: Entity | Relation) -> Any:
    """A copy without the embedding that shares no mutable list with the caller's record;
    much cheaper than a deep copy, which would first copy the whole embedding list."""
    update: dict[str, Any] = {"embedding": None}
    if isinstance(record, Entity):
        update.update(aliases=list(record.aliases), keys=list(record.keys))
    else:
        update["provenance"] = [p.model_copy() for p in record.provenance]
    return record.model_copy(update=update)


def _to_row(table: str, record: _Record, vec: np.ndarray | None) -> tuple:
    """Column values in `_COLUMNS` order: lists as JSON, datetimes as ISO-8601 with offset."""
    data = record.model_dump(mode="json", exclude={"tenant", "embedding"})
    data["embedding"] = None if vec is None else vec.tobytes()
    t = record.tenant
    data.update(user_id=t.user_id, agent_id=t.agent_id, run_id=t.run_id, tenant_key=_key(t))
    return tuple(json.dumps(data[c]) if c in _JSON_COLS else data[c] for c in _COLUMNS[table])


def _from_row(table: str, row: sqlite3.Row) -> Any:
    """A record without its embedding (the store keeps that apart, as a float32 array)."""
    columns = (c for c in _COLUMNS[table] if c not in _NOT_FIELDS)
    data = {c: json.loads(row[c]) if c in _JSON_COLS else row[c] for c in columns}
    data["tenant"] = _tenant(row["tenant_key"])
    return _MODELS[table].model_validate(data)


def _write_entity_event(conn: sqlite3.Connection, event: EntityEvent) -> None:
    t = event.tenant
    conn.execute(
        "INSERT INTO entity_events (id, entity_id, other_id, user_id, agent_id, run_id, "
        "tenant_key, event, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (event.id, event.entity_id, event.other_id, t.user_id, t.agent_id, t.run_id,
         _key(t), event.event, event.model_dump_json()),
    )  # fmt: skip


def _write_pairs(
    conn: sqlite3.Connection, tenant: Tenant, pairs: Iterable[PossibleDuplicate]
) -> None:
    """Record possible duplicates; a pair recorded already (either order) keeps its record."""
    for pair in pairs:
        conn.execute(
            "INSERT INTO possible_duplicates (user_id, agent_id, run_id, tenant_key, pair, "
            "entity_id, candidate_id, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (tenant_key, pair) DO NOTHING",
            (tenant.user_id, tenant.agent_id, tenant.run_id, _key(tenant),
             pair_key(pair.entity_id, pair.candidate_id), pair.entity_id, pair.candidate_id,
             pair.model_dump_json()),
        )  # fmt: skip


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)
_OPEN = np.iinfo(np.int64)  # an open end of a validity interval: .min / .max


def _micros(when: datetime) -> int:
    """Exact microseconds since the epoch (naive times taken as UTC, as everywhere in mem0g)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return (when - _EPOCH) // _MICROSECOND


def _span(rel: Relation) -> tuple[int, int]:
    """`Relation.valid_at(t)` is `start <= micros(t) < end` on this interval."""
    start = _OPEN.min if rel.valid_from is None else _micros(rel.valid_from)
    return start, _OPEN.max if rel.invalid_at is None else _micros(rel.invalid_at)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _locked(
    method: Callable[Concatenate[EmbeddedGraphStore, _P], _R],
) -> Callable[Concatenate[EmbeddedGraphStore, _P], _R]:
    """Every public call holds the store's lock and sees an open, up-to-date store."""

    @functools.wraps(method)
    def wrapper(self: EmbeddedGraphStore, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._lock:
            self._ready()
            return method(self, *args, **kwargs)

    return wrapper


@dataclass
class _Bucket:
    """Everything of one exact tenant key; dicts are insertion-ordered sets of ids."""

    tenant: Tenant
    entities: dict[str, None] = field(default_factory=dict)
    relations: dict[str, None] = field(default_factory=dict)
    episodes: dict[str, None] = field(default_factory=dict)
    keys: dict[str, dict[str, None]] = field(default_factory=dict)  # entity key -> entity ids
    blocks: dict[str, VectorBlock] = field(default_factory=dict)  # "entities"/"relations"


class EmbeddedGraphStore:
    """Server-less `GraphStore` in a directory (``graph.db``); safe across threads of a process.

    A commit by another connection to the same file is noticed (``PRAGMA data_version``) and
    triggers a reload, so a CLI can read a store that an app is writing to.
    """

    def __init__(self, path: str | Path, dims: int | None = None) -> None:
        self.path = Path(path).expanduser()
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
                for statement in (*_SCHEMA, *lexical.SCHEMA):
                    conn.execute(statement)
                version = conn.execute("SELECT max(version) FROM schema_version").fetchone()[0]
                if version is None:
                    conn.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
                elif version > SCHEMA_VERSION:
                    raise StoreError(f"{self.path}: schema v{version} is newer than this mem0g")
                elif version < SCHEMA_VERSION:  # v2-v5 only added tables, created above
                    conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
                lexical.sync(conn)  # v5's FTS tables filled from an older store's rows
            self._load()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> EmbeddedGraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ plumbing

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

    def _ready(self) -> None:
        """Fail on a closed store; reload when another connection committed since we looked."""
        version = self._connection().execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:
            self._load()

    def _load(self) -> None:
        """(Re)build every in-memory structure from the database."""
        conn = self._connection()
        self._data_version = conn.execute("PRAGMA data_version").fetchone()[0]
        self._graph: nx.MultiDiGraph = nx.MultiDiGraph()
        self._entities: dict[str, Entity] = {}
        self._relations: dict[str, Relation] = {}
        # relation id -> its place in write order (rowid order on load, then each new edge);
        # a hub's adjacency lists edges by neighbour, which is not write order when one
        # neighbour has several edges to it
        self._written: dict[str, int] = {}
        self._next_written = itertools.count()
        self._episodes: dict[str, Episode] = {}
        self._vectors: dict[str, np.ndarray] = {}  # entity/relation id -> raw float32 embedding
        self._buckets: dict[str, _Bucket] = {}
        # ("user_id", "alice") -> the tenant keys with that id, in bucket order: a scope's
        # keys are an intersection of these, not a scan of every tenant of the store
        self._tenant_index: dict[tuple[str, str], dict[str, None]] = {}
        for row in conn.execute("SELECT * FROM episodes ORDER BY rowid"):
            self._add_episode(_from_row("episodes", row))
        for row in conn.execute("SELECT * FROM entities ORDER BY rowid"):
            self._add_entity(_from_row("entities", row), _vec_blob(row["embedding"]))
        for row in conn.execute("SELECT * FROM relations ORDER BY rowid"):
            self._add_relation(_from_row("relations", row), _vec_blob(row["embedding"]))
        self._facts = FactIndex()
        for row in conn.execute("SELECT * FROM facts ORDER BY rowid"):
            self._facts.add_fact(_from_row("facts", row), _vec_blob(row["embedding"]))
        for row in conn.execute("SELECT * FROM fact_events ORDER BY rowid"):
            self._facts.add_event(_from_row("fact_events", row))
        for row in conn.execute("SELECT * FROM summaries ORDER BY rowid"):
            self._facts.set_summary(_from_row("summaries", row))
        for tenant in self._facts.tenants.values():
            self._bucket(tenant)  # so tenants(), scopes and delete_tenant see fact-only tenants
        vectors = [*self._vectors.values(), *self._facts.vectors.values()]
        if self.dims is None and vectors:
            self.dims = vectors[0].shape[0]
        if any(v.shape[0] != self.dims for v in vectors):
            raise StoreError(f"{self.path} holds embeddings that are not {self.dims}-dimensional")

    def _bucket(self, tenant: Tenant) -> _Bucket:
        key = _key(tenant)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(tenant)
            for field, value in _tenant_ids(tenant):
                self._tenant_index.setdefault((field, value), {})[key] = None
        return bucket

    def _add_episode(self, episode: Episode) -> None:
        self._episodes[episode.id] = episode
        self._bucket(episode.tenant).episodes[episode.id] = None

    def _add_entity(self, entity: Entity, vector: np.ndarray | None) -> None:
        """Index an entity held without its embedding (that lives in `_vectors`)."""
        self._entities[entity.id] = entity
        self._graph.add_node(entity.id)
        if vector is not None:
            self._vectors[entity.id] = vector
        bucket = self._bucket(entity.tenant)
        bucket.entities[entity.id] = None
        for key in entity.keys:
            bucket.keys.setdefault(key, {})[entity.id] = None
        self._index_vector(bucket, "entities", entity)

    def _add_relation(self, rel: Relation, vector: np.ndarray | None) -> None:
        if rel.id not in self._relations:  # an update keeps the edge's place in write order
            self._written[rel.id] = next(self._next_written)
        self._relations[rel.id] = rel
        self._graph.add_edge(rel.source_id, rel.destination_id, key=rel.id)
        if vector is not None:
            self._vectors[rel.id] = vector
        bucket = self._bucket(rel.tenant)
        bucket.relations[rel.id] = None
        self._index_vector(bucket, "relations", rel)

    def _set_entity(self, entity: Entity) -> None:
        """Replace a held entity's record (no embedding; its vector stays), its keys re-indexed."""
        bucket = self._bucket(entity.tenant)
        self._unindex_keys(bucket, self._entities[entity.id])
        self._entities[entity.id] = entity
        for key in entity.keys:
            bucket.keys.setdefault(key, {})[entity.id] = None

    def _unindex_keys(self, bucket: _Bucket, entity: Entity) -> None:
        for key in entity.keys:
            holders = bucket.keys.get(key)
            if holders is not None:
                holders.pop(entity.id, None)
                if not holders:
                    del bucket.keys[key]

    def _drop_entity(self, entity_id: str) -> None:
        """Forget an entity whose edges are gone already; its tenant's matrix is rebuilt on
        next use (a merge is rare, a search right after it pays once)."""
        entity = self._entities.pop(entity_id)
        bucket = self._bucket(entity.tenant)
        self._unindex_keys(bucket, entity)
        bucket.entities.pop(entity_id, None)
        bucket.blocks.pop("entities", None)
        self._vectors.pop(entity_id, None)
        self._graph.remove_node(entity_id)

    def _drop_relation(self, rel_id: str) -> None:
        rel = self._relations.pop(rel_id)
        del self._written[rel_id]
        self._graph.remove_edge(rel.source_id, rel.destination_id, key=rel_id)
        self._vectors.pop(rel_id, None)
        bucket = self._bucket(rel.tenant)
        bucket.relations.pop(rel_id, None)
        bucket.blocks.pop("relations", None)

    def _move_relation(self, rel: Relation) -> None:
        """A held edge with new ends (same id, place in write order and vector)."""
        old = self._relations[rel.id]
        self._graph.remove_edge(old.source_id, old.destination_id, key=rel.id)
        self._add_relation(_detached(rel), None)

    def _index_vector(self, bucket: _Bucket, table: str, record: Entity | Relation) -> None:
        """Keep a built matrix in step with a write (or drop it when it can't be)."""
        block = bucket.blocks.get(table)
        if block is None:
            return
        stored = self._vectors.get(record.id)
        if stored is None or stored.shape[0] != block.rows.shape[1]:
            bucket.blocks.pop(table, None)
            return
        if isinstance(record, Relation):
            span = None if block.spans is None else _span(record)
            block.upsert(record.id, stored, record.invalid_at is None, span=span)
        else:
            block.upsert(record.id, stored, True)

    def _out(self, record: Entity | Relation) -> Any:
        """A copy with its embedding re-attached that shares no mutable list with the store
        (a deep copy cost ~6x more and dominated search time in the benchmark)."""
        copy = _detached(record)
        vector = self._vectors.get(record.id)
        copy.embedding = None if vector is None else vector.tolist()
        return copy

    def _scope_keys(self, scope: Tenant, exact: bool = False) -> list[str]:
        """The exact tenant keys a scope covers (`exact`: only the scope's own key)."""
        if exact:
            return [scope.key] if scope.key in self._buckets else []
        sets = [self._tenant_index.get(pair, {}) for pair in _tenant_ids(scope)]
        if not sets:
            return []
        smallest = min(sets, key=len)  # in bucket order; the others only filter
        return [key for key in smallest if all(key in other for other in sets)]

    # ------------------------------------------------------------------ writes

    @_locked
    def apply(self, plan: WritePlan) -> None:
        """Validate, write in one SQLite transaction, and only after COMMIT update memory."""
        with self._transaction() as conn:
            self._ready()  # another process may have committed before we got the write lock
            _take_turn(conn, _key(plan.tenant), plan.based_on)
            entities, relations, outcome = self._planned_state(plan)
            renames = self._planned_renames(plan, entities, relations)
            pairs = list(plan.possible_duplicates)
            facts = self._facts.plan(plan, outcome)
            vectors = {r.id: v for r in (*plan.new_entities, *plan.new_relations)
                       if (v := _vec(r.embedding)) is not None}  # fmt: skip
            all_vectors = (*vectors.values(), *facts.vectors.values())
            dims = {v.shape[0] for v in all_vectors if v is not None} | ({self.dims} - {None})
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
            for entity_event in renames:
                _write_entity_event(conn, entity_event)
            _write_pairs(conn, plan.tenant, pairs)
        try:  # the _add_* helpers also take an existing record (its vector is kept)
            for episode in plan_episodes(plan):
                self._add_episode(episode.model_copy(deep=True))
            for entity in entities.values():
                if entity.id in self._entities:
                    self._set_entity(entity)
                else:
                    self._add_entity(entity, vectors.get(entity.id))
            for rel in relations.values():
                self._add_relation(rel, vectors.get(rel.id))
            if facts:
                self._facts.commit(facts)
                self._bucket(plan.tenant)
            self.dims = self.dims or next(iter(dims), None)
        except BaseException:
            self._load()  # memory must match the committed database, whatever happened
            raise

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
        existing = Existing(
            episodes=self._episodes,
            entities=self._entities,
            relations=self._relations,
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

    # ------------------------------------------------------------------ entity repair

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
            self._ready()
            found = [self._out(e) for i in (keep_id, other_id) if (e := self._entities.get(i))]
            keep, other = check_pair(scope, keep_id, other_id, found)
            _take_turn(conn, _key(keep.tenant), None)
            change = plan_merge(keep, other, [self._out(r) for r in self._edges_of(other_id)], at)
            pairs = repoint_pairs(self._pairs(conn, [_key(keep.tenant)]), keep_id, other_id)
            self._write(conn, "entities", change.keep, None)
            for rel in change.moved:
                self._write(conn, "relations", rel, None)
            for rel in change.dropped:
                conn.execute("DELETE FROM relations WHERE id = ?", (rel.id,))
            conn.execute("DELETE FROM entities WHERE id = ?", (other_id,))
            _write_entity_event(conn, change.event)
            for pair in pairs.deletes:
                conn.execute(
                    "DELETE FROM possible_duplicates WHERE tenant_key = ? AND pair = ?",
                    (_key(keep.tenant), pair),
                )
            _write_pairs(conn, keep.tenant, pairs.creates)
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
            self._ready()
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
            taken = [r.id for r in merge.undo.dropped if r.id in self._relations]
            other_exists = merge.undo.other.id in self._entities
            change = plan_split(merge, split, keep, other_exists, edges, taken, at)
            _take_turn(conn, _key(merge.tenant), None)
            restored_vec = _vec(change.restored.embedding)
            self._write(conn, "entities", change.restored, restored_vec)
            self._write(conn, "entities", change.keep, None)
            for rel in change.moved:
                self._write(conn, "relations", rel, None)
            for rel in change.recreated:
                self._write(conn, "relations", rel, _vec(rel.embedding))
            _write_entity_event(conn, change.event)
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
    def possible_duplicates(self, scope: Tenant) -> list[PossibleDuplicate]:
        pairs = self._pairs(self._connection(), self._scope_keys(scope))
        held = self._entities
        return [p for p in pairs if p.entity_id in held and p.candidate_id in held]

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
            self._ready()
            keys = self._scope_keys(scope)
            for key in keys:
                for statement in _DELETE_TENANT.values():  # graph, facts, repair records
                    conn.execute(statement, (key,))
                _take_turn(conn, key, None)
        self._facts.drop(keys)
        removed = 0
        for key in keys:
            bucket = self._buckets.pop(key)
            for pair in _tenant_ids(bucket.tenant):
                keys_with_id = self._tenant_index.get(pair, {})
                keys_with_id.pop(key, None)
                if not keys_with_id:
                    self._tenant_index.pop(pair, None)
            removed += len(bucket.entities) + len(bucket.relations)
            for rel_id in bucket.relations:
                rel = self._relations.pop(rel_id)
                del self._written[rel_id]
                self._graph.remove_edge(rel.source_id, rel.destination_id, key=rel_id)
                self._vectors.pop(rel_id, None)
            for entity_id in bucket.entities:
                del self._entities[entity_id]
                self._vectors.pop(entity_id, None)
                self._graph.remove_node(entity_id)
            for episode_id in bucket.episodes:
                del self._episodes[episode_id]
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

    # ------------------------------------------------------------------ reads

    @_locked
    def get_entities(self, scope: Tenant, ids: Sequence[str]) -> list[Entity]:
        found = (self._entities.get(i) for i in dict.fromkeys(ids))
        return [self._out(e) for e in found if e is not None and scope.matches(e.tenant)]

    @_locked
    def get_relations(self, scope: Tenant, ids: Sequence[str]) -> list[Relation]:
        found = (self._relations.get(i) for i in dict.fromkeys(ids))
        return [self._out(r) for r in found if r is not None and scope.matches(r.tenant)]

    @_locked
    def find_entities(
        self, scope: Tenant, keys: Sequence[str], *, exact: bool = False
    ) -> list[Entity]:
        ids: dict[str, None] = {}
        for tenant_key in self._scope_keys(scope, exact):
            index = self._buckets[tenant_key].keys
            for key in keys:
                ids.update(index.get(key, {}))
        return [self._out(self._entities[i]) for i in ids]

    @_locked
    def similar_entities(
        self, scope: Tenant, vector: np.ndarray, k: int, *, exact: bool = False, light: bool = False
    ) -> list[tuple[Entity, float]]:
        blocks = [self._block(key, "entities") for key in self._scope_keys(scope, exact)]
        hits = self._search(blocks, vector, k, None)
        if light:  # as the Neo4j store: the records without their embedding
            return [(_detached(self._entities[i]), score) for i, score in hits]
        return [(self._out(self._entities[i]), score) for i, score in hits]

    @_locked
    def similar_relations(
        self, scope: Tenant, vector: np.ndarray, k: int, validity: Validity, *, refs: bool = False
    ) -> Any:
        """Top-k edges by cosine; with `refs`, as `EdgeRef`s (hop 0) without copying records."""
        blocks = [self._block(key, "relations") for key in self._scope_keys(scope)]
        hits = self._search(blocks, vector, k, validity)
        if refs:
            rels = self._relations
            return [EdgeRef(i, (r := rels[i]).source_id, r.relation, r.destination_id, 0, score)
                    for i, score in hits]  # fmt: skip
        return [(self._out(self._relations[i]), score) for i, score in hits]

    def _block(self, tenant_key: str, table: str) -> VectorBlock:
        """The tenant's matrix for `table`, built on first use, then kept in step with writes."""
        bucket = self._buckets[tenant_key]
        block = bucket.blocks.get(table)
        if block is None:
            records: dict[str, Any] = self._entities if table == "entities" else self._relations
            ids = [i for i in getattr(bucket, table) if i in self._vectors]
            vectors = [self._vectors[i] for i in ids]
            current = [getattr(records[i], "invalid_at", None) is None for i in ids]
            block = bucket.blocks[table] = VectorBlock.build(ids, vectors, current, self.dims)
        return block

    def _spans(self, block: VectorBlock) -> np.ndarray:
        """The validity intervals of an edge block's rows, built on the first `as_of` search."""
        if block.spans is None:
            spans = np.empty((block.rows.shape[0], 2), dtype=np.int64)  # as many as rows fit
            for row, rel_id in enumerate(block.ids):
                spans[row] = _span(self._relations[rel_id])
            block.spans = spans
        return block.spans[: len(block.ids)]

    def _search(
        self, blocks: Iterable[VectorBlock], vector: np.ndarray, k: int, validity: Validity | None
    ) -> list[tuple[str, float]]:
        """Top-k within each block among the rows `validity` accepts (None: the flagged rows),
        merged across blocks."""
        if k <= 0:
            return []
        query, _ = unit_vector(vector)
        candidates: list[tuple[str, float]] = []
        for block in blocks:
            if not block.ids:
                continue
            if block.matrix.shape[1] != query.shape[0]:
                raise StoreError(f"query has {query.shape[0]} dims, the store {self.dims}")
            scores = row_scores(block.matrix, query)
            if validity is not None and validity.include_invalid:
                rows = None
            elif validity is None or validity.as_of is None:
                rows = block.selected()
            else:
                spans = self._spans(block)
                when = _micros(validity.as_of)
                rows = np.flatnonzero((spans[:, 0] <= when) & (spans[:, 1] > when))
            if rows is None:
                best = top_k(scores, k)
            else:
                best = rows[top_k(scores[rows], k)]
            candidates.extend((block.ids[r], float(scores[r])) for r in best)
        candidates.sort(key=lambda hit: -hit[1])  # best first, across all blocks
        return candidates[:k]

    @_locked
    def relations_touching(
        self, scope: Tenant, entity_ids: Sequence[str], validity: Validity, *, exact: bool = False
    ) -> list[Relation]:
        found: dict[str, Relation] = {}
        for entity_id in entity_ids:
            for rel in self._edges_of(entity_id):
                in_scope = rel.tenant == scope if exact else scope.matches(rel.tenant)
                if in_scope and validity.accepts(rel):
                    found.setdefault(rel.id, rel)
        return [self._out(r) for r in found.values()]

    def _edges_of(self, entity_id: str) -> Iterator[Relation]:
        """Every edge at a node, outgoing then incoming (a self-loop only once), in the order of
        `out_edges`/`in_edges(keys=True)`; read from the graph's adjacency dicts, which costs a
        third of those views per edge (a walk passes hundreds of edges at hub nodes)."""
        graph = self._graph
        if entity_id not in graph:
            return
        relations = self._relations
        for keys in graph._succ[entity_id].values():
            for key in keys:
                yield relations[key]
        for source, keys in graph._pred[entity_id].items():
            if source != entity_id:
                for key in keys:
                    yield relations[key]

    @_locked
    def expand(
        self,
        scope: Tenant,
        entity_ids: Sequence[str],
        hops: int,
        validity: Validity,
        limit: int,
        *,
        vector: np.ndarray | None = None,
    ) -> Any:
        """Breadth-first, direction ignored, walking only accepted in-scope edges. With
        `vector`, the walked edges come back as scored `EdgeRef`s and no record is copied."""
        walked = self._walk(scope, entity_ids, hops, validity, limit)
        if vector is None:
            return [(self._out(rel), hop) for rel, hop in walked]
        dot = np.asarray(vector, dtype=np.float32).reshape(-1).dot  # `edge_score`, inlined
        vectors = self._vectors
        return [EdgeRef(rel.id, rel.source_id, rel.relation, rel.destination_id, hop,
                        0.0 if (v := vectors.get(rel.id)) is None else float(dot(v)))
                for rel, hop in walked]  # fmt: skip

    @_locked
    def siblings(
        self,
        scope: Tenant,
        keys: Sequence[tuple[str, str, bool]],
        validity: Validity,
        limit: int,
        *,
        vector: np.ndarray,
    ) -> list[EdgeRef]:
        """The edges with one relation name on one side of each hub (see `GraphStore`): only
        the hub's in- or out-adjacency is walked, the relation name is compared before anything
        else, and each key's matches come in write order. Scored as `expand(vector=)` scores."""
        result: list[EdgeRef] = []
        if limit <= 0:
            return result
        graph, relations, written = self._graph, self._relations, self._written
        dot = np.asarray(vector, dtype=np.float32).reshape(-1).dot  # `edge_score`, inlined
        seen: set[str] = set()
        in_scope: dict[int, bool] = {}  # as in `_walk`
        for hub, name, hub_is_destination in keys:
            if hub not in graph:
                continue
            adjacency = graph._pred[hub] if hub_is_destination else graph._succ[hub]
            found: list[Relation] = []
            for edge_keys in adjacency.values():
                for rel_id in edge_keys:
                    rel = relations[rel_id]
                    if rel.relation != name or rel_id in seen:
                        continue
                    matched = in_scope.get(id(rel.tenant))
                    if matched is None:
                        matched = in_scope[id(rel.tenant)] = scope.matches(rel.tenant)
                    if matched and validity.accepts(rel):
                        found.append(rel)
            found.sort(key=lambda rel: written[rel.id])
            for rel in found:
                seen.add(rel.id)
                vec = self._vectors.get(rel.id)
                score = 0.0 if vec is None else float(dot(vec))
                result.append(
                    EdgeRef(rel.id, rel.source_id, rel.relation, rel.destination_id, 2, score)
                )
                if len(result) >= limit:
                    return result
        return result

    def _walk(
        self, scope: Tenant, entity_ids: Sequence[str], hops: int, validity: Validity, limit: int
    ) -> list[tuple[Relation, int]]:
        """`expand`'s walk over the stored records themselves (callers copy what they return)."""
        result: list[tuple[Relation, int]] = []
        seen: set[str] = set()
        frontier = list(dict.fromkeys(entity_ids))
        visited = set(frontier)
        # scope.matches per distinct tenant object (records share few); ids are stable here,
        # as the store lock keeps every record alive for the whole call
        in_scope: dict[int, bool] = {}
        for hop in range(1, hops + 1):
            next_frontier: list[str] = []
            for node in frontier:
                for rel in self._edges_of(node):
                    if rel.id in seen:
                        continue
                    matched = in_scope.get(id(rel.tenant))
                    if matched is None:
                        matched = in_scope[id(rel.tenant)] = scope.matches(rel.tenant)
                    if not (matched and validity.accepts(rel)):
                        continue
                    if len(result) >= limit:
                        return result
                    seen.add(rel.id)
                    result.append((rel, hop))
                    other = rel.destination_id if rel.source_id == node else rel.source_id
                    if other not in visited:
                        visited.add(other)
                        next_frontier.append(other)
            frontier = next_frontier
        return result

    @_locked
    def snapshot(self, scope: Tenant, validity: Validity) -> GraphSnapshot:
        entities: list[Entity] = []
        relations: list[Relation] = []
        for key in self._scope_keys(scope):
            bucket = self._buckets[key]
            entities.extend(self._out(self._entities[i]) for i in bucket.entities)
            rels = (self._relations[i] for i in bucket.relations)
            relations.extend(self._out(r) for r in rels if validity.accepts(r))
        return GraphSnapshot(entities=entities, relations=relations)

    @_locked
    def episodes(self, scope: Tenant) -> list[Episode]:
        """The scope's episodes in the order they were written."""
        return [e.model_copy(deep=True) for e in self._episodes.values()
                if scope.matches(e.tenant)]  # fmt: skip

    # ------------------------------------------------------------------ the fact memory

    @_locked
    def get_facts(self, scope: Tenant, ids: Sequence[str]) -> list[Fact]:
        return self._facts.get(scope, ids)

    @_locked
    def facts(self, scope: Tenant) -> list[Fact]:
        return self._facts.all(self._scope_keys(scope))

    @_locked
    def similar_facts(
        self, scope: Tenant, vector: np.ndarray, k: int, *, exact: bool = False
    ) -> list[tuple[Fact, float]]:
        """Numpy top-k over the rows of the scope's tenants only, like `similar_entities`."""
        blocks = [self._facts.block(key, self.dims) for key in self._scope_keys(scope, exact)]
        return [(self._facts.out(i), score) for i, score in self._search(blocks, vector, k, None)]

    @_locked
    def lexical_facts(
        self, scope: Tenant, words: list[str], k: int, *, exact: bool = False
    ) -> list[tuple[Fact, float]]:
        """BM25 top-k current facts for query terms (`lexical_query.query_terms`)."""
        keys = self._scope_keys(scope, exact)
        hits = lexical.search(self._connection(), "facts", keys, words, k)
        return [(self._facts.out(i), s) for i, s in hits if i in self._facts.facts]

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
                for e in self._facts.events_of(scope)]  # fmt: skip

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
            self._ready()
            self._write(conn, "summaries", summary, None)
        self._facts.set_summary(summary.model_copy(deep=True))
        self._bucket(summary.tenant)

    # ------------------------------------------------------------------ the whole store

    @_locked
    def tenants(self) -> list[Tenant]:
        """Every exact tenant holding at least one record, sorted by key."""
        return [self._buckets[key].tenant for key in sorted(self._buckets)]

    @_locked
    def stats(self, scope: Tenant | None = None) -> StoreStats:
        keys = list(self._buckets) if scope is None else self._scope_keys(scope)
        buckets = [self._buckets[key] for key in keys]
        relations = [self._relations[i] for b in buckets for i in b.relations]
        valid = sum(r.invalid_at is None for r in relations)
        return StoreStats(
            entities=sum(len(b.entities) for b in buckets),
            relations=len(relations),
            valid_relations=valid,
            invalid_relations=len(relations) - valid,
            episodes=sum(len(b.episodes) for b in buckets),
            tenants=len(buckets),
        )

    def rebuild_vector_indexes(
        self,
        kinds: Sequence[str] | None = None,
        *,
        progress: Callable[[str, float], None] | None = None,
    ) -> list[IndexRebuild]:
        """Nothing to rebuild: vectors live in in-memory matrices, searched exactly."""
        check_index_kinds(kinds)
        return []
