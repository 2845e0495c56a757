"""End to end: `mem0g serve` as a process (the command the Docker image runs), its refusal
to bind beyond loopback without keys, and the service on the real Neo4j store through
`mem0g.Client` (sync add with the scripted LLM TEST DOUBLE, async job, search, delete)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from service_support import alice_rules, free_port, live_server, write_keys

from mem0g import Client, Memory
from mem0g.service.app import create_app

CLI = [sys.executable, "-c", "from mem0g.cli import app; app()"]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def _config(tmp_path: Path, llm_url: str) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({
        "llm": {"base_url": llm_url, "api_key": "test", "max_retries": 0},
        "embedder": {"provider": "hashing"},
        "graph_store": {"provider": "embedded", "path": str(tmp_path / "store")},
        "memory": {"summary": False},
    }))  # fmt: skip
    return path


def test_mem0g_serve_runs_with_keys_and_refuses_an_open_public_bind(tmp_path, llm_server) -> None:
    for rule in alice_rules():
        llm_server.add_rule(rule)
    config = _config(tmp_path, llm_server.base_url)
    refused = subprocess.run([*CLI, "--config", str(config), "serve", "--host", "0.0.0.0"],
                             capture_output=True, text=True, env=_env(), timeout=120)  # fmt: skip
    assert refused.returncode == 2 and "refusing to bind" in refused.stderr
    secrets = write_keys(tmp_path / "keys.json")
    port = free_port()
    server = subprocess.Popen(
        [*CLI, "--config", str(config), "serve", "--port", str(port), "--keys",
         str(tmp_path / "keys.json")],
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            try:
                if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.2)
        with Client(base, secrets["alice-rw"]) as client:
            added = client.add("I moved to Paris", user_id="alice")
            assert [c.destination for c in added.relations] == ["Paris"]
            with pytest.raises(PermissionError):
                client.search("where", user_id="bob")
    finally:
        server.terminate()
        output = server.communicate(timeout=60)[0].decode()
    # a graceful shutdown: the lifespan ran (the queue drained, Memory closed); uvicorn then
    # re-raises SIGTERM, so the exit status is the signal's
    assert "Application shutdown complete" in output


@pytest.mark.neo4j
def test_service_on_neo4j_end_to_end(neo4j_server, neo4j_connect, llm_server, minilm) -> None:
    for rule in alice_rules():
        llm_server.add_rule(rule)
    memory = Memory(
        {
            "llm": {"base_url": llm_server.base_url, "api_key": "test", "max_retries": 0},
            "graph_store": {"provider": "neo4j", "url": neo4j_server.uri,
                            "username": neo4j_server.user, "password": neo4j_server.password},
            "memory": {"summary": False},
        },
        embedder=minilm,  # the dimension every Neo4j test's indexes have
    )  # fmt: skip
    try:
        with live_server(create_app(memory)) as base, Client(base) as client:
            assert httpx.get(f"{base}/readyz").json()["checks"] == {"store": "ok", "embedder": "ok"}
            first = client.add("I moved to Paris", user_id="alice", timestamp="2024-01-01")
            assert [c.destination for c in first.relations] == ["Paris"]
            job = client.wait(client.add_async("I works at Acme", user_id="alice").id)
            assert job.state == "succeeded", job.error
            hits = client.search("alice", user_id="alice", limit=5)
            assert {r.destination for r in hits.relations} == {"Paris", "Acme"}
            assert client.search("alice", user_id="bob").relations == []
            assert client.delete_all(user_id="alice") > 0
            assert client.get_all(user_id="alice").relations == []
    finally:
        memory.reset()  # the shared server is left empty for the next test
        memory.close()
