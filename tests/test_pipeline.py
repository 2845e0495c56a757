"""End to end: real `openai` client -> scripted TEST DOUBLE server, real MiniLM, and each
store (`store_kind`: embedded, neo4j)."""

from __future__ import annotations

import pytest

from mem0g.llm.client import LLMError
from mem0g.testing import ScriptedLLMServer
from mem0g.testing.script import add_everything, turn
from mem0g.types import Event

T1 = "2023-05-08T13:56:00"
T2 = "2023-09-01T10:00:00"
T3 = "2024-01-15T09:00:00"


def _events(result) -> list[tuple[str, str, str, str]]:
    return [(c.event.value, c.source, c.relation, c.destination) for c in result.relations]


def _triples(snapshot) -> set[tuple[str, str, str]]:
    return {(r.source, r.relation, r.destination) for r in snapshot.relations}


LONDON = turn(
    "I live in London", [("Alice", "person"), ("London", "city")], [("Alice", "lives in", "London")]
)
PARIS = turn(
    "moved to Paris",
    [("Alice", "person"), ("Paris", "city")],
    [("Alice", "lives_in", "Paris", "2023-09-01")],
    [("INVALIDATE", 0, "e1")],
)


def test_first_add_creates_nodes_and_edge(make_memory, llm_server: ScriptedLLMServer) -> None:
    m = make_memory(LONDON)
    result = m.add(
        [{"role": "user", "content": "I live in London", "name": "Alice"}],
        user_id="alice",
        timestamp=T1,
    )
    assert _events(result) == [("ADD", "Alice", "lives_in", "London")]
    assert result.usage.calls == 2  # no existing edges: no resolve_updates call
    assert llm_server.calls("resolve_updates") == 0
    graph = m.get_all(user_id="alice")
    assert {e.name for e in graph.entities} == {"Alice", "London"}
    rel = graph.relations[0]
    assert rel.valid_from.isoformat() == "2023-05-08T13:56:00+00:00"
    assert rel.provenance[0].episode_id == result.episode_id
    # the protocol: last user message is exactly the JSON payload, speaker name included
    payload = llm_server.requests[0].payload
    assert payload["task"] == "extract_entities"
    assert payload["messages"][0]["name"] == "Alice"
    assert payload["reference_time"].startswith("2023-05-08T13:56")


def test_contradiction_invalidates_and_keeps_history(make_memory, llm_server) -> None:
    m = make_memory(LONDON + PARIS)
    m.add("I live in London", user_id="alice", timestamp=T1)
    result = m.add("I moved to Paris last week", user_id="alice", timestamp=T2)
    assert ("ADD", "Alice", "lives_in", "Paris") in _events(result)
    assert ("INVALIDATE", "Alice", "lives_in", "London") in _events(result)
    resolve = [r for r in llm_server.requests if r.task == "resolve_updates"]
    assert len(resolve) == 1
    assert resolve[0].payload["existing"][0]["destination"] == "London"
    assert resolve[0].payload["existing"][0]["id"] == "e1"  # short ids, not database ids

    current = m.get_all(user_id="alice")
    assert _triples(current) == {("Alice", "lives_in", "Paris")}
    history = m.get_all(user_id="alice", include_invalid=True)
    assert _triples(history) == {("Alice", "lives_in", "Paris"), ("Alice", "lives_in", "London")}
    london = next(r for r in history.relations if r.destination == "London")
    assert london.invalid_at.date().isoformat() == "2023-09-01"

    hits = m.search("where does Alice live?", user_id="alice")
    assert [h.destination for h in hits.relations] == ["Paris"]
    hits = m.search("where does Alice live?", user_id="alice", include_invalid=True)
    assert {h.destination for h in hits.relations} == {"Paris", "London"}


