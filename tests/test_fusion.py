"""Fusion as data (named rankings, weights, presets, near-duplicate cut, MMR), the query's
time window on a table of expressions, `hit.sources`, and a search path that calls no LLM."""

from __future__ import annotations

import socket
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from mem0g import Memory
from mem0g.config import FusionConfig, FusionWeights, RetrievalConfig
from mem0g.embed import CachedEmbedder
from mem0g.retrieve.fusion import PRESETS, diversify, fuse, ranked
from mem0g.retrieve.timewin import names_a_time, query_time
from tests.conftest import MemoryFactory

UTC = timezone.utc
REF = datetime(2024, 3, 15, 12, 0, tzinfo=UTC)  # a Friday


def d(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


WINDOWS = [
    ("What did she do in May 2023?", d(2023, 5, 1), d(2023, 6, 1)),
    ("what happened on 7 May 2023", d(2023, 5, 7), d(2023, 5, 8)),
    ("what happened on May 7th, 2023", d(2023, 5, 7), d(2023, 5, 8)),
    ("events of 2023-05-07", d(2023, 5, 7), d(2023, 5, 8)),
    ("where did Alice live in 2021?", d(2021, 1, 1), d(2022, 1, 1)),
    ("what did I buy last year", d(2023, 1, 1), d(2024, 1, 1)),
    ("plans for this month", d(2024, 3, 1), d(2024, 4, 1)),
    ("what did we eat last month", d(2024, 2, 1), d(2024, 3, 1)),
    ("what did I do last week", d(2024, 3, 4), d(2024, 3, 11)),
    ("who called yesterday", d(2024, 3, 14), d(2024, 3, 15)),
    ("the trip three weeks ago", d(2024, 2, 19), d(2024, 2, 26)),
    ("what changed 2 years ago", d(2022, 1, 1), d(2023, 1, 1)),
    ("where did she work before June 2023", None, d(2023, 6, 1)),
    ("what has he done since 2022", d(2022, 1, 1), None),
    ("what did they do after 2022", d(2023, 1, 1), None),
    ("what happened in June", d(2023, 6, 1), d(2023, 7, 1)),  # the latest June before REF
    ("what happened in March", d(2024, 3, 1), d(2024, 4, 1)),
    ("where did she live between 2020 and 2022", d(2020, 1, 1), d(2023, 1, 1)),
    ("what did he do from May 2021 to June 2022", d(2021, 5, 1), d(2022, 7, 1)),
    ("who visited from 2019 until 2021", d(2019, 1, 1), d(2022, 1, 1)),
    ("what happened between 7 May 2023 and 9 May 2023", d(2023, 5, 7), d(2023, 5, 10)),
    # weekdays, weekends, days without a year, "prior to", "a couple of" (REF is a Friday)
    ("what did I do last Monday", d(2024, 3, 11), d(2024, 3, 12)),
    ("who came last Friday", d(2024, 3, 8), d(2024, 3, 9)),  # not today
    ("what happened on Wednesday", d(2024, 3, 13), d(2024, 3, 14)),
    ("who called on Friday", d(2024, 3, 15), d(2024, 3, 16)),  # today
    ("the meeting this Monday", d(2024, 3, 11), d(2024, 3, 12)),
    ("plans for next Tuesday", d(2024, 3, 19), d(2024, 3, 20)),
    ("what did we do last weekend", d(2024, 3, 9), d(2024, 3, 11)),
    ("plans for this weekend", d(2024, 3, 16), d(2024, 3, 18)),
    ("what did she do over the weekend", d(2024, 3, 9), d(2024, 3, 11)),
    ("the trip a couple of weeks ago", d(2024, 2, 26), d(2024, 3, 4)),
    ("what I bought a few days ago", d(2024, 3, 12), d(2024, 3, 13)),
    ("where did she live prior to May", None, d(2023, 5, 1)),
    ("what happened on May 7", d(2023, 5, 7), d(2023, 5, 8)),
    ("the party on the 7th of March", d(2024, 3, 7), d(2024, 3, 8)),
    ("what is planned for March 20th", d(2023, 3, 20), d(2023, 3, 21)),  # the latest up to REF
    ("who called the day before yesterday", d(2024, 3, 13), d(2024, 3, 14)),
    ("what did I eat last night", d(2024, 3, 14), d(2024, 3, 16)),
    ("what happened between May 7 and May 9", d(2023, 5, 7), d(2023, 5, 10)),
]


@pytest.mark.parametrize(("query", "start", "end"), WINDOWS)
def test_time_windows_from_a_fixed_reference_time(
    query: str, start: datetime | None, end: datetime | None
) -> None:
    window = query_time(query, REF).window
    assert window is not None, query
    assert (window.start, window.end) == (start, end), query


@pytest.mark.parametrize(
    "query",
    ["What may Alice like?", "Who is Sat Nam?", "What does Alice do now?", "March on!", "",
     "events of 2023-13-01", "events of 2023-31-12",  # no month 13 or 31 (not 13 January)
     "What does Alice do on Mondays?", "you may 2 times", "the 31st of June"],
)  # fmt: skip
def test_no_window_where_no_time_is_named(query: str) -> None:
    assert query_time(query, REF).window is None


MONTH_ENDS = [  # (query, reference time, window)
    ("what did we eat last month", d(2024, 3, 31, 12), d(2024, 2, 1), d(2024, 3, 1)),
    ("what did we eat last month", d(2024, 5, 31, 12), d(2024, 4, 1), d(2024, 5, 1)),
    ("the trip a month ago", d(2024, 5, 31, 12), d(2024, 4, 1), d(2024, 5, 1)),
    ("plans for next month", d(2024, 3, 31, 12), d(2024, 4, 1), d(2024, 5, 1)),
    ("plans for next month", d(2024, 1, 30, 12), d(2024, 2, 1), d(2024, 3, 1)),
    ("what happened 3 months ago", d(2024, 5, 31, 12), d(2024, 2, 1), d(2024, 3, 1)),
    ("what did I do in the past month", d(2024, 3, 31, 12), d(2024, 2, 29, 12),
     d(2024, 3, 31, 12, 0, 1)),
    ("what did I do in the past year", d(2024, 1, 31, 12), d(2023, 1, 31, 12),
     d(2024, 1, 31, 12, 0, 1)),
    ("what did I do in the past year", d(2024, 2, 29, 12), d(2023, 2, 28, 12),
     d(2024, 2, 29, 12, 0, 1)),
]  # fmt: skip


@pytest.mark.parametrize(("query", "ref", "start", "end"), MONTH_ENDS)
def test_months_counted_from_a_long_month_s_last_days(
    query: str, ref: datetime, start: datetime, end: datetime
) -> None:
    """On 31 March "last month" was March (1 February + 30 days) and "next month" was
    May; "the past month" began at midnight."""
    window = query_time(query, ref).window
    assert window is not None
    assert (window.start, window.end) == (start, end)


IST = timezone(timedelta(hours=5, minutes=30))
PST = timezone(timedelta(hours=-8))
ZONED = [  # (query, reference time in the asker's zone, window in UTC)
    ("what did I do yesterday", datetime(2024, 1, 1, 2, tzinfo=IST), d(2023, 12, 30, 18, 30),
     d(2023, 12, 31, 18, 30)),
    ("what did I do today", datetime(2024, 1, 1, 20, tzinfo=PST), d(2024, 1, 1, 8),
     d(2024, 1, 2, 8)),
    ("what did I buy last year", datetime(2024, 1, 1, 2, tzinfo=IST), d(2022, 12, 31, 18, 30),
     d(2023, 12, 31, 18, 30)),
    ("what happened on 7 May 2023", datetime(2024, 1, 1, tzinfo=PST), d(2023, 5, 7, 8),
     d(2023, 5, 8, 8)),
    ("what did I do in 2023", datetime(2024, 1, 1, tzinfo=IST), d(2022, 12, 31, 18, 30),
     d(2023, 12, 31, 18, 30)),
    ("what did I do in May", datetime(2024, 1, 1, tzinfo=IST), d(2023, 4, 30, 18, 30),
     d(2023, 5, 31, 18, 30)),
]  # fmt: skip


@pytest.mark.parametrize(("query", "ref", "start", "end"), ZONED)
def test_calendar_words_are_read_in_the_reference_time_s_zone(
    query: str, ref: datetime, start: datetime, end: datetime
) -> None:
    """At 02:00 on 1 January in India "yesterday" is 31 December there; it was read as the
    UTC day before (30 December), a day off for every asker whose zone is not UTC."""
    window = query_time(query, ref).window
    assert window is not None
    assert (window.start, window.end) == (start, end)
    assert window.start.tzinfo == UTC


def test_search_reads_yesterday_in_the_zone_of_its_reference_time(
    tmp_path: Path, hashing: CachedEmbedder
) -> None:
    with Memory({"graph_store": {"path": str(tmp_path)}}, embedder=hashing) as m:
        m.add(
            "Alice went to the cinema",
            user_id="alice",
            infer=False,
            timestamp="2023-12-30T10:00:00+05:30",
        )
        m.add("Alice went to the gym", user_id="alice", infer=False,
              timestamp="2023-12-31T10:00:00+05:30")  # fmt: skip
        hits = m.search("what did Alice do yesterday", user_id="alice",
                        reference_time="2024-01-01T02:00:00+05:30")  # fmt: skip
        boosted = [h.text for h in hits.facts if "time" in h.sources]
        assert boosted == ["Alice went to the gym"]


LAST_DAY = datetime(9999, 12, 20, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "ref"),
    [("what happened 1000000 days ago", REF), ("9999 years ago", REF),
     ("99999999999 years ago", REF), ("news from 400000 weeks ago", REF),
     ("what happened " + "9" * 3000 + " months ago", REF), ("plans for next month", LAST_DAY),
     ("what comes next year", LAST_DAY)],
)  # fmt: skip
def test_a_time_outside_years_1_to_9999_is_no_window_not_an_error(
    query: str, ref: datetime
) -> None:
    """Such a query raised OverflowError (or ValueError) out of `search`."""
    assert query_time(query, ref).window is None


