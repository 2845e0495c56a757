"""`mem0g mcp` with the official SDK's own client: over stdio (the CLI launched as a
subprocess, as an MCP client config would) and over streamable HTTP. Tools are listed with
their JSON schemas and each is called; the graph resource is read; a key's grant bounds calls."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from service_support import alice_rules, live_server, service_memory, write_keys

from mem0g.service.auth import Keyring
from mem0g.service.mcp_server import build_mcp

TOOLS = {"add_memory", "search_memory", "get_entity", "list_entities", "delete_memory",
         "get_context", "get_memory", "update_memory", "memory_history"}  # fmt: skip


async def exercise(client: Client, *, tenant_in_calls: bool) -> None:
    ids = {"user_id": "alice"} if tenant_in_calls else {}
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOLS
    search = tools["search_memory"].input_schema["properties"]
    assert {"query", "as_of", "include_invalid", "limit", "user_id"} <= set(search)
    assert tools["add_memory"].input_schema["required"] == ["messages"]

    async def call(name: str, **args: Any) -> Any:
        result = await client.call_tool(name, {**ids, **args})
        assert not result.is_error, result.content
        return result.structured_content

    added = await call("add_memory", messages="I moved to Paris", timestamp="2024-01-01T10:00:00")
    assert [c["destination"] for c in added["relations"]] == ["Paris"]
    note = await call("add_memory", messages=[{"content": "my locker code is 4521"}], infer=False)
    hits = await call("search_memory", query="where does alice live", include_invalid=True)
    assert [r["destination"] for r in hits["relations"]] == ["Paris"]
    past = await call("search_memory", query="where does alice live", as_of="2023-06-01")
    assert past["relations"] == []  # before she moved
    entities = (await call("list_entities"))["result"]
    paris = next(e for e in entities if e["name"] == "Paris")
    view = await call("get_entity", entity_id=paris["id"])
    assert view["entity"]["name"] == "Paris"
    assert [(r["source"], r["relation"]) for r in view["relations"]] == [("Alice", "lives_in")]
    context = (await call("get_context", query="where does alice live"))["result"]
    assert "Alice -- lives_in --> Paris" in context
    note_id = note["facts"][0]["id"]
    assert (await call("get_memory", memory_id=note_id))["text"] == "my locker code is 4521"
    fixed = await call("update_memory", memory_id=note_id, text="my locker code is 9999")
    assert fixed["previous_text"] == "my locker code is 4521"
    deleted = await call("delete_memory", memory_id=note_id)
    assert deleted["event"] == "DELETE"
    events = (await call("memory_history", memory_id=note_id))["result"]
    assert [e["event"] for e in events] == ["ADD", "UPDATE", "DELETE"]
    gone = await client.call_tool("get_memory", {**ids, "memory_id": note_id})
    assert gone.is_error and "no fact" in gone.content[0].text
    missing = await client.call_tool("get_entity", {**ids, "entity_id": "nope"})
    assert missing.is_error
    resource = await client.read_resource("mem0g://graph/alice")
    dump = json.loads(resource.contents[0].text)
    assert {e["name"] for e in dump["entities"]} == {"Alice", "Paris"}


def _config(tmp_path: Path, llm: Any) -> Path:
    config = {
        "llm": {"base_url": llm.base_url, "api_key": "test", "max_retries": 0},
        "embedder": {"provider": "hashing"},
        "graph_store": {"provider": "embedded", "path": str(tmp_path / "store")},
        "memory": {"summary": False},
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def test_mcp_over_stdio_through_the_cli(tmp_path, llm_server) -> None:
    for rule in alice_rules():
        llm_server.add_rule(rule)
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-c",
            "from mem0g.cli import app; app()",
            "--config",
            str(_config(tmp_path, llm_server)),
            "mcp",
            "--user",
            "alice",
        ],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )

    async def main() -> None:
        async with Client(params) as client:
            await exercise(client, tenant_in_calls=False)  # the configured tenant
            graph = await client.read_resource("mem0g://graph")
            assert "Paris" in graph.contents[0].text

    anyio.run(main)


def test_mcp_over_streamable_http(tmp_path, llm_server, hashing) -> None:
    for rule in alice_rules():
        llm_server.add_rule(rule)
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    server = build_mcp(memory)
    try:
        with live_server(server.streamable_http_app()) as base:

            async def main() -> None:
                async with Client(f"{base}/mcp") as client:
                    await exercise(client, tenant_in_calls=True)

            anyio.run(main)
    finally:
        memory.close()


def test_mcp_calls_stay_within_the_keys_grant(tmp_path, llm_server, hashing) -> None:
    secrets = write_keys(tmp_path / "keys.json")
    principal = Keyring.load(tmp_path / "keys.json").authenticate(secrets["alice-ro"])
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    memory.add("bob's secret", user_id="bob", infer=False)
    server = build_mcp(memory, principal=principal, user_id="alice")

    async def main() -> None:
        async with Client(server) as client:  # in-process: the same server object
            ok = await client.call_tool("search_memory", {"query": "secret"})
            assert not ok.is_error and ok.structured_content["facts"] == []
            for name, args in [("search_memory", {"query": "secret", "user_id": "bob"}),
                               ("add_memory", {"messages": "hi"}),
                               ("delete_memory", {"memory_id": "x"})]:  # fmt: skip
                refused = await client.call_tool(name, args)
                assert refused.is_error and "forbidden" in refused.content[0].text, name
            with pytest.raises(Exception, match="reach"):
                await client.read_resource("mem0g://graph/bob")

    try:
        anyio.run(main)
        assert memory.stats().episodes == 1
    finally:
        memory.close()


@pytest.mark.parametrize("bind", ["127.0.0.2", "127.0.0.1", "::1"])
def test_an_open_mcp_server_on_any_loopback_address_answers_no_rebound_page(
    tmp_path, llm_server, hashing, bind: str
) -> None:
    """Open MCP over HTTP (no keys: `check_bind` keeps it to loopback, any 127/8 address).
    A web page whose DNS name was rebound to that address sends its own name as Host: the
    SDK refuses it by itself only for 127.0.0.1, localhost and ::1, so mem0g passes the
    same protection with the bound address allowed. The bound address itself is served."""
    import httpx

    from mem0g.service.mcp_server import transport_security

    memory = service_memory(tmp_path / "store", llm_server, hashing)
    server = build_mcp(memory)
    app = server.streamable_http_app(host=bind, transport_security=transport_security(bind))
    own = f"[{bind}]" if ":" in bind else bind
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    accept = {"accept": "application/json, text/event-stream"}
    try:
        with live_server(app) as base:
            for host, refused in [("evil.example", True), (f"{own}:8000", False)]:
                got = httpx.post(f"{base}/mcp", json=body, headers={**accept, "host": host})
                assert (got.status_code == 421) is refused, (host, got.status_code, got.text)
            got = httpx.post(f"{base}/mcp", json=body,
                             headers={**accept, "origin": "https://evil.example"})  # fmt: skip
            assert got.status_code == 403, got.text
    finally:
        memory.close()
    assert transport_security("0.0.0.0") is None  # beyond loopback: a keys file is required


def _in_process(memory: Any, check: Any, **build: Any) -> None:
    """Run `check(client)` against `build_mcp(memory, **build)` through the SDK's client."""

    async def main() -> None:
        async with Client(build_mcp(memory, **build)) as client:
            await check(client)

    anyio.run(main)