def test_as_of_before_and_after_a_change(make_memory) -> None:
    m = make_memory(LONDON + PARIS)
    m.add("I live in London", user_id="alice", timestamp=T1)
    m.add("I moved to Paris", user_id="alice", timestamp=T2)
    before = m.search("where does Alice live?", user_id="alice", as_of="2023-06-01")
    after = m.search("where does Alice live?", user_id="alice", as_of="2023-12-01")
    earliest = m.search("where does Alice live?", user_id="alice", as_of="2020-01-01")
    assert [h.destination for h in before.relations] == ["London"]
    assert [h.destination for h in after.relations] == ["Paris"]
    assert earliest.relations == []


@pytest.mark.parametrize(("said", "start"), [("2019", "2019-01-01"), ("2019-06", "2019-06-01")])
def test_a_year_or_a_month_from_the_llm_dates_the_edge(make_memory, said, start) -> None:
    """ISO 8601's reduced precision ("2019", "2019-06": all the conversation says) was
    dropped as malformed, so the edge began at the add's time and as_of 2020 missed it."""
    m = make_memory(
        turn("since 2019", [("Alice", "person"), ("Acme", "company")],
             [("Alice", "works_at", "Acme", said)])
    )  # fmt: skip
    m.add("I have worked at Acme since 2019", user_id="alice", timestamp=T3)
    (rel,) = m.get_all(user_id="alice").relations
    assert rel.valid_from.isoformat() == f"{start}T00:00:00+00:00"
    hits = m.search("where does Alice work?", user_id="alice", as_of="2020-01-01")
    assert [h.destination for h in hits.relations] == ["Acme"]


def test_identical_fact_is_a_noop_with_provenance(make_memory, llm_server) -> None:
    m = make_memory(LONDON)
    first = m.add("I live in London", user_id="alice", timestamp=T1)
    again = m.add("As I said, I live in London", user_id="alice", timestamp=T2)
    assert _events(again) == [("NOOP", "Alice", "lives_in", "London")]
    assert llm_server.calls("resolve_updates") == 0  # an exact duplicate needs no LLM
    rel = m.get_all(user_id="alice").relations[0]
    assert rel.mentions == 2
    assert [p.episode_id for p in rel.provenance] == [first.episode_id, again.episode_id]


def test_llm_judged_duplicate_is_a_noop(make_memory, llm_server) -> None:
    rules = LONDON + turn(
        "I reside in London",
        [("Alice", "person"), ("London", "city")],
        [("Alice", "resides_in", "London")],
        [("NOOP", 0, "e1")],
    )
    m = make_memory(rules)
    m.add("I live in London", user_id="alice", timestamp=T1)
    result = m.add("I reside in London", user_id="alice", timestamp=T2)
    assert _events(result) == [("NOOP", "Alice", "lives_in", "London")]
    graph = m.get_all(user_id="alice", include_invalid=True)
    assert len(graph.relations) == 1 and graph.relations[0].mentions == 2


def test_update_supersedes_the_old_edge(make_memory) -> None:
    rules = LONDON + turn(
        "Camden",
        [("Alice", "person"), ("Camden, London", "location")],
        [("Alice", "lives_in", "Camden, London")],
        [("UPDATE", 0, "e1")],
    )
    m = make_memory(rules)
    m.add("I live in London", user_id="alice", timestamp=T1)
    result = m.add("Camden, to be precise", user_id="alice", timestamp=T2)
    update = next(c for c in result.relations if c.event == Event.UPDATE)
    assert update.destination == "Camden, London" and update.previous_id is not None
    assert _triples(m.get_all(user_id="alice")) == {("Alice", "lives_in", "Camden, London")}
    assert len(m.get_all(user_id="alice", include_invalid=True).relations) == 2


def test_alias_merge(make_memory) -> None:
    rules = turn(
        "Bob Chen joined",
        [("Bob Chen", "person"), ("Contoso", "organization")],
        [("Bob Chen", "works_at", "Contoso")],
    )
    rules += turn(
        "Bob loves hiking",
        [("Bob", "person"), ("hiking", "activity")],
        [("Bob", "loves", "hiking")],
    )
    rules.append(add_everything())
    m = make_memory(rules)
    m.add("Bob Chen joined Contoso", user_id="u", timestamp=T1)
    result = m.add("Bob loves hiking", user_id="u", timestamp=T2)
    assert _events(result) == [("ADD", "Bob Chen", "loves", "hiking")]
    people = [e for e in m.get_all(user_id="u").entities if e.type == "person"]
    assert len(people) == 1
    assert people[0].name == "Bob Chen" and people[0].aliases == ["Bob"]


