"""Lexical (BM25) retrieval in the stores' own engines: SQLite FTS5 on the embedded store,
Lucene full-text indexes on Neo4j. Ranking, tenant scoping, edge validity, hostile query
syntax, atomicity with the add, the v4 -> v5 migration, and parity between the two stores."""

from __future__ import annotations

import logging
import re
import sqlite3
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from builders import DIMS, T0, A, B, Store, entity, episode, fact, relation, texts, unit

from mem0g.stores import EmbeddedGraphStore, StoreError
from mem0g.stores.lexical_query import (
    STOPWORDS,
    fts5_query,
    lucene_escape,
    lucene_query,
    lucene_scoped,
    query_terms,
    scope_terms,
    stems,
    terms,
    verb_forms,
)
from mem0g.stores.neo4j.indexes import SCHEMA_VERSION
from mem0g.stores.neo4j.lexical import MIN_FETCH
from mem0g.stores.walk import WalkRequest
from mem0g.types import (
    Fact,
    FactChange,
    Invalidation,
    Tenant,
    Validity,
    WritePlan,
)

A_RUN = Tenant(user_id="a", run_id="r1")
FACTS = [
    "Caroline went to the LGBTQ support group on Sunday",
    "Caroline is researching adoption agencies",
    "Melanie painted a sunset over the lake",
    "Melanie and her kids went camping in the mountains",
    "Caroline's café in Zürich serves pastries",
    "The support group meets every week near the lake",
]
HOSTILE = [
    '"',
    '""" OR "',
    "*",
    "caroline*",
    "AND OR NOT",
    "text:caroline",
    "(unclosed group",
    "sunset~2 lake^10",
    "\\",
    "NEAR(caroline melanie, 2)",
    "-caroline +melanie",
    "{[}]",
    "/reg.*ex/",
    "&& || !",
    "' OR 1=1 --",
    "caroline\x00melanie",
    "^caroline",
    "id:* OR tenant_key:*",
    "",
    "12345 2023",
]


def add_facts(store: Store, tenant: Tenant, texts: list[str]) -> list[Fact]:
    facts = [fact(tenant, t, i, created_at=T0, updated_at=T0) for i, t in enumerate(texts)]
    store.apply(WritePlan(tenant=tenant, episode=episode(tenant), new_facts=facts))
    return facts


# ---------------------------------------------------------------- query building (pure)


def test_terms_are_letter_runs_lower_cased_and_queries_drop_function_words() -> None:
    assert terms("Caroline's café, 2023: works_at Zürich!") == [
        "caroline", "s", "café", "works", "at", "zürich",
    ]  # fmt: skip
    assert query_terms("When did Caroline visit the support group? Caroline!") == [
        "caroline", "visit", "support", "group",
    ]  # fmt: skip
    assert query_terms("the of and") == []
    assert len(query_terms(" ".join(f"word{chr(97 + i % 26)}x{i}" for i in range(100)))) <= 32


def test_irregular_verbs_bring_the_forms_stemming_misses() -> None:
    """The question's "find" is the fact's "found": Porter joins "visit"/"visited" only."""
    assert query_terms("What did Caroline find on her walk?") == [
        "caroline", "find", "walk", "found",
    ]  # fmt: skip
    assert verb_forms("buy") == ("bought",) and verb_forms("go") == ("went", "gone")
    assert verb_forms("see") == ("saw", "seen") and verb_forms("saw") == ()  # base forms only
    assert verb_forms("meet") == ("met",) and verb_forms("think") == ("thought",)
    assert verb_forms("born") == () and "born" in verb_forms("bear")  # "born in" is no bear
    assert verb_forms("eat") == ("eaten",)  # "ate" stems to "at": it would match "works at"
    assert verb_forms("may") == () and verb_forms("might") == ()  # modals; May the month
    for word in ("visited", "painting", "caroline", "lake", "zürich", "and"):
        assert verb_forms(word) == (), word  # regular forms share a stem; not verbs: none
    for form in (f for w in ("go", "be", "have", "do", "make", "lie") for f in verb_forms(w)):
        assert form not in STOPWORDS and terms(form) == [form]  # no function word, letters only
    many = " ".join(f"went{chr(97 + i % 26)}x{i}" for i in range(31)) + " find"
    assert query_terms(many)[:32] == query_terms(many) and "find" in query_terms(many)


