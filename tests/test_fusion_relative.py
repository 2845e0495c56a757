"""Score-based fusion (`method="relative"`, the default; also preset `hybrid_relative`): each
ranking's scores scaled over the ranking (cosine min-max, BM25 by its best), weighted and
summed; how it orders differently from RRF, what its weights do, and that a store's score
scale does not matter."""

from __future__ import annotations

import pytest

from mem0g.config import FusionConfig, FusionWeights
from mem0g.retrieve.fusion import fuse, ranked

# dense: a far ahead of b and c; BM25: c and b close, d far behind
RANKINGS = {
    "dense_facts": [("a", 0.9), ("b", 0.5), ("c", 0.4)],
    "bm25_facts": [("c", 9.0), ("b", 8.0), ("d", 1.0)],
}
RELATIVE = FusionConfig(method="relative")


def order(rankings: dict[str, list[tuple[str, float]]], recipe: FusionConfig) -> list[str]:
    return [i for i, _ in ranked(*fuse(rankings, recipe))]


def test_scores_are_scaled_over_each_ranking_and_weighted() -> None:
    fused, sources = fuse(RANKINGS, RELATIVE)
    assert fused["a"] == pytest.approx(1.0)  # best dense, no BM25
    assert fused["b"] == pytest.approx(0.1 / 0.5 + 8.0 / 9.0)  # cosine min-max, BM25 / best
    assert fused["c"] == pytest.approx(0.0 + 1.0)  # last dense (0), best BM25 (1)
    assert fused["d"] == pytest.approx(1.0 / 9.0)  # BM25's 0 is "no match", not its last
    assert sources["b"] == {"dense_facts": 2, "bm25_facts": 2}
    heavy = FusionConfig(method="relative", weights=FusionWeights(dense_facts=3.0))
    fused, _ = fuse(RANKINGS, heavy)
    assert fused["a"] == pytest.approx(3.0) and fused["b"] == pytest.approx(0.6 + 8.0 / 9.0)
    assert order(RANKINGS, heavy) == ["a", "b", "c", "d"]


def test_relative_orders_by_margins_where_rrf_orders_by_places() -> None:
    # RRF: c (ranks 3 and 1) edges out b (2 and 2); relative: b is close to the best in
    # both, c is the worst of dense, and a, far ahead in dense, ties c (broken by dense rank)
    assert order(RANKINGS, FusionConfig(method="rrf")) == ["c", "b", "a", "d"]
    assert order(RANKINGS, RELATIVE) == ["b", "a", "c", "d"]


def test_a_stores_score_scale_does_not_change_the_fusion() -> None:
    """Neo4j's vector index scores (1 + cos) / 2, Lucene's BM25 is on another scale than
    FTS5's: an affine change of the cosines, a factor on BM25, leave the fused scores be."""
    moved = {
        "dense_facts": [(i, (1 + s) / 2) for i, s in RANKINGS["dense_facts"]],
        "bm25_facts": [(i, 3.5 * s) for i, s in RANKINGS["bm25_facts"]],
    }
    want, _ = fuse(RANKINGS, RELATIVE)
    got, _ = fuse(moved, RELATIVE)
    assert got == pytest.approx(want)


def test_equal_scores_count_fully_and_a_boost_adds_its_weight_to_each_hit() -> None:
    rankings = {
        "dense_facts": [("a", 0.9), ("b", 0.1), ("c", 0.0)],
        "bm25_facts": [("b", 2.0), ("c", 2.0)],
        "time": [("b", 0.3), ("c", 0.1)],
    }
    fused, _ = fuse(rankings, RELATIVE)
    # BM25's two equal scores both count 1; time (weight 0.5) picks b and c, whatever its
    # (borrowed) scores, so c, last in dense, still gets the whole boost
    assert fused == pytest.approx({"a": 1.0, "b": 0.1 / 0.9 + 1.0 + 0.5, "c": 1.5})
    assert order(rankings, RELATIVE) == ["b", "c", "a"]
    off = FusionConfig(method="relative", weights=FusionWeights(time=0))
    # without the boost c ties a (1.0 each), and a is first in dense
    assert order(rankings, off) == ["b", "a", "c"] and fuse(rankings, off)[0]["c"] == 1.0
    assert order({**rankings, "time": []}, RELATIVE) == ["b", "a", "c"]


def test_the_relation_half_keeps_rrf_unless_told() -> None:
    assert FusionConfig().method == "relative"  # the default
    assert FusionConfig().for_relations().method == "rrf"  # relative: measured on facts only
    assert RELATIVE.for_relations().method == "rrf"
    assert FusionConfig(method="rrf").for_relations() == FusionConfig(method="rrf")
    assert FusionConfig(method="weighted").for_relations().method == "weighted"
    chosen = FusionConfig(relation_method="relative")
    assert chosen.for_relations().method == "relative"
    assert chosen.for_relations().weights == chosen.weights