def test_no_merge_across_tenants_or_types(make_memory) -> None:
    # the speaker by name: "Me" is a placeholder the extraction checks reject
    rules = turn(
        "Jordan is my friend",
        [("Sam", "person"), ("Jordan", "person")],
        [("Sam", "is_friend_of", "Jordan")],
    )
    rules += turn(
        "visited Jordan",
        [("Sam", "person"), ("Jordan", "country")],
        [("Sam", "visited", "Jordan")],
    )
    rules.append(add_everything())
    m = make_memory(rules)
    m.add("Jordan is my friend", user_id="a", timestamp=T1)
    m.add("Jordan is my friend", user_id="b", timestamp=T1)
    m.add("I visited Jordan", user_id="a", timestamp=T2)
    jordans = [e for e in m.get_all(user_id="a").entities if e.name == "Jordan"]
    assert sorted(e.type for e in jordans) == ["country", "person"]
    a_ids = {e.id for e in m.get_all(user_id="a").entities}
    b_ids = {e.id for e in m.get_all(user_id="b").entities}
    assert a_ids.isdisjoint(b_ids)


def test_tenant_isolation(make_memory) -> None:
    rules = LONDON + turn(
        "I live in Rome", [("Bob", "person"), ("Rome", "city")], [("Bob", "lives_in", "Rome")]
    )
    m = make_memory(rules)
    m.add("I live in London", user_id="alice", timestamp=T1)
    m.add("I live in Rome", user_id="bob", timestamp=T1)
    for query in ("where does Alice live?", "London", "Rome", "who lives where"):
        assert {h.destination for h in m.search(query, user_id="bob").relations} <= {"Rome"}
        assert {h.destination for h in m.search(query, user_id="alice").relations} <= {"London"}
    assert _triples(m.get_all(user_id="bob")) == {("Bob", "lives_in", "Rome")}
    m.delete_all(user_id="bob")
    assert m.get_all(user_id="bob").relations == []
    assert _triples(m.get_all(user_id="alice")) == {("Alice", "lives_in", "London")}


def test_who_works_with_finds_coworkers_via_company(make_memory) -> None:
    rules = turn(
        "Bob Chen and Carol Diaz",
        [
            ("Bob Chen", "person"),
            ("Carol Diaz", "person"),
            ("Contoso", "organization"),
            ("tennis", "sport"),
        ],
        [
            ("Bob Chen", "works_at", "Contoso"),
            ("Carol Diaz", "works_at", "Contoso"),
            ("Bob Chen", "plays", "tennis"),
        ],
    )
    rules += turn(
        "Dan Evans works at Fabrikam",
        [("Dan Evans", "person"), ("Fabrikam", "organization")],
        [("Dan Evans", "works_at", "Fabrikam")],
    )
    m = make_memory(rules)
    m.add(
        "Bob Chen and Carol Diaz both work at Contoso; Bob plays tennis", user_id="u", timestamp=T1
    )
    m.add("Dan Evans works at Fabrikam", user_id="u", timestamp=T1)
    hits = m.search("who works with Bob Chen?", user_id="u", limit=3)
    top = {(h.source, h.destination) for h in hits.relations}
    assert ("Carol Diaz", "Contoso") in top
    assert ("Bob Chen", "Contoso") in top
    assert any(e.name == "Bob Chen" for e in hits.entities)