def test_search_and_context_take_reference_time_as_memory_does(
    tmp_path, llm_server, hashing
) -> None:
    """`reference_time` is the "now" of "last year" in `Memory.search`/`context` and REST;
    the MCP tools took no such argument (an unknown one is dropped by the SDK), so the same
    question was read against today."""
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    memory.add("Alice works at Acme", user_id="alice", infer=False, timestamp="2023-05-01")
    question = {"query": "what did Alice do last year", "user_id": "alice"}

    async def check(client: Client) -> None:
        for ref, boosted in [("2024-03-01T00:00:00Z", True), ("2026-03-01T00:00:00Z", False)]:
            hits = await client.call_tool("search_memory", {**question, "reference_time": ref})
            assert not hits.is_error, hits.content
            same = memory.search(**question, reference_time=ref).model_dump(mode="json")
            assert hits.structured_content == same
            assert ("time" in same["facts"][0]["sources"]) is boosted
            text = await client.call_tool("get_context", {**question, "reference_time": ref})
            assert text.structured_content["result"] == memory.context(
                **question, reference_time=ref
            )
        for tool in ("search_memory", "get_context"):
            bad = await client.call_tool(tool, {**question, "reference_time": "soon"})
            assert bad.is_error and "'soon'" in bad.content[0].text, bad.content

    try:
        _in_process(memory, check)
    finally:
        memory.close()


