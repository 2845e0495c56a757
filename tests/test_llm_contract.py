"""One error contract for every bad LLM answer (issue #14, item 2), end to end through the
real `openai` SDK and the scripted TEST DOUBLE server, on both stores: each malformed answer
is re-asked and then recovered, or the add fails with `LLMError` and the store is unchanged.
"""

from __future__ import annotations

import itertools
import logging

import pytest

from mem0g.extract.checks import RULE_EMPTY, RULE_UNKNOWN
from mem0g.llm.client import LLMError
from mem0g.testing.script import turn

T1 = "2023-05-08T13:56:00"
T2 = "2023-09-01T10:00:00"
GOOD = {"entities": [{"name": "Alice", "type": "person"}, {"name": "Berlin", "type": "city"}]}
LONDON = turn(
    "I live in London", [("Alice", "person"), ("London", "city")], [("Alice", "lives_in", "London")]
)
BERLIN_RELATIONS = {
    "task": "establish_relations",
    "match": {"messages": "Berlin"},
    "response": {
        "relations": [{"source": "Alice", "relation": "lives_in", "destination": "Berlin"}]
    },
}


def _completion(message: object) -> dict:
    """A whole chat.completion body around `message` (for shapes the SDK does not check)."""
    return {
        "completion": {
            "id": "chatcmpl-broken",
            "object": "chat.completion",
            "created": 0,
            "model": "scripted",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
    }


def _tool_call(name: str, arguments: object) -> dict:
    return _completion(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            ],
        }
    )


