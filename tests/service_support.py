"""Shared pieces of the service tests: a Memory on the embedded store with the scripted LLM
TEST DOUBLE and the hashing embedder (plumbing, not meaning), keys files, and a live uvicorn
server on 127.0.0.1 for the HTTP clients."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn

from mem0g import Memory
from mem0g.embed import CachedEmbedder
from mem0g.service.auth import Grant, Prefix, add_key
from mem0g.testing import ScriptedLLMServer
from mem0g.testing.script import turn


def service_memory(
    path: Path, llm: ScriptedLLMServer, embedder: CachedEmbedder, **memory: Any
) -> Memory:
    config = {
        "llm": {"base_url": llm.base_url, "api_key": "test", "max_retries": 0},
        "graph_store": {"provider": "embedded", "path": str(path)},
        "memory": {"summary": False, **memory},
    }
    return Memory(config, embedder=embedder)


def alice_rules() -> list[dict[str, Any]]:
    """Scripted answers for a two-fact conversation of Alice (graph and fact paths)."""
    return [
        *turn(
            "moved to Paris",
            [("Alice", "person"), ("Paris", "city")],
            [("Alice", "lives_in", "Paris")],
            facts=["Alice moved to Paris"],
        ),
        *turn(
            "works at Acme",
            [("Alice", "person"), ("Acme", "organization")],
            [("Alice", "works_at", "Acme")],
            facts=["Alice works at Acme"],
        ),
        {"task": "resolve_updates", "response": {"operations": []}},
        {"task": "update_memory", "response": {"operations": []}},
    ]


KEYS: dict[str, dict[str, Any]] = {
    # name: scopes and grants
    "alice-rw": {"scopes": ["read", "write"], "tenants": [Grant(user_id="alice")]},
    "alice-ro": {"scopes": ["read"], "tenants": [Grant(user_id="alice")]},
    "team": {"scopes": ["read", "write"], "tenants": [Grant(user_id=Prefix(prefix="team-"))]},
    "bot": {"scopes": ["read", "write"], "tenants": [Grant(user_id="alice", agent_id="bot")]},
    "admin": {"scopes": ["read", "write", "admin"], "tenants": "*"},
}


def write_keys(path: Path) -> dict[str, str]:
    """A keys file with KEYS; returns name -> the secret key."""
    return {name: add_key(path, name, **spec) for name, spec in KEYS.items()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def live_server(app: Any) -> Iterator[str]:
    """Serve `app` with uvicorn on 127.0.0.1 in a thread; yields the base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