def test_tools_keep_the_service_limits(tmp_path, llm_server, hashing) -> None:
    """The request limits REST checks (`Limits`: `max_limit` 100, query length, messages per
    add; `max_tokens` up to 100,000) bound the MCP tools too, stated in their schemas: over
    MCP a key could ask a search for 100,000,000 results (`validation.MAX_LIMIT`)."""
    from mem0g.service.settings import Limits

    memory = service_memory(tmp_path / "store", llm_server, hashing)
    memory.add("a note", user_id="alice", infer=False)
    many = [{"content": f"note {i}"} for i in range(4)]
    over = [("search_memory", {"query": "note", "limit": 21}),
            ("get_context", {"query": "note", "limit": 21}),
            ("search_memory", {"query": "n" * 51}),
            ("get_context", {"query": "note", "max_tokens": 100_001}),
            ("add_memory", {"messages": many, "infer": False})]  # fmt: skip

    async def configured(client: Client) -> None:
        tools = {t.name: t.input_schema["properties"] for t in (await client.list_tools()).tools}
        assert tools["search_memory"]["limit"]["maximum"] == 20
        for tool, args in over:
            refused = await client.call_tool(tool, {"user_id": "alice", **args})
            assert refused.is_error, (tool, refused.content)
        ok = await client.call_tool("search_memory", {"user_id": "alice", "query": "note",
                                                      "limit": 20})  # fmt: skip
        assert not ok.is_error and len(ok.structured_content["facts"]) == 1

    async def default(client: Client) -> None:
        big = await client.call_tool("search_memory", {"user_id": "alice", "query": "note",
                                                       "limit": 101})  # fmt: skip
        assert big.is_error and "100" in big.content[0].text, big.content

    try:
        limits = Limits(max_limit=20, max_query_chars=50, max_messages=3)
        _in_process(memory, configured, limits=limits)
        _in_process(memory, default)
        assert memory.stats(user_id="alice").episodes == 1
    finally:
        memory.close()


def test_an_empty_id_is_refused_not_read_as_the_configured_tenant(
    tmp_path, llm_server, hashing
) -> None:
    """`user_id=""` is a bad id (`Memory` and REST refuse it), not "no id": read as none, the
    call went to the server's configured tenant, so a client whose user id came out empty
    wrote into and read the configured user's memory."""
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    memory.add("alice's locker code is 4521", user_id="alice", infer=False)

    async def check(client: Client) -> None:
        for tool, args in [("add_memory", {"messages": "bob's note", "infer": False}),
                           ("search_memory", {"query": "locker code"}),
                           ("list_entities", {})]:  # fmt: skip
            for ids in ({"user_id": ""}, {"agent_id": ""}, {"user_id": "", "run_id": ""}):
                refused = await client.call_tool(tool, {**args, **ids})
                assert refused.is_error and "empty" in refused.content[0].text, (tool, ids)

    try:
        _in_process(memory, check, user_id="alice")
        assert [f.text for f in memory.get_all(user_id="alice").facts] == [
            "alice's locker code is 4521"
        ]
    finally:
        memory.close()


def test_a_store_failure_is_a_tool_error_that_says_so(tmp_path, llm_server, hashing) -> None:
    """A store that cannot answer is REST's 503 with the store's one-line reason; over MCP it
    was a crash ("Error executing tool search_memory", the reason left in the server log)."""
    from mem0g.stores.base import PlanConflict, StoreError

    memory = service_memory(tmp_path / "store", llm_server, hashing)

    def down(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("the graph store is unavailable: connection refused")

    def raced(*args: Any, **kwargs: Any) -> Any:
        raise PlanConflict("another writer changed the tenant; nothing was written")

    memory.search = down  # type: ignore[method-assign]
    memory.delete = raced  # type: ignore[method-assign]

    async def check(client: Client) -> None:
        for tool, args, reason in [
            ("search_memory", {"query": "q"}, "connection refused"),
            ("delete_memory", {"memory_id": "f1"}, "another writer"),
        ]:
            failed = await client.call_tool(tool, {"user_id": "alice", **args})
            assert failed.is_error and reason in failed.content[0].text, failed.content

    try:
        _in_process(memory, check)
    finally:
        memory.close()
