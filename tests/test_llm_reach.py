"""An unreachable LLM endpoint fails at once, naming the URL, the model and the cause
(mem0g.llm.reach), instead of after the SDK's retries."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from cli_runner import CliRunner

from mem0g.cli import app
from mem0g.config import LLMConfig
from mem0g.llm.client import LLMClient, LLMError
from mem0g.llm.protocol import SUMMARIZE, PayloadMessage, SummarizePayload
from mem0g.llm.reach import ReachCheck, Unreachable
from mem0g.testing import ScriptedLLMServer


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again: nothing listens there


def _payload() -> SummarizePayload:
    message = PayloadMessage(role="user", name="Ana", content="hi", timestamp="2024-01-01")
    return SummarizePayload(summary=None, messages=[message])


def test_refused_endpoint_names_url_model_and_cause() -> None:
    url = f"http://127.0.0.1:{_dead_port()}/v1"
    client = LLMClient(LLMConfig(base_url=url, model="my-model", api_key="k"))
    with pytest.raises(LLMError) as err:
        client.call(SUMMARIZE, _payload())
    text = str(err.value)
    assert url in text and "my-model" in text and "refused" in text.lower()
    assert client.calls == {}  # no request was ever sent


def test_silent_endpoint_fails_within_the_connect_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[float] = []

    def silent(address: tuple[str, int], timeout: float) -> socket.socket:
        seen.append(timeout)
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", silent)
    check = ReachCheck("http://llm.example:8000/v1", timeout=2.5)
    with pytest.raises(Unreachable, match=r"no connection within 2.5 s \(llm.connect_timeout\)"):
        check.ensure()
    assert seen == [2.5]


def test_a_reachable_endpoint_is_probed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    with ScriptedLLMServer([{"task": "summarize", "response": {"summary": "s"}}]) as server:
        client = LLMClient(LLMConfig(base_url=server.base_url, api_key="k", max_retries=0))
        probes: list[tuple[str, int]] = []
        real = socket.create_connection

        def counting(address: tuple[str, int], *args: object, **kwargs: object) -> socket.socket:
            probes.append(address)  # the SDK's own connections (httpcore) come here too
            return real(address, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(socket, "create_connection", counting)
        for _ in range(3):
            assert client.call(SUMMARIZE, _payload()).summary == "s"
        # one probe, plus the SDK's pooled connection(s): not one probe per call
        assert 1 <= len(probes) <= 2, probes
        assert server.calls("summarize") == 3


@pytest.mark.parametrize("url", ["ftp://host/v1", "localhost:8000"])
def test_not_an_http_url(url: str) -> None:
    with pytest.raises(Unreachable, match="not an http"):
        ReachCheck(url, 1.0).ensure()


def test_cli_add_fails_fast_before_loading_a_model(tmp_path: Path) -> None:
    """No store is created and no embedder is loaded for an add that cannot work."""
    url = f"http://127.0.0.1:{_dead_port()}/v1"
    env = {
        "MEM0G_HOME": str(tmp_path / "home"),
        "MEM0G_LLM__BASE_URL": url,
        "MEM0G_LLM__MODEL": "local-model",
        "OPENAI_API_KEY": None,
        "MEM0G_EMBEDDER__PROVIDER": "sentence-transformers",
        "MEM0G_EMBEDDER__MODEL": str(tmp_path / "no-such-model"),  # loading it would fail
    }
    store = tmp_path / "store"
    result = CliRunner(env=env).invoke(app, ["add", "hello", "-u", "a", "--path", str(store)])
    assert result.exit_code == 1, result.output
    line = result.stderr.strip().splitlines()[-1]
    assert url in line and "local-model" in line and "--no-infer" in line
    assert not store.exists()
