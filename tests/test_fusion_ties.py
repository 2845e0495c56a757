"""Ties never follow the random ids: the same content, written twice with ids in opposite
orders, is returned in the same order, in both halves of a search, on both stores. Tied BM25
scores are cut at k and ordered by their text in the store; fused ties go by the rankings'
ranks and then their places there (`fusion.ranked`), never by id."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from builders import DIMS, Store, entity, fact_plan, plan

from mem0g.config import RetrievalConfig
from mem0g.embed import CachedEmbedder
from mem0g.retrieve import DualRetriever
from mem0g.retrieve.fusion import TIE_ORDER, ranked
from mem0g.types import Fact, Relation, Tenant, Validity

X, Y = Tenant(user_id="x"), Tenant(user_id="y")
# written in this order, which is neither the text order nor the id order of either tenant
VIOLIN = ["gamma violin", "alpha violin", "delta violin", "beta violin"]
NEAR = {"near two": 0.5, "near three": 0.1, "near one": 0.9}  # cosine with the query
PLAYERS = ["Cid", "Ann", "Dee", "Bob"]
MEETINGS = {"knows": 0.5, "meets": 0.1, "helps": 0.9}


def toward(cosine: float) -> list[float]:
    """A unit vector at this cosine with the query's (the first axis)."""
    v = np.zeros(DIMS)
    v[0], v[1] = cosine, np.sqrt(1 - cosine**2)
    return v.tolist()


AWAY = np.eye(DIMS)[DIMS - 1].tolist()  # cosine 0: never in a dense top 3


class Axis:
    """Every query embeds to the first axis."""

    dims = DIMS
    name = "axis"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.tile(np.eye(DIMS, dtype=np.float32)[0], (len(texts), 1))


def write(store: Store, tenant: Tenant, ids: list[str]) -> None:
    """The same facts and edges in every tenant; only their ids differ."""
    facts = [Fact(id=ids.pop(), tenant=tenant, text=t, embedding=AWAY) for t in VIOLIN]
    facts += [Fact(id=ids.pop(), tenant=tenant, text=t, embedding=toward(c))
              for t, c in NEAR.items()]  # fmt: skip
    store.apply(fact_plan(tenant, facts))
    eve, fay, gus = (entity(tenant, n, 7) for n in ("Eve", "Fay", "Gus"))
    players = [entity(tenant, n, 7) for n in PLAYERS]
    edges = [
        Relation(id=ids.pop(), tenant=tenant, source_id=p.id, source=p.name,
                 relation="plays_violin_with", destination_id=eve.id, destination=eve.name,
                 embedding=AWAY)
        for p in players
    ] + [
        Relation(id=ids.pop(), tenant=tenant, source_id=fay.id, source=fay.name, relation=r,
                 destination_id=gus.id, destination=gus.name, embedding=toward(c))
        for r, c in MEETINGS.items()
    ]  # fmt: skip
    store.apply(plan(tenant, [eve, fay, gus, *players], edges))


@pytest.mark.parametrize("fusion", ["hybrid", "hybrid_rrf"])
def test_the_same_content_comes_back_in_the_same_order_whatever_the_ids(
    store: Store, fusion: str
) -> None:
    ascending = [f"{n:032x}" for n in range(100, 0, -1)]  # popped from the end: 1, 2, ...
    write(store, X, ascending)
    write(store, Y, ascending[::-1])  # 100, 99, ...: every tie in id order is reversed
    config = RetrievalConfig.model_validate(
        {"fusion": fusion, "fact_top_k": 1, "triple_top_k": 1, "link_threshold": 0.99}
    )
    retriever = DualRetriever(store, CachedEmbedder(Axis()), config)

    def found(tenant: Tenant) -> tuple[list[str], list[str]]:
        result = retriever.search("violin", tenant, 3, Validity(), facts=True)
        return [f.text for f in result.facts], [r.source for r in result.relations]

    facts, edges = found(X)
    assert found(Y) == (facts, edges)
    # four facts tie in BM25 and only three are read (k = 3): the first three by text; each
    # ties the best dense hit's fused score (relative: 1 each; RRF: 1 / 61 each), which is
    # first (its dense rank), then the BM25 ones in the store's order of them
    assert facts == ["near one", "alpha violin", "beta violin"]
    assert edges == ["Fay", "Ann", "Bob"]  # the same for edges ("fay helps gus" first)
    hit: Any = retriever.search("violin", X, 3, Validity(), facts=True).facts[1]
    assert hit.sources == {"bm25_facts": 1}  # tied BM25 scores share their rank


def _ranked_by_full_key(
    fused: dict[str, float],
    sources: dict[str, dict[str, int]] | None,
    rankings: dict[str, list[tuple[str, float]]] | None,
) -> list[tuple[str, float]]:
    """`ranked`'s rule as one sort key over every hit (what it did before sorting ties only)."""
    far = 1 << 30
    places: dict[str, list[int]] = {}
    for column, name in enumerate(TIE_ORDER):
        for place, (item, _) in enumerate((rankings or {}).get(name, ())):
            row = places.setdefault(item, [far] * len(TIE_ORDER))
            row[column] = min(row[column], place)

    def key(item: tuple[str, float]) -> tuple[Any, ...]:
        found = (sources or {}).get(item[0], {})
        ranks = tuple(found.get(n, far) for n in TIE_ORDER)
        return -round(item[1], 12), ranks, places.get(item[0], [far] * len(TIE_ORDER)), item[0]

    return sorted(fused.items(), key=key)


def test_ranked_sorts_ties_alone_as_the_full_key_would() -> None:
    """`ranked` sorts by score and applies the tie key to runs of equal scores only; on random
    hits with many ties (equal floats, scores equal to 12 digits, some hits in no ranking or
    without sources) it gives exactly the order of the one full key."""
    rng = random.Random(11)
    for case in range(2000):
        ids = [f"h{rng.randint(0, 80)}" for _ in range(rng.randint(0, 60))]
        choices = [0.5, 0.25, 1 / 3, 0.1, 0.1 + 1e-14]
        fused = {i: rng.choice([*choices, rng.random()]) for i in ids}
        rankings = {
            name: [(i, rng.random()) for i in rng.sample(list(fused), rng.randint(0, len(fused)))]
            for name in rng.sample(TIE_ORDER, 3)
        }
        sources = {
            i: {name: rng.randint(1, 9) for name in rng.sample(TIE_ORDER, 2)}
            for i in fused
            if rng.random() < 0.7
        }
        given = [(fused, None, None), (fused, sources, None), (fused, sources, rankings),
                 (fused, None, rankings)][case % 4]  # fmt: skip
        assert ranked(*given) == _ranked_by_full_key(*given), case
