"""Fusion as data: each ranking a search computes has a name, and the recipe
(`config.FusionConfig`) gives each name a weight; named presets are recipes too.

Rankings, all computed without an LLM:
- `dense_facts` / `bm25_facts`: facts by embedding cosine / by the store's BM25 (over the
  query words that at most `common_words` of the scope's facts hold: `retrieve.facts`);
- `dense_relations` / `bm25_relations`: edges by triple-embedding cosine / by BM25 over
  "source relation destination";
- `graph_expansion`: edges around the linked entities (score = cosine / hop);
- `entity_linked_facts`: facts linked at add time to the entities the query names
  (`retrieve.linked`: most of them named first, then cosine);
- `time`: facts and edges whose time falls in the query's time window (`retrieve.timewin`),
  in the order the other rankings put them: a boost, never a filter (`as_of` is the filter);
- `episode_context`: facts stored in the same add as one of the `context_seeds` best facts
  of the other rankings, scored by that fact's fused score (`retrieve.episodes`): relative
  fusion adds weight x that score as it is (a share of the neighbour's score).
RRF adds weight / (rrf_k + rank) per ranking (rrf_k = 60, the standard constant);
`weighted` adds weight x score; `relative` (the default's fact half; the relation half stays
RRF, `FusionConfig.for_relations`) adds weight x the score scaled over its ranking, the best 1
(cosine min-max, the last 0, as Weaviate's relativeScore; BM25 divided by its best, 0 meaning
no match): a convex combination of normalised scores, so margins count, not only places, and
a store's score scale (Neo4j's (1 + cos) / 2, Lucene's BM25 or FTS5's) does not; a boost
(`time`) adds its weight to each of its hits. A zero weight leaves a ranking out: what only
it found is not returned, but it still shows in the `sources` of hits it found. Equal fused
scores are ordered by the rankings' ranks and places (`ranked`), never by the random ids.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter

import numpy as np

from mem0g.config import FusionConfig, FusionWeights
from mem0g.stores.vectors import unit_vector

Ranking = list[tuple[str, float]]  # (id, score), best first


def fuse(
    rankings: Mapping[str, Ranking], recipe: FusionConfig
) -> tuple[dict[str, float], dict[str, dict[str, int]]]:
    """One fused score per id, and per id the rankings that found it with its rank there."""
    fused: dict[str, float] = {}
    sources: dict[str, dict[str, int]] = {}
    weights = recipe.weights
    for name, ranking in rankings.items():
        weight = float(getattr(weights, name))
        tied = name.startswith("bm25_")  # stores order tied BM25 scores by random ids
        scale = None
        if recipe.method == "relative":  # a boost's scores are borrowed: each hit counts 1
            scale = (lambda _s: 1.0) if name in BOOSTS else _scaled(ranking, name in ZERO_BASED)
            if name in FUSED:
                scale = float
        for item, score, rank in _tied_ranks(ranking, tied):
            sources.setdefault(item, {})[name] = rank
            if weight == 0:
                continue
            if scale is not None:
                gain = weight * scale(score)
            elif recipe.method == "rrf":
                gain = weight / (recipe.rrf_k + rank)
            else:
                gain = weight * score
            fused[item] = fused.get(item, 0.0) + gain
    return fused, sources  # an id found only by zero-weight rankings is not in `fused`


# rankings that only pick hits, in the order the others put them, with their fused scores
BOOSTS = frozenset({"time"})
# rankings whose scores are fused scores of other hits already: relative fusion adds
# weight x score as it is (a share of that score), not scaled again
FUSED = frozenset({"episode_context"})
# rankings whose 0 means "nothing matched" (BM25): scaled by their best score alone, so a
# spread that is only noise (a term in most texts: BM25 ~ 0 for all) stays small
ZERO_BASED = frozenset({"bm25_facts", "bm25_relations"})


def _scaled(ranking: Ranking, zero_based: bool) -> Callable[[float], float]:
    """A score scaled to [0, 1] over its ranking, the best 1: divided by the best
    (`zero_based`), else min-max (the lowest 0; cosine has no natural zero, and Neo4j reports
    (1 + cos) / 2). 1 for every hit of a ranking whose scores are all equal."""
    values = [float(score) for _, score in ranking]
    low, high = min(values, default=0.0), max(values, default=0.0)
    if zero_based:
        low = min(low, 0.0)
    if high - low <= 1e-12 * max(abs(high), 1.0):
        return lambda _score: 1.0
    return lambda score: (float(score) - low) / (high - low)


# ties of fused scores are broken by these rankings' ranks, in this order, then by their
# places there (`ranked`): ids are random, so ordered by id two stores of the same adds
# could return tied hits in different orders
TIE_ORDER = ("dense_facts", "dense_relations", "graph_expansion", "entity_linked_facts",
             "bm25_facts", "bm25_relations", "time", "episode_context")  # fmt: skip


def _tied_ranks(ranking: Ranking, tied: bool) -> list[tuple[str, float, int]]:
    """(id, score, rank); with `tied`, equal scores (to 9 digits) share the best rank of their
    run: a store orders tied BM25 scores by text (so the same content gives the same hits and
    order, whatever the ids), an order that says nothing of relevance and must not decide a
    fused rank; it only breaks fused ties (`ranked`). (Cosine and walk rankings keep their
    order: the stores order their ties by write order.)"""
    if not tied:
        return [(item, score, rank) for rank, (item, score) in enumerate(ranking, start=1)]
    out = []
    rank, last = 0, None
    for position, (item, score) in enumerate(ranking, start=1):
        key = round(float(score), 9)
        if key != last:
            rank, last = position, key
        out.append((item, score, rank))
    return out


def ranked(
    fused: Mapping[str, float],
    sources: Mapping[str, Mapping[str, int]] | None = None,
    rankings: Mapping[str, Ranking] | None = None,
) -> list[tuple[str, float]]:
    """Best first; equal scores (to 12 digits) by the ranks in TIE_ORDER, then by the places
    in those `rankings` (where tied BM25 scores share a rank, the store's order of them: by
    text), then by id. Every hit has a place in some ranking, and the stores order every
    ranking by content or write order, never by the random ids: so the same adds give the
    same order, in whatever store, whatever the ids."""
    # Sorted by score alone first; only runs of equal scores need the tie key, whose places
    # are read for their members only: the full key of every hit cost 1.24 ms a call on the
    # ~750 relation hits of a search at 100k edges, this 0.41 ms (the same order).
    keyed = sorted([(-round(score, 12), item, score) for item, score in fused.items()],
                   key=itemgetter(0))  # fmt: skip
    order = [(item, score) for _, item, score in keyed]
    runs, start = [], 0
    for end in range(1, len(keyed) + 1):
        if end == len(keyed) or keyed[end][0] != keyed[start][0]:
            if end - start > 1:
                runs.append((start, end))
            start = end
    if not runs:
        return order
    far = 1 << 30
    none = [far] * len(TIE_ORDER)
    tied = {item for a, b in runs for item, _ in order[a:b]}
    places: dict[str, list[int]] = {}
    for column, name in enumerate(TIE_ORDER):
        for place, (item, _) in enumerate((rankings or {}).get(name, ())):
            if item in tied:
                row = places.setdefault(item, list(none))
                row[column] = min(row[column], place)

    def key(item: tuple[str, float]) -> tuple[tuple[int, ...], list[int], str]:
        found = (sources or {}).get(item[0], {})
        return tuple(found.get(n, far) for n in TIE_ORDER), places.get(item[0], none), item[0]

    for a, b in runs:
        order[a:b] = sorted(order[a:b], key=key)
    return order


_NUMBER = re.compile(r"\d+")


def diversify(
    order: Sequence[tuple[str, float]],
    vectors: Mapping[str, np.ndarray],
    limit: int,
    recipe: FusionConfig,
    texts: Mapping[str, str] | None = None,
) -> list[tuple[str, float]]:
    """The first `limit` of `order` without near-duplicates: a hit whose cosine with one
    already kept is >= `near_duplicate` and that names the same numbers (`texts`; "room 3"
    and "room 4" embed alike but are two facts) is dropped, so ten rewordings of one fact do
    not fill a top ten. With `mmr_lambda`, maximal marginal relevance instead: each next hit
    maximises lambda x relevance - (1 - lambda) x its highest cosine with those kept,
    relevance being the fused score scaled to [0, 1]. Hits without a vector are never
    dropped."""
    if recipe.near_duplicate >= 1.0 and recipe.mmr_lambda is None:
        return list(order[:limit])
    unit = {}
    for item, vec in vectors.items():
        unit[item] = unit_vector(vec)[0]
    numbers = {i: frozenset(_NUMBER.findall(t)) for i, t in (texts or {}).items()}
    kept: list[tuple[str, float]] = []
    kept_vecs: list[np.ndarray] = []

    def closest(item: str, same_numbers: bool = False) -> float:
        v = unit.get(item)
        if v is None or not kept_vecs:
            return 0.0
        sims = np.vstack(kept_vecs) @ v
        if same_numbers and numbers:
            mine = numbers.get(item, frozenset())
            alike = [numbers.get(k, frozenset()) == mine for k, _ in kept if k in unit]
            sims = np.where(np.asarray(alike, dtype=bool), sims, -1.0)
        return float(np.max(sims))

    if recipe.mmr_lambda is None:
        for item, score in order:
            if len(kept) >= limit:
                break
            if closest(item, same_numbers=True) >= recipe.near_duplicate:
                continue
            kept.append((item, score))
            if item in unit:
                kept_vecs.append(unit[item])
        return kept
    lam = recipe.mmr_lambda
    pool = list(order)
    top = max((s for _, s in pool), default=0.0) or 1.0
    while pool and len(kept) < limit:

        def gain(i: int) -> tuple[float, int]:
            return lam * pool[i][1] / top - (1 - lam) * closest(pool[i][0]), -i

        best = max(range(len(pool)), key=gain)
        item, score = pool.pop(best)
        kept.append((item, score))
        if item in unit:
            kept_vecs.append(unit[item])
    return kept


# Named recipes, data like the defaults: `retrieval.fusion` takes one of these names or a
# recipe of its own. "hybrid" is the default (FusionConfig(): relative score fusion, with
# episode context).
PRESETS: dict[str, FusionConfig] = {
    "hybrid": FusionConfig(),
    # the default without the dense ranking's hubness correction: the default before it
    "hybrid_uncentred": FusionConfig(hub_penalty=0.0),
    # the hybrid recipe fused by ranks only (RRF, k = 60), without episode context: the
    # default before `relative`
    "hybrid_rrf": FusionConfig(
        method="rrf",
        weights=FusionWeights(episode_context=0),
        common_words=1.0,
        hub_penalty=0.0,
    ),
    # the hybrid recipe without episode context: the default before it (and before
    # `common_words`)
    "hybrid_relative": FusionConfig(
        method="relative",
        weights=FusionWeights(episode_context=0),
        common_words=1.0,
        hub_penalty=0.0,
    ),
    # the hybrid recipe with every query word in the facts' BM25: the default before
    # `common_words`
    "hybrid_all_words": FusionConfig(common_words=1.0, hub_penalty=0.0),
    # plain vector search: what mem0g did before lexical retrieval (facts: cosine only)
    "dense": FusionConfig(
        method="rrf",
        weights=FusionWeights(
            bm25_facts=0, time=0, bm25_relations=0, entity_linked_facts=0, episode_context=0
        ),
        hub_penalty=0.0,
    ),
    # the baseline the issue compares with: dense + BM25 RRF, nothing else
    "dense_bm25": FusionConfig(
        method="rrf",
        weights=FusionWeights(time=0, graph_expansion=0, entity_linked_facts=0, episode_context=0),
        common_words=1.0,
        hub_penalty=0.0,
    ),
    # the hybrid recipe with the facts linked to the query's entities (`retrieve.linked`)
    "hybrid_linked": FusionConfig(weights=FusionWeights(entity_linked_facts=1.0)),
    # the hybrid recipe with the near-duplicate cut: a top ten of distinct facts
    "hybrid_distinct": FusionConfig(near_duplicate=0.95),
    "lexical": FusionConfig(
        weights=FusionWeights(
            dense_facts=0,
            time=0,
            dense_relations=0,
            graph_expansion=0,
            entity_linked_facts=0,
            episode_context=0,
        )
    ),
}