@pytest.mark.parametrize(
    "bad",
    [
        {"raw": "this is not json at all"},
        {"raw": '{"entities": [{"name": "Alice"'},
        {"entities": [{"name": "Alice"}]},  # missing type
        {"people": []},  # missing key
    ],
)
def test_malformed_answers_never_corrupt_the_store(make_memory, llm_server, bad) -> None:
    m = make_memory(LONDON)
    m.add("I live in London", user_id="alice", timestamp=T1)
    before = m.get_all(user_id="alice", include_invalid=True)
    llm_server.add_rule(
        {"task": "extract_entities", "match": {"contains": "Berlin"}, "response": bad}
    )
    with pytest.raises(LLMError):
        m.add("I moved to Berlin", user_id="alice", timestamp=T2)
    assert llm_server.calls("extract_entities") == 1 + 2  # first try + max_retries=1, then 1
    assert m.get_all(user_id="alice", include_invalid=True) == before
    assert m.stats().episodes == 1


def test_retry_after_an_invalid_answer_feeds_the_error_back(make_memory, llm_server) -> None:
    llm_server.add_rule(
        {
            "task": "extract_entities",
            "responses": [
                {"raw": "Sure! Here you go: {oops"},
                {
                    "entities": [
                        {"name": "Alice", "type": "person"},
                        {"name": "Oslo", "type": "city"},
                    ]
                },
            ],
        }
    )
    llm_server.add_rule(
        {
            "task": "establish_relations",
            "response": {
                "relations": [{"source": "Alice", "relation": "visited", "destination": "Oslo"}]
            },
        }
    )
    m = make_memory()
    result = m.add("I visited Oslo", user_id="alice", timestamp=T1)
    assert _events(result) == [("ADD", "Alice", "visited", "Oslo")]
    second = [r for r in llm_server.requests if r.task == "extract_entities"][1]
    system = second.body["messages"][0]["content"]
    assert "previous answer was rejected" in system
    assert second.body["messages"][-1]["content"].startswith("{")  # payload still last


@pytest.mark.parametrize(
    "wrapped",
    [
        '<think>The user lives in London, so...</think>{"entities": [{"name": "Alice", '
        '"type": "person"}, {"name": "London", "type": "city"}]}',
        'Here is the JSON:\n```json\n{"entities": [{"name": "Alice", "type": "person"}, '
        '{"name": "London", "type": "city"}]}\n```\nHope this helps!',
        'Sure. {"entities": [{"name": "Alice", "type": "person"}, {"name": "London", '
        '"type": "city", "confidence": 0.9}]} Anything else?',
    ],
)
def test_think_blocks_fences_and_prose_are_tolerated(make_memory, llm_server, wrapped) -> None:
    llm_server.add_rule({"task": "extract_entities", "response": {"raw": wrapped}})
    m = make_memory(LONDON[1:])
    result = m.add("I live in London", user_id="alice", timestamp=T1)
    assert _events(result) == [("ADD", "Alice", "lives_in", "London")]
    assert llm_server.calls("extract_entities") == 1


def test_empty_lists_add_nothing_but_the_episode(make_memory, llm_server) -> None:
    llm_server.add_rule({"task": "extract_entities", "response": {"entities": []}})
    m = make_memory()
    result = m.add("hi there, how are you?", user_id="alice", timestamp=T1)
    assert result.relations == [] and result.usage.calls == 1
    assert m.get_all(user_id="alice").entities == []
    assert m.stats().episodes == 1


def test_unknown_ids_and_indices_are_ignored(make_memory, llm_server, caplog) -> None:
    rules = LONDON + turn(
        "moved to Paris",
        [("Alice", "person"), ("Paris", "city")],
        [("Alice", "lives_in", "Paris")],
        [("INVALIDATE", 0, "e99"), ("UPDATE", 7, "e1"), ("NOOP", 3, None)],
    )
    m = make_memory(rules)
    m.add("I live in London", user_id="alice", timestamp=T1)
    result = m.add("I moved to Paris", user_id="alice", timestamp=T2)
    assert _events(result) == [("ADD", "Alice", "lives_in", "Paris")]  # unnamed -> added
    assert _triples(m.get_all(user_id="alice")) == {
        ("Alice", "lives_in", "London"),
        ("Alice", "lives_in", "Paris"),
    }
    assert "unknown index or id" in caplog.text


