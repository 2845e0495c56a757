"""Shared fixtures. The LLM is always the scripted TEST DOUBLE server (no LLM is reachable
here, and tests must be deterministic); embeddings are the real MiniLM where behaviour
depends on meaning, and the hashing embedder where only plumbing is tested."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mem0g import Memory
from mem0g.config import EmbedderConfig
from mem0g.embed import CachedEmbedder, make_embedder
from mem0g.testing import ScriptedLLMServer


@pytest.fixture(scope="session")
def minilm() -> CachedEmbedder:
    return make_embedder(EmbedderConfig())


@pytest.fixture(scope="session")
def hashing() -> CachedEmbedder:
    return make_embedder(EmbedderConfig(provider="hashing"))


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        yield server


MemoryFactory = Callable[..., Memory]


@pytest.fixture
def make_memory(
    tmp_path: Path, llm_server: ScriptedLLMServer, minilm: CachedEmbedder
) -> Iterator[MemoryFactory]:
    """Memory on a temporary embedded store, its LLM the scripted server, MiniLM embeddings."""
    made: list[Memory] = []

    def factory(
        rules: list[dict[str, Any]] | None = None,
        *,
        path: Path | None = None,
        embedder: CachedEmbedder | None = None,
        **overrides: Any,
    ) -> Memory:
        for rule in rules or []:
            llm_server.add_rule(rule)
        config: dict[str, Any] = {
            "llm": {"base_url": llm_server.base_url, "api_key": "test", "max_retries": 1},
            "graph_store": {"provider": "embedded", "path": str(path or tmp_path / "graph")},
        }
        for key, value in overrides.items():
            config.setdefault(key, {}).update(value)
        memory = Memory(config, embedder=embedder or minilm)
        made.append(memory)
        return memory

    yield factory
    for memory in made:
        memory.close()