def test_when_questions_and_dated_facts() -> None:
    assert query_time("When did Caroline go to the support group?", REF).asks_when
    assert query_time("What year did Alice move?", REF).asks_when
    assert not query_time("Where does Alice live?", REF).asks_when
    assert names_a_time("Alice moved to Paris in October 2023")
    assert names_a_time("They went hiking last weekend")
    assert not names_a_time("Alice likes hiking")


def test_weights_change_the_order_as_specified() -> None:
    rankings = {"dense_facts": [("a", 0.9), ("b", 0.8)], "bm25_facts": [("b", 7.0), ("c", 3.0)]}
    equal, sources = fuse(rankings, FusionConfig(method="rrf"))
    assert [i for i, _ in ranked(equal)] == ["b", "a", "c"]  # b is in both
    assert equal["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert sources == {"a": {"dense_facts": 1}, "b": {"dense_facts": 2, "bm25_facts": 1},
                       "c": {"bm25_facts": 2}}  # fmt: skip
    dense_heavy = FusionConfig(method="rrf", weights=FusionWeights(dense_facts=3.0))
    assert [i for i, _ in ranked(fuse(rankings, dense_heavy)[0])] == ["b", "a", "c"]
    no_bm25 = FusionConfig(method="rrf", weights=FusionWeights(bm25_facts=0))
    fused, sources = fuse(rankings, no_bm25)
    assert [i for i, _ in ranked(fused)] == ["a", "b"]  # c was only found by a weight-0 ranking
    assert sources["c"] == {"bm25_facts": 2}
    weighted = FusionConfig(method="weighted", weights=FusionWeights(bm25_facts=0.01))
    assert [i for i, _ in ranked(fuse(rankings, weighted)[0])] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="extra"):
        FusionConfig(weights={"dense_fact": 1.0})  # a typo is an error, not a silent zero
    assert RetrievalConfig(fusion="dense").fusion == PRESETS["dense"]
    with pytest.raises(ValueError, match="unknown fusion preset"):
        RetrievalConfig(fusion="best")
    old = FusionConfig(entity_weight=0.7, triple_weight=1.3)  # the names before #17
    assert (old.weights.graph_expansion, old.weights.dense_relations) == (0.7, 1.3)


