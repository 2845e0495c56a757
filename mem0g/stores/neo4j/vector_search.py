"""Vector search on Neo4j: the HNSW index asked for `want` times a factor rows, the
factor learned per scope (1 for a tenant that owns the index, `overfetch` for one that shares
it), then an exact tenant scan when too few survive the filters; candidates re-ranked with the
embedded store's float32 arithmetic (`stores.vectors`), so both stores return the same ranking
and scores. The entity resolver's exact candidates come from the held name vectors
(entity_vectors.py), brought up to date by plan number.

`VectorSearch` is a mixin of `Neo4jGraphStore`; only the store's own modules use it."""

from __future__ import annotations

import functools
import math
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from mem0g.stores.base import EdgeRef, NameRanker, StoreError
from mem0g.stores.neo4j.entity_vectors import EntityVectors, Watermark
from mem0g.stores.neo4j.indexes import _INDEX_ERROR_PAUSE, _index_down
from mem0g.stores.neo4j.rows import _entity, _fact, _id_vectors, _scope, _validity, present
from mem0g.stores.neo4j.session import Neo4jSession
from mem0g.stores.vectors import (
    Hub,
    VectorBlock,
    best_first,
    hub_rescored,
    row_scores,
    summed,
    unit_rows,
    unit_vector,
)
from mem0g.types import Entity, Fact, Tenant, Validity

_FIELDS = {"entities": "entity", "relations": "relation", "facts": "fact"}  # row key per kind


# what decides how many index rows survive the filters: the over-fetch is learned per these
_FETCH_KEY = ("user_id", "agent_id", "run_id", "exact", "tenant_key", "include_invalid")


# a scope with fewer than `want` candidates in all (see `_nearest`): answered by the exact scan
_SMALL_SCOPE = 0.0


