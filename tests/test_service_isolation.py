"""Tenant isolation of the REST service beyond the grant check of each request: what a
tenant-scoped key learns from answers that carry process-wide state. The LLM is the
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
