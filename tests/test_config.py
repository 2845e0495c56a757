"""Configuration: dicts, env vars (nested with __), fallbacks, and Memory() defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from mem0g import Memory, MemoryConfig


def test_env_vars_fill_nested_settings(monkeypatch) -> None:
    monkeypatch.setenv("MEM0G_LLM__MODEL", "llama3.1")
    monkeypatch.setenv("MEM0G_RESOLVER__THRESHOLD", "0.9")
    monkeypatch.setenv("MEM0G_GRAPH_STORE__PATH", "/tmp/x")
    config = MemoryConfig.load({"llm": {"temperature": 0.3}})
    assert config.llm.model == "llama3.1" and config.llm.temperature == 0.3
    assert config.resolver.threshold == 0.9
    assert config.graph_store.resolved_path() == Path("/tmp/x")


def test_dict_beats_env(monkeypatch) -> None:
    monkeypatch.setenv("MEM0G_LLM__MODEL", "from-env")
    assert MemoryConfig.load({"llm": {"model": "from-dict"}}).llm.model == "from-dict"


def test_openai_env_fallbacks(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:9999/v1")
    llm = MemoryConfig.load().llm
    assert llm.resolved_api_key() == "sk-test" and llm.is_configured()
    assert llm.resolved_base_url() == "http://localhost:9999/v1"


def test_unknown_keys_and_bad_values_are_rejected() -> None:
    with pytest.raises(ValidationError, match="modle"):
        MemoryConfig.load({"llm": {"modle": "x"}})
    with pytest.raises(ValidationError, match="graph"):
        MemoryConfig.load({"graph": {}})
    with pytest.raises(ValidationError):
        MemoryConfig.load({"resolver": {"threshold": 1.5}})
    with pytest.raises(ValidationError):
        MemoryConfig.load({"graph_store": {"provider": "postgres"}})


def test_memory_without_arguments_uses_the_data_dir(monkeypatch, tmp_path, hashing) -> None:
    monkeypatch.setenv("MEM0G_HOME", str(tmp_path / "home"))
    with Memory(embedder=hashing) as m:
        assert m.stats().relations == 0
        assert m.store.path == tmp_path / "home" / "graph"
    assert (tmp_path / "home" / "graph" / "graph.db").is_file()
