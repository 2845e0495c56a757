"""A warm start: traffic held until a freshly started Neo4j server is warm. `mem0g warmup`
runs the store's warm-up in the foreground (a deploy step after the server starts),
`Memory.wait_for_warmup` blocks a Python process until it has ended, and the service's
`/readyz` answers 503 meanwhile without reading the store (its warm-up reads only while no one
else does). A real server for the Neo4j half; the embedded store has no server to warm."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_runner import CliRunner
from fastapi.testclient import TestClient

from mem0g import Memory
from mem0g.cli import app
from mem0g.service.app import create_app
from mem0g.service.settings import ServiceSettings
from mem0g.stores.base import WarmupStatus, wait_until_ended
from mem0g.stores.embedded import EmbeddedGraphStore
from mem0g.testing.neo4j import free_port


def _config(server: Any, **store: Any) -> dict[str, Any]:
    return {
        "graph_store": {"provider": "neo4j", "url": server.uri, "username": server.user,
                        "password": server.password, **store},
        "embedder": {"provider": "hashing"},
        "memory": {"graph": False, "summary": False},
    }  # fmt: skip


def _census(memory: Memory) -> tuple[Any, ...]:
    store: Any = memory.store
    return tuple(store._read_tx("census", lambda tx: tx.run(
        "MATCH (n) OPTIONAL MATCH (n)-[r]->() "
        "RETURN count(DISTINCT n) AS nodes, count(r) AS rels, "
        "sum(size(keys(n))) AS props").single().values()))  # fmt: skip


@pytest.mark.neo4j
def test_mem0g_warmup_warms_the_server_in_the_foreground_and_writes_nothing(
    tmp_path: Path, neo4j_server: Any, neo4j_connect: Any
) -> None:
    neo4j_connect().close()  # emptied
    with Memory(_config(neo4j_server, warmup=False)) as memory:
        for user in ("alice", "bob"):
            memory.add(f"{user} keeps bees", user_id=user, infer=False)
        before = _census(memory)
        env = {
            "MEM0G_GRAPH_STORE__PROVIDER": "neo4j",
            "MEM0G_GRAPH_STORE__URL": neo4j_server.uri,
            "MEM0G_GRAPH_STORE__USERNAME": neo4j_server.user,
            "MEM0G_GRAPH_STORE__PASSWORD": neo4j_server.password,
            "MEM0G_EMBEDDER__PROVIDER": "hashing",
            "MEM0G_HOME": str(tmp_path),
        }
        result = CliRunner(env=env).invoke(app, ["warmup", "--seconds", "3", "--json"])
        assert result.exit_code == 0, result.output
        status = WarmupStatus.model_validate_json(result.stdout)
        # it ran over the store's own data and ended, by itself or by its bound (how long a
        # round in flight takes past the bound depends on the load: not asserted)
        assert status.state == "done" and status.searches > 0 and status.seconds > 0, status
        assert "warming neo4j" in result.stderr and "3 s of its own work" in result.stderr
        assert _census(memory) == before  # wrote nothing
        plain = CliRunner(env=env).invoke(app, ["warmup", "--seconds", "1"])
        assert plain.exit_code == 0, plain.output
        assert plain.stdout.startswith("warm-up done in ")


def test_mem0g_warmup_of_an_unreachable_server_fails_once_and_clearly(tmp_path: Path) -> None:
    """Exit 1, the cause on stderr once (the command's line, not also the warm-up's own
    warning), nothing on stdout."""
    env = {
        **os.environ,
        "MEM0G_GRAPH_STORE__PROVIDER": "neo4j",
        "MEM0G_GRAPH_STORE__URL": f"bolt://127.0.0.1:{free_port()}",  # nothing listens there
        "MEM0G_GRAPH_STORE__PASSWORD": "unused-password",
        "MEM0G_EMBEDDER__PROVIDER": "hashing",
        "MEM0G_HOME": str(tmp_path),
    }
    # its own process: logging as a user's shell gets it (pytest's handlers catch warnings)
    done = subprocess.run(
        [sys.executable, "-c", "from mem0g.cli import app; app()", "warmup", "--seconds", "5"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    failed = [line for line in done.stderr.splitlines() if "fail" in line or "stopped" in line]
    assert len(failed) == 1 and failed[0].startswith("warm-up failed after"), done.stderr
    assert "Connection refused" in failed[0] or "connect" in failed[0].lower(), done.stderr


def test_mem0g_warmup_on_the_embedded_store_says_there_is_no_server(tmp_path: Path) -> None:
    env = {"MEM0G_HOME": str(tmp_path), "MEM0G_GRAPH_STORE__PROVIDER": None}
    result = CliRunner(env=env).invoke(app, ["--path", str(tmp_path / "g"), "warmup"])
    assert result.exit_code == 0, result.output
    assert "no server to warm" in result.stderr and result.stdout == ""


@pytest.mark.neo4j
def test_readyz_holds_traffic_until_the_warmup_ends_without_reading_the_store(
    neo4j_server: Any, neo4j_connect: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    neo4j_connect().close()
    with Memory(_config(neo4j_server, warmup=False)) as filler:
        filler.add("alice keeps bees", user_id="alice", infer=False)
    memory = Memory(_config(neo4j_server, warmup=True, warmup_seconds=3))
    store: Any = memory.store
    probed: list[str] = []
    real = store.tenant_version
    monkeypatch.setattr(store, "tenant_version", lambda t: probed.append("read") or real(t))
    try:
        with TestClient(create_app(memory)) as api:
            # the warm-up starts a second after the open (its idle gap), then works 3 s
            early = api.get("/readyz")
            assert early.status_code == 503, early.json()
            assert set(early.json()["checks"]) == {"warmup", "embedder"}
            assert early.json()["checks"]["warmup"].startswith(("waiting", "running"))
            assert probed == []  # the probe left the store alone for the warm-up
            status = memory.wait_for_warmup(60)
            assert status.state == "done" and status.searches > 0, status
            ready = api.get("/readyz")
            assert ready.status_code == 200
            assert ready.json()["checks"] == {"store": "ok", "embedder": "ok"}
            assert probed == ["read"]
        held = create_app(memory, ServiceSettings(ready_after_warmup=False))
        store.start_warmup(3)  # a warm-up again (as after reindex), not waited for
        with TestClient(held) as api:
            assert api.get("/readyz").status_code == 200  # the switch off: ready at once
    finally:
        memory.close()


def test_wait_for_warmup_returns_at_once_without_one_and_at_its_timeout_with_one(
    tmp_path: Path, hashing: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = EmbeddedGraphStore(tmp_path / "g", dims=hashing.dims)
    with Memory({"memory": {"summary": False}}, embedder=hashing, store=store) as memory:
        assert memory.wait_for_warmup().state == "off"  # nothing to wait for
        running = WarmupStatus(state="running", seconds=1.0)
        monkeypatch.setattr(EmbeddedGraphStore, "warmup_status", property(lambda s: running))
        assert memory.wait_for_warmup(0.2) is running  # its timeout: the status as it is


def test_waiting_polls_until_the_warmup_ends_and_shows_progress_meanwhile() -> None:
    running, done = WarmupStatus(state="running"), WarmupStatus(state="done", rounds=3)
    answers = iter([WarmupStatus(state="waiting"), running, running, done])
    seen: list[WarmupStatus] = []
    assert wait_until_ended(lambda: next(answers), progress=seen.append, every=0) is done
    assert [s.state for s in seen] == ["waiting", "running", "running"]
    seen.clear()
    assert wait_until_ended(lambda: running, timeout=0, progress=seen.append) is running
    assert seen == []  # the timeout came first


class _Warming:
    """A Neo4j store's warm-up as doctor drives it: the budget it was given, and a status."""

    def __init__(self, status: WarmupStatus) -> None:
        self.budgets: list[float] = []
        self.status = status

    def start_warmup(self, budget: float) -> _Warming:
        self.budgets.append(budget)
        return self

    def join(self, timeout: float | None = None) -> None:
        return None


@pytest.mark.parametrize("seconds", [5.0, 120.0])
def test_doctor_waits_for_a_warmup_of_at_most_its_cap(seconds: float) -> None:
    from mem0g.cli.store import DOCTOR_WARMUP_CAP, _warm
    from mem0g.config import MemoryConfig

    config = MemoryConfig.model_validate(
        {"graph_store": {"provider": "neo4j", "warmup": True, "warmup_seconds": seconds}}
    )
    unsettled = _Warming(WarmupStatus(state="done", seconds=30.2, rounds=9, shapes=8))
    line = _warm(unsettled, config)  # type: ignore[arg-type]
    assert unsettled.budgets == [min(seconds, DOCTOR_WARMUP_CAP)]
    assert ("`mem0g warmup` runs it to the end" in line) == (seconds > DOCTOR_WARMUP_CAP), line
    settled = _Warming(WarmupStatus(state="done", seconds=12.0, settled=True, shapes=8))
    assert "runs it to the end" not in _warm(settled, config)  # type: ignore[arg-type]
