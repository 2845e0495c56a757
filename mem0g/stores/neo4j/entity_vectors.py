"""Exact entity-name vectors of a server store's recently used tenants, held in memory.

Why: the entity resolver decides merge-or-new from the top-k name neighbours, and a server's
HNSW index does not return the exact top k. At 100k edges, Neo4j's entity index (Lucene 9.11,
m=16) missed an entity's own vector for about 3% of the entities, and a cluster of look-alike
names ("Helix Studios", "Helix Studios 2", ...) loses its members' true neighbours, so the
server store created duplicates that the embedded store's exact search merged. Scanning a
large tenant on the server costs ~12 us an entity (reading 384 floats each); numpy scores
22k rows in ~2 ms. So a store keeps each tenant's vectors here and brings them up to date with
one read per use: the rows of the plans committed since the plan number it last saw.

Plain state, no I/O and no lock: the store does the reads and holds its lock around calls.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mem0g.stores.vectors import VectorBlock, as_vector, unit_rows

__all__ = ["EntityVectors", "Watermark"]


@dataclass(frozen=True)
class Watermark:
    """Where a tenant's held vectors stand: its sequence node's `epoch` (a new one after the
    tenant was deleted and written again) and the last plan number (`seq`) they include."""

    epoch: str
    seq: int


@dataclass
class _Held:
    mark: Watermark
    block: VectorBlock


class EntityVectors:
    """Per tenant key, the unit name vectors of its entities in write order (a `VectorBlock`,
    as the embedded store holds them), least recently used tenants dropped beyond `max_rows`.
    A tenant larger than `max_rows` is not held at all: its caller falls back to the index."""

    def __init__(self, max_rows: int) -> None:
        self.max_rows = max(0, max_rows)
        self._held: OrderedDict[str, _Held] = OrderedDict()
        self._rows = 0

    @property
    def rows(self) -> int:
        """Vectors held across all tenants."""
        return self._rows

    def mark(self, key: str) -> Watermark | None:
        held = self._held.get(key)
        return None if held is None else held.mark

    def load(
        self,
        key: str,
        mark: Watermark | None,
        ids: Sequence[str],
        vectors: Sequence[Sequence[float]],
        dims: int,
    ) -> VectorBlock | None:
        """Replace the tenant's vectors with all of them as read at `mark` (None: the tenant has
        no sequence node, e.g. loaded from a dump: the block is returned but not kept, since
        later writes could not be told apart). None when the tenant alone is too large."""
        self.forget(key)
        if len(ids) > self.max_rows:
            return None
        rows = unit_rows([as_vector(v) for v in vectors], dims)
        block = VectorBlock(list(ids), rows, np.ones(len(ids), dtype=bool))
        if mark is not None:
            self._keep(key, _Held(mark, block))
        return block

    def extend(
        self, key: str, mark: Watermark, ids: Sequence[str], vectors: Sequence[Sequence[float]]
    ) -> VectorBlock | None:
        """Add the rows of plans after the held mark, up to `mark`; an id already held is left
        as it is (an entity's name vector never changes). None if the tenant is not held (or
        held from another epoch), or has grown too large to be (it is then dropped)."""
        held = self._held.get(key)
        if held is None or held.mark.epoch != mark.epoch:
            return None
        self._held.move_to_end(key)
        before = len(held.block.ids)
        for record_id, vector in zip(ids, vectors, strict=True):
            held.block.upsert(record_id, as_vector(vector), True)
        self._rows += len(held.block.ids) - before
        if len(held.block.ids) > self.max_rows:
            self.forget(key)
            return None
        held.mark = Watermark(held.mark.epoch, max(held.mark.seq, mark.seq))
        self._trim(keep=key)
        return held.block

    def forget(self, key: str | None = None) -> None:
        """Drop one tenant's vectors (None: every tenant's)."""
        if key is None:
            self._held.clear()
            self._rows = 0
        elif (held := self._held.pop(key, None)) is not None:
            self._rows -= len(held.block.ids)

    def _keep(self, key: str, held: _Held) -> None:
        self._held[key] = held
        self._rows += len(held.block.ids)
        self._trim(keep=key)

    def _trim(self, keep: str) -> None:
        """Drop least recently used tenants until the rows fit (never `keep`)."""
        while self._rows > self.max_rows and len(self._held) > 1:
            oldest = next(iter(self._held))
            if oldest == keep:
                self._held.move_to_end(keep)
                continue
            self.forget(oldest)
