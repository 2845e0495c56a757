"""The REST service (mem0g.service): endpoints mirror Memory, errors are problem+json with a
request id, limits hold, an LLM failure is a 502 that stores nothing, binding is safe."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from service_support import alice_rules, service_memory

from mem0g.service.app import create_app
from mem0g.service.settings import Limits, ServiceSettings, check_bind

T1 = "2024-01-01T10:00:00Z"


@pytest.fixture
def api(tmp_path, llm_server, hashing) -> Any:
    for rule in alice_rules():
        llm_server.add_rule(rule)
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    settings = ServiceSettings(limits=Limits(max_body_bytes=4096, max_messages=3, max_limit=20,
                                             max_query_chars=50))  # fmt: skip
    with TestClient(create_app(memory, settings, close_memory=True)) as client:
        client.memory = memory  # type: ignore[attr-defined]
        yield client


def _problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status
    assert body["request_id"] == response.headers["x-request-id"]
    assert "Traceback" not in response.text
    return body


def test_endpoints_mirror_memory(api) -> None:
    r = api.post("/v1/memories", json={"messages": "I moved to Paris", "user_id": "alice",
                                       "timestamp": T1})  # fmt: skip
    assert r.status_code == 200, r.text
    added = r.json()
    assert [(c["event"], c["destination"]) for c in added["relations"]] == [("ADD", "Paris")]
    assert [f["text"] for f in added["facts"]] == ["Alice moved to Paris"]
    same = api.app.state.memory.search("where does alice live", user_id="alice")
    hits = api.post("/v1/search", json={"query": "where does alice live", "user_id": "alice"})
    assert hits.status_code == 200
    assert hits.json() == json.loads(same.model_dump_json())
    fact_id = added["facts"][0]["id"]
    assert api.get(f"/v1/memories/{fact_id}", params={"user_id": "alice"}).json()["text"] == (
        "Alice moved to Paris"
    )
    updated = api.put(f"/v1/memories/{fact_id}", json={"text": "Alice lives in Paris",
                                                        "user_id": "alice"})  # fmt: skip
    assert updated.json()["previous_text"] == "Alice moved to Paris"
    events = api.get(f"/v1/memories/{fact_id}/history", params={"user_id": "alice"}).json()
    assert [e["event"] for e in events] == ["ADD", "UPDATE"]
    snapshot = api.get("/v1/memories", params={"user_id": "alice"}).json()
    assert {e["name"] for e in snapshot["entities"]} == {"Alice", "Paris"}
    ctx = api.post("/v1/context", json={"query": "where", "user_id": "alice"}).json()
    assert "Alice -- lives_in --> Paris" in ctx["context"]
    entities = api.get("/v1/entities", params={"user_id": "alice"}).json()
    paris = next(e for e in entities if e["name"] == "Paris")
    assert (
        api.get(f"/v1/entities/{paris['id']}", params={"user_id": "alice"}).json()["id"]
        == (paris["id"])
    )
    rels = api.get(f"/v1/entities/{paris['id']}/relations", params={"user_id": "alice"}).json()
    assert [r["relation"] for r in rels] == ["lives_in"]
    dump = api.get("/v1/export", params={"user_id": "alice", "format": "mermaid"})
    assert dump.headers["content-type"].startswith("text/plain") and "Paris" in dump.text
    assert api.get("/v1/stats", params={"user_id": "alice"}).json()["entities"] == 2
    assert api.delete(f"/v1/memories/{fact_id}", params={"user_id": "alice"}).json()["event"] == (
        "DELETE"
    )
    _problem(api.get(f"/v1/memories/{fact_id}", params={"user_id": "alice"}), 404)
    before = api.get("/v1/stats", params={"user_id": "alice"}).json()
    gone = api.delete("/v1/memories", params={"user_id": "alice"}).json()
    kinds = ("entities", "relations", "facts", "episodes")
    assert {k: gone[k] for k in kinds} == {k: before[k] for k in kinds}, (gone, before)
    assert gone["deleted"] == before["entities"] + before["relations"] > 0
    assert before["episodes"] > 0  # the counts cover more than the graph
    assert api.get("/v1/memories", params={"user_id": "alice"}).json()["entities"] == []


def test_openapi_and_health(api) -> None:
    spec = api.get("/openapi.json").json()
    assert {"/v1/memories", "/v1/search", "/v1/jobs/{job_id}", "/v1/reset"} <= set(spec["paths"])
    add = spec["components"]["schemas"]["AddRequest"]["properties"]["messages"]
    assert any(branch.get("maxItems") == 3 for branch in add["anyOf"])  # the configured limit
    assert api.get("/healthz").json()["status"] == "ok"
    ready = api.get("/readyz").json()
    assert ready["checks"] == {"store": "ok", "embedder": "ok"}


def test_limits_are_enforced_before_memory(api) -> None:
    big = {"messages": "x" * 5000, "user_id": "alice"}
    _problem(api.post("/v1/memories", json=big), 413)
    many = [{"role": "user", "content": f"m{i}"} for i in range(4)]
    r = api.post("/v1/memories", json={"messages": many, "user_id": "alice"})
    assert "messages" in _problem(r, 422)["detail"]
    _problem(api.post("/v1/search", json={"query": "q" * 51, "user_id": "alice"}), 422)
    _problem(api.post("/v1/search", json={"query": "q", "user_id": "alice", "limit": 21}), 422)
    _problem(api.post("/v1/search", json={"query": "q"}), 422)  # no tenant
    _problem(api.post("/v1/search", json={"query": "   ", "user_id": "alice"}), 422)
    headers = {"content-type": "application/json"}
    _problem(api.post("/v1/memories", content=b"{not json", headers=headers), 422)
    assert api.app.state.memory.stats().episodes == 0


def test_request_id_is_echoed_or_made(api) -> None:
    r = api.get("/v1/memories/nope", params={"user_id": "alice"},
                headers={"x-request-id": "trace-42"})  # fmt: skip
    assert _problem(r, 404)["request_id"] == "trace-42"
    r = api.get("/v1/memories/nope", params={"user_id": "alice"},
                headers={"x-request-id": "<bad id>"})  # fmt: skip
    assert len(_problem(r, 404)["request_id"]) == 32


def test_llm_failure_on_sync_add_is_502_and_stores_nothing(api, llm_server) -> None:
    api.post("/v1/memories", json={"messages": "I moved to Paris", "user_id": "alice"})
    before = api.get("/v1/memories", params={"user_id": "alice", "include_invalid": True}).json()
    llm_server.add_rule({"task": "extract_entities", "match": {"contains": "explode"},
                         "response": {"status": 500, "error": "upstream boom"}})  # fmt: skip
    r = api.post("/v1/memories", json={"messages": "I explode", "user_id": "alice"})
    body = _problem(r, 502)
    assert "nothing was stored" in body["detail"]
    after = api.get("/v1/memories", params={"user_id": "alice", "include_invalid": True}).json()
    assert after == before


def test_unexpected_error_is_500_without_internals(api, monkeypatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret internal state /etc/passwd")

    monkeypatch.setattr(api.app.state.memory, "list_entities", broken)
    api_no_raise = TestClient(api.app, raise_server_exceptions=False)
    body = _problem(api_no_raise.get("/v1/entities", params={"user_id": "alice"}), 500)
    assert "secret" not in json.dumps(body)


def test_bind_refuses_open_non_loopback() -> None:
    check_bind("127.0.0.1", keys_configured=False)
    check_bind("::1", keys_configured=False)
    check_bind("0.0.0.0", keys_configured=True)
    for host in ("0.0.0.0", "192.168.1.5", "example.org"):
        with pytest.raises(ValueError, match="refusing"):
            check_bind(host, keys_configured=False)


def test_servers_use_one_inference_thread_unless_told(monkeypatch) -> None:
    import os

    from mem0g.service.settings import limit_inference_threads

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setitem(__import__("sys").modules, "torch", None)  # not loaded yet
    limit_inference_threads(1)
    assert os.environ["OMP_NUM_THREADS"] == "1"
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the operator's choice wins
    limit_inference_threads(1)
    assert os.environ["OMP_NUM_THREADS"] == "3"


def test_delete_all_without_user_id_must_be_confirmed(api) -> None:
    """A filter without user_id spans users (agent_id="bot": the bot of every user), so the
    REST delete_all needs `all_users=true`, as Python needs all_users=True and the CLI
    --all-users; unconfirmed it is a 422 that deletes nothing."""
    memory = api.memory
    for user in ("alice", "bob"):
        memory.add(f"{user}'s bot note", user_id=user, agent_id="bot", infer=False)
    memory.add("alice's own note", user_id="alice", infer=False)
    before = memory.get_everything().model_dump_json()
    for query in ({"agent_id": "bot"}, {"agent_id": "bot", "all_users": "false"},
                  {"run_id": "r1"}):  # fmt: skip
        body = _problem(api.delete("/v1/memories", params=query), 422)
        assert "all_users=true" in body["detail"], body
    assert memory.get_everything().model_dump_json() == before
    done = api.delete("/v1/memories", params={"agent_id": "bot", "all_users": "true"})
    assert done.status_code == 200, done.text
    left = memory.get_everything()
    assert [f.text for f in left.facts] == ["alice's own note"]  # both bots' notes are gone
    one = api.delete("/v1/memories", params={"user_id": "alice"})  # a user: no flag needed
    assert one.status_code == 200 and memory.get_everything().facts == []
    spec = api.get("/openapi.json").json()["paths"]["/v1/memories"]["delete"]
    flag = next(p for p in spec["parameters"] if p["name"] == "all_users")
    assert "every user" in flag["description"]


def test_client_delete_all_needs_the_same_confirmation(tmp_path, llm_server, hashing) -> None:
    from service_support import live_server

    from mem0g import Client

    memory = service_memory(tmp_path / "store", llm_server, hashing)
    memory.add("a bot note", user_id="alice", agent_id="bot", infer=False)
    try:
        with live_server(create_app(memory)) as base, Client(base) as client:
            with pytest.raises(ValueError, match="all_users=true"):
                client.delete_all(agent_id="bot")
            assert memory.stats(user_id="alice").facts == 1
            client.delete_all(agent_id="bot", all_users=True)
            assert memory.stats(user_id="alice").facts == 0
    finally:
        memory.close()


def test_an_empty_id_is_not_redirected_onto_the_collection(api) -> None:
    """`/v1/memories/` (an id left empty by the caller's code) is no route. Redirected to
    `/v1/memories` (Starlette's trailing-slash redirect: a 307 keeps the method), a client
    that follows redirects (requests does by default) turned `DELETE /v1/memories/{id}` into
    `delete_all` of the tenant."""
    memory = api.memory
    memory.add("alice's note", user_id="alice", infer=False)
    for method in ("GET", "PUT", "DELETE"):
        r = api.request(method, "/v1/memories/", params={"user_id": "alice"},
                        json={"text": "x", "user_id": "alice"} if method == "PUT" else None,
                        follow_redirects=True)  # fmt: skip
        _problem(r, 404)
    assert [f.text for f in memory.get_all(user_id="alice").facts] == ["alice's note"]
    _problem(api.get("/v1/entities/", params={"user_id": "alice"}, follow_redirects=True), 404)


def test_client_errors_are_the_families_memory_raises(tmp_path, llm_server, hashing) -> None:
    """Each failure of `Memory` comes out of `Client` as the same family, with the request
    id: a write that lost to another writer every time (`PlanConflict`, REST 409) is a
    `RuntimeError` as in `Memory`, not a `ValueError` (bad input, which a caller must not
    retry, while a conflict is worth retrying)."""
    from service_support import live_server

    from mem0g import Client
    from mem0g.llm.client import LLMError
    from mem0g.stores.base import PlanConflict, StoreError

    memory = service_memory(tmp_path / "store", llm_server, hashing)
    raised: list[BaseException] = []

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise raised[-1]

    memory.add = failing  # type: ignore[method-assign]
    cases = [(PlanConflict("the tenant changed meanwhile"), RuntimeError, ValueError),
             (StoreError("the store is unavailable"), RuntimeError, ValueError),
             (ValueError("messages is empty"), ValueError, RuntimeError),
             (KeyError("no fact 'x' for this tenant"), LookupError, ValueError),
             (LLMError("upstream 500"), LLMError, ValueError)]  # fmt: skip
    try:
        with live_server(create_app(memory)) as base, Client(base) as client:
            for error, family, not_family in cases:
                raised.append(error)
                with pytest.raises(family) as caught:
                    client.add("a note", user_id="alice", infer=False)
                assert not isinstance(caught.value, not_family), (error, caught.value)
                assert len(caught.value.request_id) == 32, caught.value  # type: ignore[attr-defined]
                assert isinstance(error, family)  # what `Memory` itself raised
    finally:
        memory.close()


def test_answers_worth_retrying_say_when(api) -> None:
    """A 503 (the store went away, the service shutting down, /readyz while the store is not
    ready) came without Retry-After, so clients and load balancers retried at once or never;
    a 429 already said 1 second. Bad input (4xx) says nothing: retrying will not help."""
    from mem0g.stores.base import StoreError

    memory = api.memory

    def gone(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("read search failed: ServiceUnavailable")

    real_search, real_version = memory.search, memory.store.tenant_version
    memory.search = gone
    try:
        down = api.post("/v1/search", json={"query": "where", "user_id": "alice"})
        assert _problem(down, 503) and down.headers["retry-after"] == "5"
        memory.store.tenant_version = gone
        ready = api.get("/readyz")
        assert ready.status_code == 503 and ready.headers["retry-after"] == "5"
    finally:
        memory.search, memory.store.tenant_version = real_search, real_version
    bad = api.post("/v1/search", json={"query": "", "user_id": "alice"})
    assert bad.status_code == 422 and "retry-after" not in bad.headers