def test_engine_queries_quote_and_escape_every_term() -> None:
    assert fts5_query([]) is None and lucene_query([]) is None
    assert fts5_query(["a", 'b"c']) == '"a" OR "b""c"'
    assert lucene_escape('a+b-c"d\\e:f*g?h~i^j(k)l[m]n{o}p!q/r&s|t') == (
        'a\\+b\\-c\\"d\\\\e\\:f\\*g\\?h\\~i\\^j\\(k\\)l\\[m\\]n\\{o\\}p\\!q\\/r\\&s\\|t'
    )
    assert lucene_query(["and", 'x"']) == '"and" OR "x\\""'


def test_scope_terms_are_consonant_digests_and_the_scope_is_required_at_boost_zero() -> None:
    hostile = Tenant(user_id='a" OR lex_scope:*', agent_id="+x -y ^0", run_id="zqw*\\")
    stored = scope_terms(hostile).split()
    assert len(stored) == 4  # user, agent, run and the exact tenant
    assert all(re.fullmatch("[bcdfghjklmnpqrtvwxz]{35}", t) for t in stored), stored
    assert len(set(stored)) == 4
    assert scope_terms(Tenant(user_id="a")) != scope_terms(Tenant(user_id="b"))
    assert len(scope_terms(Tenant(user_id="a", run_id="r")).split()) == 3
    query = lucene_scoped(["locker"], Tenant(user_id="a"))
    (user_term,) = scope_terms(Tenant(user_id="a")).split()[:1]
    assert query == f'+("locker") +lex_scope:"{user_term}"^0'
    exact = lucene_scoped(["locker"], Tenant(user_id="a"), exact=True)
    assert exact == f'+("locker") +lex_scope:"{scope_terms(Tenant(user_id="a")).split()[1]}"^0'
    assert lucene_scoped([], hostile) is None
    for text in (query, lucene_scoped(["x"], hostile)):  # no id text reaches the query
        assert text is not None and "OR lex_scope" not in text and "*" not in text


# ---------------------------------------------------------------- both stores


