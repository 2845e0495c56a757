"""Lazy loading of the embedded store: opening reads which tenants the file holds, and a
tenant's rows are read into memory the first time a call touches it; past
`max_loaded_tenants`, the tenants used longest ago leave memory again (`_evict`).

Why: a store of 20k tenants took seconds to open (every record of every tenant parsed and
indexed) although a request touches one tenant. Now opening costs one grouped scan per table,
and the first read of a tenant pays for that tenant only. A commit by another connection
resets memory to "nothing loaded", so noticing it no longer reloads the whole file either.

What must not change with it (the store contract's results are identical to a full load):
scopes list their tenant keys in the order a full load met them (`_FIRST_SEEN`), edges,
episodes and fact histories keep their write order across tenants (ranks are SQLite rowids;
later writes count on from the largest), and the plan checks for ids "taken by any tenant"
ask the database, not the tenants in memory (`TakenIds`).

Why the bound: a long-running process (the service, a whole-store export) touched every
tenant in turn and kept them all: 20,000 small tenants held 2.4 GB. A tenant that leaves
memory is read again from the file when a call needs it, as after another connection's
commit; the tenants a call is about never leave during it (`_evict` runs only as a public
call begins, before it reads anything).
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import networkx as nx
import numpy as np

from mem0g.stores.base import StoreError
from mem0g.stores.embedded.facts import FactIndex
from mem0g.stores.embedded.schema import _from_row, _tenant, _tenant_ids, _vec_blob
from mem0g.stores.vectors import VectorBlock
from mem0g.types import Entity, Episode, Relation, Tenant


@dataclass
class _Bucket:
    """Everything of one exact tenant key; dicts are insertion-ordered sets of ids."""

    tenant: Tenant
    entities: dict[str, None] = field(default_factory=dict)
    relations: dict[str, None] = field(default_factory=dict)
    episodes: dict[str, None] = field(default_factory=dict)
    keys: dict[str, dict[str, None]] = field(default_factory=dict)  # entity key -> entity ids
    blocks: dict[str, VectorBlock] = field(default_factory=dict)  # "entities"/"relations"


# Tables in the order a full load read them (a tenant's first record decides its place).
_FIRST_SEEN = (
    "SELECT tenant_key, min(rowid) AS first FROM episodes GROUP BY tenant_key ORDER BY first",
    "SELECT tenant_key, min(rowid) AS first FROM entities GROUP BY tenant_key ORDER BY first",
    "SELECT tenant_key, min(rowid) AS first FROM relations GROUP BY tenant_key ORDER BY first",
    "SELECT tenant_key, min(rowid) AS first FROM facts GROUP BY tenant_key ORDER BY first",
    "SELECT tenant_key, min(rowid) AS first FROM fact_events GROUP BY tenant_key ORDER BY first",
    "SELECT tenant_key, min(rowid) AS first FROM summaries GROUP BY tenant_key ORDER BY first",
)

# One tenant set's rows, each table in rowid (write) order; the keys go in as one JSON array.
_KEYS = "tenant_key IN (SELECT value FROM json_each(?))"
_ROWS = {
    "episodes": f"SELECT rowid AS rank, * FROM episodes WHERE {_KEYS} ORDER BY rowid",
    "entities": f"SELECT rowid AS rank, * FROM entities WHERE {_KEYS} ORDER BY rowid",
    "relations": f"SELECT rowid AS rank, * FROM relations WHERE {_KEYS} ORDER BY rowid",
    "facts": f"SELECT rowid AS rank, * FROM facts WHERE {_KEYS} ORDER BY rowid",
    "fact_events": f"SELECT rowid AS rank, * FROM fact_events WHERE {_KEYS} ORDER BY rowid",
    "summaries": f"SELECT rowid AS rank, * FROM summaries WHERE {_KEYS} ORDER BY rowid",
}

_LAST_RANK = (
    "SELECT coalesce(max(rowid), 0) FROM episodes",
    "SELECT coalesce(max(rowid), 0) FROM relations",
    "SELECT coalesce(max(rowid), 0) FROM fact_events",
)

# Embedding sizes in bytes (float32), over every table that holds vectors.
_VECTOR_BYTES = (
    "SELECT DISTINCT length(embedding) FROM entities WHERE embedding IS NOT NULL "
    "UNION SELECT DISTINCT length(embedding) FROM relations WHERE embedding IS NOT NULL "
    "UNION SELECT DISTINCT length(embedding) FROM facts WHERE embedding IS NOT NULL"
)

_TAKEN = {
    "episodes": ("SELECT 1 FROM episodes WHERE id = ?", 1),
    "entities": ("SELECT 1 FROM entities WHERE id = ?", 1),
    "relations": ("SELECT 1 FROM relations WHERE id = ?", 1),
    # a fact id is taken by a current fact or by a history (a deleted fact's events)
    "facts": (
        "SELECT 1 FROM facts WHERE id = ? UNION ALL SELECT 1 FROM fact_events WHERE fact_id = ?",
        2,
    ),
    "fact_events": ("SELECT 1 FROM fact_events WHERE id = ?", 1),
    "entity_events": ("SELECT 1 FROM entity_events WHERE id = ?", 1),
}


@dataclass(frozen=True)
class TakenIds:
    """Ids taken by any tenant of the file, asked of the database (a container for the plan
    rules' `Existing`): tenants that are not in memory hold ids too."""

    conn: sqlite3.Connection
    table: str

    def __contains__(self, item: object) -> bool:
        if not isinstance(item, str):
            return False
        statement, uses = _TAKEN[self.table]
        return self.conn.execute(statement, (item,) * uses).fetchone() is not None


class TenantLoader:
    """The loading half of `EmbeddedGraphStore` (the base of its `GraphIndex` mixin): the
    in-memory state, what is known, what is loaded."""

    dims: int | None
    path: Any
    _graph: nx.MultiDiGraph[str]
    _entities: dict[str, Entity]
    _relations: dict[str, Relation]
    _written: dict[str, int]
    _newest: dict[str, list[str]]
    _next_written: Iterator[int]
    _episodes: dict[str, Episode]
    _episode_rank: dict[str, int]
    _next_episode: Iterator[int]
    _vectors: dict[str, np.ndarray]
    _buckets: dict[str, _Bucket]  # loaded tenants only
    _known: dict[str, Tenant]  # every tenant key the file holds, in first-seen order
    _tenant_index: dict[tuple[str, str], dict[str, None]]
    _facts: FactIndex
    max_loaded_tenants: int | None = None  # None: no bound

    if TYPE_CHECKING:  # the store's and GraphIndex's (a subclass), which this mixin calls

        def _connection(self) -> sqlite3.Connection: ...
        def _scope_keys(self, scope: Tenant, exact: bool = False) -> list[str]: ...
        def _known_keys(self, scope: Tenant, exact: bool = False) -> list[str]: ...
        def _add_episode(self, episode: Episode, rank: int | None = None) -> None: ...
        def _add_entity(self, entity: Entity, vector: np.ndarray | None) -> None: ...
        def _add_relation(
            self, rel: Relation, vector: np.ndarray | None, rank: int | None = None
        ) -> None: ...

    def _load(self) -> None:
        """Forget every record in memory and learn which tenants the database holds."""
        conn = self._connection()
        self._data_version = conn.execute("PRAGMA data_version").fetchone()[0]
        self._graph = nx.MultiDiGraph()
        self._entities = {}
        self._relations = {}
        # relation id -> its place in write order (its rowid; new edges count on from the
        # largest): a hub's adjacency lists edges by neighbour, which is not write order
        # when one neighbour has several edges to it
        self._written = {}
        # entity id -> its edges' ids newest first (the walk's order), built on first use and
        # dropped when an edge at it is written, moved or removed
        self._newest = {}
        self._episodes = {}
        self._episode_rank = {}
        self._vectors = {}  # entity/relation id -> raw float32 embedding
        self._buckets = {}
        self._known = {}
        # ("user_id", "alice") -> the known tenant keys with that id, in first-seen order: a
        # scope's keys are an intersection of these, not a scan of every tenant of the store
        self._tenant_index = {}
        last_episode, last_relation, last_event = (
            conn.execute(statement).fetchone()[0] for statement in _LAST_RANK
        )
        self._next_episode = itertools.count(last_episode + 1)
        self._next_written = itertools.count(last_relation + 1)
        self._facts = FactIndex(first_rank=last_event + 1)
        for statement in _FIRST_SEEN:
            for key, _first in conn.execute(statement):
                if key not in self._known:
                    self._know(_tenant(key), key)
        sizes = {row[0] for row in conn.execute(_VECTOR_BYTES)}
        if self.dims is None and len(sizes) == 1:
            self.dims = next(iter(sizes)) // 4
        if any(size != (self.dims or 0) * 4 for size in sizes):
            raise StoreError(f"{self.path} holds embeddings that are not {self.dims}-dimensional")

    def _know(self, tenant: Tenant, key: str | None = None) -> str:
        """Register a tenant key as held by the store (on open, or at its first write);
        `key`: the tenant's key as stored (on open: not computed again 20k times)."""
        key = tenant.key if key is None else key
        if key not in self._known:
            self._known[key] = tenant
            for pair in _tenant_ids(tenant):
                self._tenant_index.setdefault(pair, {})[key] = None
        return key

    def _forget(self, key: str) -> None:
        """A deleted tenant: neither known nor loaded."""
        tenant = self._known.pop(key, None)
        self._buckets.pop(key, None)
        if tenant is None:
            return
        for pair in _tenant_ids(tenant):
            keys_with_id = self._tenant_index.get(pair, {})
            keys_with_id.pop(key, None)
            if not keys_with_id:
                self._tenant_index.pop(pair, None)

    def _ensure(self, keys: Iterable[str]) -> None:
        """Read these known tenants' rows into memory, those not loaded yet (one query per
        table for all of them, in rowid order, so memory is what a full load would hold)."""
        missing = []
        for key in dict.fromkeys(keys):
            if key in self._buckets:  # used now: the last to leave memory
                self._buckets[key] = self._buckets.pop(key)
            elif key in self._known:
                missing.append(key)
        if not missing:
            return
        for key in missing:  # before the rows, so `_bucket` never loads recursively
            self._buckets[key] = _Bucket(self._known[key])
        conn = self._connection()
        wanted = json.dumps(missing)
        for row in conn.execute(_ROWS["episodes"], (wanted,)):
            self._add_episode(_from_row("episodes", row), row["rank"])
        for row in conn.execute(_ROWS["entities"], (wanted,)):
            self._add_entity(_from_row("entities", row), _vec_blob(row["embedding"]))
        for row in conn.execute(_ROWS["relations"], (wanted,)):
            self._add_relation(
                _from_row("relations", row), _vec_blob(row["embedding"]), row["rank"]
            )
        for row in conn.execute(_ROWS["facts"], (wanted,)):
            self._facts.add_fact(_from_row("facts", row), _vec_blob(row["embedding"]))
        for row in conn.execute(_ROWS["fact_events"], (wanted,)):
            self._facts.add_event(_from_row("fact_events", row), row["rank"])
        for row in conn.execute(_ROWS["summaries"], (wanted,)):
            self._facts.set_summary(_from_row("summaries", row))

    def _unload(self, keys: Iterable[str]) -> int:
        """Take these loaded tenants' records out of memory (the file keeps them, and they
        stay known); returns how many entities and edges left."""
        keys = [key for key in dict.fromkeys(keys) if key in self._buckets]
        self._facts.drop(keys)
        removed = 0
        for key in keys:
            bucket = self._buckets.pop(key)
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
                del self._episode_rank[episode_id]
        if keys:
            self._newest.clear()  # built again on use
        return removed

    def _evict(self, target: Tenant | str | None) -> None:
        """Past `max_loaded_tenants`, unload the tenants used longest ago, down to three
        quarters of the bound (so a steady stream of new tenants unloads in batches), never
        one that `target` (the beginning call's scope or exact key) covers."""
        bound = self.max_loaded_tenants
        if bound is None or len(self._buckets) <= bound:
            return
        if isinstance(target, Tenant):
            keep = set(self._known_keys(target)) | {target.key}
        else:
            keep = {target} if target is not None else set()
        excess = len(self._buckets) - bound * 3 // 4
        self._unload([key for key in self._buckets if key not in keep][:excess])

    def _ensure_all(self) -> None:
        self._ensure(list(self._known))

    def _ensure_scope(self, scope: Tenant) -> None:
        """Load what a filter covers: every known key it matches (`_scope_keys` loads the
        keys it returns), and its own exact key."""
        self._scope_keys(scope)
        self._ensure([scope.key])
