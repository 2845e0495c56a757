"""Tests for the scripted OpenAI-compatible test-double server, driven by the real openai SDK."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from mem0g.testing import RecordedRequest, ScriptedLLMServer


def _client(srv: ScriptedLLMServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url, api_key="test", max_retries=0, timeout=10)


def _tool(task: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": task,
            "description": f"{task} output",
            "parameters": {"type": "object", "properties": {}},
        },
    }


def _messages(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are a memory extractor. Answer with JSON."},
        {"role": "user", "content": json.dumps(payload)},
    ]


def call_tool(client: openai.OpenAI, payload: dict[str, Any]) -> Any:
    """Call in tool mode (the task comes from the forced tool's name)."""
    task = payload["task"]
    return client.chat.completions.create(
        model="test-model",
        messages=_messages(payload),  # type: ignore[arg-type]
        tools=[_tool(task)],  # type: ignore[list-item]
        tool_choice={"type": "function", "function": {"name": task}},
    )


def call_json(client: openai.OpenAI, payload: dict[str, Any], schema: bool = True) -> Any:
    """Call in response_format mode (no tools; the task comes from the payload)."""
    response_format: dict[str, Any] = (
        {"type": "json_schema", "json_schema": {"name": payload["task"], "schema": {}}}
        if schema
        else {"type": "json_object"}
    )
    return client.chat.completions.create(
        model="test-model",
        messages=_messages(payload),  # type: ignore[arg-type]
        response_format=response_format,  # type: ignore[arg-type]
    )


def tool_args(completion: Any) -> str:
    return completion.choices[0].message.tool_calls[0].function.arguments


@pytest.fixture
def server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as srv:
        yield srv


def test_tool_call_round_trip() -> None:
    answer = {"entities": [{"name": "Alice", "type": "person"}]}
    with ScriptedLLMServer([{"task": "extract_entities", "response": answer}]) as srv:
        assert srv.base_url.startswith("http://127.0.0.1:")
        assert srv.base_url.endswith("/v1")
        assert srv.port > 0
        payload = {"task": "extract_entities", "text": "Alice moved to Paris."}
        completion = call_tool(_client(srv), payload)

        choice = completion.choices[0]
        assert completion.object == "chat.completion"
        assert completion.model == "test-model"
        assert choice.index == 0
        assert choice.finish_reason == "tool_calls"
        assert choice.message.role == "assistant"
        assert choice.message.content is None
        call = choice.message.tool_calls[0]
        assert call.type == "function"
        assert call.id.startswith("call_")
        assert call.function.name == "extract_entities"
        assert json.loads(call.function.arguments) == answer

        usage = completion.usage
        assert usage is not None
        assert usage.completion_tokens == -(-len(call.function.arguments) // 4)
        assert usage.prompt_tokens > 0
        assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens

        (rec,) = srv.requests
        assert isinstance(rec, RecordedRequest)
        assert rec.task == "extract_entities"
        assert rec.payload == payload
        assert rec.body["model"] == "test-model"
        assert rec.body["tools"][0]["function"]["name"] == "extract_entities"
        assert rec.matched_rule_index == 0
        assert srv.calls("extract_entities") == 1
        assert srv.calls("summarize") == 0


def test_task_comes_from_tool_name_not_payload() -> None:
    rules = [{"task": "summarize", "response": {"summary": "from tool name"}}]
    with ScriptedLLMServer(rules) as srv:
        client = _client(srv)
        payload = {"task": "something_else", "text": "x"}
        completion = client.chat.completions.create(
            model="m",
            messages=_messages(payload),  # type: ignore[arg-type]
            tools=[_tool("summarize")],  # type: ignore[list-item]
            tool_choice={"type": "function", "function": {"name": "summarize"}},
        )
        assert json.loads(tool_args(completion)) == {"summary": "from tool name"}
        assert srv.requests[0].task == "summarize"


@pytest.mark.parametrize("schema", [True, False], ids=["json_schema", "json_object"])
def test_response_format_mode_returns_content(schema: bool) -> None:
    answer = {"facts": ["Alice lives in Paris"]}
    with ScriptedLLMServer([{"task": "extract_facts", "response": answer}]) as srv:
        completion = call_json(_client(srv), {"task": "extract_facts", "text": "hi"}, schema)
        choice = completion.choices[0]
        assert choice.finish_reason == "stop"
        assert choice.message.tool_calls is None
        assert json.loads(choice.message.content) == answer
        assert srv.requests[0].task == "extract_facts"
        assert srv.requests[0].body["response_format"]["type"] == (
            "json_schema" if schema else "json_object"
        )


def test_contains_match_is_case_insensitive_and_all_must_occur() -> None:
    rules = [
        {
            "task": "extract_entities",
            "match": {"contains": ["MOVED TO PARIS", "alice"]},
            "response": {"entities": [{"name": "Alice", "type": "person"}]},
        },
        {"task": "extract_entities", "match": {"contains": "Bob"}, "response": {"who": "bob"}},
        {"task": "extract_entities", "response": {"entities": []}},
    ]
    with ScriptedLLMServer(rules) as srv:
        client = _client(srv)
        first = call_tool(client, {"task": "extract_entities", "text": "Alice moved to Paris"})
        only_one = call_tool(client, {"task": "extract_entities", "text": "Carol moved to Paris"})
        bob = call_tool(client, {"task": "extract_entities", "text": "Bob went home"})
        assert json.loads(tool_args(first))["entities"][0]["name"] == "Alice"
        assert json.loads(tool_args(only_one)) == {"entities": []}
        assert json.loads(tool_args(bob)) == {"who": "bob"}
        assert [r.matched_rule_index for r in srv.requests] == [0, 2, 1]


def test_contains_matches_non_ascii_text_unescaped() -> None:
    rules = [{"task": "summarize", "match": {"contains": "Zürich"}, "response": {"ok": True}}]
    with ScriptedLLMServer(rules) as srv:
        completion = call_json(_client(srv), {"task": "summarize", "text": "Moved to Zürich"})
        assert json.loads(completion.choices[0].message.content) == {"ok": True}


def test_payload_subset_match() -> None:
    rules = [
        {
            "task": "resolve_updates",
            "match": {"payload": {"new": [{"relation": "lives_in"}]}},
            "response": {"ops": ["invalidate"]},
        },
        {
            "task": "resolve_updates",
            "match": {"payload": {"new": [{}, {"relation": "works_at"}]}},
            "response": {"ops": ["second-item"]},
        },
        {"task": "resolve_updates", "match": {"payload": {"flag": True}}, "response": {"b": 1}},
        {"task": "resolve_updates", "response": {"ops": []}},
    ]
    with ScriptedLLMServer(rules) as srv:
        client = _client(srv)

        def ask(payload: dict[str, Any]) -> Any:
            return json.loads(tool_args(call_tool(client, {"task": "resolve_updates", **payload})))

        # Extra keys and extra list items in the payload are fine (subset match).
        lives = {"new": [{"relation": "lives_in", "target": "Paris"}, {"relation": "x"}]}
        assert ask(lives) == {"ops": ["invalidate"]}
        # Pattern list items match by position.
        assert ask({"new": [{"relation": "x"}, {"relation": "works_at"}]}) == {
            "ops": ["second-item"]
        }
        # Pattern longer than the payload list does not match.
        assert ask({"new": []}) == {"ops": []}
        # Scalars compare by equality and a JSON boolean does not equal the number 1.
        assert ask({"flag": 1}) == {"ops": []}
        assert ask({"flag": True}) == {"b": 1}
        # A missing key does not match.
        assert ask({"old": [{"relation": "lives_in"}]}) == {"ops": []}
        assert [r.matched_rule_index for r in srv.requests] == [0, 1, 3, 3, 2, 3]


def test_rule_order_first_match_wins_and_wildcard_task() -> None:
    rules = [
        {"task": "summarize", "response": {"which": "first"}},
        {"task": "summarize", "response": {"which": "second"}},
        {"task": "*", "response": {"which": "wildcard"}},
        {"response": {"which": "never reached"}},
    ]
    with ScriptedLLMServer(rules) as srv:
        client = _client(srv)
        a = call_json(client, {"task": "summarize"})
        b = call_json(client, {"task": "any_custom_task_name"})
        assert json.loads(a.choices[0].message.content) == {"which": "first"}
        assert json.loads(b.choices[0].message.content) == {"which": "wildcard"}
        assert srv.requests[1].task == "any_custom_task_name"


def test_times_limits_rule_use_then_falls_through() -> None:
    rules = [
        {"task": "update_memory", "times": 2, "response": {"n": "limited"}},
        {"task": "update_memory", "response": {"n": "fallback"}},
    ]
    with ScriptedLLMServer(rules) as srv:
        client = _client(srv)
        got = [
            json.loads(tool_args(call_tool(client, {"task": "update_memory"})))["n"]
            for _ in range(4)
        ]
        assert got == ["limited", "limited", "fallback", "fallback"]
        assert srv.calls("update_memory") == 4


def test_times_exhausted_without_fallback_is_unmatched() -> None:
    with ScriptedLLMServer([{"task": "summarize", "times": 1, "response": {"s": 1}}]) as srv:
        client = _client(srv)
        call_json(client, {"task": "summarize"})
        with pytest.raises(openai.BadRequestError):
            call_json(client, {"task": "summarize"})
        assert [r.matched_rule_index for r in srv.requests] == [0, None]


def test_responses_sequence_last_one_repeats() -> None:
    rules = [{"task": "summarize", "responses": [{"s": "one"}, {"raw": "two"}, {"s": "three"}]}]
    with ScriptedLLMServer(rules) as srv:
        client = _client(srv)
        got = [
            call_json(client, {"task": "summarize"}).choices[0].message.content for _ in range(5)
        ]
        assert got[0:2] == ['{"s": "one"}', "two"]
        assert [json.loads(g) for g in got[2:]] == [{"s": "three"}] * 3


def test_responses_sequence_can_include_errors() -> None:
    rules = [{"task": "summarize", "responses": [{"status": 503, "error": "busy"}, {"ok": 1}]}]
    with ScriptedLLMServer(rules) as srv:
        client = _client(srv)
        with pytest.raises(openai.APIStatusError) as info:
            call_json(client, {"task": "summarize"})
        assert info.value.status_code == 503
        assert json.loads(call_json(client, {"task": "summarize"}).choices[0].message.content) == {
            "ok": 1
        }


@pytest.mark.parametrize(
    "raw",
    [
        "Sure! here is {not json",
        '<think>hmm</think>\n```json\n{"a": 1}\n```',
        "   plain prose, no JSON at all  ",
    ],
)
def test_raw_answer_is_delivered_verbatim(raw: str) -> None:
    rules = [{"task": "establish_relations", "response": {"raw": raw}}]
    with ScriptedLLMServer(rules) as srv:
        client = _client(srv)
        assert tool_args(call_tool(client, {"task": "establish_relations"})) == raw
        as_content = call_json(client, {"task": "establish_relations"})
        assert as_content.choices[0].message.content == raw


def test_http_error_surfaces_as_api_status_error() -> None:
    rules = [{"task": "extract_entities", "response": {"status": 500, "error": "boom"}}]
    with ScriptedLLMServer(rules) as srv:
        with pytest.raises(openai.APIStatusError) as info:
            call_tool(_client(srv), {"task": "extract_entities"})
        err = info.value
        assert isinstance(err, openai.InternalServerError)
        assert err.status_code == 500
        assert isinstance(err.body, dict)
        assert err.body["message"] == "boom"
        assert err.body["type"] == "scripted_error"
        assert srv.requests[0].matched_rule_index == 0


def test_rate_limit_status_maps_to_sdk_class() -> None:
    rules = [{"task": "summarize", "response": {"status": 429, "error": "slow down"}}]
    with ScriptedLLMServer(rules) as srv, pytest.raises(openai.RateLimitError):
        call_json(_client(srv), {"task": "summarize"})


def test_unmatched_request_gives_400_and_is_recorded() -> None:
    rules = [{"task": "summarize", "match": {"contains": "never"}, "response": {"x": 1}}]
    with ScriptedLLMServer(rules) as srv:
        payload = {"task": "summarize", "text": "Alice likes tea"}
        with pytest.raises(openai.BadRequestError) as info:
            call_json(_client(srv), payload)
        err = info.value
        assert err.status_code == 400
        assert "summarize" in err.message
        assert "Alice likes tea" in err.message
        assert "TEST DOUBLE" in err.message
        (rec,) = srv.requests
        assert rec.matched_rule_index is None
        assert rec.payload == payload
        assert srv.unmatched == [rec]
        assert srv.calls("summarize") == 1


def test_unmatched_error_excerpt_is_short() -> None:
    with ScriptedLLMServer() as srv:
        with pytest.raises(openai.BadRequestError) as info:
            call_tool(_client(srv), {"task": "extract_facts", "text": "x" * 5000})
        assert "extract_facts" in info.value.message
        assert len(info.value.message) < 600


def test_models_endpoint(server: ScriptedLLMServer) -> None:
    models = _client(server).models.list()
    assert [m.id for m in models.data] == ["scripted"]
    for path in ("/v1/models", "/models", "/v1/models/"):
        url = f"http://127.0.0.1:{server.port}{path}"
        with urllib.request.urlopen(url, timeout=5) as resp:
            assert resp.status == 200
            assert json.loads(resp.read())["data"][0]["id"] == "scripted"
    assert server.requests == []  # /models is not a chat request


def test_chat_also_served_without_v1_prefix() -> None:
    with ScriptedLLMServer([{"task": "summarize", "response": {"ok": True}}]) as srv:
        client = openai.OpenAI(
            base_url=f"http://127.0.0.1:{srv.port}", api_key="test", max_retries=0
        )
        completion = call_json(client, {"task": "summarize"})
        assert json.loads(completion.choices[0].message.content) == {"ok": True}
        assert srv.requests[0].path == "/chat/completions"


def test_unknown_path_is_404(server: ScriptedLLMServer) -> None:
    url = f"http://127.0.0.1:{server.port}/v1/embeddings"
    req = urllib.request.Request(url, data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=5)
    assert info.value.code == 404


def test_invalid_json_body_is_400(server: ScriptedLLMServer) -> None:
    url = f"{server.base_url}/chat/completions"
    req = urllib.request.Request(url, data=b"{not json", method="POST")
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=5)
    assert info.value.code == 400
    assert "not valid JSON" in json.loads(info.value.read())["error"]["message"]


def test_from_file(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    rules = [
        {"task": "extract_entities", "match": {"contains": "Paris"}, "response": {"e": ["Paris"]}},
        {"task": "extract_entities", "response": {"raw": "not json"}},
    ]
    path.write_text(json.dumps({"rules": rules}), encoding="utf-8")
    with ScriptedLLMServer.from_file(path) as srv:
        client = _client(srv)
        paris = call_tool(client, {"task": "extract_entities", "text": "Paris"})
        other = call_tool(client, {"task": "extract_entities", "text": "Rome"})
        assert json.loads(tool_args(paris)) == {"e": ["Paris"]}
        assert tool_args(other) == "not json"


def test_from_file_rejects_wrong_shape(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"rulez": []}), encoding="utf-8")
    with pytest.raises(ValueError, match="rules"):
        ScriptedLLMServer.from_file(path)


