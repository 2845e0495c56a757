"""`mem0g mcp` over streamable HTTP with a keys file: every HTTP request is authenticated by
its own bearer key, checked exactly as the REST service checks it. Each key is tried against
each tenant with every tool and the graph resource, through the SDK's own client: a refusal
is "forbidden", touches nothing and calls no LLM; no key or a wrong key is an HTTP 401 before
any MCP message is read; a session opened with one key cannot be used with another."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from service_support import KEYS, alice_rules, live_server, service_memory, write_keys

from mem0g.service.auth import Keyring
from mem0g.service.mcp_server import build_mcp
from mem0g.types import Tenant

TENANTS: dict[str, dict[str, str]] = {
    "(configured: alice)": {},  # no ids in the call: the server's --user alice
    "alice": {"user_id": "alice"},
    "alice/bot": {"user_id": "alice", "agent_id": "bot"},
    "bob": {"user_id": "bob"},
    "team-x": {"user_id": "team-x"},
    "agent bot": {"agent_id": "bot"},  # every user's bot: wider than any user grant
}
TOOLS = {"add_memory": "write", "delete_memory": "write", "search_memory": "read",
         "get_context": "read", "list_entities": "read", "get_entity": "read",
         "get_memory": "read", "update_memory": "write", "memory_history": "read"}  # fmt: skip


@pytest.fixture(scope="module")
def door(tmp_path_factory, hashing) -> Iterator[dict[str, Any]]:
    from mem0g.testing import ScriptedLLMServer

    tmp = tmp_path_factory.mktemp("mcp-auth")
    secrets = write_keys(tmp / "keys.json")
    with ScriptedLLMServer(alice_rules()) as llm:
        memory = service_memory(tmp / "store", llm, hashing)
        for ids in TENANTS.values():
            if ids:
                memory.add("seed note", infer=False, **ids)
        bob = memory.add("I moved to Paris", user_id="bob")  # bob's entities and fact ids
        server = build_mcp(memory, keys=Keyring.load(tmp / "keys.json"), user_id="alice")
        try:
            with live_server(server.streamable_http_app()) as base:
                yield {
                    "url": f"{base}/mcp",
                    "secrets": secrets,
                    "memory": memory,
                    "llm": llm,
                    "bob_entity": memory.list_entities(user_id="bob")[0].id,
                    "bob_fact": bob.facts[0].id,
                }
        finally:
            memory.close()


def _client(url: str, key: str | None) -> Client:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    http = httpx2.AsyncClient(headers=headers, timeout=60)  # the SDK's own HTTP client
    return Client(streamable_http_client(url, http_client=http))


def _expected(key: str, scope: str, ids: dict[str, str]) -> bool:
    spec = KEYS[key]
    tenant = Tenant(**(ids or {"user_id": "alice"}))
    if scope not in spec["scopes"]:
        return False
    return spec["tenants"] == "*" or any(g.allows(tenant) for g in spec["tenants"])


def _args(tool: str, door: dict[str, Any]) -> dict[str, Any]:
    """Each tool's arguments; ids of *bob's* records, so an allowed call for another tenant
    must not find them (tenant scoping behind the grant)."""
    return {
        "add_memory": {"messages": "a note", "infer": False},
        "delete_memory": {"memory_id": door["bob_fact"]},
        "search_memory": {"query": "note"},
        "get_context": {"query": "note"},
        "list_entities": {},
        "get_entity": {"entity_id": door["bob_entity"]},
        "get_memory": {"memory_id": door["bob_fact"]},
        "update_memory": {"memory_id": door["bob_fact"], "text": "changed"},
        "memory_history": {"memory_id": door["bob_fact"]},
    }[tool]


@pytest.mark.parametrize("key", list(KEYS))
def test_every_key_x_tenant_x_tool(door, key: str) -> None:
    memory, llm = door["memory"], door["llm"]
    calls_before = len(llm.requests)
    seen = {"allowed": 0, "refused": 0}

    async def main() -> None:
        async with _client(door["url"], door["secrets"][key]) as client:
            assert set(TOOLS) <= {t.name for t in (await client.list_tools()).tools}
            for tenant_name, ids in TENANTS.items():
                for tool, scope in TOOLS.items():
                    where = f"{key} x {tenant_name} x {tool}"
                    before = memory.get_everything().model_dump_json()
                    result = await client.call_tool(tool, {**ids, **_args(tool, door)})
                    text = " ".join(getattr(c, "text", "") for c in result.content)
                    after = memory.get_everything().model_dump_json()
                    if not _expected(key, scope, ids):
                        assert result.is_error and "forbidden: key" in text, (where, text)
                        assert after == before, where
                        seen["refused"] += 1
                        continue
                    assert "forbidden" not in text, (where, text)
                    seen["allowed"] += 1
                    if tool == "add_memory":
                        assert not result.is_error, (where, text)
                    elif ids.get("user_id") != "bob" or ids.get("agent_id"):
                        # bob's fact and entity are not this tenant's: not found, not touched
                        assert after == before, where
                        if tool in ("delete_memory", "get_entity", "get_memory",
                                    "update_memory"):  # fmt: skip
                            assert result.is_error, (where, text)
                        if tool == "memory_history":
                            assert result.structured_content["result"] == [], where
                # the graph resources: a user's export, refused outside the grant
                user = ids.get("user_id")
                if not ids:  # mem0g://graph: the configured tenant (alice)
                    if _expected(key, "read", ids):
                        graph = await client.read_resource("mem0g://graph")
                        assert "seed note" in graph.contents[0].text
                    else:
                        with pytest.raises(Exception, match="forbidden"):
                            await client.read_resource("mem0g://graph")
                if user and set(ids) == {"user_id"}:
                    if _expected(key, "read", ids):
                        graph = await client.read_resource(f"mem0g://graph/{user}")
                        assert "seed note" in graph.contents[0].text
                    else:
                        with pytest.raises(Exception, match="forbidden"):
                            await client.read_resource(f"mem0g://graph/{user}")

    anyio.run(main)
    assert len(llm.requests) == calls_before  # nothing reached the LLM (adds are infer=False)
    assert seen["allowed"] and (seen["refused"] or key == "admin")


@pytest.mark.parametrize("key", [None, "m0g_not-a-key", "Bearer"])
def test_no_key_or_a_wrong_key_is_401(door, key: str | None) -> None:
    memory = door["memory"]
    before = memory.get_everything().model_dump_json()
    args = {"messages": "x", "infer": False}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "add_memory", "arguments": args}}  # fmt: skip
    headers = {"accept": "application/json, text/event-stream"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    r = httpx.post(door["url"], json=body, headers=headers)
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    assert "invalid_token" in r.text

    async def main() -> None:
        async with _client(door["url"], key) as client:
            await client.list_tools()

    with pytest.RaisesGroup(MCPError, flatten_subgroups=True):
        anyio.run(main)  # the SDK's client cannot start a session
    assert memory.get_everything().model_dump_json() == before


def test_a_session_belongs_to_the_key_that_opened_it(door) -> None:
    secrets = door["secrets"]
    base = {"accept": "application/json, text/event-stream"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}}  # fmt: skip
    with httpx.Client(timeout=30) as http:
        mine = {**base, "authorization": f"Bearer {secrets['alice-rw']}"}
        opened = http.post(door["url"], json=init, headers=mine)
        assert opened.status_code == 200, opened.text
        session = opened.headers["mcp-session-id"]
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        other = {**base, "authorization": f"Bearer {secrets['team']}", "mcp-session-id": session}
        stolen = http.post(door["url"], json=call, headers=other)
        assert stolen.status_code == 404  # answered as if the session did not exist


def test_cli_http_takes_keys_per_request_and_binds_beyond_loopback_only_with_keys(
    tmp_path, monkeypatch
) -> None:
    import json

    from cli_runner import CliRunner

    from mem0g.cli import app
    from mem0g.service import mcp_server

    config = tmp_path / "config.json"
    config.write_text(json.dumps({
        "llm": {"base_url": "http://127.0.0.1:9/v1", "api_key": "test"},
        "embedder": {"provider": "hashing"},
        "graph_store": {"provider": "embedded", "path": str(tmp_path / "store")},
    }))  # fmt: skip
    from mem0g.service.app import freeze_holders

    served: list[tuple[Any, str, str]] = []
    held = freeze_holders()  # another test's server may be running in this process
    holding: list[int] = []  # the heap held while serving (gc_freeze), released after

    def serve(s: Any, t: str, h: str, p: int) -> None:
        served.append((s, t, h))
        holding.append(freeze_holders())

    monkeypatch.setattr(mcp_server, "serve_mcp", serve)
    runner = CliRunner()
    base = ["--config", str(config), "mcp", "--transport", "http", "--host", "0.0.0.0"]
    refused = runner.invoke(app, base)
    assert refused.exit_code == 2 and "refusing to bind" in refused.output and not served
    write_keys(tmp_path / "keys.json")
    ok = runner.invoke(app, [*base, "--keys", str(tmp_path / "keys.json")])
    assert ok.exit_code == 0, ok.output
    [(server, transport, host)] = served
    assert holding == [held + 1] and freeze_holders() == held
    assert (transport, host) == ("http", "0.0.0.0")
    assert server.settings.auth is not None  # every HTTP request is checked for its own key
