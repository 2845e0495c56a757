"""How `mem0g doctor` and `mem0g stats` describe a Neo4j store's warm-up (its WarmupStatus)."""

from __future__ import annotations

from mem0g.cli.store import _warmup_detail
from mem0g.stores.base import WarmupStatus


def test_a_warmup_over_real_data_shows_its_searches_and_whether_it_settled() -> None:
    status = WarmupStatus(
        state="done", seconds=30.0, rounds=2, statements=31, shapes=8, searches=13,
        planned_apart=23, settled=False,
    )  # fmt: skip
    assert _warmup_detail(status) == (
        "13 searches of its own data (8 a round), 23 statements read apart, 2 rounds, "
        "not settled within the bound"
    )
    settled = status.model_copy(update={"searches": 200, "rounds": 26, "settled": True})
    assert _warmup_detail(settled) == (
        "200 searches of its own data (8 a round), 23 statements read apart, 26 rounds, settled"
    )


def test_a_warmup_of_an_empty_store_shows_its_plan_rounds() -> None:
    status = WarmupStatus(state="done", seconds=4.2, rounds=30, statements=31, settled=True)
    assert _warmup_detail(status) == "30 rounds of 31 read statements (an empty store), settled"
