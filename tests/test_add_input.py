"""What `Memory.add` accepts and what of it reaches the LLM: a bad message in a list is a
ValueError naming its index, raised before any LLM call, and nothing is stored; good input
in the common shapes works. The LLM is the scripted TEST DOUBLE server (its recorded
requests are what reached it)."""

from __future__ import annotations

import pytest

from mem0g.testing.script import turn
from mem0g.types import Message

T1 = "2023-05-08T13:56:00"
LONDON = turn(
    "I live in London",
    [("Alice", "person"), ("London", "city")],
    [("Alice", "lives_in", "London")],
    facts=["Lives in London"],
)


def _sent(llm_server, task: str = "extract_entities") -> list[dict]:
    return [r.payload["messages"] for r in llm_server.requests if r.task == task]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ({"role": "user"}, r"message 1: content: field required"),
        ({"role": "user", "content": 5}, r"message 1: content: input should be a valid string"),
        ({"role": "user", "content": "x", "name": 7}, r"message 1: name: input should be"),
        ({"content": "x", "timestamp": "soon"}, r"message 1: timestamp: .*ISO-8601.*'soon'"),
        ("I live in Paris", r"message 1 must be a message dict or a Message, not str"),
    ],
)
def test_a_bad_message_in_a_list_is_named_by_its_index(
    make_memory, llm_server, bad, reason
) -> None:
    """pydantic's multi-line report named neither the message nor its place in the list."""
    m = make_memory(memory={"facts": True})
    good = {"role": "user", "content": "I live in London"}
    with pytest.raises(ValueError, match=f"(?is)^{reason}"):
        m.add([good, bad, good], user_id="alice")
    assert llm_server.requests == []
    assert m.stats().episodes == 0


def test_the_callers_message_objects_are_not_changed(make_memory, llm_server) -> None:
    """`add` filled in a Message's missing name and time on the caller's own object: the
    same list added again for another user told the LLM that the first user said it (the
    "I" of the second add resolved to "alice"), at the first add's time."""
    m = make_memory(LONDON)
    said = [Message(content="I live in London")]
    m.add(said, user_id="alice", timestamp=T1)
    assert said == [Message(content="I live in London")]
    m.add(said, user_id="bob", timestamp="2024-01-01T00:00:00Z")
    second = _sent(llm_server)[-1]
    assert [(s["name"], s["timestamp"]) for s in second] == [("bob", "2024-01-01T00:00:00+00:00")]


@pytest.mark.parametrize(
    ("role", "reason"),
    [
        ("\ud800", "message 1's role is not valid Unicode: a lone surrogate at character 0"),
        ("  ", "message 1's role is empty"),
        ("r" * 65, "message 1's role is 65 characters long; at most 64 are allowed"),
    ],
)
@pytest.mark.parametrize("infer", [True, False])
def test_a_role_is_checked_as_content_and_names_are(
    make_memory, llm_server, role, reason, infer
) -> None:
    """The role was not checked: a lone surrogate failed an inferring add with pydantic's
    serialisation error, and an import (infer=False) stored it, after which every add of the
    tenant failed (its recent messages go to the LLM); a blank or huge role went to the LLM
    with every later add. The service takes roles of up to 64 characters; so does `add`."""
    m = make_memory(LONDON)
    bad = [{"content": "I live in London"}, {"role": role, "content": "I live in London"}]
    with pytest.raises(ValueError, match=reason):
        m.add(bad, user_id="alice", infer=infer)
    assert llm_server.requests == []
    assert m.stats().episodes == 0
    m.add("I live in London", user_id="alice", timestamp=T1)  # the tenant still works
    assert m.stats().relations == 1


def test_openai_multi_part_text_content_is_read(make_memory, llm_server) -> None:
    """OpenAI's content parts (`[{"type": "text", "text": ...}]`, what its SDK and many chat
    UIs send) were refused as "Input should be a valid string"; their text is the message."""
    m = make_memory(LONDON)
    parts = [{"type": "text", "text": "Hello."}, {"type": "text", "text": "I live in London"}]
    m.add([{"role": "user", "content": parts}], user_id="alice", timestamp=T1)
    assert _sent(llm_server) == [
        [{"role": "user", "name": "alice", "content": "Hello.\nI live in London",
          "timestamp": "2023-05-08T13:56:00+00:00"}]
    ]  # fmt: skip
    assert m.stats().relations == 1


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (
            [{"type": "text", "text": "I live in London"}, {"type": "image_url", "image_url": {}}],
            r"message 0: content: .*part 1 is of type 'image_url'; only text parts are read",
        ),
        ([], r"message 0: content: .*no parts"),
        ([{"type": "text", "text": "  "}], r"message 0: content: .*content is empty"),
        ([{"type": "text"}], r"message 0: content: .*part 0 .*'text' string"),
        (["I live in London"], r"message 0: content: .*part 0 .*not str"),
    ],
)
def test_multi_part_content_other_than_text_is_refused(
    make_memory, llm_server, content, reason
) -> None:
    """mem0g reads no images (mem0 describes them with a vision model): an image part is a
    clear error, not dropped in silence, and nothing is stored."""
    m = make_memory(LONDON)
    with pytest.raises(ValueError, match=reason):
        m.add([{"role": "user", "content": content}], user_id="alice")
    assert llm_server.requests == []
    assert m.stats().episodes == 0


def test_a_transcript_with_tool_calls_is_added_without_them(make_memory, llm_server) -> None:
    """An OpenAI transcript holds assistant messages that only call tools (`content: None`
    and `tool_calls`): one of them failed the whole add with "content: input should be a
    valid string". They say nothing to remember and are skipped; the tool's answer (a
    message with text) is kept, as every other message."""
    m = make_memory(LONDON)
    call = {"id": "c1", "type": "function", "function": {"name": "where", "arguments": "{}"}}
    transcript = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "London"},
        {"role": "user", "content": "I live in London"},
        {"role": "assistant", "function_call": {"name": "where", "arguments": "{}"}},
    ]
    m.add(transcript, user_id="alice", timestamp=T1)
    assert [[s["content"] for s in sent] for sent in _sent(llm_server)] == [
        ["London", "I live in London"]
    ]
    assert m.stats().relations == 1
    with pytest.raises(ValueError, match=r"no message with text to add \(1 tool-call messages"):
        m.add([transcript[0]], user_id="alice")
    with pytest.raises(ValueError, match=r"(?i)message 0: content: field required"):
        m.add([{"role": "assistant"}], user_id="alice")  # no text and no tool call: an error


def test_roles_are_read_whatever_their_case(make_memory, llm_server) -> None:
    """A role "User" was another role than "user": such a message got no default name, so the LLM
    was not told who "I" is. OpenAI's roles are read whatever their case; others stay as
    given."""
    m = make_memory(LONDON)
    m.add([{"role": " User ", "content": "I live in London"}], user_id="alice", timestamp=T1)
    assert [(s["role"], s["name"]) for s in _sent(llm_server)[0]] == [("user", "alice")]
    assert Message(role="Narrator", content="x").role == "Narrator"