def test_failure_inside_add_leaves_store_unchanged(make_memory, llm_server) -> None:
    rules = LONDON + turn(
        "moved to Paris", [("Alice", "person"), ("Paris", "city")], [("Alice", "lives_in", "Paris")]
    )
    rules.append({"task": "resolve_updates", "response": {"status": 500, "error": "boom"}})
    m = make_memory(rules)
    m.add("I live in London", user_id="alice", timestamp=T1)
    before = m.get_all(user_id="alice", include_invalid=True)
    with pytest.raises(LLMError, match="500"):
        m.add("I moved to Paris", user_id="alice", timestamp=T2)
    assert m.get_all(user_id="alice", include_invalid=True) == before
    assert m.stats().entities == 2


def test_store_error_mid_apply_rolls_back(make_memory, monkeypatch, store_kind) -> None:
    m = make_memory(LONDON + PARIS)
    m.add("I live in London", user_id="alice", timestamp=T1)
    before = m.get_all(user_id="alice", include_invalid=True)
    store = m.store
    if store_kind == "embedded":
        original = store._write  # the one method every SQL write goes through

        def explode(conn, table, record, vec):
            original(conn, table, record, vec)
            if table == "relations":  # entities and the episode are already written by now
                raise RuntimeError("disk on fire")

        monkeypatch.setattr(store, "_write", explode)
    else:
        original = store._run  # the one method every statement of a transaction goes through

        def explode(tx, name, params):
            result = original(tx, name, params)
            if name == "create_relations":  # entities and the episode are already written
                raise RuntimeError("disk on fire")
            return result

        monkeypatch.setattr(store, "_run", explode)
    with pytest.raises(Exception, match="disk on fire"):
        m.add("I moved to Paris", user_id="alice", timestamp=T2)
    assert m.get_all(user_id="alice", include_invalid=True) == before


def test_reopening_restores_the_graph(make_memory, tmp_path) -> None:
    path = tmp_path / "kept"
    m = make_memory(LONDON + PARIS, path=path)
    m.add("I live in London", user_id="alice", timestamp=T1)
    m.add("I moved to Paris", user_id="alice", timestamp=T2)
    before = m.get_all(user_id="alice", include_invalid=True)
    hits_before = m.search("where does Alice live?", user_id="alice")
    m.close()
    reopened = make_memory(path=path)
    assert reopened.get_all(user_id="alice", include_invalid=True) == before
    hits_after = reopened.search("where does Alice live?", user_id="alice")
    assert hits_after.relations == hits_before.relations


HOSTILE = 'Bob\'}) DETACH DELETE n // `x` "q" \\ ;'


def test_hostile_names_are_stored_verbatim(make_memory) -> None:
    rules = turn(
        "hostile", [(HOSTILE, "person"), ("London", "city")], [(HOSTILE, "lives_in", "London")]
    )
    m = make_memory(rules + LONDON)
    m.add("I live in London", user_id="alice", timestamp=T1)
    m.add("a hostile name arrives", user_id="mallory", timestamp=T1)
    graph = m.get_all(user_id="mallory")
    assert {e.name for e in graph.entities} == {HOSTILE, "London"}
    assert m.search(HOSTILE, user_id="mallory").relations[0].source == HOSTILE
    assert _triples(m.get_all(user_id="alice")) == {("Alice", "lives_in", "London")}


def test_bad_input_is_rejected_before_any_call(make_memory, llm_server) -> None:
    m = make_memory()
    with pytest.raises(ValueError, match="user_id"):
        m.add("text")
    with pytest.raises(ValueError):
        m.add([{"role": "user", "content": "   "}], user_id="a")
    with pytest.raises(ValueError):
        m.add([], user_id="a")
    with pytest.raises(ValueError):
        m.search("", user_id="a")
    assert llm_server.requests == []
