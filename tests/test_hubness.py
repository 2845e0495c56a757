"""The dense fact ranking's hubness correction (`FusionConfig.hub_penalty`,
retrieve/hubness.py) and the kept vector sums it reads (`GraphStore.fact_vector_sum`; the
stores' own bookkeeping of the sums is in tests/test_store_contract.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from mem0g.config import FusionConfig
from mem0g.embed import CachedEmbedder
from mem0g.retrieve.fusion import PRESETS
from mem0g.retrieve.hubness import corrected
from mem0g.stores.vectors import VectorBlock, vector_sum_change
from mem0g.types import Tenant
from tests.conftest import MemoryFactory


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_a_candidate_near_the_centroid_loses_to_a_specific_one() -> None:
    generic, specific = unit(1, 0, 0), unit(0.3, 0.954, 0)
    ranking = [("g", 0.80), ("s", 0.70)]  # raw cosine: the generic fact first
    total = 5 * generic.astype(np.float64) + specific  # a scope of five generic facts
    got = corrected(ranking, [generic, specific], total, 0.25)
    assert [i for i, _ in got] == ["s", "g"]
    centre = total / np.linalg.norm(total)
    assert dict(got)["g"] == pytest.approx(0.80 - 0.25 * float(generic @ centre), abs=1e-6)
    assert dict(got)["s"] == pytest.approx(0.70 - 0.25 * float(specific @ centre), abs=1e-6)
    # a smaller penalty keeps the raw order; none, no sum, or a sum of no direction: as given
    assert [i for i, _ in corrected(ranking, [generic, specific], total, 0.05)] == ["g", "s"]
    for penalty, summed in ((0.0, total), (0.25, None), (0.25, np.zeros(3))):
        assert corrected(ranking, [generic, specific], summed, penalty) == ranking


def test_equal_corrected_scores_keep_the_stores_order() -> None:
    same = unit(0, 1, 0)
    ranking = [("b", 0.5), ("a", 0.5), ("c", 0.4)]
    got = corrected(ranking, [same, same, same], np.array([1.0, 0.0, 0.0]), 0.3)
    assert [i for i, _ in got] == ["b", "a", "c"]


def test_sum_changes_of_a_write() -> None:
    a, b = [3.0, 4.0], [0.0, 2.0]
    count, delta = vector_sum_change([a, None, b], [[1.0, 0.0]]) or (0, [])
    assert count == 1  # two with a vector came, one went
    assert delta == pytest.approx([0.6 - 1.0, 0.8 + 1.0])
    assert vector_sum_change([None], []) is None
    assert vector_sum_change([], []) is None


def test_a_blocks_total_follows_its_rows() -> None:
    block = VectorBlock.build(["x", "y"], [unit(1, 0), unit(0, 1)], [True, True], 2)
    assert block.total() == pytest.approx([1.0, 1.0])
    block.upsert("z", np.array([0.0, -3.0], dtype=np.float32), True)
    assert block.total() == pytest.approx([1.0, 0.0])
    block.unflag("x")
    assert block.total() == pytest.approx([0.0, 0.0])
    block.upsert("y", np.array([2.0, 0.0], dtype=np.float32), True, replace=True)
    assert block.total() == pytest.approx([1.0, -1.0])


def test_a_blocks_kept_total_equals_a_fresh_sum_after_random_writes() -> None:
    rng = np.random.default_rng(7)
    block = VectorBlock.build([], [], [], 6)
    block.total()  # kept from here on
    for step in range(400):
        record = f"r{rng.integers(40)}"
        action = rng.integers(3)
        if action == 0:
            block.unflag(record)
        else:
            vector = rng.normal(size=6).astype(np.float32)
            block.upsert(record, vector, bool(rng.integers(4)), replace=bool(action == 2))
        rows = block.selected()
        fresh = (block.matrix if rows is None else block.matrix[rows]).sum(axis=0)
        assert block.total() == pytest.approx(fresh, abs=1e-5), step


# ---------------------------------------------------------------- through Memory.search

GENERIC = [f"Maya values her family moments, kind {i}" for i in range(5)]
SPECIFIC = "Maya signed up for a pottery class"
QUERY = "Which hobbies does Maya have?"


class _Table:
    """Vectors chosen by hand: five general facts along one axis (the scope's centroid),
    a specific fact away from it, and a query whose raw cosine prefers the general ones
    (0.80 against 0.70) by less than the correction takes from them."""

    name = "table"
    dims = 4

    def __init__(self) -> None:
        self.table = {text: unit(1, 0, 0, 0.02 * i) for i, text in enumerate(GENERIC)}
        self.table[SPECIFIC] = unit(0.3, 0.954, 0, 0)
        self.table[QUERY] = unit(0.8, 0.482, 0.358, 0)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table.get(t, unit(0, 0, 1, 1)) for t in texts])


@pytest.mark.parametrize("store_kind", ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_search_ranks_the_specific_fact_first_on_both_stores(
    make_memory: MemoryFactory, store_kind: str
) -> None:
    m = make_memory(embedder=CachedEmbedder(_Table()), memory={"facts": True})
    for text in [*GENERIC, SPECIFIC]:
        m.add(text, user_id="maya", infer=False)  # one add each: no episode neighbours
    m.add("Someone else entirely", user_id="other", infer=False)  # another tenant's centroid

    def order(fusion: str | FusionConfig, **kw: object) -> list[str]:
        m.config.retrieval.fusion = PRESETS[fusion] if isinstance(fusion, str) else fusion
        return [f.text for f in m.search(QUERY, user_id="maya", limit=6, **kw).facts]

    assert order("hybrid")[0] == SPECIFIC
    assert order("hybrid_uncentred")[-1] == SPECIFIC
    assert order("dense")[-1] == SPECIFIC  # the baseline preset stays plain cosine
    later = datetime.now(timezone.utc) + timedelta(days=1)  # the as_of path, same rule
    assert order("hybrid", as_of=later)[0] == SPECIFIC
    assert order("hybrid_uncentred", as_of=later)[-1] == SPECIFIC
    hit = m.search(QUERY, user_id="maya", limit=1).facts[0]
    assert hit.text != SPECIFIC  # the uncentred recipe is still set; back to the default:
    m.config.retrieval.fusion = FusionConfig()
    hit = m.search(QUERY, user_id="maya", limit=1).facts[0]
    assert hit.text == SPECIFIC and hit.sources["dense_facts"] == 1
    maya = Tenant(user_id="maya")
    if m.store.capabilities.held_names:  # Neo4j: the name ranker's read brings the same sum
        ranker = m.store.name_ranker(maya, wait=True)
        assert ranker is not None and ranker.fact_sum_read
        assert ranker.fact_sum == pytest.approx(m.store.fact_vector_sum(maya), abs=1e-9)
