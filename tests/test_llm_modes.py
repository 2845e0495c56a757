"""Structured-output variants with automatic fallback (issue #16, live smoke item 1).

The servers here are the scripted TEST DOUBLE (mem0g.testing.ScriptedLLMServer, not an LLM),
made to refuse request shapes the way real local servers do: llama.cpp's server answers 500
to `response_format: json_schema` and takes `{"type": "json_object", "schema": ...}`.
"""

from __future__ import annotations

from typing import Any

import pytest
from cli_runner import CliRunner

from mem0g.cli import app
from mem0g.config import LLMConfig
from mem0g.llm.client import LLMClient, LLMError
from mem0g.llm.protocol import SUMMARIZE, PayloadMessage, SummarizePayload
from mem0g.testing import ScriptedLLMServer
from mem0g.types import Usage

RULES = [{"task": "*", "response": {"summary": "Ana lives in Oslo."}}]


class LlamaCppLike(ScriptedLLMServer):
    """TEST DOUBLE refusing tools and json_schema as a llama.cpp server build might."""

    def handle_chat(self, body: dict[str, Any], path: str = "/v1/chat/completions") -> Any:
        fmt = body.get("response_format") or {}
        if body.get("tools"):
            return 400, {"error": {"message": "tools are not supported by this server"}}
        if fmt.get("type") == "json_schema":
            return 500, {"error": {"message": "Unrecognized response_format type json_schema"}}
        if fmt.get("type") == "json_object" and "schema" not in fmt:
            return 200, self._completion(body, None, "not json at all")
        return super().handle_chat(body, path)


def _payload() -> SummarizePayload:
    message = PayloadMessage(role="user", name="Ana", content="I live in Oslo.", timestamp="x")
    return SummarizePayload(summary=None, messages=[message])


def _client(server: ScriptedLLMServer, **kwargs: Any) -> LLMClient:
    return LLMClient(LLMConfig(provider="openai-compatible", base_url=server.base_url, **kwargs))


def test_falls_back_to_the_llama_cpp_variant_and_stays_there() -> None:
    with LlamaCppLike(RULES) as server:
        client = _client(server)
        usage = Usage()
        assert client.call(SUMMARIZE, _payload(), usage).summary == "Ana lives in Oslo."
        assert client.mode == "json_object_schema"
        assert [f.split(":")[0] for f in client.fallbacks] == [
            "tools -> json_schema",
            "json_schema -> json_object_schema",
        ]
        assert usage.modes == {"json_object_schema": 1} and usage.calls == 1
        sent = server.requests[-1].body["response_format"]
        assert sent["type"] == "json_object" and sent["schema"]["required"] == ["summary"]
        before = len(server.requests)
        client.call(SUMMARIZE, _payload(), usage)
        assert len(server.requests) == before + 1  # the working mode is used directly
        assert client.modes == {"json_object_schema": 2}


def test_no_fallback_when_switched_off_or_when_the_error_is_not_about_the_format() -> None:
    with LlamaCppLike(RULES) as server, pytest.raises(LLMError, match="400"):
        _client(server, fallback=False).call(SUMMARIZE, _payload())
    rules = [{"task": "*", "response": {"status": 401, "error": "bad key"}}]
    with ScriptedLLMServer(rules) as server:
        client = _client(server)
        with pytest.raises(LLMError, match="401"):
            client.call(SUMMARIZE, _payload())
        assert client.mode == "tools" and client.fallbacks == []


def test_doctor_reports_the_mode_that_worked(tmp_path: Any, monkeypatch: Any) -> None:
    with LlamaCppLike(RULES) as server:
        monkeypatch.setenv("MEM0G_LLM__BASE_URL", server.base_url)
        monkeypatch.setenv("MEM0G_LLM__PROVIDER", "openai-compatible")
        monkeypatch.setenv("MEM0G_EMBEDDER__PROVIDER", "hashing")
        result = CliRunner().invoke(app, ["--path", str(tmp_path / "s"), "doctor"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.replace("│", " ").split())
    assert "structured output: mode json_object_schema works" in text
