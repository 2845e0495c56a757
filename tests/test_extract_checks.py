"""The sanity rules that keep obviously broken extractions out of the graph
(mem0g/extract/checks.py), alone and inside an add against the scripted TEST DOUBLE server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mem0g import Memory
from mem0g.extract import ExtractedTriple
from mem0g.extract.checks import (
    RULE_ENTITY,
    RULE_RELATION,
    RULE_SELF,
    is_filler_relation,
    is_placeholder,
    is_self_named,
    screen_entities,
    screen_triples,
)
from mem0g.testing import ScriptedLLMServer
from mem0g.types import snake_case


@pytest.mark.parametrize(
    "name",
    [
        "I",
        "me",
        "my_name",
        "user",
        "the user",
        "<name>",
        "Speaker 2",
        "unknown",
        "my_address",
        "your job",
        "her_city",
        "ｕｓｅｒ",  # full-width letters (CJK input methods) spell the same word
        "Ｓｐｅａｋｅｒ ２",
    ],
)
def test_placeholders(name: str) -> None:
    assert is_placeholder(name)


@pytest.mark.parametrize(
    "name",
    ["Alice", "Paris", "Acme", "Username Inc", "Ian", "Mia", "My Chemical Romance", "Myra",
     # names in other scripts have no ASCII letter at all (once taken for placeholders)
     "北京", "Москва", "Алиса Петрова", "Ελένη", "محمد", "東京タワー", "\U00020000\U00020001"],
)  # fmt: skip
def test_real_names_are_not_placeholders(name: str) -> None:
    assert not is_placeholder(name)


def test_a_speaker_named_like_a_placeholder_is_kept() -> None:
    assert not is_placeholder("User", speakers=["user"])
    assert is_placeholder("I", speakers=["alice"])


def test_relation_rules() -> None:
    for bad in ("user", "speaker_name"):  # SmolLM2-135M, live: Priya -user-> my_address
        assert is_filler_relation(bad), bad
    for bad in ("i", "it", "The", "and", "none", "relation", "they", "the_it"):
        assert is_filler_relation(bad), bad
    for good in ("lives_in", "works at", "in", "is_a", "likes", "is_friend_of", "owns"):
        assert not is_filler_relation(good), good
    assert is_self_named("john", "john", "alice", {})
    assert is_self_named("John", "Alice", "John", {})
    assert is_self_named("john", "John Smith", "alice", {"John Smith": "person"})
    assert not is_self_named("paris", "Paris Hilton", "Alice", {"Paris Hilton": "organization"})
    assert not is_self_named("lives_in", "alice", "paris", {})


def _t(source: str, relation: str, destination: str) -> ExtractedTriple:
    return ExtractedTriple(source=source, source_type="person", relation=relation,
                           destination=destination, destination_type="entity")  # fmt: skip


def test_screening_keeps_order_and_says_why() -> None:
    kept, rejected = screen_entities(
        {"alice": "person", "my_name": "person", "I": "person"}, ["alice"]
    )
    assert kept == {"alice": "person"}
    assert [(r.kind, r.text, r.rule) for r in rejected] == [
        ("entity", "my_name", RULE_ENTITY),
        ("entity", "I", RULE_ENTITY),
    ]
    triples = [_t("alice", "i", "my_name"), _t("john", "john", "alice"),
               _t("alice", "lives_in", "Paris"), _t("alice", "it", "Paris")]  # fmt: skip
    kept_t, rejected_t = screen_triples(triples, ["alice"])
    assert [t.relation for t in kept_t] == ["lives_in"]
    assert [(r.text, r.rule) for r in rejected_t] == [
        ("alice -i-> my_name", RULE_ENTITY),
        ("john -john-> alice", RULE_SELF),
        ("alice -it-> Paris", RULE_RELATION),
    ]


def _add_scripted(rules: list[Any], tmp_path: Path, text: str, user: str) -> tuple[Any, Any]:
    """One add through the scripted LLM (graph only) and the user's graph after it."""
    with ScriptedLLMServer(rules) as server:
        config = {
            "llm": {"base_url": server.base_url, "api_key": "test"},
            "embedder": {"provider": "hashing"},
            "graph_store": {"provider": "embedded", "path": str(tmp_path / "g")},
            "memory": {"facts": False, "summary": False},
        }
        with Memory(config) as m:
            return m.add(text, user_id=user), m.get_all(user_id=user)


def test_an_add_with_a_weak_models_mistakes_stores_only_the_sound_edge(tmp_path: Path) -> None:
    """What SmolLM2-135M answered in the issue (alice -i-> my_name, john -john-> alice),
    plus one sound triple: only the sound one is stored, the rest is counted."""
    rules = [
        {"task": "extract_entities", "response": {"entities": [
            {"name": "alice", "type": "person"}, {"name": "my_name", "type": "person"},
            {"name": "john", "type": "person"}, {"name": "Paris", "type": "city"}]}},
        {"task": "establish_relations", "response": {"relations": [
            {"source": "alice", "relation": "i", "destination": "my_name"},
            {"source": "john", "relation": "john", "destination": "alice"},
            {"source": "alice", "relation": "lives in", "destination": "Paris"}]}},
        {"task": "resolve_updates", "response": {"operations": []}},
    ]  # fmt: skip
    result, snapshot = _add_scripted(
        rules, tmp_path, "I moved to Paris last month and I work at Acme.", "alice"
    )
    assert [(r.kind, r.text) for r in result.rejected] == [
        ("entity", "my_name"),
        ("relation", "alice -i-> my_name"),
        ("relation", "john -john-> alice"),
    ]
    assert {(r.source, r.relation, r.destination) for r in snapshot.relations} == {
        ("alice", "lives_in", "Paris")
    }
    assert sorted(e.name for e in snapshot.entities) == ["Paris", "alice"]


@pytest.mark.parametrize(
    ("said", "stored"),
    [("Lives In", "lives_in"), ("worksAt", "works_at"), ("préfère", "préfère"),
     ("habite à", "habite_à"), ("住在", "住在"), ("живёт в", "живёт_в"),
     ("rahta_hai रहता है", "rahta_hai_रहता_है"), ("pre\u0301fe\u0300re", "préfère")],
)  # fmt: skip
def test_relation_names_keep_letters_of_every_script(said: str, stored: str) -> None:
    """A relation in another script was cut to its ASCII letters ("préfère" stored as
    "pr_f_re", "住在" as "" and then rejected as a stopword relation)."""
    assert snake_case(said) == stored
    assert not is_filler_relation(said)
    assert is_self_named("北京", "Wang", "北京", {})  # rule 3 now sees names in any script


def test_an_add_stores_a_relation_named_in_another_script(tmp_path: Path) -> None:
    rules = [
        {"task": "extract_entities", "response": {"entities": [
            {"name": "Chloé", "type": "person"}, {"name": "Lyon", "type": "city"},
            {"name": "Wang", "type": "person"}, {"name": "北京", "type": "city"}]}},
        {"task": "establish_relations", "response": {"relations": [
            {"source": "Chloé", "relation": "préfère", "destination": "Lyon"},
            {"source": "Wang", "relation": "住在", "destination": "北京"}]}},
        {"task": "resolve_updates", "response": {"operations": []}},
    ]  # fmt: skip
    result, snapshot = _add_scripted(rules, tmp_path, "Chloé préfère Lyon. 王住在北京。", "u")
    assert result.rejected == []
    assert {(r.source, r.relation, r.destination) for r in snapshot.relations} == {
        ("Chloé", "préfère", "Lyon"),
        ("Wang", "住在", "北京"),
    }
