"""The embedded store's in-memory graph: per-tenant buckets (entities, edges,
episodes, name keys, vector blocks), the networkx MultiDiGraph the walks use, and the reads
over them (key lookup, vector search, `expand`, `siblings`, snapshots). Nothing here touches
SQLite: store.py writes first and calls the `_add_*` / `_drop_*` helpers after COMMIT.

`GraphIndex` is a mixin of `EmbeddedGraphStore` (store.py), which owns the lock, the state it
reads (set by `_load`) and the transaction; only the embedded store's modules import this."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Concatenate, ParamSpec, TypeVar

import numpy as np

from mem0g.stores.base import EdgeRef, StoreError
from mem0g.stores.embedded.loading import TenantLoader, _Bucket
from mem0g.stores.embedded.schema import _detached, _key, _tenant_ids
from mem0g.stores.vectors import VectorBlock, as_vector, blocks_top, has_direction, unit_vector
from mem0g.stores.walk import WalkRequest, WalkResult, walk_in_turn
from mem0g.types import Entity, Episode, GraphSnapshot, Relation, Tenant, UpdateQuery, Validity

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
_S = TypeVar("_S")  # the store (its `_lock` and `_ready`)


def _locked(method: Callable[Concatenate[_S, _P], _R]) -> Callable[Concatenate[_S, _P], _R]:
    """Every public call holds the store's lock and sees an open, up-to-date store; the
    outermost one first unloads the tenants used longest ago, if there are too many."""

    def wrapper(self: Any, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._lock:
            target = _target(args, kwargs)
            if self._calls == 0:  # a call inside a call keeps what the outer one read
                self._evict(target)
            self._calls += 1
            try:
                self._ready(target)
                return method(self, *args, **kwargs)
            finally:
                self._calls -= 1

    functools.update_wrapper(wrapper, method)  # as @functools.wraps, keeping wrapper's type
    return wrapper


def _target(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Tenant | str | None:
    """What a public call touches, for lazy loading: a scope (its first argument, or a
    `scope`/`tenant` keyword) or a record's exact tenant key (a plan, a summary)."""
    first = args[0] if args else next((kwargs[k] for k in _TARGETS if k in kwargs), None)
    if isinstance(first, Tenant):
        return first
    tenant = getattr(first, "tenant", None)
    return tenant.key if isinstance(tenant, Tenant) else None


_TARGETS = ("scope", "tenant", "plan", "summary")


