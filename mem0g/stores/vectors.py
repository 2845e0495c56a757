"""The one place for vector maths: float32 vectors, unit rows, row scores, top-k, and the
in-place `VectorBlock` a store keeps per tenant.

Why one place: both stores, the held entity vectors of the Neo4j store, the entity resolver
and the retriever's fact and diversity scoring must score a row with the same float32
arithmetic, so that two stores agree to the bit and a refactor cannot drift one of them.
Pure numpy, no I/O and no lock; anything in mem0g may import it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar, cast, overload

import numpy as np

__all__ = [
    "Hub",
    "VectorBlock",
    "as_vector",
    "best_first",
    "blocks_top",
    "centre_cosines",
    "has_direction",
    "hub_centre",
    "hub_rescored",
    "row_scores",
    "summed",
    "top_k",
    "unit_rows",
    "unit_vector",
    "vector_sum_change",
]


@overload
def as_vector(values: None) -> None: ...
@overload
def as_vector(values: Sequence[float] | np.ndarray) -> np.ndarray: ...
def as_vector(values: Sequence[float] | np.ndarray | None) -> np.ndarray | None:
    """Embeddings live as float32 arrays (4 bytes a value) instead of lists of Python floats."""
    return None if values is None else np.asarray(values, dtype=np.float32).reshape(-1)


def unit_vector(vector: Sequence[float] | np.ndarray) -> tuple[np.ndarray, bool]:
    """A float32 query at unit length, and whether it has a direction (a zero query stays as
    it is, and scores 0 against every row)."""
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(query))
    return (query / norm, True) if norm > 0 else (query, False)


def has_direction(vector: np.ndarray) -> bool:
    """Whether a float32 vector can be scaled to unit length (not zero, nothing infinite)."""
    norm = float(np.linalg.norm(vector))
    return norm > 0 and bool(np.isfinite(norm))


_T = TypeVar("_T")


class Hub(NamedTuple):
    """The dense fact ranking's hubness correction (`FusionConfig.hub_penalty`, see
    retrieve/hubness.py) as a store applies it: the scope's centroid at unit length (float32,
    `hub_centre`) and the penalty."""

    centre: np.ndarray
    penalty: float


def hub_centre(total: Sequence[float] | np.ndarray | None) -> np.ndarray | None:
    """The unit float32 direction of a scope's kept fact vector sum; None when there is none
    (no facts with a vector, or they cancel out)."""
    if total is None:
        return None
    centre = np.asarray(total, dtype=np.float64).reshape(-1)
    if not has_direction(centre):
        return None
    unit: np.ndarray = (centre / np.linalg.norm(centre)).astype(np.float32)
    return unit


def centre_cosines(vectors: Sequence[np.ndarray | None], centre: np.ndarray) -> list[float]:
    """Each vector's cosine to a unit `centre` (float32, as `row_scores`), 0 for a missing one,
    one of another size, or a zero one: the `near` of `hub_rescored`."""
    rows = [n for n, v in enumerate(vectors) if v is not None and v.shape == centre.shape]
    near = np.zeros(len(vectors), dtype=np.float64)
    if rows:
        matrix = unit_rows([np.asarray(vectors[n], dtype=np.float32) for n in rows], None)
        near[rows] = row_scores(matrix, centre)
    return [float(x) for x in near]


def hub_rescored(
    ranking: Sequence[tuple[_T, float]], near: Sequence[float], penalty: float
) -> list[tuple[_T, float]]:
    """`ranking` re-scored as score - `penalty` x `near` (each candidate's cosine to the
    centre, 0 for one without a vector) and re-sorted best first; equal scores keep the
    ranking's order. The same float64 arithmetic wherever the cosines were computed."""
    scored = [(item, float(score) - penalty * float(n))
              for (item, score), n in zip(ranking, near, strict=True)]  # fmt: skip
    order = sorted(range(len(scored)), key=lambda i: -scored[i][1])
    return [scored[i] for i in order]


def unit_rows(vectors: Sequence[np.ndarray] | np.ndarray, dims: int | None) -> np.ndarray:
    """The vectors stacked as float32 and scaled to unit length (zero rows stay zero), so
    cosine is one matrix product. A new array: the inputs are never changed."""
    if len(vectors) == 0:
        return np.zeros((0, dims or 0), dtype=np.float32)
    # vstack copies; it takes a 2-D array as the sequence of its rows
    matrix = np.vstack(cast(Sequence[np.ndarray], vectors)).astype(np.float32, copy=False)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix /= np.where(norms == 0, np.float32(1), norms)
    return matrix


