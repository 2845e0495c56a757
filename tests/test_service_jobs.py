"""Async ingestion: POST /v1/memories?mode=async -> 202 + job; one in-order queue per tenant;
bounded (429 when full); in memory only: a graceful shutdown applies what is queued, a restart
forgets the job records (404) while the applied adds stay in the store."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi.testclient import TestClient
from service_support import alice_rules, service_memory

from mem0g.service.app import create_app
from mem0g.service.settings import QueueSettings, ServiceSettings


def _wait(
    client: TestClient, job_id: str, timeout: float = 30, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"/v1/jobs/{job_id}", headers=headers).json()
        if job["state"] in ("succeeded", "failed") or time.monotonic() > deadline:
            return job
        time.sleep(0.01)


def _async_add(client: TestClient, text: str, **ids: str) -> Any:
    return client.post("/v1/memories", params={"mode": "async"},
                       json={"messages": text, "infer": False, **ids})  # fmt: skip


def test_parallel_adds_of_one_tenant_none_lost_in_order(tmp_path, llm_server, hashing) -> None:
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    order: list[str] = []
    real_add = memory.add
    running = {"alice": 0, "bob": 0}
    overlap = []

    def tracking_add(messages: Any, **kwargs: Any) -> Any:
        user = kwargs["user_id"]
        running[user] += 1
        overlap.append(running[user] > 1)
        time.sleep(0.002)  # widen the window an interleaving would need
        try:
            return real_add(messages, **kwargs)
        finally:
            order.append(messages)
            running[user] -= 1

    memory.add = tracking_add  # type: ignore[method-assign]
    settings = ServiceSettings(queue=QueueSettings(workers=4))
    with TestClient(create_app(memory, settings, close_memory=True)) as client:
        texts = [(f"{user} note {i:02d}", user) for i in range(30) for user in ("alice", "bob")]
        with ThreadPoolExecutor(8) as pool:
            accepted = list(pool.map(lambda t: _async_add(client, t[0], user_id=t[1]), texts))
        assert {r.status_code for r in accepted} == {202}
        assert all(r.headers["location"] == f"/v1/jobs/{r.json()['id']}" for r in accepted)
        jobs = [_wait(client, r.json()["id"]) for r in accepted]
        assert {j["state"] for j in jobs} == {"succeeded"}
        for user in ("alice", "bob"):
            mine = sorted((j for j in jobs if j["tenant"]["user_id"] == user),
                          key=lambda j: j["created_at"])  # fmt: skip
            arrival = [j["result"]["facts"][0]["text"] for j in mine]
            assert [t for t in order if t.startswith(user)] == arrival  # applied in arrival order
            stored = sorted(memory.get_all(user_id=user).facts, key=lambda f: f.created_at)
            assert [f.text for f in stored] == arrival  # none lost, none doubled
        assert not any(overlap)  # one tenant's adds never ran at once


def test_failed_job_reports_the_cause_and_stores_nothing(tmp_path, llm_server, hashing) -> None:
    llm_server.add_rule({"task": "extract_entities", "response": {"status": 500, "error": "down"}})
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    with TestClient(create_app(memory, close_memory=True)) as client:
        r = client.post("/v1/memories", params={"mode": "async"},
                        json={"messages": "I moved to Paris", "user_id": "alice"})  # fmt: skip
        job = _wait(client, r.json()["id"])
        assert job["state"] == "failed" and job["error"]["status"] == 502
        assert "nothing was stored" in job["error"]["detail"]
        assert memory.stats().episodes == 0


def test_full_queue_is_429_and_accepts_nothing(tmp_path, llm_server, hashing) -> None:
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    gate = threading.Event()
    real_add = memory.add
    memory.add = lambda *a, **k: (gate.wait(10), real_add(*a, **k))[1]  # type: ignore[method-assign]
    settings = ServiceSettings(queue=QueueSettings(max_pending=2))
    with TestClient(create_app(memory, settings, close_memory=True)) as client:
        first = [_async_add(client, f"n{i}", user_id="alice") for i in range(2)]
        assert [r.status_code for r in first] == [202, 202]
        full = _async_add(client, "n2", user_id="alice")
        assert full.status_code == 429 and full.headers["retry-after"] == "1"
        assert full.headers["content-type"].startswith("application/problem+json")
        gate.set()
        assert [_wait(client, r.json()["id"])["state"] for r in first] == ["succeeded"] * 2
        assert _wait(client, _async_add(client, "n3", user_id="alice").json()["id"])["state"] == (
            "succeeded"
        )
        assert sorted(f.text for f in memory.get_all(user_id="alice").facts) == ["n0", "n1", "n3"]


def test_one_key_cannot_fill_the_queue_for_the_others(tmp_path, llm_server, hashing) -> None:
    """With a keys file, a key holds at most `max_pending_per_key` pending jobs, whichever of
    its tenants they are for; another key still gets its adds queued, and the first key's
    room comes back as its jobs finish."""
    from service_support import write_keys

    secrets = write_keys(tmp_path / "keys.json")
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    gate = threading.Event()
    real_add = memory.add
    memory.add = lambda *a, **k: (gate.wait(10), real_add(*a, **k))[1]  # type: ignore[method-assign]
    queue = QueueSettings(max_pending=5, max_pending_per_key=2)
    settings = ServiceSettings(keys_file=tmp_path / "keys.json", queue=queue)
    team = {"authorization": f"Bearer {secrets['team']}"}
    alice = {"authorization": f"Bearer {secrets['alice-rw']}"}

    def add(headers: dict[str, str], text: str, user: str) -> Any:
        return client.post("/v1/memories", params={"mode": "async"}, headers=headers,
                           json={"messages": text, "infer": False, "user_id": user})  # fmt: skip

    with TestClient(create_app(memory, settings, close_memory=True)) as client:
        held = [add(team, "t0", "team-a"), add(team, "t1", "team-b")]  # two tenants, one key
        assert [r.status_code for r in held] == [202, 202]
        refused = add(team, "t2", "team-c")
        assert refused.status_code == 429 and "'team'" in refused.json()["detail"]
        mine = add(alice, "a0", "alice")  # the queue (5) has room: another key is served
        assert mine.status_code == 202
        gate.set()
        states = [_wait(client, r.json()["id"], headers=h)["state"]
                  for r, h in ((held[0], team), (held[1], team), (mine, alice))]  # fmt: skip
        assert states == ["succeeded"] * 3
        again = add(team, "t3", "team-c")
        assert again.status_code == 202
        assert _wait(client, again.json()["id"], headers=team)["state"] == "succeeded"
        stored = [f.text for f in memory.get_all(user_id="team-c").facts]
        assert stored == ["t3"]  # the refused t2 was never stored


def test_the_open_service_has_no_per_key_limit(tmp_path, llm_server, hashing) -> None:
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    gate = threading.Event()
    real_add = memory.add
    memory.add = lambda *a, **k: (gate.wait(10), real_add(*a, **k))[1]  # type: ignore[method-assign]
    settings = ServiceSettings(queue=QueueSettings(max_pending=4, max_pending_per_key=1))
    with TestClient(create_app(memory, settings, close_memory=True)) as client:
        sent = [_async_add(client, f"n{i}", user_id="alice") for i in range(3)]
        assert [r.status_code for r in sent] == [202] * 3  # one caller: the queue is its own
        gate.set()
        assert [_wait(client, r.json()["id"])["state"] for r in sent] == ["succeeded"] * 3


def test_shutdown_applies_queued_jobs_and_a_restart_forgets_them(
    tmp_path, llm_server, hashing
) -> None:
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    real_add = memory.add
    memory.add = lambda *a, **k: (time.sleep(0.02), real_add(*a, **k))[1]  # type: ignore[method-assign]
    with TestClient(create_app(memory)) as client:
        ids = [_async_add(client, f"n{i}", user_id="alice").json()["id"] for i in range(10)]
        assert client.get(f"/v1/jobs/{ids[0]}").status_code == 200
    # the lifespan's shutdown drained the queue before returning
    assert len(memory.get_all(user_id="alice").facts) == 10
    with TestClient(create_app(memory, close_memory=True)) as restarted:
        r = restarted.get(f"/v1/jobs/{ids[-1]}")
        assert r.status_code == 404 and "memory only" in r.json()["detail"]
        assert len(restarted.get("/v1/memories", params={"user_id": "alice"}).json()["facts"]) == 10


def test_a_job_is_visible_only_to_keys_reaching_its_tenant(tmp_path, llm_server, hashing) -> None:
    from service_support import write_keys

    secrets = write_keys(tmp_path / "keys.json")
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    app = create_app(memory, ServiceSettings(keys_file=tmp_path / "keys.json"), close_memory=True)
    with TestClient(app) as client:
        alice = {"authorization": f"Bearer {secrets['alice-rw']}"}
        team = {"authorization": f"Bearer {secrets['team']}"}
        r = client.post("/v1/memories", params={"mode": "async"}, headers=alice,
                        json={"messages": "n", "infer": False, "user_id": "alice"})  # fmt: skip
        job_id = r.json()["id"]
        assert client.get(f"/v1/jobs/{job_id}", headers=alice).status_code == 200
        assert client.get(f"/v1/jobs/{job_id}", headers=team).status_code == 404


def test_alice_rules_fixture_runs_async_with_inference(tmp_path, llm_server, hashing) -> None:
    for rule in alice_rules():
        llm_server.add_rule(rule)
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    with TestClient(create_app(memory, close_memory=True)) as client:
        r = client.post("/v1/memories", params={"mode": "async"},
                        json={"messages": "I moved to Paris", "user_id": "alice"})  # fmt: skip
        job = _wait(client, r.json()["id"])
        assert job["state"] == "succeeded"
        assert [c["destination"] for c in job["result"]["relations"]] == ["Paris"]


def test_startup_heap_frozen_while_serving_and_released_after(
    tmp_path, llm_server, hashing
) -> None:
    """`gc_freeze`: what is alive once the service started is out of the cyclic collector
    while it serves, requests still work, and shutdown releases its hold (the heap is given
    back with the process's last running service); switched off, nothing is frozen."""
    import gc

    from mem0g.service.app import freeze_holders

    def collected(obj: object) -> bool:  # tracked by the collector (frozen objects are not)
        return any(o is obj for o in gc.get_objects())

    held = freeze_holders()  # another test's server may be running in this process
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    marker = [object()]  # alive before the service starts
    assert collected(marker)
    with TestClient(create_app(memory, ServiceSettings())) as client:
        assert freeze_holders() == held + 1
        assert not collected(marker) and gc.get_freeze_count() > 1000
        added = client.post("/v1/memories", json={"messages": "Alice likes tea", "infer": False,
                                                  "user_id": "alice"})  # fmt: skip
        assert added.status_code == 200, added.text
        found = client.post("/v1/search", json={"query": "tea", "user_id": "alice"})
        assert [f["text"] for f in found.json()["facts"]] == ["Alice likes tea"]
    assert freeze_holders() == held
    assert collected(marker) or held  # given back, unless another service still holds it
    fresh = [object()]
    with TestClient(create_app(memory, ServiceSettings(gc_freeze=False), close_memory=True)):
        assert freeze_holders() == held and (collected(fresh) or held)
