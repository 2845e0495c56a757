"""The `episode_context` ranking: the facts stored in the same `add` (episode) as one of the
best facts of a search, each scored by the best fused score among those facts of its
episodes. A conversation says related things together (the answer to "how did she feel after
the accident?" sits beside the accident, not in words the question shares), so a fact next to
a strong match is more likely to matter: neighbour expansion, the passage-level evidence of
classic retrieval, here over the add a fact came from. Fused with a weight below 1 it lends a
discounted share of the neighbour's score, never more than the neighbour has. Only the search's
own candidates (the facts its other rankings found) take part: no extra read. No LLM.

A neighbour is relevant through its seed, so the share never lifts it above that seed
(`capped`): without the cap, in a small memory where one word ("Maya") is in every fact,
three facts from one exchange about food rose above the one fact that answered "Where does
Maya live?" (found first by both the dense and the BM25 ranking).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from mem0g.retrieve.fusion import Ranking, ranked

NAME = "episode_context"


def episode_context(
    fused: Mapping[str, float],
    sources: Mapping[str, Mapping[str, int]],
    rankings: Mapping[str, Ranking],
    episodes: Mapping[str, Collection[str]],
    seeds: int,
) -> Ranking:
    """The ranking: for the `seeds` best facts of the fused order (`fusion.ranked`), every
    other candidate sharing an episode with one (`episodes`: fact id -> its episode ids),
    scored by the best such seed's fused score; best first, ties in seed and candidate order.
    A seed sharing an episode with a better seed is in it too."""
    members: dict[str, list[str]] = {}
    for fact_id, found in episodes.items():
        for episode in found:
            members.setdefault(episode, []).append(fact_id)
    best: dict[str, float] = {}
    for seed, score in ranked(fused, sources, rankings)[:seeds]:
        for episode in episodes.get(seed, ()):
            for fact_id in members.get(episode, ()):
                if fact_id != seed and score > best.get(fact_id, float("-inf")):
                    best[fact_id] = score
    return sorted(best.items(), key=lambda item: -item[1])  # stable: ties keep their order


def capped(
    fused: Mapping[str, float], before: Mapping[str, float], near: Ranking
) -> dict[str, float]:
    """`fused` (with the `near` ranking, this module's) with each neighbour's score held just
    below its seed's score before the share (`near` scores are those), but never below its
    own score without the share (`before`): the share can bring a fact up to the fact it is
    next to, not level with it or past it (a tie would go by the rankings' ranks, where the
    neighbour may lead)."""
    out = dict(fused)
    for fact_id, seed_score in near:
        if fact_id in out:
            ceiling = seed_score - 1e-9 * max(1.0, abs(seed_score))
            out[fact_id] = max(before.get(fact_id, float("-inf")), min(out[fact_id], ceiling))
    return out