@pytest.mark.parametrize("store_kind", ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_facts_rank_by_bm25_within_the_scope(store: Store) -> None:
    add_facts(store, A, FACTS)
    add_facts(store, B, ["Caroline support group caroline support group"])
    hits = store.lexical_facts(A, query_terms("Caroline support group"), 3)
    assert len(hits) == 3
    # the fact with all three terms first; B's (a better match) never shows
    assert texts(hits)[0] == FACTS[0]
    assert set(texts(hits)) <= set(FACTS)
    assert all(score > 0 for _, score in hits)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert texts(store.lexical_facts(B, query_terms("lake"), 5)) == []
    assert store.lexical_facts(A, [], 5) == []
    # a scope filter: user a's facts of every run; an exact scope only its own
    add_facts(store, A_RUN, ["Caroline rides horses"])
    assert "Caroline rides horses" in texts(store.lexical_facts(A, ["horses"], 5))
    assert store.lexical_facts(A, ["horses"], 5, exact=True) == []
    assert texts(store.lexical_facts(A_RUN, ["caroline"], 5)) == ["Caroline rides horses"]


@pytest.mark.parametrize("store_kind", ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_a_question_in_the_present_finds_the_fact_in_the_past(store: Store) -> None:
    add_facts(store, A, [*FACTS, "Caroline found a rainbow sidewalk", "Melanie bought a kayak"])
    assert store.lexical_facts(A, ["find"], 5) == []  # the stem alone misses it
    assert texts(store.lexical_facts(A, query_terms("What did she find?"), 5)) == [
        "Caroline found a rainbow sidewalk"
    ]
    assert texts(store.lexical_facts(A, query_terms("Did Melanie buy a boat?"), 1)) == [
        "Melanie bought a kayak"
    ]


@pytest.mark.parametrize("store_kind", ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_fact_index_follows_updates_and_deletes_atomically(store: Store) -> None:
    facts = add_facts(store, A, FACTS[:3])
    store.apply(
        WritePlan(
            tenant=A,
            fact_changes=[
                FactChange(fact_id=facts[0].id, text="Caroline moved to Lisbon"),
                FactChange(fact_id=facts[2].id, text=None),
            ],
        )
    )
    assert texts(store.lexical_facts(A, ["lisbon"], 5)) == ["Caroline moved to Lisbon"]
    # fact texts are stemmed: "researching" is found by "research", "agencies" by "agency"
    assert texts(store.lexical_facts(A, ["moving"], 5)) == ["Caroline moved to Lisbon"]
    assert store.lexical_facts(A, ["lgbtq"], 5) == []  # the old text is gone from the index
    assert store.lexical_facts(A, ["sunset"], 5) == []  # the deleted fact too
    # a plan that fails writes nothing, the index included
    bad = WritePlan(
        tenant=A,
        new_facts=[fact(A, "Caroline adopted a puppy", created_at=T0, updated_at=T0)],
        fact_changes=[FactChange(fact_id="no-such-fact", text="x")],
    )
    with pytest.raises(StoreError):
        store.apply(bad)
    assert store.lexical_facts(A, ["puppy"], 5) == []


# words an engine's own tokenizer may keep whole (Lucene's standard one does), with a query
# word that is one of their letter runs
JOINED_WORDS = [
    ("Melanie got covid19 last winter", "covid"),
    ("Caroline said she don't like onions", "don"),
    ("O'Brien uses node.js at work", "brien"),
    ("Jon fixed the foo_bar module", "foo"),
    ("Caroline bought an iPhone15 in Zürich", "iphone"),
    ("the mp3 player of Ana", "mp"),
]


@pytest.mark.parametrize("store_kind", ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_words_joined_by_digits_or_marks_are_found_by_their_letter_runs(store: Store) -> None:
    """The query's terms are letter runs; Neo4j's fact index once kept "covid19", "don't",
    "node.js" or "foo_bar" whole, so such facts were never found there by BM25. Both stores
    find each by its own letter run, alone, and after an edit by its new text only."""
    facts = add_facts(store, A, [text for text, _ in JOINED_WORDS])
    for (_, word), f in zip(JOINED_WORDS, facts, strict=True):
        hits = store.lexical_facts(A, query_terms(word), 5)
        assert [h.id for h, _ in hits] == [f.id], word
    store.apply(WritePlan(
        tenant=A, fact_changes=[FactChange(fact_id=facts[0].id, text="Melanie had flu2 in May")]
    ))  # fmt: skip
    assert texts(store.lexical_facts(A, ["flu"], 5)) == ["Melanie had flu2 in May"]
    assert store.lexical_facts(A, ["covid"], 5) == []


@pytest.mark.parametrize("store_kind", ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_relations_respect_validity_and_scope(store: Store) -> None:
    alice, paris, berlin = entity(A, "Alice"), entity(A, "Paris"), entity(A, "Berlin")
    old = relation(A, alice, "lives_in", paris, valid_from=T0)
    new = relation(A, alice, "lives_in", berlin, valid_from=T0 + timedelta(days=10))
    works = relation(A, alice, "works_at", berlin)
    store.apply(
        WritePlan(tenant=A, episode=episode(A), new_entities=[alice, paris, berlin],
                  new_relations=[old, new, works])
    )  # fmt: skip
    end = T0 + timedelta(days=10)
    store.apply(
        WritePlan(tenant=A, invalidations=[Invalidation(relation_id=old.id, invalid_at=end)])
    )
    bob = entity(B, "Bob")
    store.apply(
        WritePlan(tenant=B, episode=episode(B), new_entities=[bob, entity(B, "Paris")],
                  new_relations=[relation(B, bob, "lives_in", bob)])
    )  # fmt: skip
    current = store.lexical_relations(A, query_terms("where does Alice live, in Paris?"), 10,
                                      Validity())  # fmt: skip
    assert old.id not in {r.id for r in current}  # invalidated: never on the lexical path
    assert {r.id for r in current} == {new.id, works.id}
    assert all(r.hop == 0 and r.score > 0 for r in current)
    ref = next(r for r in current if r.id == new.id)
    assert (ref.source_id, ref.relation, ref.destination_id) == (alice.id, "lives_in", berlin.id)
    then = store.lexical_relations(A, ["paris"], 10, Validity(as_of=T0 + timedelta(days=5)))
    assert [r.id for r in then] == [old.id]
    everything = store.lexical_relations(A, ["lives"], 10, Validity(include_invalid=True))
    assert {r.id for r in everything} == {old.id, new.id}
    assert store.lexical_relations(B, ["alice"], 10, Validity()) == []
    # the relation name is split into words ("lives_in" matches "lives")
    assert store.lexical_relations(A, ["works"], 10, Validity())[0].id == works.id


@pytest.mark.parametrize("store_kind", ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_entities_match_names_and_aliases(store: Store) -> None:
    bob = entity(A, "Robert Smith", aliases=["Bob"])
    store.apply(WritePlan(tenant=A, episode=episode(A), new_entities=[bob, entity(A, "Lisbon")]))
    store.apply(WritePlan(tenant=B, episode=episode(B), new_entities=[entity(B, "Bob")]))
    hits = store.lexical_entities(A, query_terms("what does Bob like"), 5)
    assert [(e.id, e.embedding) for e, _ in hits] == [(bob.id, None)]
    assert [e.name for e, _ in store.lexical_entities(A, ["smith"], 5)] == ["Robert Smith"]


@pytest.mark.parametrize("store_kind", ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_hostile_queries_are_words_never_syntax(store: Store) -> None:
    add_facts(store, A, FACTS)
    add_facts(store, B, ["secret of tenant b"])
    alice, lake = entity(A, "Alice"), entity(A, "Lake")
    store.apply(
        WritePlan(tenant=A, episode=episode(A), new_entities=[alice, lake],
                  new_relations=[relation(A, alice, "swims_in", lake)])
    )  # fmt: skip
    for query in HOSTILE:
        words = query_terms(query)
        facts = store.lexical_facts(A, words, 10)
        rels = store.lexical_relations(A, words, 10, Validity())
        ents = store.lexical_entities(A, words, 10)
        # only facts holding one of the letter terms (stemmed) come back, never another
        # tenant's
        for f, _ in facts:
            assert set(stems(terms(f.text))) & set(stems(words)), (query, f.text)
            assert f.tenant == A
        assert all(e.tenant == A for e, _ in ents)
        assert len(rels) <= 1
    # operators typed by a user are plain words: "text:caroline" is the words text, caroline
    assert texts(store.lexical_facts(A, query_terms("text:caroline"), 10)) == texts(
        store.lexical_facts(A, ["text", "caroline"], 10)
    )
    assert store.lexical_facts(A, query_terms("*"), 10) == []


def test_words_are_lower_cased_one_letter_at_a_time_as_the_engines_fold_them() -> None:
    """str.lower() is contextual and may lengthen a letter: "ΟΔΟΣ" ends in "ς", which Lucene
    keeps apart from the "σ" it indexes, and "İ" becomes "i" plus a combining dot, which both
    engines' tokenizers split off. A letter is lower-cased alone, and kept when its lowercase
    is not one letter (the engine lower-cases its query itself)."""
    assert terms("ΟΔΟΣ ΣΙΣΥΦΟΣ") == ["οδοσ", "σισυφοσ"]
    assert terms("İstanbul") == ["İstanbul"]
    assert terms("Caroline ZÜRICH") == ["caroline", "zürich"]


UNICODE_WORDS = ["ΟΔΟΣ", "ΣΙΣΥΦΟΣ", "İstanbul", "Οδός", "Zürich", "Straße"]


def test_a_stored_word_is_found_by_itself_whatever_its_letters(store: Store) -> None:
    """Each word, stored in a fact and as a name, is found by the same word as a query."""
    facts = add_facts(store, A, [f"{w} note" for w in UNICODE_WORDS])
    names = [entity(A, w) for w in UNICODE_WORDS]
    store.apply(WritePlan(tenant=A, episode=episode(A), new_entities=names))
    for word, stored in zip(UNICODE_WORDS, facts, strict=True):
        found = store.lexical_facts(A, query_terms(word), 10)
        assert stored.text in texts(found), word
        assert word in [e.name for e, _ in store.lexical_entities(A, query_terms(word), 10)], word


@pytest.mark.parametrize("store_kind", ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_bm25_statistics_are_the_whole_stores(store: Store) -> None:
    """The documented side channel (docs/architecture.md, "Full-text (BM25) reads and
    tenants"): word weights come from every tenant's rows, so another tenant's texts can
    reorder a tenant's own hits; the hits stay the tenant's own."""
    others = ["Alice reads books", "Alice bakes bread", "Alice owns a bike", "Alice sings"]
    short, long, *_ = add_facts(
        store, A, ["Alice's locker", "Alice swims in the lake every day", *others]
    )
    words = ["locker", "lake"]
    before = store.lexical_facts(A, words, 5)
    assert [f.id for f, _ in before] == [short.id, long.id]  # equal weights: the shorter first
    add_facts(store, B, [f"a locker, locker number {n}" for n in ("one", "two", "three")] * 7)
    after = store.lexical_facts(A, words, 5)
    assert [f.id for f, _ in after] == [long.id, short.id]  # "locker" is common: it weighs less
    score = {f.id: s for f, s in before}[short.id]
    assert {f.id: s for f, s in after}[short.id] < score
    assert all(f.tenant == A for f, _ in after)


# Tenant ids a Lucene query could trip on, were they spliced into it
HOSTILE_TENANTS = [
    Tenant(user_id='mallory" OR lex_scope:* OR "', agent_id="+lex_scope:* -x", run_id="*"),
    Tenant(user_id="zqw\\^0 (", run_id='"; MATCH (n) DETACH DELETE n //'),
    Tenant(agent_id="Zürich café ∑ \U0001f600"),
]


@pytest.mark.parametrize("store_kind", ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_a_small_tenant_is_found_among_many_sharing_its_words(
    store_kind: str, open_store: Any
) -> None:
    """Many tenants hold better matches of the words than the small tenants' one each. On
    Neo4j the store may read only the index's first fetch (`max_fetch` = MIN_FETCH): before
    the scope terms, those were all the crowd's, and the small tenants' hits were missed."""
    store = open_store(dims=DIMS, **({"max_fetch": MIN_FETCH} if store_kind == "neo4j" else {}))
    try:
        for i in range(26):  # 78 facts, 52 edges and 78 entities that match better
            crowd = Tenant(user_id=f"crowd-{i}")
            ents = [entity(crowd, f"Locker Code {x}") for x in ("Alpha", "Beta", "Gamma")]
            rels = [relation(crowd, ents[j], "locker_code", ents[j + 1]) for j in range(2)]
            facts = [fact(crowd, f"locker code, locker code {x}", created_at=T0, updated_at=T0)
                     for x in ("one", "two", "three")]  # fmt: skip
            store.apply(
                WritePlan(tenant=crowd, episode=episode(crowd), new_entities=ents,
                          new_relations=rels, new_facts=facts)
            )  # fmt: skip
        words = query_terms("the locker code?")
        mine: dict[Tenant, tuple[str, str, str]] = {}
        for small in HOSTILE_TENANTS:
            alice, gym = entity(small, "Alice"), entity(small, "Gym Locker")
            rel = relation(small, alice, "keeps_things_in", gym)
            note = fact(small, "Alice said her gym locker has a code she keeps forgetting",
                        created_at=T0, updated_at=T0)  # fmt: skip
            store.apply(
                WritePlan(tenant=small, episode=episode(small), new_entities=[alice, gym],
                          new_relations=[rel], new_facts=[note])
            )  # fmt: skip
            mine[small] = (note.id, rel.id, gym.id)
        for small, (note_id, rel_id, gym_id) in mine.items():
            for exact in (False, True):
                hits = store.lexical_facts(small, words, 5, exact=exact)
                assert [f.id for f, _ in hits] == [note_id], (small, exact)
            assert [r.id for r in store.lexical_relations(small, words, 5, Validity())] == [rel_id]
            assert [e.id for e, _ in store.lexical_entities(small, words, 5)] == [gym_id]
            request = WalkRequest(seeds=[], validity=Validity(), vector=unit(0), words=words,
                                  lexical_k=5)  # fmt: skip
            assert [r.id for r in store.walk(small, request).lexical] == [rel_id]
        # a filter scope (one id of a small tenant) finds it too, and never the crowd's
        only_agent = Tenant(agent_id=HOSTILE_TENANTS[0].agent_id)
        assert [f.id for f, _ in store.lexical_facts(only_agent, words, 5)] == [
            mine[HOSTILE_TENANTS[0]][0]
        ]
        crowd_hits = store.lexical_facts(Tenant(user_id="crowd-3"), words, 10)
        assert len(crowd_hits) == 3 and all(f.tenant.user_id == "crowd-3" for f, _ in crowd_hits)
    finally:
        store.close()


# ---------------------------------------------------------------- the embedded store only


@pytest.mark.parametrize("store_kind", ["embedded"])
def test_a_v4_store_is_migrated_and_its_rows_indexed(store: EmbeddedGraphStore) -> None:
    add_facts(store, A, FACTS)
    path = store.path
    store.close()
    conn = sqlite3.connect(path / "graph.db")  # back to what mem0g v4 left on disk
    for (trigger,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger'"
    ).fetchall():
        conn.execute(f"DROP TRIGGER {trigger}")
    for table in ("facts_fts", "relations_fts", "entities_fts"):
        conn.execute(f"DROP TABLE {table}")
    conn.execute("UPDATE schema_version SET version = 4")
    conn.commit()
    conn.close()
    reopened = EmbeddedGraphStore(path)
    try:
        assert set(texts(reopened.lexical_facts(A, ["melanie"], 5))) == {FACTS[2], FACTS[3]}
        conn = sqlite3.connect(path / "graph.db")
        assert conn.execute("SELECT max(version) FROM schema_version").fetchone()[0] == 7
        conn.close()
    finally:
        reopened.close()


@pytest.mark.parametrize("store_kind", ["embedded"])
def test_a_v6_store_gains_the_scope_column_and_keeps_its_ranking(
    store: EmbeddedGraphStore,
) -> None:
    """v6's FTS tables had no scope column: they are rebuilt on open, with the same scores."""
    add_facts(store, A, FACTS)
    add_facts(store, B, FACTS[:3])
    before = store.lexical_facts(A, ["caroline", "lake"], 5)
    path = store.path
    store.close()
    conn = sqlite3.connect(path / "graph.db")  # back to v6's FTS tables and triggers
    for (trigger,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%fts%'"
    ).fetchall():
        conn.execute(f"DROP TRIGGER {trigger}")
    for table in ("facts_fts", "relations_fts", "entities_fts"):
        conn.execute(f"DROP TABLE {table}")
        conn.execute(
            f"CREATE VIRTUAL TABLE {table} USING fts5(text, id UNINDEXED, tenant_key UNINDEXED)"
        )
    conn.execute("UPDATE schema_version SET version = 6")
    conn.commit()
    conn.close()
    reopened = EmbeddedGraphStore(path)
    try:
        after = reopened.lexical_facts(A, ["caroline", "lake"], 5)
        assert [(f.id, pytest.approx(s)) for f, s in after] == [(f.id, s) for f, s in before]
        assert {f.tenant for f, _ in reopened.lexical_facts(B, ["caroline", "lake"], 5)} == {B}
        conn = sqlite3.connect(path / "graph.db")
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'facts_fts'").fetchone()[0]
        conn.close()
        assert "scope" in sql
    finally:
        reopened.close()


def _sqlite_steps(store: EmbeddedGraphStore, run: Callable[[], object]) -> int:
    """SQLite virtual-machine steps (in units of 100) spent by `run`: a deterministic measure
    of the work a read does, unlike its time."""
    conn = store._connection()
    steps = 0

    def tick() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn.set_progress_handler(tick, 100)
    try:
        run()
    finally:
        conn.set_progress_handler(None, 100)
    return steps


@pytest.mark.parametrize("store_kind", ["embedded"])
def test_fts_work_grows_with_the_scope_not_the_store(store: EmbeddedGraphStore) -> None:
    """A word every tenant uses: a one-fact tenant's search does the same work beside 20 or
    400 other tenants, and a big tenant's search grows linearly with its own rows (the form
    `rowid IN (the scope's rows)` grew quadratically: 730 ms for one 10k-edge tenant)."""
    small = Tenant(user_id="small")
    add_facts(store, small, ["the shared word lake is here"])

    def others(first: int, last: int) -> None:
        for i in range(first, last):
            add_facts(store, Tenant(user_id=f"u{i}"), [f"lake number {i} in the valley"])

    def small_search() -> None:
        assert len(store.lexical_facts(small, ["lake"], 10)) == 1

    others(0, 20)
    few = _sqlite_steps(store, small_search)
    others(20, 400)
    many = _sqlite_steps(store, small_search)
    assert many <= few * 2 + 5, (few, many)

    big = Tenant(user_id="big")

    def big_rows(first: int, last: int) -> None:
        add_facts(store, big, [f"lake view {i} from hill {i % 7}" for i in range(first, last)])

    def big_search() -> None:
        assert len(store.lexical_facts(big, ["lake", "hill"], 10)) == 10

    big_rows(0, 300)
    one = _sqlite_steps(store, big_search)
    big_rows(300, 600)
    two = _sqlite_steps(store, big_search)
    assert two <= one * 3, (one, two)


@pytest.mark.parametrize("store_kind", ["embedded"])
def test_renumbered_rowids_are_repaired_on_open(store: EmbeddedGraphStore) -> None:
    """VACUUM may renumber a table's rowids; the FTS rows are re-paired when opened."""
    facts = add_facts(store, A, FACTS)
    path = store.path
    store.close()
    conn = sqlite3.connect(path / "graph.db")
    conn.execute("UPDATE facts_fts SET rowid = rowid + 1000")  # pairing broken, as by VACUUM
    conn.commit()
    conn.close()
    reopened = EmbeddedGraphStore(path)
    try:
        hits = reopened.lexical_facts(A, ["adoption"], 5)
        assert [f.id for f, _ in hits] == [facts[1].id]
    finally:
        reopened.close()


@pytest.mark.neo4j
def test_an_older_neo4j_database_gets_scope_terms_once(
    neo4j_connect: Any, neo4j_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    import neo4j

    from mem0g.stores.neo4j import statements

    store = neo4j_connect(dims=DIMS)
    add_facts(store, A, FACTS)
    add_facts(store, B, ["Caroline support group, Caroline"])
    alice, lake = entity(A, "Alice"), entity(A, "Lake")
    swims = relation(A, alice, "swims_in", lake)
    store.apply(WritePlan(tenant=A, episode=episode(A), new_entities=[alice, lake],
                          new_relations=[swims]))  # fmt: skip
    before = {(f.id, round(s, 5)) for f, s in store.lexical_facts(A, ["caroline"], 5)}
    store.close()
    auth = (neo4j_server.user, neo4j_server.password)
    with neo4j.GraphDatabase.driver(neo4j_server.uri, auth=auth) as driver:
        # what mem0g wrote before schema v3: no scope terms, indexes without them, version 2
        driver.execute_query("MATCH (n) WHERE n:Fact OR n:Entity REMOVE n.lex_scope")
        driver.execute_query("MATCH ()-[r:RELATES]->() REMOVE r.lex_scope")
        for kind, prop in (("facts", "f"), ("relations", "r"), ("entities", "e")):
            driver.execute_query(statements()[f"drop_fulltext_index_{kind}"])
            old = statements()[f"fulltext_index_{kind}"].replace(f", {prop}.lex_scope", "")
            driver.execute_query(old)
        driver.execute_query("CALL db.awaitIndexes(60)")
        driver.execute_query("MATCH (m:Mem0gSchema) SET m.version = 2")
        with caplog.at_level(logging.INFO, logger="mem0g.stores.neo4j.lexical"):
            reopened = neo4j_connect(dims=DIMS)
            after = {(f.id, round(s, 5)) for f, s in reopened.lexical_facts(A, ["caroline"], 5)}
        assert after == before  # the same hits, the same scores
        assert "scope terms of facts: 7 of 7 rows" in caplog.text  # 6 of A's, 1 of B's
        assert [r.id for r in reopened.lexical_relations(A, ["swims"], 5, Validity())] == [swims.id]
        assert [e.id for e, _ in reopened.lexical_entities(A, ["lake"], 5)] == [lake.id]
        # the scope clause (boost 0) leaves Lucene's scores as they were without it
        raw = ("CALL db.index.fulltext.queryNodes('mem0g_fact_words', $q) YIELD node, score "
               "WHERE node.user_id = 'a' RETURN node.id AS id, score")  # fmt: skip
        plain, _, _ = driver.execute_query(raw, q=lucene_query(["caroline", "lake"]))
        scoped, _, _ = driver.execute_query(raw, q=lucene_scoped(["caroline", "lake"], A))
        assert len(plain) == 5  # FACTS 0, 1, 2, 4, 5
        assert {r["id"]: r["score"] for r in scoped} == {r["id"]: r["score"] for r in plain}
        records, _, _ = driver.execute_query(
            "SHOW FULLTEXT INDEXES YIELD name, properties, state "
            "WHERE name STARTS WITH 'mem0g_' RETURN name, properties, state"
        )
        assert len(records) == 3
        assert all("lex_scope" in r["properties"] and r["state"] == "ONLINE" for r in records)
        missing, _, _ = driver.execute_query(
            "MATCH (n) WHERE (n:Fact OR n:Entity) AND n.lex_scope IS NULL RETURN count(n) AS n"
        )
        assert missing[0]["n"] == 0
        version, _, _ = driver.execute_query("MATCH (m:Mem0gSchema) RETURN m.version AS v")
        assert [r["v"] for r in version] == [SCHEMA_VERSION]  # v3, then the later steps
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="mem0g.stores.neo4j.lexical"):
            neo4j_connect(dims=DIMS).stats()  # current: nothing is done again
        assert "scope terms" not in caplog.text


@pytest.mark.neo4j
def test_an_older_neo4j_database_gets_its_fact_words_once(
    neo4j_connect: Any, neo4j_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Schema v7: a database whose fact index holds the texts (v6) gets the index of their
    words, every fact its words (a page at a time, in id order), and the old index goes."""
    import neo4j

    store = neo4j_connect(dims=DIMS, reset_batch=3)  # 8 facts: pages of 3
    joined = add_facts(store, A, [text for text, _ in JOINED_WORDS])
    add_facts(store, B, ["Caroline got covid19 too"])
    store.close()
    old_index = (
        "CREATE FULLTEXT INDEX mem0g_fact_text IF NOT EXISTS FOR (f:Fact) ON EACH "
        "[f.text, f.lex_scope] OPTIONS {indexConfig: {`fulltext.analyzer`: 'english'}}"
    )
    auth = (neo4j_server.user, neo4j_server.password)
    with neo4j.GraphDatabase.driver(neo4j_server.uri, auth=auth) as driver:
        driver.execute_query("MATCH (f:Fact) REMOVE f.lex_text")  # as v6 wrote them
        driver.execute_query("DROP INDEX mem0g_fact_words")
        driver.execute_query(old_index)
        driver.execute_query("CALL db.awaitIndexes(60)")
        driver.execute_query("MATCH (m:Mem0gSchema) SET m.version = 6")
        with caplog.at_level(logging.INFO, logger="mem0g.stores.neo4j.lexical"):
            reopened = neo4j_connect(dims=DIMS, reset_batch=3)
            hits = reopened.lexical_facts(A, ["covid"], 5)
        assert [f.id for f, _ in hits] == [joined[0].id]  # B's is not A's
        assert "the words of 7 facts indexed" in caplog.text  # 6 of A's, 1 of B's
        for (_, word), f in zip(JOINED_WORDS, joined, strict=True):
            assert [h.id for h, _ in reopened.lexical_facts(A, [word], 5)] == [f.id], word
        records, _, _ = driver.execute_query(
            "SHOW FULLTEXT INDEXES YIELD name, state WHERE name STARTS WITH 'mem0g_fact' "
            "RETURN name, state"
        )
        assert [(r["name"], r["state"]) for r in records] == [("mem0g_fact_words", "ONLINE")]
        version, _, _ = driver.execute_query("MATCH (m:Mem0gSchema) RETURN m.version AS v")
        assert [r["v"] for r in version] == [SCHEMA_VERSION]
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="mem0g.stores.neo4j.lexical"):
            neo4j_connect(dims=DIMS).stats()  # current: nothing is done again
        assert "words of" not in caplog.text


# ---------------------------------------------------------------- parity


@pytest.mark.neo4j
def test_both_stores_rank_alike(tmp_path: Path, neo4j_connect: Any) -> None:
    corpus = [
        *FACTS,
        "Caroline gave a talk at a school about her transgender journey",
        "Melanie signed up for a pottery class",
        "Caroline and Melanie talked about the support group and painting",
        "Melanie's daughter likes dinosaurs and the lake",
        "Caroline wants to become a counselor for the LGBTQ community",
    ]
    queries = [
        "What did Caroline research?",
        "Where did Melanie camp with her kids?",
        "support group lake",
        "What does Melanie paint?",
        "Where did Caroline go on Sunday?",
        "LGBTQ counselor Caroline",
        "pottery class",
    ]
    embedded = EmbeddedGraphStore(tmp_path / "parity", dims=DIMS)
    neo4j = neo4j_connect(dims=DIMS)
    try:
        for s in (embedded, neo4j):
            add_facts(s, A, corpus)
        for q in queries:
            words = query_terms(q)
            a = texts(embedded.lexical_facts(A, words, 5))
            b = texts(neo4j.lexical_facts(A, words, 5))
            assert a[:1] == b[:1], q  # the same best fact
            assert len(set(a) & set(b)) >= min(len(a), len(b)) - 1, q  # top 5 agree but one
    finally:
        embedded.close()
