"""The LLM client against the scripted TEST DOUBLE server: modes, validation, retries, limits."""

from __future__ import annotations

import threading
import time

import pytest

from mem0g.config import LLMConfig
from mem0g.llm.client import PROCESS_LIMIT, LLMClient, LLMError, parse_json_answer
from mem0g.llm.protocol import (
    EXTRACT_ENTITIES,
    SUMMARIZE,
    TASKS,
    Context,
    ExtractEntitiesPayload,
    PayloadMessage,
    shipped_schema,
)
from mem0g.testing import ScriptedLLMServer
from mem0g.types import Usage

ANSWER = {"entities": [{"name": "Alice", "type": "person"}]}


def _payload(text: str = "I am Alice") -> ExtractEntitiesPayload:
    return ExtractEntitiesPayload(
        reference_time="2024-01-01T00:00:00+00:00",
        messages=[PayloadMessage(role="user", name="Alice", content=text)],
        context=Context(),
    )


def _client(server: ScriptedLLMServer, **kw) -> LLMClient:
    return LLMClient(LLMConfig(base_url=server.base_url, api_key="test", **kw))


@pytest.mark.parametrize("mode", ["tools", "json_schema", "json"])
def test_each_mode_round_trips(llm_server, mode) -> None:
    llm_server.add_rule({"task": "extract_entities", "response": ANSWER})
    usage = Usage()
    answer = _client(llm_server, mode=mode).call(EXTRACT_ENTITIES, _payload(), usage)
    assert answer.model_dump() == ANSWER
    body = llm_server.requests[0].body
    assert body["messages"][-1]["role"] == "user"
    assert llm_server.requests[0].payload["task"] == "extract_entities"
    if mode == "tools":
        assert body["tools"][0]["function"]["name"] == "extract_entities"
        assert body["tool_choice"]["function"]["name"] == "extract_entities"
    elif mode == "json_schema":
        assert body["response_format"]["type"] == "json_schema"
        assert "tools" not in body
    else:
        assert body["response_format"] == {"type": "json_object"}
    assert usage.calls == 1 and usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.by_task == {"extract_entities": 1}


def test_the_task_types_payload_and_answer(llm_server) -> None:
    """The seam is typed by the task: its answer model comes back, and a payload of another
    task is refused before anything is sent."""
    llm_server.add_rule({"task": "extract_entities", "response": ANSWER})
    client = _client(llm_server)
    answer = client.call(EXTRACT_ENTITIES, _payload())
    assert type(answer) is EXTRACT_ENTITIES.answer
    assert answer.entities[0].name == "Alice"
    with pytest.raises(TypeError, match="summarize takes a SummarizePayload"):
        client.call(SUMMARIZE, _payload())  # type: ignore[arg-type]
    assert len(llm_server.requests) == 1


def test_gives_up_after_max_retries(llm_server) -> None:
    llm_server.add_rule({"task": "extract_entities", "response": {"raw": "nope"}})
    with pytest.raises(LLMError, match="no valid answer after 3 attempts"):
        _client(llm_server, max_retries=2).call(EXTRACT_ENTITIES, _payload())
    assert llm_server.calls("extract_entities") == 3


def test_http_errors_are_llm_errors(llm_server) -> None:
    llm_server.add_rule({"task": "*", "response": {"status": 401, "error": "bad key"}})
    with pytest.raises(LLMError, match="401"):
        _client(llm_server).call(EXTRACT_ENTITIES, _payload())


def test_unreachable_endpoint_is_a_clear_error() -> None:
    client = LLMClient(LLMConfig(base_url="http://127.0.0.1:9/v1", api_key="x", timeout=2))
    with pytest.raises(LLMError, match=r"cannot reach the LLM at http://127.0.0.1:9/v1 \(model"):
        client.call(EXTRACT_ENTITIES, _payload())
    with pytest.raises(LLMError, match="not reachable"):
        client.ping()


def test_no_configuration_is_a_clear_error(monkeypatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(LLMError, match="no LLM configured"):
        LLMClient(LLMConfig())


def test_local_providers_need_no_key(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    client = LLMClient(LLMConfig(provider="ollama", model="llama3.1"))
    assert str(client._client.base_url).startswith("http://localhost:11434/v1")


def test_ping_lists_models(llm_server) -> None:
    assert _client(llm_server).ping() == ["scripted"]


def test_process_wide_concurrency_limit(llm_server) -> None:
    active = 0
    peak = 0
    lock = threading.Lock()

    def slow(payload):
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.05)
        with lock:
            active -= 1
        return ANSWER

    llm_server.add_rule({"task": "extract_entities", "response": slow})
    clients = [_client(llm_server, max_concurrency=2) for _ in range(3)]
    threads = [
        threading.Thread(target=c.call, args=(EXTRACT_ENTITIES, _payload(f"msg {i}")))
        for i, c in enumerate(clients * 3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert llm_server.calls("extract_entities") == 9
    assert peak == 2
    PROCESS_LIMIT.set_limit(4)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('<think>{"a": 0} hmm</think>{"a": 1}', {"a": 1}),
        ('reasoning first</think>\n{"a": 1}', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('Sure thing! {"a": 1} done.', {"a": 1}),
        ('[1, 2] then {"a": 1}', {"a": 1}),
    ],
)
def test_parse_json_answer(text, expected) -> None:
    assert parse_json_answer(text) == expected


@pytest.mark.parametrize("text", ["", "no json here", "[1, 2]", '{"a": '])
def test_parse_json_answer_rejects(text) -> None:
    with pytest.raises(ValueError):
        parse_json_answer(text)


def test_shipped_schemas_are_current() -> None:
    for name, task in TASKS.items():
        doc = shipped_schema(name)
        assert doc["task"] == name == task.name
        assert doc["payload"] == task.payload.model_json_schema()
        assert doc["answer"] == task.answer.model_json_schema()