def row_scores(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Cosine of each unit row with a unit query, as every store computes it: `matrix @ query`
    in numpy's own single-threaded loop rather than BLAS. BLAS splits a matrix-vector product
    of a few thousand rows across threads that wait on one another (and on the embedding
    model's threads right after a query was embedded): 2-4x slower on 2 cores. And BLAS rounds
    a row differently depending on where it sits in the matrix; this scores a row the same in
    a tenant's whole matrix as among a few candidates, so two stores agree to the bit."""
    scores: np.ndarray = np.einsum("ij,j->i", matrix, query)
    return scores


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best scores in no particular order (O(n), no full sort)."""
    return np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(len(scores))


def best_first(scores: np.ndarray, k: int) -> list[int]:
    """Indices of the k best scores, best first (ties in index order), as both stores rank."""
    return sorted(top_k(scores, k), key=lambda row: -scores[row])


def blocks_top(
    blocks: Iterable[tuple[Sequence[str], np.ndarray, np.ndarray | None]],
    query: np.ndarray,
    k: int,
) -> list[tuple[str, float]]:
    """The k best rows of several blocks (ids, their unit rows, and the rows that may be
    picked, None: all) for a unit query: the top k within each block, merged best first, ties
    in block then row order. How a scope's tenants are ranked: the embedded store's vector
    reads and the names a Neo4j store holds (`NameRanker`) alike."""
    if k <= 0:
        return []
    candidates: list[tuple[str, float]] = []
    for ids, matrix, rows in blocks:
        if not len(ids):
            continue
        scores = row_scores(matrix, query)
        best = top_k(scores, k) if rows is None else rows[top_k(scores[rows], k)]
        candidates.extend((ids[r], float(scores[r])) for r in best)
    candidates.sort(key=lambda hit: -hit[1])
    return candidates[:k]


_Rows = Sequence[Sequence[float] | np.ndarray | None]


def summed(parts: _Rows) -> np.ndarray | None:
    """The float64 sum of kept vector sums (a scope's tenants'), None entries and empty ones
    left out; None when none is left (the scope has no fact with a vector)."""
    held = [np.asarray(v, dtype=np.float64) for v in parts if v is not None and len(v)]
    return np.sum(held, axis=0) if held else None


def vector_sum_change(came: _Rows, gone: _Rows) -> tuple[int, list[float]] | None:
    """(count, float64 sum) of the unit vectors that `came` less those `gone` (None entries:
    facts without an embedding), or None when nothing with a vector changed: what a write
    does to a tenant's kept fact vector sum (`GraphStore.fact_vector_sum`)."""
    plus = [np.asarray(v, dtype=np.float32) for v in came if v is not None]
    minus = [np.asarray(v, dtype=np.float32) for v in gone if v is not None]
    if not plus and not minus:
        return None
    dims = (plus or minus)[0].shape[0]
    delta = np.zeros(dims, dtype=np.float64)
    if plus:
        delta += unit_rows(plus, dims).sum(axis=0, dtype=np.float64)
    if minus:
        delta -= unit_rows(minus, dims).sum(axis=0, dtype=np.float64)
    return len(plus) - len(minus), delta.tolist()


@dataclass
class VectorBlock:
    """A tenant's embedding matrix: row i is the unit vector of record ids[i], and flags[i] says
    whether the row is selected by default (an edge without invalid_at, a fact not deleted).
    It changes in place (capacity doubling) as records are written, instead of being rebuilt.
    An edge block may also hold `spans`: per row the [valid_from, invalid_at) interval as int64
    microseconds, so an `as_of` search selects rows with one comparison instead of a loop."""

    ids: list[str]
    rows: np.ndarray  # capacity x dims; the first len(ids) rows are in use
    flags: np.ndarray  # bool per row
    index: dict[str, int] = field(default_factory=dict)
    unflagged: int = 0  # rows whose flag is False
    spans: np.ndarray | None = None  # capacity x 2 int64, set by the owner when first needed
    _total: np.ndarray | None = None  # the flagged rows' sum, once asked: kept in step

    def __post_init__(self) -> None:
        self.index = {record_id: row for row, record_id in enumerate(self.ids)}
        self.unflagged = len(self.ids) - int(np.count_nonzero(self.flags[: len(self.ids)]))

    @classmethod
    def build(
        cls, ids: list[str], vectors: Sequence[np.ndarray], flags: Sequence[bool], dims: int | None
    ) -> VectorBlock:
        return cls(ids, unit_rows(vectors, dims), np.array(flags, dtype=bool).reshape(-1))

    @classmethod
    def empty(cls) -> VectorBlock:
        """A block of no rows and no known size (nothing has an embedding yet)."""
        return cls([], np.zeros((0, 0), dtype=np.float32), np.zeros(0, dtype=bool))

    @property
    def matrix(self) -> np.ndarray:
        return self.rows[: len(self.ids)]

    @property
    def current(self) -> np.ndarray:
        return self.flags[: len(self.ids)]

    def selected(self) -> np.ndarray | None:
        """Indices of the flagged rows; None when that is every row."""
        return None if self.unflagged == 0 else np.flatnonzero(self.current)

    def total(self) -> np.ndarray:
        """The float64 sum of the flagged unit rows (`GraphStore.fact_vector_sum`): computed
        once, then kept in step by `upsert` and `unflag` (a row's change is added and taken
        away), so a search after a write does not sum the block again."""
        if self._total is None:
            rows = self.selected()
            matrix = self.matrix if rows is None else self.matrix[rows]
            self._total = matrix.sum(axis=0, dtype=np.float64)
        kept: np.ndarray = self._total.copy()
        return kept

    def _flag(self, row: int, flag: bool) -> None:
        if bool(self.flags[row]) != flag:
            self.unflagged += -1 if flag else 1
            self.flags[row] = flag

    def upsert(
        self,
        record_id: str,
        vector: np.ndarray,
        flag: bool,
        *,
        replace: bool = False,
        span: tuple[int, int] | None = None,
    ) -> None:
        """Add a row, or set an existing row's flag and span (and, with `replace`, its vector:
        a fact's text and embedding may change; an entity's or edge's embedding never does).
        Without a `span`, held spans are dropped (the owner rebuilds them when needed)."""
        row = self.index.get(record_id)
        was = None  # the row's part of the kept total before the change
        if row is not None and self._total is not None and self.flags[row]:
            was = self.rows[row].astype(np.float64)
        if row is None:
            row = len(self.ids)
            if row == self.rows.shape[0]:
                grown = max(16, row * 2)
                self.rows = np.resize(self.rows, (grown, self.rows.shape[1]))
                self.flags = np.resize(self.flags, grown)
                if self.spans is not None:
                    self.spans = np.resize(self.spans, (grown, 2))
            self.flags[row] = True
            self.ids.append(record_id)
            self.index[record_id] = row
            replace = True
        if replace:
            self.rows[row] = unit_rows([vector], vector.shape[0])[0]
        self._flag(row, flag)
        if self._total is not None:
            if was is not None:
                self._total -= was
            if flag:
                self._total += self.rows[row]
        if self.spans is not None:
            if span is None:
                self.spans = None
            else:
                self.spans[row] = span

    def unflag(self, record_id: str) -> None:
        """The record is gone or has no vector any more: its row is never selected again."""
        row = self.index.get(record_id)
        if row is not None:
            if self._total is not None and self.flags[row]:
                self._total -= self.rows[row]
            self._flag(row, False)


def rank_linked(
    counts: dict[str, int],
    vectors: dict[str, np.ndarray],
    order: dict[str, int],
    query: np.ndarray,
    k: int,
) -> list[tuple[str, float, int]]:
    """Both stores' ranking of the facts linked to a search's entities (id -> how many of
    them it names): most named first, then cosine with the query (`row_scores`), then write
    order (`order`), so the two stores rank alike. A fact without a vector scores 0."""
    ids = [i for i in counts if i in vectors]
    unit, _ = unit_vector(query)
    scores = dict.fromkeys(counts, 0.0)
    if ids:
        matrix = unit_rows([vectors[i] for i in ids], unit.shape[0])
        scores.update(zip(ids, (float(s) for s in row_scores(matrix, unit)), strict=True))
    far = 1 << 60
    ranked = sorted(counts, key=lambda i: (-counts[i], -round(scores[i], 6), order.get(i, far), i))
    return [(i, scores[i], counts[i]) for i in ranked[:k]]