class VectorSearch(Neo4jSession):
    """Scored reads by vector (a mixin of `Neo4jGraphStore`)."""

    dims: int | None
    overfetch: int
    min_fetch: int
    max_fetch: int
    _lock: threading.RLock
    _vector_indexes: bool
    _fetch_factor: dict[tuple[Any, ...], float]
    _paused: dict[str, float]
    _entity_vectors: EntityVectors
    _name_scopes: dict[Tenant, tuple[str, ...]]  # a search scope -> its tenants' keys, as last read
    _names_checked: set[Tenant]  # scopes whose entities all carry a tenant sequence
    _names_loading: dict[str, Future[VectorBlock | None]]  # tenant key -> its first full read
    _names_loader: ThreadPoolExecutor | None  # the thread of those reads, made on first use
    _names_too_large: set[tuple[str, str]]  # (tenant key, epoch) found too large to hold

    if TYPE_CHECKING:  # provided by the store's other mixins (indexes.py)

        def _index_usable(self, kind: str) -> bool: ...

    def similar_entities(
        self, scope: Tenant, vector: np.ndarray, k: int, *, exact: bool = False, light: bool = False
    ) -> list[tuple[Entity, float]]:
        """With `light`: entities without their embedding, ranked by Neo4j's own cosine (the
        same order; scores agree with the embedded store's to ~1e-7): 50 rows of 384 floats
        cost the server and the client more than the HNSW query that found them."""
        if exact and (held := self._exact_entities(scope, vector, k, light)) is not None:
            return held
        params = {**_scope(scope, exact), "light": light}
        hits = self._nearest("entities", params, vector, k, light=light)
        return [(_entity(props), score) for props, score in hits if present(props)]

    def _exact_entities(
        self, tenant: Tenant, vector: np.ndarray, k: int, light: bool
    ) -> list[tuple[Entity, float]] | None:
        """The exact top k of an exact tenant (the entity resolver's candidates), scored here
        on its held name vectors with the embedded store's arithmetic and order; None for a
        tenant too large to hold (the index answers it). See entity_vectors.py."""
        self._ready()
        if self._entity_vectors.max_rows == 0:
            return None
        query, _ = self._unit_query(vector)
        if k <= 0:
            return []
        block = self._entity_block(tenant.key)
        if block is None:
            return None
        with self._lock:  # the block grows in place when another thread brings it up to date
            if not block.ids:
                return []
            if block.matrix.shape[1] != query.shape[0]:
                raise StoreError(f"query has {query.shape[0]} dims, the store {self.dims}")
            scores = row_scores(block.matrix, query)
            best = best_first(scores, k)  # as the embedded store ranks
            picked = [(block.ids[row], float(scores[row])) for row in best]
        ids = [i for i, _ in picked]
        rows = self._read("get_entities", {**_scope(tenant), "ids": ids, "light": light})
        found = {row["entity"]["id"]: row["entity"] for row in rows if present(row["entity"])}
        return [
            (_entity(found[i]), score)
            for i, score in picked
            if i in found  # (gone if the tenant was deleted since)
        ]

    def _entity_block(self, key: str) -> VectorBlock | None:
        """The tenant's name vectors, brought up to date: one read of the entities of plans
        committed since the held plan number, or of all of them on first use (or when the
        tenant was deleted and written again since). None when it is too large to hold."""
        held = self._entity_vectors
        with self._lock:
            mark = held.mark(key)
        if mark is not None:
            (row,) = self._read("entity_vectors_since", {"tenant_key": key, "since": mark.seq})
            if row["seq"] is not None and (row["epoch"] or "") == mark.epoch:
                ids, vectors = _id_vectors(row["rows"])
                with self._lock:
                    block = held.extend(key, Watermark(mark.epoch, row["seq"]), ids, vectors)
                if block is not None:
                    return block
        return self._entity_block_all(key)

    def _entity_block_all(self, key: str) -> VectorBlock | None:
        """All of the tenant's name vectors, read afresh and held (see `_entity_block`)."""
        held = self._entity_vectors
        (row,) = self._read("entity_vectors_all", {"tenant_key": key, "max_rows": held.max_rows})
        ids, vectors = _id_vectors(row["rows"])
        if row["size"] > held.max_rows:
            return None
        dims = self.dims or (len(vectors[0]) if vectors else None)
        if dims is None:  # nothing in the database has an embedding yet
            return VectorBlock.empty()
        mark = None if row["seq"] is None else Watermark(row["epoch"] or "", row["seq"])
        with self._lock:
            return held.load(key, mark, ids, vectors, dims)

    def name_ranker(self, scope: Tenant, *, wait: bool = False) -> NameRanker | None:
        """The scope's held name vectors for a search's linking, brought up to date by one
        read (`scope_entity_vectors`: per tenant of the scope, the entities of plans after the
        held plan number), which needs no query vector, so a search sends it before it embeds
        the query. Ranked on the client, exactly, as the embedded store ranks: the HNSW
        entity query (a server read after the embedding, and not exact) is left out of the
        search. A tenant new to the store is read whole once (`entity_vectors_all`), in the
        background unless `wait`: a search does not wait for a large tenant's vectors (22k
        names are 8.7M floats to decode), it links by the index meanwhile. None, and the
        index answers, also when the store holds no vectors (`entity_vectors` 0), when the
        scope holds more than it may, or while the scope's entities are not all accounted for
        by tenant sequence (entities written before mem0g kept one: checked once per scope)."""
        self._ready()
        held = self._entity_vectors
        if held.max_rows == 0:
            return None
        with self._lock:
            known = self._name_scopes.get(scope, ())
            marks = {key: {"epoch": m.epoch, "seq": m.seq}
                     for key in known if (m := held.mark(key)) is not None}  # fmt: skip
        rows = self._read("scope_entity_vectors", {**_scope(scope), "held": marks})
        with self._lock:
            for key in set(known) - {row["key"] for row in rows}:
                held.forget(key)  # the tenant was deleted (by another store)
            if len(self._name_scopes) >= 4096:  # many scopes: forget, relearn as they come
                self._name_scopes.clear()
                self._names_checked.clear()
            self._name_scopes[scope] = tuple(row["key"] for row in rows)  # held or loading
        blocks: list[tuple[str, VectorBlock]] = []
        size, loading = 0, []
        for row in rows:
            key, block = row["key"], None
            if row["since"] is not None:
                ids, vectors = _id_vectors(row["rows"])
                with self._lock:
                    block = held.extend(key, Watermark(row["epoch"], row["seq"]), ids, vectors)
            if block is None:
                if (key, row["epoch"]) in self._names_too_large:
                    return None  # known too large to hold: not read again on every search
                loading.append(self._load_names(key, row["epoch"]))
                continue
            size += len(block.ids)
            if size > held.max_rows:
                return None
            blocks.append((key, block))
        if loading:
            if not wait:
                return None
            for done in loading:
                if done.result() is None:  # (the load's errors are raised here)
                    return None
            return self.name_ranker(scope)  # now held: brought up to date once more
        if scope not in self._names_checked:
            (count,) = self._read("scope_entity_count", _scope(scope))
            if count["size"] != size:
                return None
        with self._lock:
            self._names_checked.add(scope)
            # as the block stands now: later rows land past this view, or in a new array
            views = tuple((block.ids[: len(block.ids)], block.matrix) for _, block in blocks)
        records = functools.partial(self._light_entities, scope)
        total = summed([row["fact_sum"] for row in rows])
        return NameRanker(views, self.dims, records, fact_sum=total, fact_sum_read=True)

    def _load_names(self, key: str, epoch: str) -> Future[VectorBlock | None]:
        """The tenant's first full read of its name vectors, on the store's one background
        thread; a read of the same tenant already under way is shared. A tenant too large to
        hold is remembered with its epoch (it can only shrink by a repair, a new epoch)."""
        with self._lock:
            running = self._names_loading.get(key)
            if running is not None:
                return running
            if self._names_loader is None:
                self._names_loader = ThreadPoolExecutor(1, thread_name_prefix="mem0g-names")
            future = self._names_loader.submit(self._entity_block_all, key)
            self._names_loading[key] = future

        def done(read: Future[VectorBlock | None]) -> None:
            with self._lock:
                self._names_loading.pop(key, None)
                if not read.cancelled() and read.exception() is None and read.result() is None:
                    if len(self._names_too_large) >= 4096:
                        self._names_too_large.clear()
                    self._names_too_large.add((key, epoch))

        future.add_done_callback(done)
        return future

    def _light_entities(self, scope: Tenant, ids: list[str]) -> list[Entity]:
        rows = self._read("get_entities", {**_scope(scope), "ids": ids, "light": True})
        return [_entity(row["entity"]) for row in rows if present(row["entity"])]

    def _unit_query(self, vector: np.ndarray) -> tuple[np.ndarray, bool]:
        """The query in the embedded store's float32 arithmetic, so scores and ties agree: at
        unit length, and whether it has a direction (a zero query stays as it is)."""
        query, directed = unit_vector(vector)
        if self.dims is not None and query.shape[0] != self.dims:
            raise StoreError(f"query has {query.shape[0]} dims, the store {self.dims}")
        return query, directed

    def similar_relations(
        self, scope: Tenant, vector: np.ndarray, k: int, validity: Validity
    ) -> list[EdgeRef]:
        """Light rows ranked by Neo4j's own cosine (the same order; scores agree with the
        embedded store's float32 ones to ~1e-7), no embeddings sent."""
        params = {**_scope(scope), **_validity(validity), "light": True}
        hits = self._nearest("relations", params, vector, k, light=True)
        return [
            EdgeRef(p["id"], p["source_id"], p["name"], p["destination_id"], 0, score)
            for p, score in hits
        ]

    def _nearest(
        self, kind: str, params: dict[str, Any], vector: np.ndarray, k: int, light: bool = False
    ) -> list[tuple[dict[str, Any], float]]:
        """Candidates from the index (over-fetched) or an exact tenant scan, re-ranked here
        with the embedded store's arithmetic; `light` rows carry no embedding, so they keep
        Neo4j's order and score, mapped from (1 + cos) / 2 back to the cosine."""
        column = _FIELDS[kind]
        rows = self._candidates(kind, params, vector, k)
        if not rows:
            return []
        if light:
            return [(row[column], 2.0 * float(row["score"]) - 1.0) for row in rows[:k]]
        query, _ = self._unit_query(vector)
        matrix = unit_rows(np.array([row[column]["embedding"] for row in rows], np.float32), None)
        scores = row_scores(matrix, query)
        order = sorted(range(len(rows)), key=lambda i: -scores[i])[:k]
        return [(rows[i][column], float(scores[i])) for i in order]

    def _candidates(
        self, kind: str, params: dict[str, Any], vector: np.ndarray, k: int
    ) -> list[dict[str, Any]]:
        """The statement's rows for the k nearest (and 10 more), best first by Neo4j's score:
        from the index when it serves this scope, else the exact scan."""
        self._ready()
        if k <= 0:
            return []
        query, directed = self._unit_query(vector)
        # Extra candidates absorb float differences and ties at the k-th place when re-ranked,
        # and either way a larger k widens the HNSW search (its recall at k=5 is not exact)
        want = k + 10
        params = {**params, "vector": query.tolist(), "zero_query": not directed, "want": want}
        key = (kind, params.get("as_of") is None, *(params.get(name) for name in _FETCH_KEY))
        small = self._fetch_factor.get(key) == _SMALL_SCOPE
        rows: list[dict[str, Any]] = []
        if (
            not small
            and self._vector_indexes
            and directed
            and want <= self.max_fetch
            and self._index_usable(kind)
        ):
            rows = self._from_index(kind, key, params, want)
        if len(rows) < want:  # too few of this scope among the global top-`fetch`
            rows = self._read(f"similar_{kind}_scan", params)
            # fewer than `want` in the whole scope: its exact scan is cheap, so the next
            # search skips the index; once it holds `want`, the index is tried again (a
            # scope that shares the index keeps the over-fetch `_from_index` learned)
            if len(rows) < want:
                self._remember(key, _SMALL_SCOPE)
            elif small:
                self._remember(key, None)
        return rows

    def _from_index(
        self, kind: str, key: tuple[Any, ...], params: dict[str, Any], want: int
    ) -> list[dict[str, Any]]:
        """Ask the index for `want` times a factor rows and keep the scope's. The factor starts
        at 1 (a tenant that owns the index needs no over-fetch, and the HNSW search costs more
        the more rows it returns); when too few survive it becomes `overfetch`, and is
        remembered per scope: a tenant that shares the index goes straight to the large fetch
        (then, if still short, the caller's exact scan) next time. Never fewer than
        `min_fetch` rows: the HNSW search widens with the rows asked for, and its recall at
        k=15 is not exact."""
        factor = self._fetch_factor.get(key, 1.0)
        while True:
            fetch = min(max(math.ceil(want * factor), self.min_fetch), self.max_fetch)
            try:
                rows = self._read(f"similar_{kind}_index", {**params, "fetch": fetch})
            except StoreError as exc:
                if not _index_down(exc):
                    raise
                with self._lock:  # the caller's exact scan answers, now and for a while
                    self._paused[kind] = time.monotonic() + _INDEX_ERROR_PAUSE
                return []
            if len(rows) >= want or factor >= self.overfetch or fetch >= self.max_fetch:
                break
            factor = float(self.overfetch)
        self._remember(key, factor)
        return rows

    def _remember(self, key: tuple[Any, ...], factor: float | None) -> None:
        """What `_nearest` learned about a scope (None: forget it)."""
        if factor is None:
            self._fetch_factor.pop(key, None)
            return
        if len(self._fetch_factor) >= 4096:  # many scopes: forget, relearn as they come back
            self._fetch_factor.clear()
        self._fetch_factor[key] = factor

    def fact_vector_sum(self, scope: Tenant, *, exact: bool = False) -> np.ndarray | None:
        """The scope's tenants' kept sums (cypher/facts.cypher, add_fact_vectors), added."""
        (row,) = self._read("fact_vector_sum", _scope(scope, exact))
        return summed(row["sums"])

    def similar_facts(
        self,
        scope: Tenant,
        vector: np.ndarray,
        k: int,
        *,
        exact: bool = False,
        hub: Hub | None = None,
    ) -> list[tuple[Fact, float]]:
        """Without `hub`: re-ranked here from the candidates' embeddings. With it: no
        embedding crosses the wire (384 floats a fact were about 3 ms of a search's client CPU
        at 10,000 facts): Neo4j's order and score, as `similar_relations` keeps them, and each
        fact's cosine to the centre computed by the server (`near`)."""
        if hub is None:
            params = {**_scope(scope, exact), "centre": None}
            hits = self._nearest("facts", params, vector, k)
            return [(_fact(props), score) for props, score in hits if present(props)]
        params = {**_scope(scope, exact), "centre": hub.centre.tolist()}
        rows = [row for row in self._candidates("facts", params, vector, k) if present(row["fact"])]
        rows = rows[:k]
        ranking = [(row["fact"], 2.0 * float(row["score"]) - 1.0) for row in rows]
        near = [float(row["near"]) for row in rows]
        return [(_fact(props), score) for props, score in hub_rescored(ranking, near, hub.penalty)]