class GraphIndex(TenantLoader):
    """The in-memory graph and its reads (a mixin of `EmbeddedGraphStore`); the state it
    reads is declared and loaded by `TenantLoader`."""

    _lock: threading.RLock

    def _bucket(self, tenant: Tenant) -> _Bucket:
        """The tenant's bucket: loaded first if the file holds the tenant, new otherwise."""
        key = _key(tenant)
        bucket = self._buckets.get(key)
        if bucket is None:
            if key in self._known:
                self._ensure([key])
                return self._buckets[key]
            self._know(tenant)
            bucket = self._buckets[key] = _Bucket(tenant)
        return bucket

    def _add_episode(self, episode: Episode, rank: int | None = None) -> None:
        self._episodes[episode.id] = episode
        if episode.id not in self._episode_rank:
            self._episode_rank[episode.id] = next(self._next_episode) if rank is None else rank
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

    def _add_relation(
        self, rel: Relation, vector: np.ndarray | None, rank: int | None = None
    ) -> None:
        if rel.id not in self._relations:  # an update keeps the edge's place in write order
            self._written[rel.id] = next(self._next_written) if rank is None else rank
        self._relations[rel.id] = rel
        self._graph.add_edge(rel.source_id, rel.destination_id, key=rel.id)
        self._newest.pop(rel.source_id, None)
        self._newest.pop(rel.destination_id, None)
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
        self._newest.pop(entity_id, None)

    def _drop_relation(self, rel_id: str) -> None:
        rel = self._relations.pop(rel_id)
        del self._written[rel_id]
        self._graph.remove_edge(rel.source_id, rel.destination_id, key=rel_id)
        self._newest.pop(rel.source_id, None)
        self._newest.pop(rel.destination_id, None)
        self._vectors.pop(rel_id, None)
        bucket = self._bucket(rel.tenant)
        bucket.relations.pop(rel_id, None)
        bucket.blocks.pop("relations", None)

    def _move_relation(self, rel: Relation) -> None:
        """A held edge with new ends (same id, place in write order and vector)."""
        old = self._relations[rel.id]
        self._graph.remove_edge(old.source_id, old.destination_id, key=rel.id)
        self._newest.pop(old.source_id, None)
        self._newest.pop(old.destination_id, None)
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
        """The exact tenant keys a scope covers (`exact`: only the scope's own key), read
        into memory."""
        keys = self._known_keys(scope, exact)
        self._ensure(keys)
        return keys

    def _known_keys(self, scope: Tenant, exact: bool = False) -> list[str]:
        """The keys `_scope_keys` gives, without reading their tenants (counts ask SQLite)."""
        if exact:
            return [scope.key] if scope.key in self._known else []
        sets = [self._tenant_index.get(pair, {}) for pair in _tenant_ids(scope)]
        if not sets:
            return []
        smallest = min(sets, key=len)  # in first-seen order; the others only filter
        return [key for key in smallest if all(key in other for other in sets)]

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

    def name_ranker(self, scope: Tenant, *, wait: bool = False) -> None:
        """Nothing to hold apart: `similar_entities` already ranks the names in memory."""
        return None

    @_locked
    def similar_relations(
        self, scope: Tenant, vector: np.ndarray, k: int, validity: Validity
    ) -> list[EdgeRef]:
        """Top-k edges by cosine, as `EdgeRef`s (hop 0) without copying records."""
        blocks = [self._block(key, "relations") for key in self._scope_keys(scope)]
        hits = self._search(blocks, vector, k, validity)
        rels = self._relations
        return [EdgeRef(i, (r := rels[i]).source_id, r.relation, r.destination_id, 0, score)
                for i, score in hits]  # fmt: skip

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
        merged across blocks (`vectors.blocks_top`)."""
        if k <= 0:
            return []
        query, _ = unit_vector(vector)
        picked: list[tuple[Sequence[str], np.ndarray, np.ndarray | None]] = []
        for block in blocks:
            if not block.ids:
                continue
            if block.matrix.shape[1] != query.shape[0]:
                raise StoreError(f"query has {query.shape[0]} dims, the store {self.dims}")
            rows: np.ndarray | None
            if validity is not None and validity.include_invalid:
                rows = None
            elif validity is None or validity.as_of is None:
                rows = block.selected()
            else:
                spans = self._spans(block)
                when = _micros(validity.as_of)
                rows = np.flatnonzero((spans[:, 0] <= when) & (spans[:, 1] > when))
            picked.append((block.ids, block.matrix, rows))
        return blocks_top(picked, query, k)

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

    @_locked
    def update_candidates(
        self, tenant: Tenant, queries: Sequence[UpdateQuery], k: int
    ) -> list[list[Relation]]:
        """The contract's order: identical, rivals, cosine, newest; only the `k` winners
        are copied out (a hub's other edges cost one vector row each, not a record copy)."""
        out: list[list[Relation]] = []
        for q in queries:
            found: dict[str, Relation] = {}
            for node in (q.source_id, q.destination_id):
                for rel in self._edges_of(node):
                    if rel.tenant == tenant and rel.invalid_at is None:
                        found.setdefault(rel.id, rel)
            edges = list(found.values())
            scores = self._cosines([r.id for r in edges], q.vector)

            def rank(
                n: int, edges: list[Relation] = edges, q: UpdateQuery = q,
                scores: np.ndarray = scores,
            ) -> tuple[bool, bool, float, int]:  # fmt: skip
                rel = edges[n]
                rival = rel.source_id == q.source_id and rel.relation == q.relation
                identical = rival and rel.destination_id == q.destination_id
                return (not identical, not rival, -float(scores[n]), -self._written[rel.id])

            order = sorted(range(len(edges)), key=rank)[: max(0, k)]
            out.append([_detached(edges[n]) for n in order])
        return out

    def _cosines(self, ids: list[str], vector: Sequence[float] | None) -> np.ndarray:
        """Cosine of each record's stored vector to `vector`; 0 without either."""
        scores = np.zeros(len(ids), dtype=np.float64)
        if vector is None or not ids:
            return scores
        if not has_direction(as_vector(vector)):  # zero or not finite: as Neo4j, 0
            return scores
        query = np.asarray(vector, dtype=np.float64)
        norm = float(np.linalg.norm(query))
        held = [(n, self._vectors.get(rel_id)) for n, rel_id in enumerate(ids)]
        rows = [(n, v) for n, v in held if v is not None and v.shape[0] == query.shape[0]]
        if not rows:
            return scores
        matrix = np.stack([v for _, v in rows]).astype(np.float64)
        sizes = np.linalg.norm(matrix, axis=1)
        dots = matrix @ query
        cosines = np.divide(dots, sizes * norm, out=np.zeros_like(dots), where=sizes > 0)
        scores[[n for n, _ in rows]] = cosines
        return scores

    def _newest_first(self, entity_id: str) -> Iterator[Relation]:
        """Every edge at a node (either direction, a self-loop once), newest first in write
        order: the walk's cut at `limit` keeps a hub's latest edges. A speaker's own node
        gathers an edge or more per message, so oldest first would freeze what the expansion
        sees of it after a few hundred messages. The order is kept per node until an edge at
        it changes (`_newest`): sorting a 5,000-edge node on every search cost 0.9 ms."""
        ids = self._newest.get(entity_id)
        if ids is None:
            ids = [rel.id for rel in self._edges_of(entity_id)]
            ids.sort(key=self._written.__getitem__, reverse=True)
            self._newest[entity_id] = ids
        relations = self._relations
        return (relations[rel_id] for rel_id in ids)

    def _edges_of(self, entity_id: str) -> Iterator[Relation]:
        """Every edge at a node, outgoing then incoming (a self-loop only once), in the order of
        `out_edges`/`in_edges(keys=True)`; read from the graph's adjacency dicts, which costs a
        third of those views per edge (a walk passes hundreds of edges at hub nodes)."""
        graph = self._graph
        if entity_id not in graph:
            return
        relations = self._relations
        # networkx's own adjacency dicts (not in its stubs): no view object per edge
        for keys in graph._succ[entity_id].values():  # type: ignore[attr-defined]
            for key in keys:
                yield relations[key]
        for source, keys in graph._pred[entity_id].items():  # type: ignore[attr-defined]
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
        vector: np.ndarray,
    ) -> list[EdgeRef]:
        """Breadth-first, direction ignored, walking only accepted in-scope edges; the walked
        edges come back as scored `EdgeRef`s and no record is copied."""
        walked = self._walk(scope, entity_ids, hops, validity, limit)
        dot = np.asarray(vector, dtype=np.float32).reshape(-1).dot  # `edge_score`, inlined
        vectors = self._vectors
        return [EdgeRef(rel.id, rel.source_id, rel.relation, rel.destination_id, hop,
                        0.0 if (v := vectors.get(rel.id)) is None else float(dot(v)))
                for rel, hop in walked]  # fmt: skip

    @_locked
    def walk(self, scope: Tenant, request: WalkRequest) -> WalkResult:
        """`GraphStore.walk` by the separate reads (in-process, so no round trips to save),
        under the store's lock: one snapshot, as the Neo4j store's one statement sees."""
        return walk_in_turn(self, scope, request)  # type: ignore[arg-type]

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
        else, and each key's matches come newest first in write order (as `expand`'s). Scored
        as `expand(vector=)` scores."""
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
            adjacency = (
                graph._pred[hub]  # type: ignore[attr-defined]  # as in _edges_of
                if hub_is_destination
                else graph._succ[hub]  # type: ignore[attr-defined]
            )
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
            found.sort(key=lambda rel: written[rel.id], reverse=True)  # newest first, as the walk
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
                for rel in self._newest_first(node):
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
    def snapshot(
        self, scope: Tenant, validity: Validity, *, embeddings: bool = True, exact: bool = False
    ) -> GraphSnapshot:
        out = self._out if embeddings else _detached
        entities: list[Entity] = []
        relations: list[Relation] = []
        for key in self._scope_keys(scope, exact):
            bucket = self._buckets[key]
            entities.extend(out(self._entities[i]) for i in bucket.entities)
            rels = (self._relations[i] for i in bucket.relations)
            relations.extend(out(r) for r in rels if validity.accepts(r))
        return GraphSnapshot(entities=entities, relations=relations)
