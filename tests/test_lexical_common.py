"""Query words that most of a scope's facts hold are left out of the facts' BM25 query
(`FusionConfig.common_words`): the stores' `common_fact_words` (both engines, the same answer,
scoped to the tenant), the `as_of` path's BM25 in Python, and what a search returns with and
without the rule, with no LLM."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest
from builders import A, B, Store
from conftest import MemoryFactory
from test_lexical import add_facts

from mem0g.config import FusionConfig
from mem0g.embed import CachedEmbedder
from mem0g.retrieve.facts import HistoricalFacts
from mem0g.retrieve.fusion import PRESETS
from mem0g.retrieve.timeline import FactVersion
from mem0g.stores.lexical_query import query_terms
from mem0g.testing.neo4j import free_port
from mem0g.types import FactChange, Tenant, WritePlan

BOTH = ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)]
A_RUN = Tenant(user_id="a", run_id="r1")
MAYA = [
    "Maya moved to Paris in October",
    "Maya is vegan and avoids dairy",
    "Maya researched bakeries near her flat",
    "Maya's sister plays the cello",
    "The flat has a small balcony",
]


@pytest.mark.parametrize("store_kind", BOTH)
def test_words_most_of_the_scope_holds_are_common_there_only(store: Store) -> None:
    add_facts(store, A, MAYA)
    # B holds none of A's words but "balcony" in every fact: B's facts never count for A
    add_facts(store, B, [f"A balcony {n}" for n in ("garden", "view", "railing")])
    words = query_terms("Where did Maya research a flat with a balcony?")
    assert words == ["maya", "research", "flat", "balcony"]
    # maya: 4 of 5 facts (the possessive too); flat 2, research 1 (stemmed: "researched")
    assert store.common_fact_words(A, words, 0.5) == ["maya"]
    assert store.common_fact_words(A, words, 0.3) == ["maya", "flat"]
    assert store.common_fact_words(A, words, 0.8) == []  # 4 of 5 is not more than 0.8
    assert store.common_fact_words(A, words, 1.0) == []
    assert store.common_fact_words(B, words, 0.5) == ["balcony"]
    assert store.common_fact_words(A, [], 0.5) == []
    assert store.common_fact_words(Tenant(user_id="nobody"), words, 0.5) == []
    # the exact tenant only: A's facts are not the run's
    add_facts(store, A_RUN, ["Maya rides a bicycle", "Tomas fixes bicycles"])
    assert store.common_fact_words(A_RUN, ["bicycle", "maya"], 0.5, exact=True) == ["bicycle"]
    # A's scope (every run of user a) now holds 7 facts, 5 naming Maya
    assert store.common_fact_words(A, ["maya", "bicycle"], 0.5) == ["maya"]


@pytest.mark.parametrize("store_kind", BOTH)
def test_a_deleted_fact_no_longer_counts_and_hostile_words_are_only_words(store: Store) -> None:
    facts = add_facts(store, A, ["Ana paints", "Ana swims", "Ben runs"])
    assert store.common_fact_words(A, ["ana"], 0.5) == ["ana"]
    store.apply(WritePlan(tenant=A, fact_changes=[FactChange(fact_id=facts[0].id, text=None)]))
    assert store.common_fact_words(A, ["ana"], 0.5) == []  # 1 of 2 is not more than half
    hostile = query_terms('ana* OR "ben" text:ana ^ben~2 (ana')
    assert store.common_fact_words(A, hostile, 0.4) == ["ana", "ben"]


def test_the_as_of_path_leaves_out_the_same_words(hashing: CachedEmbedder) -> None:
    """The versions an `as_of` search ranks are scored in Python: the same rule over them."""
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    texts = ["Maya likes tea", "Maya likes jazz", "Maya bakes bread", "Oskar likes tea"]
    found = [FactVersion(fact_id=str(i), tenant=A, text=t, start=when) for i, t in enumerate(texts)]
    history = HistoricalFacts(None, hashing)  # type: ignore[arg-type]
    qvec = np.asarray(hashing.embed(["tea"])[0])
    words = query_terms("Does Maya like tea?")
    _, every, _ = history.rankings(found, qvec, words, 10, 1.0)
    _, rare, _ = history.rankings(found, qvec, words, 10, 0.5)
    assert {i for i, _ in every} == {0, 1, 2, 3}  # "maya" or "like" or "tea" in each
    # maya (3 of 4) and like (3 of 4) are common: tea alone ranks, 2 facts
    assert {i for i, _ in rare} == {0, 3}


@pytest.mark.parametrize("store_kind", BOTH)
def test_a_name_in_every_fact_no_longer_ranks_the_shortest_facts_first(
    make_memory: MemoryFactory,
) -> None:
    """With every word, BM25 matches the user's name in every fact and ranks the shortest
    first; without the common name only the facts holding another query word are its hits.
    No LLM on the path (a dead port)."""
    dead = {"base_url": f"http://127.0.0.1:{free_port()}/v1", "max_retries": 0, "timeout": 1}
    m = make_memory(memory={"facts": True}, llm=dead)
    for text in MAYA[:4]:
        m.add(text, user_id="u", infer=False, timestamp="2024-01-10")
    query = "What does Maya avoid eating?"
    hits = m.search(query, user_id="u", limit=4).facts
    assert [h.text for h in hits if "bm25_facts" in h.sources] == ["Maya is vegan and avoids dairy"]
    assert hits[0].text == "Maya is vegan and avoids dairy"
    assert all("dense_facts" in h.sources for h in hits)
    m.config.retrieval.fusion = PRESETS["hybrid_all_words"].model_copy(deep=True)
    every = m.search(query, user_id="u", limit=4).facts
    assert all("bm25_facts" in h.sources for h in every)  # "maya" matched all four
    assert every[0].text == "Maya is vegan and avoids dairy"


def test_the_default_and_the_presets_say_which_words_they_keep() -> None:
    assert FusionConfig().common_words == 0.5
    assert PRESETS["hybrid"].common_words == 0.5
    for name in ("hybrid_all_words", "hybrid_relative", "hybrid_rrf", "dense_bm25"):
        assert PRESETS[name].common_words == 1.0, name
    with pytest.raises(ValueError):
        FusionConfig(common_words=0.0)
    with pytest.raises(ValueError):
        FusionConfig(common_words=1.5)


@pytest.mark.parametrize("store_kind", BOTH)
def test_when_every_query_word_is_common_bm25_keeps_them(make_memory: MemoryFactory) -> None:
    """Words are left out only beside a rarer one: a one-fact tenant's word is in every fact,
    and so is a word of most facts asked alone; BM25 still finds them (it did not, when the
    rule left an empty query)."""
    dead = {"base_url": f"http://127.0.0.1:{free_port()}/v1", "max_retries": 0, "timeout": 1}
    m = make_memory(memory={"facts": True}, llm=dead)
    m.add("Maya plays the violin", user_id="solo", infer=False, timestamp="2024-01-10")
    hits = m.search("violin", user_id="solo").facts
    assert [h.text for h in hits] == ["Maya plays the violin"]
    assert "bm25_facts" in hits[0].sources
    for text in MAYA[:4]:
        m.add(text, user_id="u", infer=False, timestamp="2024-01-10")
    lexical = [h.text for h in m.search("Maya", user_id="u", limit=4).facts
               if "bm25_facts" in h.sources]  # fmt: skip
    assert sorted(lexical) == sorted(MAYA[:4])  # "maya" in all four, and the only word
    # beside a rarer word the common one is still left out
    lexical = [h.text for h in m.search("Maya cello", user_id="u", limit=4).facts
               if "bm25_facts" in h.sources]  # fmt: skip
    assert lexical == ["Maya's sister plays the cello"]


def test_the_as_of_path_keeps_words_that_are_all_common(hashing: CachedEmbedder) -> None:
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    texts = ["Maya likes tea", "Maya bakes bread"]
    found = [FactVersion(fact_id=str(i), tenant=A, text=t, start=when) for i, t in enumerate(texts)]
    history = HistoricalFacts(None, hashing)  # type: ignore[arg-type]
    qvec = np.asarray(hashing.embed(["maya"])[0])
    _, lexical, _ = history.rankings(found, qvec, query_terms("Maya"), 10, 0.5)
    assert {i for i, _ in lexical} == {0, 1}
