"""Name-structure rules of the entity resolver (no model: these run in milliseconds)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from mem0g.resolve.names import (
    ALIAS_FLOOR,
    DEFAULT_THRESHOLD,
    Candidate,
    NameRelation,
    Verdict,
    canonical_type,
    is_proper,
    judge,
    name_relation,
    normalize_name,
    pick_merge_target,
    should_merge,
    types_compatible,
    written_apart,
    written_in,
)

SAME, ALIAS, CONFLICT, UNKNOWN, POSSIBLE = (
    NameRelation.SAME,
    NameRelation.ALIAS,
    NameRelation.CONFLICT,
    NameRelation.UNKNOWN,
    NameRelation.POSSIBLE,
)
T = DEFAULT_THRESHOLD
PAIRS = Path(__file__).parent / "data" / "alias_pairs.jsonl"


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("  Bob   CHEN ", "bob chen"),
        ("“Bob Chen.”", "bob chen"),
        ("Zoë", "zoe"),
        ("Łukasz Søren", "lukasz soren"),
        ("The Beatles", "beatles"),
        ("the", "the"),
        ("J.P. Morgan", "jp morgan"),
        ("O'Brien", "obrien"),
        ("Paris, Texas", "paris texas"),
        ("GPT-3.5", "gpt 3.5"),
        ("AT&T", "at&t"),
        ("C++", "c++"),
        ("ＡＢＣ", "abc"),  # full-width letters fold under NFKC
        ("", ""),
        ("कोमल शर्मा", "कोमल शर्मा"),  # vowel signs and viramas are letters of the word
        ("كَمال", "كمال"),  # Arabic vowel points are optional, as accents are
        ("שָׁלוֹם", "שלום"),  # and Hebrew's
        ("Nguyễn", "nguyen"),
        ("Anna\u00adbelle", "annabelle"),  # a soft hyphen (pasted from a web page) is invisible
        ("Anna\u200bbelle Smith\ufeff", "annabelle smith"),  # as a zero-width space and a BOM
    ],
)
def test_normalize_name(raw: str, normalized: str) -> None:
    assert normalize_name(raw) == normalized


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("कमल", "कोमल"),  # Kamal, Komal: two common Hindi names, one vowel sign apart
        ("मीना", "मना"),  # Meena, Mana
        ("கமலா", "கமல்"),  # Tamil: Kamala, Kamal
        ("สมชาย", "สมชัย"),  # Thai: Somchai, Somchai with another vowel
        ("がく", "かく"),  # kana: a voicing mark makes another sound
    ],
)
def test_names_one_vowel_sign_apart_are_different_names(a: str, b: str) -> None:
    """Once, every combining mark was folded away as an accent: Devanagari, Tamil or Thai
    vowel signs too, so "कमल" and "कोमल" were one name and two people merged."""
    assert normalize_name(a) != normalize_name(b)
    assert name_relation(a, b, "person") is not NameRelation.SAME
    assert name_relation(a, a, "person") is NameRelation.SAME


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("\u0410nna Smith", "anna smith"),  # a Cyrillic capital A in a Latin name
        ("J\u043ehn Sm\u0456th", "john smith"),  # Cyrillic o and Ukrainian i
        ("\u0412ob", "bob"),  # a Cyrillic capital В, which looks like a B
        ("Ale\u03bai", "aleki"),  # a Greek kappa
        ("\u041fo\u043f\u043e\u0432", "\u043f\u043e\u043f\u043e\u0432"),  # a Latin o in Попов
        ("\u0418\u0432\u0430\u043d", "\u0438\u0432\u0430\u043d"),  # Иван stays Cyrillic
        ("Ivan \u0418\u0432\u0430\u043d", "ivan \u0438\u0432\u0430\u043d"),  # two words
        ("Zo\u0451", "zoe"),  # "Zoë" typed with a Cyrillic ё
    ],
)
def test_a_look_alike_letter_of_another_script_inside_a_word_is_read_as_its_twin(
    raw: str, normalized: str
) -> None:
    """A Cyrillic "а" typed (or pasted) into "Anna" is the same name to any reader; it made
    another name, so the same person became two nodes and a query naming her linked none."""
    assert normalize_name(raw) == normalized


@pytest.mark.parametrize(
    ("type_", "group"),
    [
        ("Person", "person"),
        ("people", "person"),
        ("speaker", "person"),
        ("FamilyMember", "person"),
        ("Company", "organization"),
        ("employer", "organization"),
        ("companies", "organization"),
        ("organisation", "organization"),
        ("City", "location"),
        ("countries", "location"),
        ("address", "location"),
        (None, "entity"),
        ("", "entity"),
        ("Thing", "entity"),
        ("other", "entity"),
        ("Pet Name", "pet_name"),
        ("programming-language", "programming_language"),
    ],
)
def test_canonical_type(type_: str | None, group: str) -> None:
    assert canonical_type(type_) == group


def test_types_compatible() -> None:
    assert types_compatible("person", "Human")
    assert types_compatible("company", "employer")
    assert types_compatible("person", None)
    assert types_compatible("entity", "city")
    assert not types_compatible("person", "location")
    assert not types_compatible("pet", "person")


RELATIONS = [
    # same once case, whitespace, punctuation, accents, titles or legal suffixes are gone
    ("bob chen", "Bob  Chen.", "person", SAME),
    ("Zoë", "Zoe", "person", SAME),
    ("Dr. Bob Chen", "Bob Chen", "person", SAME),
    ("Contoso", "Contoso Ltd.", "organization", SAME),
    ("Fabrikam", "Fabrikam, Inc.", "company", SAME),
    ("Procter & Gamble", "Procter and Gamble", "organization", SAME),
    ("St. Louis", "Saint Louis", "location", SAME),
    ("Data Bricks", "Databricks", None, SAME),
    # short forms
    ("Bob", "Bob Chen", "person", ALIAS),
    ("Bob", "Bob Chen", None, ALIAS),
    ("Bob C.", "Bob Chen", "person", ALIAS),
    ("B. Chen", "Bob Chen", "person", ALIAS),
    ("Dr. Chen", "Bob Chen", "person", ALIAS),
    ("Bob J. Chen", "Bob Chen", "person", ALIAS),
    ("Mary Ann", "Mary Ann Smith", "person", ALIAS),
    # the same words in another order: which is the surname? A comma says
    ("Chen Bob", "Bob Chen", "person", POSSIBLE),
    ("James Thomas", "Thomas James", "person", POSSIBLE),
    ("James Thomas", "Thomas James", None, POSSIBLE),
    ("Chen, Bob", "Bob Chen", "person", SAME),
    ("Chen, B.", "Bob Chen", "person", ALIAS),
    ("Baker, Tom", "Tom Baker Jr.", "person", POSSIBLE),
    ("Northwind", "Northwind Traders", "organization", ALIAS),
    ("IBM", "International Business Machines", "organization", ALIAS),
    ("BoA", "Bank of America", "organization", ALIAS),
    ("TSMC", "Taiwan Semiconductor Manufacturing Company", "organization", ALIAS),
    ("NYC", "New York City", "location", ALIAS),
    ("New York", "New York City", "location", ALIAS),
    # near misses that structure rejects
    ("Alice", "Alicia", "person", CONFLICT),
    ("Alice", "Alicia", None, CONFLICT),
    ("Alice Chen", "Alicia Chen", "person", CONFLICT),
    ("Anna Berger", "Anna Kowalczyk", "person", CONFLICT),
    ("Anna Berger", "Anna Kowalczyk", None, CONFLICT),
    ("Bob C.", "Bob Li", "person", CONFLICT),
    ("Bob A. Chen", "Bob J. Chen", "person", CONFLICT),
    ("Mr. Chen", "Mrs. Chen", "person", CONFLICT),
    # a generational suffix tells father and son apart; one missing leaves it to the
    # conversation; a bare given name may be either
    ("Tom Baker", "Tom Baker Jr.", "person", POSSIBLE),
    ("Tom Baker", "Tom Baker III", None, POSSIBLE),
    ("T. Baker", "Tom Baker Jr.", "person", ALIAS),  # initials may be either, as "Tom" may
    ("Bill Gates", "William H. Gates III", "person", POSSIBLE),
    ("Tom Baker", "Jim Baker Jr.", "person", CONFLICT),
    ("Tom Baker Sr.", "Tom Baker Jr.", "person", CONFLICT),
    ("Tom Baker II", "Tom Baker III", None, CONFLICT),
    ("Tom Baker, Jr.", "Tom Baker Junior", "person", SAME),
    ("T. Baker Jr.", "Tom Baker Jr.", "person", ALIAS),
    ("Tom", "Tom Baker Jr.", "person", ALIAS),
    # and on a one-word name too: "Tom Jr." is Tom's son, "Tom" may be either
    ("Tom Jr.", "Tom Sr.", "person", CONFLICT),
    ("Tom Jr.", "Tom Baker Sr.", "person", CONFLICT),
    ("Tom Jr.", "Tom Baker", "person", POSSIBLE),
    ("Tom Jr.", "Tom", "person", ALIAS),
    ("Tom Jr.", "Tom Baker Jr.", "person", ALIAS),
    ("Tom Jr.", "Jim Baker", "person", CONFLICT),
    ("Paris", "Paris, Texas", "location", CONFLICT),
    ("Paris", "Paris, Texas", None, CONFLICT),
    ("Paris, France", "Paris, Texas", "location", CONFLICT),
    ("Mexico", "Mexico City", "location", CONFLICT),
    ("York", "New York", "location", CONFLICT),
    ("North Korea", "South Korea", "location", CONFLICT),
    ("Austria", "Australia", "location", CONFLICT),
    ("Contoso", "Contora", "organization", CONFLICT),
    ("Contoso Ltd", "Contora Ltd", "organization", CONFLICT),
    ("Acme Robotics", "Acme Logistics", "organization", CONFLICT),
    ("Windows 10", "Windows 11", "product", CONFLICT),
    ("Daniel", "Daniela", "person", CONFLICT),
    # nicknames from the curated dataset
    ("Robert Chen", "Bob Chen", "person", ALIAS),
    ("Bob", "Robert Chen", "person", ALIAS),
    ("Liz", "Elizabeth", "person", ALIAS),
    ("Alex", "Alexander", "person", ALIAS),
    ("Kate Okafor", "Katherine Okafor", "person", ALIAS),
    # two formal names the dataset links are still two people
    ("Andrea Chen", "Andrew Chen", "person", CONFLICT),
    # nor is a formal name the dataset lists as a nickname of another ("John" under Ivan and
    # Johann, "William" under Wilma): a name with diminutives of its own is no diminutive
    ("Wilma Smith", "William Smith", "person", CONFLICT),
    ("Wilma", "William", "person", CONFLICT),
    ("Ivan Smith", "John Smith", "person", CONFLICT),
    ("Johann", "John Smith", "person", CONFLICT),
    ("Jack Smith", "John Smith", "person", ALIAS),  # a diminutive of John all the same
    # a shared surname, another given name: another person, whatever the cosine
    ("Anna Chen", "Maria Chen", "person", CONFLICT),
    ("Diego Yilmaz", "Mateo Yilmaz", "person", CONFLICT),
    ("Anton Nguyen", "Pavel Nguyen", "person", CONFLICT),
    ("Coco Fontaine", "Bruno Fontaine", "cat", CONFLICT),
    ("Coco Fontaine", "Bruno Fontaine", "pet", CONFLICT),
    ("Diego", "Mateo", "person", CONFLICT),
    ("Bob", "Robert Li", "dog", ALIAS),  # pets follow the person rules
    ("Fontaine", "Coco Fontaine", "pet", ALIAS),
    ("Dr. Yilmaz", "Diego Yilmaz", "person", ALIAS),
    # a surname of several words, led by a particle, alone or after a title
    ("van der Berg", "Jan van der Berg", "person", ALIAS),
    ("Dr. de la Cruz", "Maria de la Cruz", "person", ALIAS),
    ("Mr. von Trapp", "Georg von Trapp", "person", ALIAS),
    ("bin Salman", "Mohammed bin Salman", "person", ALIAS),
    ("van der Berg", "Jan van den Berg", "person", CONFLICT),
    ("Jan van der Berg", "Piet van der Berg", "person", CONFLICT),
    ("Ann Smith", "Mary Ann Smith", "person", CONFLICT),  # no particle: a given name
    # structure is silent: embeddings decide, for descriptive names only (should_merge)
    ("Paris, TX", "Paris, Texas", "location", ALIAS),
    ("Jon", "John", "person", CONFLICT),  # the dataset links them; they are spelled alike
    ("Louis", "Louise", "person", CONFLICT),
    ("Postgres", "PostgreSQL", None, UNKNOWN),
    ("Contoso", "Fabrikam", "organization", UNKNOWN),
    ("Al", "Amy Lee", None, UNKNOWN),  # two letters count as an acronym only in capitals
    ("", "Bob", "person", UNKNOWN),
]


def test_a_name_followed_by_a_generational_suffix_is_not_written() -> None:
    assert written_in("tom baker", " i met tom baker today ")
    assert not written_in("tom baker", " i met tom baker jr today ")
    assert written_in("tom baker", " tom baker jr | tom baker ")  # the father, later on
    assert written_in("tom baker jr", " i met tom baker jr today ")
    assert not written_in("tom baker", " i met tom bakers today ")


@pytest.mark.parametrize(
    ("a", "b", "type_", "apart"),
    [
        ("Ian Smith", "John Smith", "person", True),  # linked by the nicknames list
        ("Emma Smith", "Emily Smith", "person", True),  # linked too
        ("Bob Chen", "Robert Chen", "person", True),  # one person, but said twice in full
        ("Pat Kim", "Patrick Kim", "person", False),  # a clipped name keeps its onset
        ("Al Gore", "Albert Gore", "person", False),
        ("Mark Lee", "Marcus Lee", "person", False),
        ("R. Horvat", "Richard Horvat", "person", False),  # initials: a short form
        ("Bob", "Robert Chen", "person", False),  # one word: a short form
        ("Dr. Grace Okafor", "Grace Okafor", "person", False),  # the same given name
        ("Coco Yilmaz", "Bruno Yilmaz", "pet", True),
        ("Ian Smith", "John Smith", "organization", False),  # given names: persons and pets
        ("Ian Smith", "John Smith", None, False),
    ],
)
def test_full_names_of_one_message_written_apart(
    a: str, b: str, type_: str | None, apart: bool
) -> None:
    assert written_apart(a, b, type_) is apart
    assert written_apart(b, a, type_) is apart


@pytest.mark.parametrize(("a", "b", "type_", "relation"), RELATIONS)
def test_name_relation(a: str, b: str, type_: str | None, relation: NameRelation) -> None:
    assert name_relation(a, b, type_) is relation


@pytest.mark.parametrize(("a", "b", "type_", "relation"), RELATIONS)
def test_name_relation_is_symmetric(
    a: str, b: str, type_: str | None, relation: NameRelation
) -> None:
    assert name_relation(b, a, type_) is name_relation(a, b, type_)


def test_should_merge_the_brief_examples() -> None:
    # "Bob"/"Bob Chen" has cosine ~0.58 and "Paris"/"Paris, Texas" ~0.84 under MiniLM.
    assert should_merge("Bob", "person", "Bob Chen", "person", 0.58, T)
    assert not should_merge("Paris", "location", "Paris, Texas", "location", 0.84, T)
    assert not should_merge("Alice", "person", "Alicia", "person", 0.99, T)
    assert not should_merge("Anna Berger", "person", "Anna Kowalczyk", "person", 0.99, T)
    assert not should_merge("Contoso", "organization", "Contora", "organization", 0.99, T)


def test_should_merge_by_relation() -> None:
    # SAME merges whatever the similarity; an ALIAS needs the floor; UNKNOWN needs t.
    assert should_merge("Zoë", "person", "Zoe", "person", 0.0, T)
    assert should_merge("Northwind", "company", "Northwind Traders", "company", ALIAS_FLOOR, T)
    assert not should_merge(
        "Northwind", "company", "Northwind Traders", "company", ALIAS_FLOOR - 0.01, T
    )
    # between persons (and pets) the structure alone decides: a nickname sits below the floor
    assert should_merge("Rick", "person", "Richard Johansson", "person", 0.28, T)
    assert should_merge("Bob", "person", "Bob Chen", "person", 0.0, T)
    assert should_merge("vegetarian diet", "diet", "vegetarianism", "diet", T, T)
    assert not should_merge("vegetarian diet", "diet", "vegetarianism", "diet", T - 0.01, T)


def test_proper_names_never_merge_on_similarity() -> None:
    assert not should_merge("Sydney", "city", "Melbourne", "city", 0.99, T)
    assert not should_merge("Anna Chen", "person", "Maria Chen", "person", 0.99, T)
    assert not should_merge("Contoso", "organization", "Fabrikam", "organization", 0.99, T)
    assert not should_merge("Postgres", None, "PostgreSQL", None, 0.99, T)  # capitalised
    assert should_merge("hiking", "hobby", "hikes", "hobby", 0.9, T)
    assert should_merge("Bob Chen", "person", "Robert Chen", "person", ALIAS_FLOOR, T)


@pytest.mark.parametrize(
    ("name", "type_", "proper"),
    [
        ("Diego", "person", True),
        ("Coco", "pet", True),
        ("Sydney", "city", True),
        ("Chen Logistics", "organization", True),
        ("Paris", None, True),
        ("NYC", "thing", True),
        ("iPhone", "product", True),
        ("Lake Tahoe", "activity", True),
        ("hiking", "hobby", False),
        ("Hiking", "hobby", False),  # sentence case of a typed description
        ("vegetarian diet", "diet", False),
        ("Vegetarian diet", "diet", False),
        ("chess", None, False),
    ],
)
def test_is_proper(name: str, type_: str | None, proper: bool) -> None:
    assert is_proper(name, type_) is proper


def test_should_merge_rejects_incompatible_types() -> None:
    assert not should_merge("Jordan", "person", "Jordan", "country", 1.0, T)
    assert should_merge("Jordan", "person", "Jordan", None, 1.0, T)
    assert should_merge("Bob", None, "Bob Chen", "person", 0.6, T)  # person rules apply


def test_should_merge_uses_candidate_aliases() -> None:
    assert should_merge("Bobby", "person", "Robert Chen", "person", 0.1, T, ["Bobby", "Rob"])
    # an UNKNOWN name becomes an ALIAS through a stored alias ("Bob" on "Robert Chen")
    assert should_merge("Bob C.", "person", "Robert Chen", "person", 0.6, T, ["Bob"])
    # ...but a stored short form never overrides a CONFLICT with the node's own name
    assert not should_merge("Anna Kowalczyk", "person", "Anna Berger", "person", 0.9, T, ["Anna"])


def cand(
    cid: str, name: str, sim: float, type_: str | None = "person", aliases: Sequence[str] = ()
) -> Candidate:
    return Candidate(cid, name, type_, list(aliases), sim)


def test_pick_refuses_an_ambiguous_short_name() -> None:
    candidates = [cand("1", "Anna Berger", 0.7), cand("2", "Anna Kowalczyk", 0.69)]
    assert pick_merge_target("Anna", "person", candidates, T) is None
    assert pick_merge_target("Anna B.", "person", candidates, T) == "1"
    assert pick_merge_target("Anna", "person", candidates[:1], T) == "1"


def test_pick_ambiguity_ignores_aliases_of_one_node() -> None:
    candidates = [cand("1", "Bob Chen", 0.6), cand("2", "Bob C.", 0.7)]
    assert pick_merge_target("Bob", "person", candidates, T) == "2"


def test_pick_prefers_same_then_alias_then_similarity() -> None:
    candidates = [
        cand("u", "Robert Chen", 0.95),
        cand("a", "Bob Chen", 0.6),
        cand("s", "Bob", 0.5),
    ]
    assert pick_merge_target("bob", "person", candidates, T) == "s"
    assert pick_merge_target("Bob", "person", candidates[:2], T) == "a"
    assert pick_merge_target("Rob Chen", "person", candidates[:2], T) == "u"


def test_pick_skips_conflicts_and_other_types() -> None:
    candidates = [
        cand("c", "Paris, Texas", 0.9, "location"),
        cand("p", "Paris", 1.0, "person"),
    ]
    assert pick_merge_target("Paris", "location", candidates, T) is None
    assert pick_merge_target("Paris", "location", [], T) is None


def test_labelled_pairs_file() -> None:
    rows = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 150
    for row in rows:
        assert {"a", "b", "type", "label", "kind", "split"} <= row.keys()
        assert isinstance(row["label"], bool)
        assert row["split"] in ("dev", "holdout")
    assert {r["label"] for r in rows} == {True, False}


def test_judge_short_name_among_many_is_settled_by_the_conversation() -> None:
    diegos = [cand(str(i), f"Diego {s}", 0.7 - i / 100) for i, s in enumerate("ABCDE")]
    ambiguous = judge("Diego", "person", diegos, T)
    assert ambiguous.target is None and set(ambiguous.ambiguous) == {"0", "1", "2", "3", "4"}
    named = judge("Diego", "person", diegos, T, [set(), {"3"}])
    assert named.target == "3"
    # two named as near as each other: still ambiguous, the farther mention does not count
    tie = judge("Diego", "person", diegos, T, [{"1", "2"}, {"3"}])
    assert tie.target is None


def test_judge_full_name_does_not_adopt_an_ambiguous_short_node() -> None:
    stored = [cand("s", "Sam", 0.8), cand("o", "Sam Okafor", 0.7)]
    assert judge("Sam Lee", "person", stored, T).target is None
    assert judge("Sam Lee", "person", stored[:1], T).target == "s"


def test_nickname_is_literal_first() -> None:
    stored = [cand("r", "Robert Li", 0.9), cand("b", "Bob Chen", 0.6)]
    # Bob could be Robert Li (a nickname) or Bob Chen: two different people
    assert judge("Bob", "person", stored, T).target is None
    assert judge("Bob", "person", stored[:1], T).target == "r"


def test_a_possible_name_is_a_new_node_with_the_candidates_it_may_be() -> None:
    """POSSIBLE never merges, whatever the cosine; the verdict names the nodes to record as
    possible duplicates, and why."""
    stored = [cand("j", "James Thomas", 0.97), cand("t", "Tom Baker Jr.", 0.9)]
    swapped = judge("Thomas James", "person", stored, T)
    assert swapped == Verdict(None, reason="has the same names in another order", kin=("j",))
    father = judge("Tom Baker", "person", stored, T)
    assert father.target is None and father.kin == ("t",) and "suffix" in father.reason
    assert judge("Thomas, James", "person", stored, T).target == "j"  # a comma says which
    assert judge("Anna Berger", "person", stored, T) == Verdict(None)


def test_initials_stored_as_an_alias_are_no_proof_of_who() -> None:
    """ "R. Horvat" merged into Richard Horvat once; the next "R. Horvat", right after
    "Rebecca Horvat", is hers: initials are a short form, so equal to a stored alias they
    still leave the choice to the conversation."""
    stored = [cand("ri", "Richard Horvat", 0.9, aliases=["R. Horvat"]),
              cand("re", "Rebecca Horvat", 0.8)]  # fmt: skip
    assert judge("R. Horvat", "person", stored, T).target is None
    assert judge("R. Horvat", "person", stored, T, [set(), {"re"}]).target == "re"
    assert judge("R. Horvat", "person", stored[:1], T).target == "ri"  # one R. Horvat: his
    assert judge("Richard Horvat", "person", stored, T).target == "ri"


def test_initials_may_be_a_junior_as_a_first_name_may() -> None:
    """ "R. Nguyen" right after "Ravi Nguyen Jr." is him (a full name without the suffix is
    only a possible duplicate, but initials say no more than "Ravi" would); beside his father
    the conversation decides."""
    son = cand("jr", "Ravi Nguyen Jr.", 0.8)
    father = cand("sr", "Ravi Nguyen", 0.8)
    assert judge("R. Nguyen", "person", [son], T).target == "jr"
    assert judge("R. Nguyen", "person", [son, father], T).target is None
    assert judge("R. Nguyen", "person", [son, father], T, [{"jr"}]).target == "jr"
    assert judge("Ravi Nguyen", "person", [son], T).kin == ("jr",)  # a full name: no merge


def test_a_nickname_alias_is_no_proof_of_who() -> None:
    """ "Pat Kim" was stored on Patrick Kim; after "Patricia Kim" it may be her: an alias
    derived from the node's own name proves no more than that name. A learned alias the
    name does not explain ("Maggie Jones" on Margaret Smith) still does."""
    stored = [cand("pk", "Patrick Kim", 0.8, aliases=["Pat Kim"]), cand("pa", "Patricia Kim", 0.8)]
    assert judge("Pat Kim", "person", stored, T).target is None
    assert judge("Pat Kim", "person", stored, T, [{"pa"}]).target == "pa"
    assert judge("Pat Kim", "person", stored[:1], T).target == "pk"
    married = [
        cand("ms", "Margaret Smith", 0.5, aliases=["Maggie Jones"]),
        cand("mj", "Mia Jones", 0.6),
    ]
    assert judge("Maggie Jones", "person", married, T).target == "ms"


def test_a_title_of_the_other_gender_on_a_stored_alias_keeps_them_apart() -> None:
    """John Smith, known as "Mr. Smith" too, is not "Mrs. Smith": the node's name alone said
    ALIAS (a title and the surname), and the alias that says otherwise was not read."""
    john = cand("j", "John Smith", 0.7, aliases=["Mr. Smith"])
    jane = cand("n", "Jane Smith", 0.7, aliases=["Mrs Smith"])
    assert not should_merge("Mrs. Smith", "person", john.name, "person", 0.7, T, john.aliases)
    assert pick_merge_target("Mrs. Smith", "person", [john], T) is None
    assert pick_merge_target("Mrs. Smith", "person", [john, jane], T) == "n"
    assert pick_merge_target("Mr. Smith", "person", [john, jane], T) == "j"
    assert pick_merge_target("Ms. Smith", None, [john], T) is None  # untyped, as name_relation
    assert pick_merge_target("Dr. Smith", "person", [john], T) == "j"  # a neutral title may be


def test_every_nickname_of_the_crowd_benchmark_still_links() -> None:
    """The 20 nicknames scripts/bench_resolver.py uses, each the name of a person there."""
    pairs = ("Robert Bob, William Bill, Elizabeth Liz, Katherine Kate, Michael Mike, James Jim,"
             " Alexander Alex, Margaret Maggie, Daniel Dan, Christopher Chris, Jennifer Jenny,"
             " Thomas Tom, Richard Rick, Joseph Joe, Samuel Sam, Patricia Trish, Victoria Vicky,"
             " Benjamin Ben, Rebecca Becky, Nicholas Nick")  # fmt: skip
    for pair in pairs.split(","):
        formal, nick = pair.split()
        assert name_relation(f"{nick} Chen", f"{formal} Chen", "person") is ALIAS, pair


def test_a_surname_of_several_words_is_a_short_form() -> None:
    """ "Dr. van der Berg" is Jan van der Berg when he is the only one; with Piet stored too
    it could be either, and a node called just "van der Berg" is no proof for a full name."""
    jan, piet = cand("j", "Jan van der Berg", 0.7), cand("p", "Piet van der Berg", 0.7)
    assert pick_merge_target("Dr. van der Berg", "person", [jan], T) == "j"
    assert judge("van der Berg", "person", [jan, piet], T).ambiguous == ("j", "p")
    bare = cand("b", "van der Berg", 0.8)
    assert pick_merge_target("Jan van der Berg", "person", [bare, piet], T) is None


def test_an_untyped_lower_case_word_is_not_a_person_or_a_company_of_that_name() -> None:
    """ "bill" (the invoice) and "apple" (the fruit), given no type, are compatible with any
    type, so the person rules read "bill" as Bill or as William's nickname and "apple" as
    Apple the company's very name: a thing merged into a person or a company. Written in
    lower case and untyped it is a description (`is_proper`), which a proper name of a
    person, pet, place or organisation never is; capitalised, it may still be one."""
    bill, william = cand("b", "Bill", 0.9), cand("w", "William Smith", 0.5)
    company = cand("a", "Apple", 0.9, "organization")
    assert pick_merge_target("bill", None, [bill], T) is None
    assert pick_merge_target("will", "entity", [william], T) is None
    assert pick_merge_target("apple", "entity", [company], T) is None
    assert not should_merge("apple", None, "Apple", "company", 1.0, T)
    assert not should_merge("Apple", "company", "apple", None, 1.0, T)  # either way round
    assert pick_merge_target("Bill", None, [bill], T) == "b"
    assert pick_merge_target("Apple", None, [company], T) == "a"
    assert should_merge("hiking", None, "Hiking", "hobby", 1.0, T)  # no proper kind


@pytest.mark.parametrize(
    "role", ["singer", "Musician", "actress", "doctor", "teacher", "wife", "Brothers", "coworker"]
)
def test_a_person_typed_by_role_or_kinship_is_a_person(role: str) -> None:
    """Extractors type people by what they are to the speaker or do ("singer", "wife"): the
    type was none of the person group's words, so "Taylor Swift" the singer was
    incompatible with Taylor Swift the person (two nodes), and "Taylor" never found her."""
    assert canonical_type(role) == "person"
    assert should_merge("Taylor Swift", "person", "Taylor Swift", role, 0.9, T)
    assert pick_merge_target("Taylor", "person", [cand("t", "Taylor Swift", 0.6, role)], T) == "t"
    assert not types_compatible(role, "organization")


@pytest.mark.parametrize("apostrophe", ["'", "’", "‘", "`", "´"])
def test_a_possessive_never_glues_onto_the_name_it_follows(apostrophe: str) -> None:
    """The words "Patricia Castillo‘s cat" (a left quote or an accent typed for the apostrophe, as
    phones and some keyboards do) read as "patricia castillos cat": the name was not in the
    conversation, so a short form of her found no one to resolve to."""
    from mem0g.resolve.entities import Mentions

    said = Mentions.of([f"Patricia Castillo{apostrophe}s cat"])
    assert said.levels[0] == " patricia castillo cat "
