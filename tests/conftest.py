"""Shared fixtures. The LLM is always the scripted TEST DOUBLE server (no LLM is reachable
here, and tests must be deterministic); embeddings are the real MiniLM where behaviour
depends on meaning, and the hashing embedder where only plumbing is tested.

Store-level and pipeline tests run on both stores (`store_kind`): the embedded one in a temp
directory, and Neo4j on one real server per session (tests/neo4j_server.py: NEO4J_URI, Docker
or scripts/neo4j). No server is an error, never a skip.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mem0g import Memory
from mem0g.config import EmbedderConfig
from mem0g.embed import CachedEmbedder, make_embedder
from mem0g.stores.neo4j import Neo4jGraphStore
from mem0g.testing import ScriptedLLMServer

STORE_KINDS = ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)]


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


@pytest.fixture(scope="session")
def neo4j_server() -> Iterator[Any]:
    """One real Neo4j per test session, held here rather than in neo4j_server's module
    global (which a test of that module stops); its failure fails every neo4j test."""
    from neo4j_server import start_neo4j

    server = start_neo4j()
    yield server
    server.stop()


Neo4jConnect = Callable[..., Neo4jGraphStore]


@pytest.fixture
def neo4j_connect(neo4j_server: Any) -> Iterator[Neo4jConnect]:
    """Opens stores on the test server, emptied first: Community has a single database, so
    tests are isolated by resetting mem0g's data. Calling it again is "reopening"."""
    opened: list[Neo4jGraphStore] = []

    def connect(**kwargs: Any) -> Neo4jGraphStore:
        store = Neo4jGraphStore(
            neo4j_server.uri, (neo4j_server.user, neo4j_server.password), **kwargs
        )
        opened.append(store)
        return store

    connect().reset()
    yield connect
    for store in opened:
        store.close()


@pytest.fixture(params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    return request.param


MemoryFactory = Callable[..., Memory]


@pytest.fixture
def make_memory(
    tmp_path: Path,
    llm_server: ScriptedLLMServer,
    minilm: CachedEmbedder,
    store_kind: str,
    request: pytest.FixtureRequest,
) -> Iterator[MemoryFactory]:
    """Memory on a fresh store of `store_kind`, its LLM the scripted server, MiniLM
    embeddings. The neo4j store ignores `path`: a second Memory sees the same data."""
    made: list[Memory] = []
    graph_store: dict[str, Any] = {"provider": "embedded"}
    if store_kind == "neo4j":
        server = request.getfixturevalue("neo4j_server")
        request.getfixturevalue("neo4j_connect")  # empties the database
        graph_store = {
            "provider": "neo4j",
            "url": server.uri,
            "username": server.user,
            "password": server.password,
        }

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
            "graph_store": {**graph_store, "path": str(path or tmp_path / "graph")},
            # graph-path tests script only the graph tasks; fact tests switch facts on
            "memory": {"facts": False, "summary": False},
        }
        for key, value in overrides.items():
            config.setdefault(key, {}).update(value)
        memory = Memory(config, embedder=embedder or minilm)
        made.append(memory)
        return memory

    yield factory
    for memory in made:
        memory.close()