@pytest.mark.parametrize(
    "rule",
    [
        {"task": "x"},  # no response
        {"task": "x", "response": {}, "responses": [{}]},  # both
        {"task": "x", "responses": []},
        {"task": "x", "respose": {}},  # typo
        {"task": "x", "match": {"contain": "a"}, "response": {}},  # typo in match
        {"task": "x", "times": -1, "response": {}},
        {"task": 3, "response": {}},
    ],
)
def test_malformed_rules_rejected_early(rule: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ScriptedLLMServer([rule])


def test_callable_response_and_add_rule_and_reset(server: ScriptedLLMServer) -> None:
    client = _client(server)
    with pytest.raises(openai.BadRequestError):
        call_json(client, {"task": "summarize", "text": "abc"})

    index = server.add_rule(
        {"task": "summarize", "response": lambda p: {"summary": p["text"].upper()}}
    )
    assert index == 0
    completion = call_json(client, {"task": "summarize", "text": "abc"})
    assert json.loads(completion.choices[0].message.content) == {"summary": "ABC"}
    assert [r.matched_rule_index for r in server.requests] == [None, 0]

    server.reset_requests()
    assert server.requests == []
    assert server.calls() == 0


def test_callable_that_raises_gives_500(server: ScriptedLLMServer) -> None:
    def broken(payload: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("kaput")

    server.add_rule({"task": "summarize", "response": broken})
    with pytest.raises(openai.InternalServerError) as info:
        call_json(_client(server), {"task": "summarize"})
    assert "kaput" in info.value.message


def test_concurrent_requests_are_all_recorded() -> None:
    rules = [{"task": "summarize", "response": lambda p: {"i": p["i"]}}]
    with ScriptedLLMServer(rules) as srv:
        client = _client(srv)
        results: dict[int, int] = {}
        lock = threading.Lock()

        def worker(i: int) -> None:
            completion = call_json(client, {"task": "summarize", "i": i})
            with lock:
                results[i] = json.loads(completion.choices[0].message.content)["i"]

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(40)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=10)
        assert results == {i: i for i in range(40)}
        assert srv.calls("summarize") == 40
        assert sorted(r.payload["i"] for r in srv.requests) == list(range(40))


def test_stop_is_prompt_with_open_keepalive_connection() -> None:
    srv = ScriptedLLMServer([{"task": "summarize", "response": {"ok": 1}}]).start()
    client = _client(srv)
    call_json(client, {"task": "summarize"})  # leaves a pooled keep-alive connection open
    started = time.monotonic()
    srv.stop()
    assert time.monotonic() - started < 2.0
    assert not srv.running
    srv.stop()  # idempotent
    with pytest.raises(openai.APIConnectionError):
        call_json(client, {"task": "summarize"})
    client.close()


def test_base_url_requires_running_server() -> None:
    srv = ScriptedLLMServer()
    with pytest.raises(RuntimeError):
        _ = srv.base_url
    assert "TEST DOUBLE" in repr(srv)


def test_streaming_is_rejected_loudly(server: ScriptedLLMServer) -> None:
    server.add_rule({"task": "summarize", "times": 1, "response": {"ok": 1}})
    with pytest.raises(openai.BadRequestError, match="streaming"):
        _client(server).chat.completions.create(
            model="m",
            messages=_messages({"task": "summarize"}),  # type: ignore[arg-type]
            stream=True,
        )
    # The rejected streaming call must not consume the rule's single use.
    assert json.loads(call_json(_client(server), {"task": "summarize"}).choices[0].message.content)


def _body_for(task: str, payload: dict[str, Any]) -> dict[str, Any]:
    content = json.dumps({"task": task, **payload})
    return {"model": "m", "messages": [{"role": "user", "content": content}]}


def _answer(body: dict[str, Any]) -> Any:
    return json.loads(body["choices"][0]["message"]["content"])


def test_messages_match_ignores_the_recent_context() -> None:
    rules = [
        {"task": "t", "match": {"messages": "London"}, "response": {"hit": "london"}},
        {"task": "t", "response": {"hit": "fallback"}},
    ]
    with ScriptedLLMServer(rules) as srv:
        status, body = srv.handle_chat(_body_for("t", {"messages": [{"content": "in London"}]}))
        assert status == 200 and _answer(body) == {"hit": "london"}
        later = {
            "messages": [{"content": "now Paris"}],
            "context": {"recent": [{"content": "in London"}]},
        }
        status, body = srv.handle_chat(_body_for("t", later))
        assert status == 200 and _answer(body) == {"hit": "fallback"}


def test_an_unscripted_fact_path_says_how_to_script_it(tmp_path: Path) -> None:
    """A script of the graph tasks alone (README's first try) fails on the fact path, which
    Memory runs by default: the error says how to script it or turn it off."""
    from mem0g import Memory
    from mem0g.llm.client import LLMError
    from mem0g.testing.script import turn

    rules = turn("moved to Paris", [("Alice", "person"), ("Paris", "city")],
                 [("Alice", "lives_in", "Paris")])  # fmt: skip
    with ScriptedLLMServer(rules) as llm:
        config = {
            "llm": {"base_url": llm.base_url, "api_key": "test", "max_retries": 0},
            "embedder": {"provider": "hashing"},
            "graph_store": {"provider": "embedded", "path": str(tmp_path / "store")},
        }
        with Memory(config) as m:
            with pytest.raises(
                LLMError, match=r"'extract_facts'.*turn\(\.\.\., facts=\[\.\.\.\]\)"
            ):
                m.add("I moved to Paris", user_id="alice")
            assert m.stats().entities == 0
        assert [r.task for r in llm.unmatched] == ["extract_facts"]
