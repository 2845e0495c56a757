"""Shared fixtures. The LLM is always the scripted TEST DOUBLE server (no LLM is reachable
here, and tests must be deterministic); embeddings are the real MiniLM where behaviour
depends on meaning, and the hashing embedder where only plumbing is tested.

Store-level and pipeline tests run on both stores (`store_kind`): the embedded one in a temp
directory, and Neo4j on one real server per session (mem0g/testing/neo4j.py: NEO4J_URI, Docker
or scripts/neo4j). No server is an error, never a skip.
"""

from __future__ import annotations

import contextlib
import time
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


def _say(config: pytest.Config, line: str) -> None:
    """A progress line on the terminal, between the dots (not captured, not buffered)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None:
        return
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        if getattr(reporter._tw, "width_of_current_line", 0):  # after a row of dots
            reporter.write("\n")
        reporter.write_line(line, bold=True)


@pytest.hookimpl(trylast=True)  # after -k/-m deselection: count what will run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests without Neo4j run first (a quick failure shows early), then the Neo4j ones on
    one server; the order within each phase is the files' own."""
    items.sort(key=lambda item: item.get_closest_marker("neo4j") is not None)
    config.stash[_PHASES] = {
        "local": sum(1 for i in items if i.get_closest_marker("neo4j") is None),
        "neo4j": sum(1 for i in items if i.get_closest_marker("neo4j") is not None),
    }


_PHASES = pytest.StashKey[dict[str, int]]()
_STARTED = pytest.StashKey[tuple[str, float]]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    phase = "neo4j" if item.get_closest_marker("neo4j") is not None else "local"
    config = item.config
    previous = config.stash.get(_STARTED, None)
    if previous is not None and previous[0] == phase:
        return
    now = time.monotonic()
    if previous is not None:
        _say(config, f"[mem0g tests] {previous[0]} phase done in {now - previous[1]:.0f} s")
    count = config.stash.get(_PHASES, {}).get(phase, 0)
    what = {
        "local": "tests without Neo4j (embedded store, CLI, eval, ...)",
        "neo4j": "tests on a real Neo4j 5.26 server (the server starts first)",
    }[phase]
    _say(config, f"[mem0g tests] phase {phase}: {count} {what}")
    config.stash[_STARTED] = (phase, now)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    started = config.stash.get(_STARTED, None)
    if started is not None:
        took = time.monotonic() - started[1]
        terminalreporter.write_line(f"[mem0g tests] {started[0]} phase done in {took:.0f} s")


@pytest.fixture(scope="session")
def neo4j_server(pytestconfig: pytest.Config) -> Iterator[Any]:
    """One real Neo4j per test session, held here rather than in neo4j_server's module
    global (which a test of that module stops); its failure fails every neo4j test."""
    from mem0g.testing.neo4j import start_neo4j

    _say(pytestconfig, "[mem0g tests] starting Neo4j for the tests (NEO4J_URI, Docker, or "
         "scripts/neo4j: assembled from Maven Central on first use, then cached)")  # fmt: skip
    started = time.monotonic()
    server = start_neo4j()
    took = time.monotonic() - started
    _say(pytestconfig, f"[mem0g tests] Neo4j ready at {server.uri} ({server.kind}) in {took:.0f} s")
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
