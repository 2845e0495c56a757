"""Fact <-> entity links (issue #17 item 2): written with the add that makes them true (and
refused or rolled back with it), removed with the fact, re-linked when a fact is re-worded,
kept through merge / split and export / import, scoped to the tenant; and the
`entity_linked_facts` ranking of a search, the same on both stores, with no LLM."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from builders import DIMS, A, B, Store, entity, fact, fact_plan, plan, unit, vec
from conftest import MemoryFactory

from mem0g.resolve import links
from mem0g.resolve.links import name_ngrams, plan_links, split_links
from mem0g.resolve.names import normalize_name
from mem0g.stores import EmbeddedGraphStore, StoreError
from mem0g.testing.script import add_everything, turn
from mem0g.types import FactChange, FactEvent, FactLink, Tenant, WritePlan


def linked(store: Store, scope: Tenant, *entities: Any) -> list[str]:
    """Ids of the facts linked to these entities, best first for a fixed query."""
    query = unit(9, store.dims or DIMS)
    return [i for i, _, _ in store.linked_facts(scope, [e.id for e in entities], query, 20)]


def apply(store: Store, p: WritePlan) -> WritePlan:
    store.apply(plan_links(store, p))
    return p


def change(tenant: Tenant, fact_id: str, text: str | None, seed: int = 5) -> WritePlan:
    """A plan re-wording (or, with None, deleting) one stored fact."""
    event = "DELETE" if text is None else "UPDATE"
    return fact_plan(
        tenant,
        changes=[
            FactChange(fact_id=fact_id, text=text, embedding=None if text is None else vec(seed))
        ],
        events=[FactEvent(fact_id=fact_id, tenant=tenant, event=event, new_text=text)],
    )


def test_name_ngrams_match_names_with_a_possessive() -> None:
    grams = name_ngrams("Caroline's dog Rex met the Van Dyke family.")
    assert {"caroline", "rex", "van dyke", "caroline dog rex"} <= set(grams)
    assert "carolines" not in grams and "the" not in grams
    assert name_ngrams("What is it?") == []  # stopwords only


def _reference_ngrams(text: str, max_n: int = 4) -> list[str]:
    """The definition: each n-gram of the name words normalised as a whole."""
    tokens = [
        links._POSSESSIVE.sub("", t.strip(".-")).strip(".-" + links._APOSTROPHES)
        for t in links._TOKEN.findall(text)
    ]
    tokens = [t for t in tokens if t]
    grams: list[str] = []
    for n in range(min(max_n, len(tokens)), 0, -1):
        for start in range(len(tokens) - n + 1):
            words = tokens[start : start + n]
            key = normalize_name(" ".join(words))
            if key and key not in grams and not all(w.casefold() in links._STOP for w in words):
                grams.append(key)
    return grams


@pytest.mark.parametrize("seed", range(3))
def test_name_ngrams_equal_each_ngram_normalised_whole(seed: int) -> None:
    """name_ngrams normalises each word once (a long message has hundreds of n-grams); on
    word salads of articles, punctuation, digits and apostrophes that is the same as
    normalising each n-gram joined."""
    rng = random.Random(seed)
    pieces = ["the", "The", "THE", "a", "of", "x.", "-y", "3.5", ".5", "Bob's", "'s", "St.",
              "&", "Zoë", "AT&T", "C++", "’The__b.e’", "_", "U.S.", "the-x", "ＡＢＣ",
              ",", "O’Neil", "Bob’s", "’s", "’the", "it‘s", "`", "\u0410nna", "П\u043eпoв",
              "x\u0430-\u0430", "\u03bao"]  # fmt: skip
    for _ in range(3000):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 12)))
        assert name_ngrams(text) == _reference_ngrams(text), text


def test_split_links_follow_the_keys() -> None:
    keep = entity(A, "Robert", aliases=["Bob"])
    other = entity(A, "Bobby")
    texts = {"f1": "Robert came", "f2": "Bobby left", "f3": "Bob and Bobby", "f4": "nobody"}
    assert split_links(texts, keep, other) == sorted(
        [("f1", keep.id), ("f2", other.id), ("f3", keep.id), ("f3", other.id)]
    )


def test_links_are_written_with_the_add_and_go_with_the_fact(store: Store) -> None:
    caroline, rex = entity(A, "Caroline", 1), entity(A, "Rex", 2)
    apply(store, plan(A, [caroline, rex]))
    both = fact(A, "Caroline's dog Rex loves the beach", 3)
    one = fact(A, "Rex is a poodle", 4)
    none = fact(A, "The beach was crowded", 5)
    p = apply(store, fact_plan(A, [both, one, none]))
    assert {(lk.fact_id, lk.entity_id) for lk in p.fact_links} == {
        (both.id, caroline.id), (both.id, rex.id), (one.id, rex.id),
    }  # fmt: skip
    assert linked(store, A, caroline) == [both.id]
    # the fact naming both entities first, then by cosine (`one` is the query's closest)
    assert linked(store, A, caroline, rex) == [both.id, one.id]
    assert [n for _, _, n in store.linked_facts(A, [caroline.id, rex.id], unit(4), 5)] == [2, 1]
    apply(store, change(A, one.id, None))  # deleted: its links go with it
    assert linked(store, A, rex) == [both.id]


def test_a_reworded_fact_is_linked_again(store: Store) -> None:
    caroline, rex = entity(A, "Caroline", 1), entity(A, "Rex", 2)
    apply(store, plan(A, [caroline, rex]))
    f = fact(A, "Rex is a poodle", 3)
    apply(store, fact_plan(A, [f]))
    apply(store, change(A, f.id, "Caroline has a poodle"))
    assert linked(store, A, rex) == []
    assert linked(store, A, caroline) == [f.id]


def test_a_new_name_links_the_earlier_facts_naming_it(store: Store) -> None:
    """`add(infer=False)` facts may name what is not an entity yet: the add that creates
    the entity (or gives one a new alias) links them, in its own transaction."""
    early = [fact(A, "Melanie painted a sunset", 1), fact(A, "Mel's kids love the lake", 2),
             fact(A, "The lake was cold", 3)]  # fmt: skip
    apply(store, fact_plan(A, early))
    other_tenant = fact(B, "Melanie went camping", 4)
    apply(store, fact_plan(B, [other_tenant]))
    melanie = entity(A, "Melanie", 5)
    apply(store, plan(A, [melanie]))
    assert linked(store, A, melanie) == [early[0].id]
    from mem0g.types import AliasUpdate

    apply(store, WritePlan(tenant=A, alias_updates=[
        AliasUpdate(entity_id=melanie.id, aliases=["Mel"], keys=["mel"])]))  # fmt: skip
    assert set(linked(store, A, melanie)) == {early[0].id, early[1].id}
    assert linked(store, B, melanie) == []  # another tenant's scope reaches none of them


def test_a_refused_plan_writes_no_link(store: Store) -> None:
    caroline = entity(A, "Caroline", 1)
    apply(store, plan(A, [caroline]))
    f = fact(A, "Caroline sings", 2)
    bad = plan_links(store, fact_plan(A, [f]))
    bad.fact_changes.append(FactChange(fact_id="no-such-fact", text=None))
    with pytest.raises(StoreError):
        store.apply(bad)
    assert linked(store, A, caroline) == [] and store.get_facts(A, [f.id]) == []
    stranger = entity(B, "Caroline", 3)
    apply(store, plan(B, [stranger]))
    cross = fact_plan(A, [f], fact_links=[FactLink(fact_id=f.id, entity_id=stranger.id)])
    with pytest.raises(StoreError):  # a link to another tenant's entity
        store.apply(cross)
    assert store.get_facts(A, [f.id]) == []


def test_links_follow_a_merge_and_a_split(store: Store) -> None:
    robert, bobby = entity(A, "Robert", 1), entity(A, "Bobby", 2)
    apply(store, plan(A, [robert, bobby]))
    facts = [fact(A, "Robert came home", 3), fact(A, "Bobby left early", 4),
             fact(A, "Robert and Bobby argued", 5)]  # fmt: skip
    apply(store, fact_plan(A, facts))
    merged = store.merge_entities(A, robert.id, bobby.id)
    assert set(linked(store, A, robert)) == {f.id for f in facts}
    assert linked(store, A, bobby) == []
    store.split_entity(A, merged.merge_id)
    assert set(linked(store, A, robert)) == {facts[0].id, facts[2].id}
    assert set(linked(store, A, bobby)) == {facts[1].id, facts[2].id}


def test_links_survive_export_and_import(make_memory: MemoryFactory, tmp_path: Path) -> None:
    """Import recomputes the links from the texts and keys, so they come back the same."""
    m = make_memory(memory={"facts": True})
    for text in ("Caroline sings", "Caroline's café opened", "It rained"):
        m.add(text, user_id="a", infer=False)
    caroline = entity(A, "Caroline")
    caroline.embedding = [float(x) for x in m.embedder.embed(["Caroline"])[0]]
    m.store.apply(plan_links(m.store, plan(A, [caroline])))  # links the two earlier facts
    before = linked(m.store, A, caroline)
    assert len(before) == 2
    archive = tmp_path / "a.jsonl"
    m.export(archive, user_id="a")
    m.delete_all(user_id="a")
    assert linked(m.store, A, caroline) == []
    m.import_archive(archive)
    assert linked(m.store, A, caroline) == before


@pytest.mark.parametrize("store_kind", ["embedded"])
def test_a_v5_store_gets_its_links_when_opened(store: EmbeddedGraphStore) -> None:
    caroline = entity(A, "Caroline", 1)
    apply(store, plan(A, [caroline]))
    facts = [fact(A, "Caroline sings", 2), fact(A, "It rained", 3)]
    apply(store, fact_plan(A, facts))
    path = store.path
    store.close()
    conn = sqlite3.connect(path / "graph.db")  # back to what mem0g v5 left on disk
    conn.execute("DROP TABLE fact_links")
    conn.execute("UPDATE schema_version SET version = 5")
    conn.commit()
    conn.close()
    reopened = EmbeddedGraphStore(path)
    try:
        assert linked(reopened, A, caroline) == [facts[0].id]
    finally:
        reopened.close()


@pytest.mark.neo4j
def test_both_stores_rank_linked_facts_alike(tmp_path: Path, neo4j_connect: Any) -> None:
    embedded = EmbeddedGraphStore(tmp_path / "parity", dims=DIMS)
    neo4j = neo4j_connect(dims=DIMS)
    names = ["Caroline", "Melanie", "Rex", "Oslo"]
    ents = [entity(A, n, i) for i, n in enumerate(names)]
    texts = [f"{a} and {b} note {i}" for i, (a, b) in
             enumerate(zip(names * 3, names[1:] * 3 + names[:1], strict=False))]  # fmt: skip
    texts += [f"{n} alone {i}" for i, n in enumerate(names * 2)]
    facts = [fact(A, t, 100 + i) for i, t in enumerate(texts)]
    try:
        for s in (embedded, neo4j):
            apply(s, plan(A, ents))
            apply(s, fact_plan(A, [f.model_copy() for f in facts]))
        for seed in range(5):
            for chosen in (ents[:1], ents[1:3], ents):
                ids = [e.id for e in chosen]
                a = embedded.linked_facts(A, ids, unit(seed), 8)
                b = neo4j.linked_facts(A, ids, unit(seed), 8)
                assert [i for i, _, _ in a] == [i for i, _, _ in b]
                assert [s for _, s, _ in a] == pytest.approx([s for _, s, _ in b], abs=1e-6)
    finally:
        embedded.close()


def test_search_returns_the_facts_about_the_linked_entities(
    make_memory: MemoryFactory, tmp_path: Path
) -> None:
    """End to end through the scripted LLM, then searched with the LLM on a dead port: a
    fact stored verbatim before its entity existed is found through the entity."""
    m = make_memory(
        [
            *turn(
                "Rex is my dog",
                [("Caroline", "person"), ("Rex", "animal")],
                [("Caroline", "owns", "Rex")],
                facts=[],
            ),
            add_everything(),
        ],
        memory={"facts": True},
        retrieval={"fusion": "hybrid_linked"},
    )
    early = m.add("Rex chewed the sofa cushions again", user_id="caroline", infer=False)
    m.add("Rex is my dog", user_id="caroline")
    hits = m.search("What did Rex do?", user_id="caroline", limit=5)
    assert [e.name for e in hits.entities][:1] == ["Rex"]
    found = {f.id: f for f in hits.facts}
    assert "entity_linked_facts" in found[early.facts[0].id].sources
    dead = make_memory(
        path=tmp_path / "graph",
        memory={"facts": True},
        retrieval={"fusion": "hybrid_linked"},
        llm={"base_url": "http://127.0.0.1:9/v1", "max_retries": 0, "timeout": 1},
    )
    again = dead.search("What did Rex do?", user_id="caroline", limit=5)
    assert [f.id for f in again.facts] == [f.id for f in hits.facts]


def test_link_lexical_links_a_first_name_to_a_full_name(make_memory: MemoryFactory) -> None:
    """`retrieval.link_lexical`: BM25 over entity names links "Caroline" to "Caroline Smith",
    which the exact n-gram match does not; a possessive still names the entity exactly."""
    m = make_memory(retrieval={"link_lexical": True})
    full = entity(A, "Caroline Smith")
    full.embedding = [float(x) for x in m.embedder.embed(["Caroline Smith"])[0]]
    rex = entity(A, "Rex")
    rex.embedding = [float(x) for x in m.embedder.embed(["Rex"])[0]]
    m.store.apply(plan(A, [full, rex]))
    found = {e.name: e for e in m.search("Where does Caroline work?", user_id="a").entities}
    assert found["Caroline Smith"].matched_by == "lexical"
    assert 0 < found["Caroline Smith"].score < 1
    exact = {e.name: e for e in m.search("Is Rex's bowl empty?", user_id="a").entities}
    assert exact["Rex"].matched_by == "name" and exact["Rex"].score == 1.0
    m.config.retrieval.link_lexical = False  # the retriever reads this config object
    off = m.search("Where does Caroline work?", user_id="a").entities
    assert all(e.matched_by != "lexical" for e in off)


def test_a_curly_apostrophe_inside_a_name_or_a_possessive_is_read_as_a_straight_one() -> None:
    """The names' normalisation drops every apostrophe ("O’Neil" is "oneil"), so a text must
    too: "Sean O’Neil" was read as the words "O" and "Neil" and named nobody."""
    for text in ("I met Sean O’Neil today", "I met Sean O‘Neil today", "I met Sean O`Neil"):
        assert "sean oneil" in name_ngrams(text), text
    grams = name_ngrams("Caroline’s café")
    assert "caroline" in grams and "caroline s" not in grams and "s" not in grams


def test_a_name_with_a_curly_apostrophe_links_its_facts_and_queries(
    make_memory: MemoryFactory,
) -> None:
    """The same person written "O'Neil" and "O’Neil" (LLMs and keyboards use both): each
    spelling of the query links the entity, and the facts naming her are linked to her."""
    m = make_memory(
        [
            *turn(
                "Siobhan O",
                [("Siobhan O’Neil", "person"), ("Dublin", "city")],
                [("Siobhan O’Neil", "lives_in", "Dublin")],
                facts=[],
            ),
            add_everything(),
        ],
        memory={"facts": True},
        retrieval={"fusion": "hybrid_linked"},
    )
    early = m.add("Siobhan O’Neil plays the fiddle on Fridays", user_id="a", infer=False)
    m.add("Siobhan O’Neil lives in Dublin", user_id="a")
    for query in ("What does Siobhan O’Neil play?", "What does Siobhan O'Neil play?"):
        hits = m.search(query, user_id="a", limit=5)
        by_name = {e.name: e for e in hits.entities}
        assert by_name["Siobhan O’Neil"].matched_by == "name", query
        found = {f.id: f for f in hits.facts}
        assert "entity_linked_facts" in found[early.facts[0].id].sources, query


def test_named_in_full_skips_a_name_inside_a_longer_one() -> None:
    owners = {"tom baker": {"father"}, "tom baker jr": {"son"}, "smith": {"john"},
              "jane smith": {"jane"}, "beatles": {"band"}}  # fmt: skip
    assert links.named_in_full("Where does Tom Baker Jr. live?", owners) == {"son"}
    assert links.named_in_full("Tom Baker and Tom Baker Jr.", owners) == {"father", "son"}
    assert links.named_in_full("Jane Smith met Smith", owners) == {"jane", "john"}
    assert links.named_in_full("Did the Beatles play?", owners) == {"band"}
    assert links.named(  # a fact's links keep every n-gram
        "Where does Tom Baker Jr. live?", owners
    ) == {"father", "son"}