def test_near_duplicates_are_cut_and_mmr_diversifies() -> None:
    rng = np.random.default_rng(7)
    base = rng.standard_normal(16)
    other = rng.standard_normal(16)
    vectors = {f"dup{i}": base + 0.01 * rng.standard_normal(16) for i in range(10)}
    vectors["other"] = other
    vectors["room 4"] = base
    order = [(f"dup{i}", 1.0 - i / 100) for i in range(10)] + [("room 4", 0.5), ("other", 0.4)]
    texts = {i: "Alice stays in room 3" for i in vectors} | {"room 4": "Alice stays in room 4"}
    kept = diversify(order, vectors, 3, FusionConfig(near_duplicate=0.95), texts)
    # ten rewordings of one fact keep one place; a fact naming another number is not one
    assert [i for i, _ in kept] == ["dup0", "room 4", "other"]
    assert [i for i, _ in diversify(order, vectors, 3, FusionConfig(near_duplicate=1.0))] == [
        "dup0", "dup1", "dup2",
    ]  # fmt: skip
    mmr = diversify(order, vectors, 2, FusionConfig(mmr_lambda=0.5))
    assert [i for i, _ in mmr] == ["dup0", "other"]


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("store_kind", ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_hybrid_search_end_to_end_with_a_dead_llm(make_memory: MemoryFactory) -> None:
    """Search needs no LLM: the configured endpoint is a port nothing listens on."""
    m = make_memory(
        memory={"facts": True},
        llm={"base_url": f"http://127.0.0.1:{_dead_port()}/v1", "max_retries": 0, "timeout": 1},
    )
    facts = [
        ("Alice is researching adoption agencies", d(2023, 5, 8)),
        ("Alice went to a pottery workshop", d(2023, 7, 2)),
        ("Alice painted a sunset over the lake", d(2023, 7, 2)),
        ("Bob plays the trumpet in a jazz band", d(2023, 8, 1)),
    ]
    for text, when in facts:
        m.add(text, user_id="alice", timestamp=when, infer=False)
    hits = m.search("What is Alice researching?", user_id="alice", limit=3)
    best = hits.facts[0]
    assert best.text == "Alice is researching adoption agencies"
    assert best.sources["dense_facts"] == 1 and best.sources["bm25_facts"] == 1
    # the stemmed lexical ranking finds "researching" for "research" too
    hits = m.search("adoption research", user_id="alice", limit=3)
    assert hits.facts[0].sources.get("bm25_facts") == 1
    # a time window boosts what was said then, and says so
    july = m.search("What did Alice do in July 2023?", user_id="alice", limit=4)
    assert {f.text for f in july.facts[:2]} == {facts[1][0], facts[2][0]}
    assert all("time" in f.sources for f in july.facts[:2])
    assert "time" not in july.facts[-1].sources
    block = m.context_block("What did Alice do?", user_id="alice", limit=10, max_tokens=60)
    assert block.tokens <= 60 and block.dropped > 0 and block.facts < 4
    assert block.text == m.context("What did Alice do?", user_id="alice", max_tokens=60)


def test_the_dense_preset_is_plain_vector_search(tmp_path: Path, hashing: object) -> None:
    m = Memory({"graph_store": {"path": str(tmp_path)}, "memory": {"summary": False},
                "retrieval": {"fusion": "dense"}}, embedder=hashing)  # fmt: skip
    try:
        for text in ["red apples", "green apples and pears", "a blue car", "apples apples"]:
            m.add(text, user_id="u", infer=False)
        qvec = m.embedder.embed(["apples"])[0]
        from mem0g.types import Tenant

        want = [f.id for f, _ in m.store.similar_facts(Tenant(user_id="u"), qvec, 4)]
        assert [f.id for f in m.search("apples", user_id="u", limit=4).facts] == want
    finally:
        m.close()


def test_the_context_block_keeps_its_budget_and_says_what_it_cut() -> None:
    """A section whose lines the budget all took read "- (none)", telling the caller's LLM
    that nothing was known; a budget below the two headers returned more tokens than asked;
    with `as_of` an edge's later end was shown ("until" a date not known then)."""
    from mem0g.retrieve.context import BUDGET_CUT, render
    from mem0g.types import FactHit, RelationHit, SearchResult

    at = d(2023, 5, 8)
    fact = FactHit(id="f", text="Alice went to a pottery workshop in the old town", score=1,
                   created_at=at, updated_at=at)  # fmt: skip
    edge = RelationHit(id="r", source="alice", relation="lives_in", destination="paris",
                       score=1, created_at=at, valid_from=at, invalid_at=d(2023, 9, 1))  # fmt: skip
    hits = SearchResult(query="q", facts=[fact], relations=[edge])
    full = render(hits, "alice", 1000)
    assert full.dropped == 0 and "(until 2023-09-01)" in full.text
    then = render(hits, "alice", 1000, as_of=d(2023, 6, 1))
    assert "(since 2023-05-08)" in then.text and "until" not in then.text
    assert "(until 2023-09-01)" in render(hits, "alice", 1000, as_of=d(2023, 10, 1)).text
    small = render(hits, "alice", 35)
    assert small.tokens <= 35 and small.dropped == 2 and small.text.count(BUDGET_CUT) == 2
    assert "(none)" not in small.text
    assert "- (none)" in render(SearchResult(query="q"), "alice", 1000).text  # nothing found
    for budget in (1, 5, 12):
        tiny = render(hits, "alice", budget)
        assert tiny.tokens <= budget and tiny.text == "" and tiny.dropped == 2
