"""The `episode_context` ranking (retrieve/episodes.py): the facts stored in the same add as
one of the best facts of a search get a share (its weight) of that fact's fused score; how it
is computed, how its weight and `context_seeds` change the order, that it never lifts a fact
past the fact it is next to, and that a search with it needs no LLM, on both stores."""

from __future__ import annotations

import pytest
from conftest import MemoryFactory

from mem0g.config import FusionConfig, FusionWeights
from mem0g.retrieve.episodes import capped, episode_context
from mem0g.retrieve.fusion import fuse, ranked
from mem0g.testing.neo4j import free_port

RELATIVE = FusionConfig(method="relative")
# a: the best match, said with b; c: as good as b by the other rankings, said elsewhere
RANKINGS = {
    "dense_facts": [("a", 0.9), ("c", 0.5), ("b", 0.5), ("d", 0.1)],
    "bm25_facts": [("a", 3.0)],
}
EPISODES = {"a": ["e1"], "b": ["e1"], "c": ["e2"], "d": ["e2", "e3"]}


def scores(recipe: FusionConfig, seeds: int = 5, cap: bool = True) -> list[tuple[str, float]]:
    """What the fact retriever does (retrieve/facts.py `_fused`), best first."""
    before, sources = fuse(RANKINGS, recipe)
    near = episode_context(before, sources, RANKINGS, EPISODES, seeds)
    rankings = {**RANKINGS, "episode_context": near}
    fused, sources = fuse(rankings, recipe)
    return ranked(capped(fused, before, near) if cap else fused, sources, rankings)


def order(recipe: FusionConfig, seeds: int = 5, cap: bool = True) -> list[str]:
    return [i for i, _ in scores(recipe, seeds, cap)]


def test_the_neighbours_of_the_best_facts_get_a_share_of_their_score() -> None:
    fused, sources = fuse(RANKINGS, RELATIVE)
    assert fused == pytest.approx({"a": 2.0, "c": 0.5, "b": 0.5, "d": 0.0})
    near = episode_context(fused, sources, RANKINGS, EPISODES, seeds=5)
    # seeds in fused order a, c, b, d: b gets a's score (e1), d gets c's (e2), a gets b's
    # (e1: a seed shares with a better one), c gets d's; each its best seed's only
    assert dict(near) == {"b": 2.0, "a": 0.5, "d": 0.5, "c": 0.0}
    assert [i for i, _ in near] == ["b", "d", "a", "c"]  # best first, ties in seed order
    # one seed: only a's episode-mate
    assert episode_context(fused, sources, RANKINGS, EPISODES, seeds=1) == [("b", 2.0)]
    # facts whose episodes are unknown (no record read) take no part
    assert episode_context(fused, sources, RANKINGS, {}, seeds=5) == []


def test_its_weight_and_seeds_change_the_order_as_specified() -> None:
    off = FusionConfig(method="relative", weights=FusionWeights(episode_context=0))
    assert order(off) == ["a", "c", "b", "d"]  # c before b: its dense rank breaks the tie
    # weight 0.3: b gains 0.3 x a's 2.0 = 0.6, c gains 0.3 x d's 0.0: b before c
    assert order(RELATIVE) == ["a", "b", "c", "d"]
    fused, _ = fuse({**RANKINGS, "episode_context": [("b", 2.0)]}, RELATIVE)
    assert fused["b"] == pytest.approx(0.5 + 0.3 * 2.0)  # the score as it is, not rescaled
    heavy = FusionConfig(method="relative", weights=FusionWeights(episode_context=2.0))
    assert order(heavy, cap=False)[:2] == ["b", "a"]  # b: 0.5 + 2 x 2.0; a: 2.0 + 2 x 0.5
    assert order(heavy)[:2] == ["a", "b"]  # capped: b stops just below a (next test)
    # with one seed (a) only b is lifted
    assert order(RELATIVE, seeds=1) == ["a", "b", "c", "d"]
    # RRF fuses it by its ranks like any other ranking: at weight 1, b's 1/63 + 1/61 beats
    # c's 1/62 + 1/64; uncapped at 0.3 it does not (1/63 + 0.3/61 < 1/62 + 0.3/64), capped
    # it does: c's share comes from d, weaker than c (1/64), so it lifts c no higher
    rrf = FusionConfig(method="rrf", weights=FusionWeights(episode_context=1.0))
    assert order(rrf) == ["a", "b", "c", "d"]
    assert order(FusionConfig(method="rrf"), cap=False) == ["a", "c", "b", "d"]
    assert order(FusionConfig(method="rrf")) == ["a", "b", "c", "d"]


def test_a_neighbour_never_passes_the_fact_it_is_next_to() -> None:
    """Its share lifts it at most to just below its seed's score before the share, and never
    takes away its own score."""
    heavy = FusionConfig(method="relative", weights=FusionWeights(episode_context=2.0))
    got = dict(scores(heavy))
    before, _ = fuse(RANKINGS, heavy)
    assert got["b"] < before["a"] and got["b"] == pytest.approx(before["a"])  # held below a
    assert got["a"] == pytest.approx(before["a"])  # a's share from b (0.5) lifts it no higher
    assert got["d"] == pytest.approx(before["c"])  # d: 0 + 2 x c's 0.5, held below c's 0.5
    assert got["c"] == pytest.approx(before["c"])  # c keeps its own 0.5 (d lends 0.0)
    assert all(got[i] >= before[i] for i in before)  # never below its own score
    # at the default weight the cap is not reached here: the share is added as it is
    assert dict(scores(RELATIVE))["b"] == pytest.approx(0.5 + 0.3 * 2.0)
    assert capped({"x": 5.0}, {"x": 1.0}, [("x", 3.0)])["x"] == pytest.approx(3.0)
    assert capped({"x": 5.0}, {"x": 4.0}, [("x", 3.0)]) == {"x": 4.0}
    assert capped({"x": 2.0}, {"x": 1.0}, [("x", 3.0)]) == {"x": 2.0}  # under the cap


@pytest.mark.parametrize("store_kind", ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_a_fact_said_beside_the_best_match_rises_with_no_llm(make_memory: MemoryFactory) -> None:
    """Search needs no LLM (the endpoint is a port nothing listens on); the fact said in the
    same add as the best match comes right after it, and its sources say why."""
    dead = {"base_url": f"http://127.0.0.1:{free_port()}/v1", "max_retries": 0, "timeout": 1}
    m = make_memory(memory={"facts": True}, llm=dead)
    m.add(
        [
            {"role": "user", "content": "Priya crashed her bicycle on the way to work"},
            {"role": "user", "content": "Priya stayed home for a week and watched old films"},
        ],
        user_id="u", infer=False, timestamp="2024-03-02",
    )  # fmt: skip
    for text in (
        "Priya bought a new helmet for cycling",
        "Priya rides to work along the river",
        "Priya's brother repairs bicycles in his garage",
    ):
        m.add(text, user_id="u", infer=False, timestamp="2024-01-10")
    query = "What did Priya do after her bicycle crash?"
    hits = m.search(query, user_id="u", limit=5).facts
    texts = [h.text for h in hits]
    assert texts[0] == "Priya crashed her bicycle on the way to work"
    assert texts[1] == "Priya stayed home for a week and watched old films"
    assert hits[1].sources["episode_context"] == 1  # the best match's episode-mate
    m.config.retrieval.fusion = FusionConfig(weights=FusionWeights(episode_context=0))
    without = [h.text for h in m.search(query, user_id="u", limit=5).facts]
    assert without.index("Priya stayed home for a week and watched old films") > 1
