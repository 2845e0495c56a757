"""API keys: every key tried against every tenant and every endpoint. A request outside the
key's scope or grant is refused (403, 401 without a valid key) and touches nothing: the store
is unchanged and no LLM call is made."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from service_support import KEYS, alice_rules, service_memory, write_keys

from mem0g.service.app import create_app
from mem0g.service.auth import Grant, Keyring, Prefix, hash_key
from mem0g.service.settings import ServiceSettings
from mem0g.types import Tenant

TENANTS: dict[str, dict[str, str]] = {
    "alice": {"user_id": "alice"},
    "alice/bot": {"user_id": "alice", "agent_id": "bot"},
    "alice/bot/r1": {"user_id": "alice", "agent_id": "bot", "run_id": "r1"},
    "bob": {"user_id": "bob"},
    "team-x": {"user_id": "team-x"},
    "teamx": {"user_id": "teamx"},
    "agent bot": {"agent_id": "bot"},  # every user's bot: wider than any user grant
}

Call = Callable[[TestClient, dict[str, str], dict[str, str]], Any]

# (endpoint, scope, call); each call names the tenant in its query or body
ENDPOINTS: list[tuple[str, str, Call]] = [
    ("add", "write", lambda c, t, h: c.post("/v1/memories", headers=h,
        json={"messages": "note", "infer": False, **t})),
    ("add async", "write", lambda c, t, h: c.post("/v1/memories", headers=h,
        params={"mode": "async"}, json={"messages": "note", "infer": False, **t})),
    ("search", "read", lambda c, t, h: c.post("/v1/search", headers=h,
        json={"query": "note", **t})),
    ("context", "read", lambda c, t, h: c.post("/v1/context", headers=h,
        json={"query": "note", **t})),
    ("get_all", "read", lambda c, t, h: c.get("/v1/memories", headers=h, params=t)),
    ("delete_all", "write", lambda c, t, h: c.delete("/v1/memories", headers=h, params=t)),
    ("get", "read", lambda c, t, h: c.get("/v1/memories/f1", headers=h, params=t)),
    ("update", "write", lambda c, t, h: c.put("/v1/memories/f1", headers=h,
        json={"text": "new", **t})),
    ("delete", "write", lambda c, t, h: c.delete("/v1/memories/f1", headers=h, params=t)),
    ("history", "read", lambda c, t, h: c.get("/v1/memories/f1/history", headers=h, params=t)),
    ("episodes", "read", lambda c, t, h: c.get("/v1/episodes", headers=h, params=t)),
    ("list_entities", "read", lambda c, t, h: c.get("/v1/entities", headers=h, params=t)),
    ("possible_duplicates", "read", lambda c, t, h: c.get("/v1/entities/duplicates", headers=h,
        params=t)),
    ("get_entity", "read", lambda c, t, h: c.get("/v1/entities/e1", headers=h, params=t)),
    ("entity_relations", "read", lambda c, t, h: c.get("/v1/entities/e1/relations", headers=h,
        params=t)),
    ("entity_history", "read", lambda c, t, h: c.get("/v1/entities/e1/history", headers=h,
        params=t)),
    ("merge_entities", "write", lambda c, t, h: c.post("/v1/entities/merge", headers=h,
        json={"keep_id": "e1", "other_id": "e2", **t})),
    ("split_entity", "write", lambda c, t, h: c.post("/v1/entities/split", headers=h,
        json={"merge_id": "m1", **t})),
    ("export", "read", lambda c, t, h: c.get("/v1/export", headers=h, params=t)),
    ("stats", "read", lambda c, t, h: c.get("/v1/stats", headers=h, params=t)),
]  # fmt: skip

GLOBAL: list[tuple[str, Call]] = [  # admin only, no tenant
    ("reset", lambda c, t, h: c.post("/v1/reset", headers=h)),
    ("tenants", lambda c, t, h: c.get("/v1/tenants", headers=h)),
    ("stats all", lambda c, t, h: c.get("/v1/stats", headers=h)),
    ("export all", lambda c, t, h: c.get("/v1/export", headers=h)),
]


@pytest.fixture(scope="module")
def secured(tmp_path_factory, hashing) -> Any:
    from mem0g.testing import ScriptedLLMServer

    tmp = tmp_path_factory.mktemp("auth")
    secrets = write_keys(tmp / "keys.json")
    with ScriptedLLMServer(alice_rules()) as llm:
        memory = service_memory(tmp / "store", llm, hashing)
        for ids in TENANTS.values():
            memory.add("seed", infer=False, **ids)
        app = create_app(memory, ServiceSettings(keys_file=tmp / "keys.json"), close_memory=True)
        with TestClient(app) as client:
            yield client, secrets, memory, llm


def _settle(client: TestClient, seconds: float = 60) -> None:
    """Wait for queued and running async adds: a job accepted before a snapshot would change
    the store after it, and a loaded machine runs one for seconds."""
    deadline = time.monotonic() + seconds
    while client.app.state.jobs.pending:
        assert time.monotonic() < deadline, "async adds still pending"
        time.sleep(0.01)


def _state(memory: Any) -> str:
    return memory.get_everything().model_dump_json()


def _expected(key: str, scope: str, tenant: dict[str, str]) -> bool:
    spec = KEYS[key]
    if scope not in spec["scopes"]:
        return False
    grants = spec["tenants"]
    return grants == "*" or any(g.allows(Tenant(**tenant)) for g in grants)


@pytest.mark.parametrize("key", [*KEYS, "no key", "wrong key"])
def test_isolation_matrix(secured, key: str) -> None:
    client, secrets, memory, llm = secured
    headers = {"authorization": f"Bearer {secrets[key]}"} if key in secrets else {}
    if key == "wrong key":
        headers = {"authorization": "Bearer m0g_not-a-key"}
    calls_before = len(llm.requests)
    allowed_seen = refused_seen = 0
    for tenant_name, tenant in TENANTS.items():
        for endpoint, scope, call in ENDPOINTS:
            _settle(client)  # an allowed async add must not land inside a later refusal's window
            before = _state(memory)
            r = call(client, tenant, headers)
            where = f"{key} x {tenant_name} x {endpoint}"
            if key not in secrets:
                assert r.status_code == 401, where
                assert _state(memory) == before, where
            elif _expected(key, scope, tenant):
                assert r.status_code not in (401, 403), (where, r.text)
                allowed_seen += 1
            else:
                assert r.status_code == 403, (where, r.text)
                assert r.headers["content-type"].startswith("application/problem+json")
                assert _state(memory) == before, where
                refused_seen += 1
    for endpoint, call in GLOBAL:
        if key == "admin":
            continue  # reset would empty the shared store; the admin case is tested below
        r = call(client, {}, headers)
        assert r.status_code == (401 if key not in secrets else 403), (key, endpoint)
    assert len(llm.requests) == calls_before  # nothing refused reached the LLM
    _settle(client)  # allowed async adds finish before the next key's turn
    if key in secrets:  # the matrix exercises both sides for each key ("*" refuses nothing)
        assert allowed_seen and (refused_seen or key == "admin")


def test_only_admin_resets(tmp_path, llm_server, hashing) -> None:
    secrets = write_keys(tmp_path / "keys.json")
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    memory.add("seed", user_id="alice", infer=False)
    app = create_app(memory, ServiceSettings(keys_file=tmp_path / "keys.json"), close_memory=True)
    with TestClient(app) as client:
        for name in ("alice-rw", "team", "bot"):
            auth = {"authorization": f"Bearer {secrets[name]}"}
            assert client.post("/v1/reset", headers=auth).status_code == 403
        assert memory.stats().episodes == 1
        admin = {"authorization": f"Bearer {secrets['admin']}"}
        assert client.get("/v1/tenants", headers=admin).json() == [
            {"user_id": "alice", "agent_id": None, "run_id": None}
        ]
        assert client.post("/v1/reset", headers=admin).status_code == 204
        assert memory.stats().episodes == 0


def test_keys_file_holds_hashes_only(tmp_path) -> None:
    secrets = write_keys(tmp_path / "keys.json")
    text = (tmp_path / "keys.json").read_text()
    for secret in secrets.values():
        assert secret not in text and hash_key(secret) in text
    assert oct((tmp_path / "keys.json").stat().st_mode & 0o777) == "0o600"
    ring = Keyring.load(tmp_path / "keys.json")
    assert ring.authenticate(secrets["team"]).name == "team"
    assert ring.authenticate(secrets["team"] + "x") is None
    assert ring.authenticate(None) is None


def test_grant_rules() -> None:
    bot = Grant(user_id="alice", agent_id="bot")
    assert bot.allows(Tenant(user_id="alice", agent_id="bot", run_id="r9"))
    assert not bot.allows(Tenant(user_id="alice"))  # all of Alice's agents: wider than the grant
    team = Grant(user_id=Prefix(prefix="team-"))
    assert team.allows(Tenant(user_id="team-a")) and not team.allows(Tenant(user_id="team"))
    with pytest.raises(ValueError):
        Grant()


@pytest.mark.parametrize(
    "doc",
    [
        {"keys": []},
        {"keys": [{"name": "k", "sha256": "zz", "scopes": ["read"], "tenants": "*"}]},
        {"keys": [{"name": "k", "sha256": "0" * 64, "scopes": ["root"], "tenants": "*"}]},
        {"keys": [{"name": "k", "sha256": "0" * 64, "scopes": ["read"], "tenants": []}]},
        {"keys": [{"name": "k", "sha256": "0" * 64, "scopes": ["read"], "tenants": [{}]}]},
    ],
)
def test_bad_keys_files_are_refused(tmp_path, doc) -> None:
    (tmp_path / "keys.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="keys file"):
        Keyring.load(tmp_path / "keys.json")


def test_keys_add_command(tmp_path) -> None:
    from cli_runner import CliRunner

    from mem0g.cli import app

    keys = tmp_path / "keys.json"
    runner = CliRunner()
    made = runner.invoke(app, ["keys", "add", "alice-app", "--keys", str(keys), "--scope", "read",
                               "--user", "alice", "--user-prefix", "team-"])  # fmt: skip
    assert made.exit_code == 0, made.output
    key = made.stdout.strip()
    principal = Keyring.load(keys).authenticate(key)
    assert principal.name == "alice-app" and principal.scopes == {"read"}
    assert principal.reaches(Tenant(user_id="team-x")) and not principal.reaches(
        Tenant(user_id="bob")
    )
    again = runner.invoke(app, ["keys", "add", "alice-app", "--keys", str(keys), "--scope", "read",
                                "--user", "alice"])  # fmt: skip
    assert again.exit_code == 2 and "exists already" in again.output
    nothing = runner.invoke(app, ["keys", "add", "x", "--keys", str(keys), "--scope", "read"])
    assert nothing.exit_code == 2
    assert [e.name for e in Keyring.load(keys).entries] == ["alice-app"]
