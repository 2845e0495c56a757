"""Tenant isolation of the REST service beyond the grant check of each request: what a
tenant-scoped key learns from answers that carry process-wide state, and what a web page in
the user's browser can do to an open (no keys file, loopback) service. The LLM is the
scripted TEST DOUBLE server and the embedder the hashing one (plumbing, not meaning)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from service_support import service_memory, write_keys

from mem0g.service.app import create_app
from mem0g.service.settings import ServiceSettings
from mem0g.stores.base import CopyStatus, WarmupStatus


class _BusyCopy:
    """Stands in for a client-held copy (`graph_store.local_copy`, Neo4j only) whose counters
    other tenants' searches moved: the tenants it holds, the searches it answered."""

    def status(self) -> CopyStatus:
        return CopyStatus(tenants=3, limit=100, answered=41, declined=7, copied=3)

    def drop(self, scope: Any) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_scoped_key_sees_no_store_wide_counters_in_stats(
    tmp_path: Path, llm_server: Any, hashing: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`GET /v1/stats?user_id=alice` counts Alice's records; the copy's and the warm-up's
    counters are the whole process's (other tenants' searches and data), so only an admin
    key sees them."""
    secrets = write_keys(tmp_path / "keys.json")
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    memory.add("alice's note", user_id="alice", infer=False)
    memory.add("bob's note", user_id="bob", infer=False)
    memory.copy = _BusyCopy()  # type: ignore[assignment]
    warm = WarmupStatus(state="running", rounds=2, searches=12, shapes=6, yielded_s=1.5)
    monkeypatch.setattr(type(memory.store), "warmup_status", property(lambda self: warm))
    app = create_app(memory, ServiceSettings(keys_file=tmp_path / "keys.json"), close_memory=True)
    with TestClient(app) as client:
        for name in ("alice-ro", "alice-rw", "bot", "team"):
            ids = {"bot": {"user_id": "alice", "agent_id": "bot"}, "team": {"user_id": "team-a"}}
            r = client.get("/v1/stats", params=ids.get(name, {"user_id": "alice"}),
                           headers={"authorization": f"Bearer {secrets[name]}"})  # fmt: skip
            assert r.status_code == 200, r.text
            shown = r.json()
            assert shown["local_copy"] is None and shown["warmup"] is None, (name, shown)
        reader = {"authorization": f"Bearer {secrets['alice-ro']}"}
        alice = client.get("/v1/stats", params={"user_id": "alice"}, headers=reader).json()
        assert (alice["facts"], alice["episodes"], alice["tenants"]) == (1, 1, 1)
        admin = {"authorization": f"Bearer {secrets['admin']}"}
        for params in ({}, {"user_id": "alice"}):
            shown = client.get("/v1/stats", params=params, headers=admin).json()
            assert shown["local_copy"]["answered"] == 41 and shown["warmup"]["searches"] == 12


# a web page's requests to an open service on loopback: a cross-site form POST (no
# preflight: no body, or text/plain), and a DNS-rebound name (the page's own host name,
# resolved to 127.0.0.1, so the browser lets the page read the answers)
FOREIGN: list[tuple[str, dict[str, str]]] = [
    ("cross-site", {"origin": "https://evil.example", "content-type": "text/plain"}),
    ("rebound name", {"host": "evil.example:8000"}),
    ("rebound ip", {"host": "203.0.113.7:8000"}),
]


@pytest.fixture
def open_service(tmp_path: Path, llm_server: Any, hashing: Any) -> Any:
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    memory.add("alice's note", user_id="alice", infer=False)
    memory.add("bob's note", user_id="bob", infer=False)
    with TestClient(create_app(memory, ServiceSettings(), close_memory=True)) as client:
        yield client, memory


@pytest.mark.parametrize("how,headers", FOREIGN, ids=[f[0] for f in FOREIGN])
def test_an_open_service_answers_no_web_page(open_service: Any, how: str, headers: Any) -> None:
    """Without a keys file every request is an admin, which is safe only because the
    service binds loopback: a browser on this machine is a loopback client too, so a page
    it shows could reset the store (a simple POST needs no CORS preflight) or, through a
    rebound DNS name, read every tenant. Refused (403), nothing touched."""
    client, memory = open_service
    reset = client.post("/v1/reset", headers=headers)
    assert reset.status_code == 403, (how, reset.status_code)
    assert memory.stats().episodes == 2
    for path in ("/v1/tenants", "/v1/export", "/v1/stats"):
        read = client.get(path, headers=headers)
        assert read.status_code == 403, (how, path, read.status_code)
        assert "bob" not in read.text


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"host": "127.0.0.1:8000"},
        {"host": "localhost:8000", "origin": "http://localhost:8000"},
        {"host": "[::1]:8000", "origin": "http://[::1]:8000"},
        {"origin": "http://127.0.0.1:8000"},  # the /ui page itself
    ],
)
def test_an_open_service_answers_loopback_clients(open_service: Any, headers: Any) -> None:
    client, _ = open_service
    r = client.get("/v1/tenants", headers=headers)
    assert r.status_code == 200, r.text
    assert len(r.json()) == 2


def test_a_keyed_service_takes_any_host_and_origin(tmp_path, llm_server, hashing) -> None:
    """With keys a request is its key's, whoever relays it (a proxy, another host name)."""
    secrets = write_keys(tmp_path / "keys.json")
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    memory.add("alice's note", user_id="alice", infer=False)
    app = create_app(memory, ServiceSettings(keys_file=tmp_path / "keys.json"), close_memory=True)
    with TestClient(app) as client:
        auth = {"authorization": f"Bearer {secrets['alice-ro']}"}
        for _, headers in FOREIGN:
            r = client.get("/v1/memories", params={"user_id": "alice"}, headers={**auth, **headers})
            assert r.status_code == 200, r.text