DEEP = 100_000
BAD = {
    "html body on HTTP 200": {"body": "<html><body>502 Bad Gateway</body></html>",
                              "content_type": "text/html"},
    "html body labelled JSON": {"body": "<html>proxy login</html>",
                                "content_type": "application/json"},
    "SSE stream on HTTP 200": {"body": 'data: {"choices": []}\n\ndata: [DONE]\n\n',
                               "content_type": "text/event-stream"},
    "message null": _completion(None),
    "no choices": {"completion": {"id": "x", "object": "chat.completion", "choices": []}},
    "tool call to another function": _tool_call("get_weather", '{"city": "Berlin"}'),
    "arguments neither string nor object": _tool_call("extract_entities", [1, 2]),
    "JSON nested 100k deep": {"raw": '{"entities": ' + "[" * DEEP + "]" * DEEP + "}"},
    "lone surrogate in a name": {
        "raw": '{"entities": [{"name": "Al\\ud800ice", "type": "person"}]}'
    },
    "unclosed think block": {
        "raw": '<think>Draft: {"entities": [{"name": "Alice", "type": "person"}, '
        '{"name": "Bern", "type": "city"}]} but wait, the user said'
    },
    "name over the length limit": {"entities": [{"name": "A" * 300, "type": "person"}]},
    "more names than the cap": {
        "entities": [{"name": f"Person {i}", "type": "person"} for i in range(201)]
    },
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_answer_is_asked_again_and_recovered(make_memory, llm_server, case) -> None:
    m = make_memory(
        [{"task": "extract_entities", "responses": [BAD[case], GOOD]}, BERLIN_RELATIONS]
    )
    result = m.add("I moved to Berlin", user_id="alice", timestamp=T1)
    assert [(c.source, c.relation, c.destination) for c in result.relations] == [
        ("Alice", "lives_in", "Berlin")
    ]
    assert llm_server.calls("extract_entities") == 2
    second = [r for r in llm_server.requests if r.task == "extract_entities"][1]
    assert "previous answer was rejected" in second.body["messages"][0]["content"]
    assert m.llm.invalid == {"extract_entities": 1}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_answer_to_the_end_is_an_llm_error_and_writes_nothing(
    make_memory, llm_server, case
) -> None:
    m = make_memory(LONDON)
    m.add("I live in London", user_id="alice", timestamp=T1)
    before = m.get_all(user_id="alice", include_invalid=True)
    stats = m.stats()
    llm_server.add_rule(
        {"task": "extract_entities", "match": {"messages": "Berlin"}, "response": BAD[case]}
    )
    with pytest.raises(LLMError, match="no valid answer after 2 attempts"):
        m.add("I moved to Berlin", user_id="alice", timestamp=T2)
    assert m.get_all(user_id="alice", include_invalid=True) == before
    assert m.stats() == stats
    assert m.llm.failed == {"extract_entities": 1}


def test_tool_arguments_sent_as_an_object_are_the_answer(make_memory, llm_server) -> None:
    m = make_memory(
        [{"task": "extract_entities", "response": _tool_call("extract_entities", GOOD)},
         BERLIN_RELATIONS]
    )  # fmt: skip
    result = m.add("I moved to Berlin", user_id="alice", timestamp=T1)
    assert [c.destination for c in result.relations] == ["Berlin"]
    assert llm_server.calls("extract_entities") == 1


def test_the_final_complete_object_wins_over_a_draft(make_memory, llm_server) -> None:
    draft = '{"entities": [{"name": "Alice", "type": "person"}, {"name": "Bern", "type": "city"}]}'
    final = (
        '{"entities": [{"name": "Alice", "type": "person"}, {"name": "Berlin", "type": "city"}]}'
    )
    m = make_memory(
        [{"task": "extract_entities", "response": {"raw": f"Draft: {draft}\nFinal: {final}"}},
         BERLIN_RELATIONS]
    )  # fmt: skip
    m.add("I moved to Berlin", user_id="alice", timestamp=T1)
    assert {e.name for e in m.get_all(user_id="alice").entities} == {"Alice", "Berlin"}
    assert llm_server.calls("extract_entities") == 1


@pytest.mark.parametrize(
    "valid_from", ["0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00", "2023-13-45"]
)
def test_unusable_valid_from_is_dropped_not_fatal(make_memory, valid_from) -> None:
    m = make_memory(
        turn("I moved to Berlin", [("Alice", "person"), ("Berlin", "city")],
             [("Alice", "lives_in", "Berlin", valid_from)])
    )  # fmt: skip
    result = m.add("I moved to Berlin", user_id="alice", timestamp=T1)
    (edge,) = m.get_all(user_id="alice").relations
    assert edge.valid_from == result.relations[0].valid_from
    assert edge.valid_from.isoformat() == "2023-05-08T13:56:00+00:00"  # as of the message


PARIS_ENTITIES = [("Alice", "person"), ("Paris", "city")]


@pytest.mark.parametrize(
    "operations",
    [
        list(order)
        for order in itertools.permutations(
            [("NOOP", 0, "e1"), ("INVALIDATE", 0, "e1"), ("UPDATE", 0, "e1")]
        )
    ]
    + [[("NOOP", 0, "e1"), ("INVALIDATE", None, "e1")], [("INVALIDATE", None, "e1"),
                                                         ("NOOP", 0, "e1")]],
)  # fmt: skip
def test_contradictory_operations_on_one_edge_keep_one_valid_residence(
    make_memory, operations
) -> None:
    m = make_memory(
        LONDON
        + turn("moved to Paris", PARIS_ENTITIES, [("Alice", "lives_in", "Paris")], operations)
    )
    m.add("I live in London", user_id="alice", timestamp=T1)
    m.add("I moved to Paris", user_id="alice", timestamp=T2)
    valid = m.get_all(user_id="alice").relations
    assert [(r.relation, r.destination) for r in valid] == [("lives_in", "Paris")]
    ended = [r for r in m.get_all(user_id="alice", include_invalid=True).relations
             if r.invalid_at is not None]  # fmt: skip
    assert [(r.destination, r.invalid_at.isoformat()) for r in ended] == [
        ("London", "2023-09-01T10:00:00+00:00")
    ]


def test_relations_naming_entities_never_extracted_are_rejected(make_memory, caplog) -> None:
    caplog.set_level(logging.INFO)
    m = make_memory(
        turn(
            "I moved to Berlin with Bob",
            [("Alice", "person"), ("Berlin", "city")],
            [("alice", "lives_in", "BERLIN"), ("Alice", "moved_with", "Bob")],
        )
    )
    result = m.add("I moved to Berlin with Bob", user_id="alice", timestamp=T1)
    graph = m.get_all(user_id="alice")
    assert {(r.source, r.relation, r.destination) for r in graph.relations} == {
        ("Alice", "lives_in", "Berlin")  # spelt as call 1 spelt them
    }
    assert {e.name: e.type for e in graph.entities} == {"Alice": "person", "Berlin": "city"}
    assert [(r.text, r.rule) for r in result.rejected] == [
        ("Alice -moved_with-> Bob", RULE_UNKNOWN)
    ]


def test_names_that_normalise_to_nothing_are_reported(make_memory) -> None:
    m = make_memory(
        turn("I saw ??? in Berlin", [("Alice", "person"), ("???", "thing"), ("Berlin", "city")],
             [("Alice", "saw", "???"), ("Alice", "visited", "Berlin")])
    )  # fmt: skip
    result = m.add("I saw ??? in Berlin", user_id="alice", timestamp=T1)
    assert ("entity", "???", RULE_EMPTY) in [(r.kind, r.text, r.rule) for r in result.rejected]
    assert {e.name for e in m.get_all(user_id="alice").entities} == {"Alice", "Berlin"}


@pytest.mark.parametrize("answer", ["resolve_updates", "update_memory"])
def test_an_operation_is_read_whatever_its_case_and_spacing(answer: str) -> None:
    from pydantic import ValidationError

    from mem0g.llm.protocol import TASKS

    model = TASKS[answer].answer
    parsed = model.model_validate({"operations": [{"op": " noop ", "existing_id": "x"}]})
    assert parsed.operations[0].op == "NOOP"
    for none in ("NONE", "none", "no-op", "No_Op"):  # Mem0's prompt's word for a no-op
        said = model.model_validate({"operations": [{"op": none, "existing_id": "x"}]})
        assert said.operations[0].op == "NOOP"
    with pytest.raises(ValidationError):  # still one of the task's own choices
        model.model_validate({"operations": [{"op": "merge"}]})
