"""`mem0g mcp`: the Model Context Protocol door (official `mcp` SDK), over stdio or
streamable HTTP, onto one `Memory`.

Tools: add_memory, search_memory (as_of, include_invalid, reference_time), get_entity (the
entity, its edges over time and its merge history), list_entities, get_memory /
update_memory / delete_memory / memory_history (a fact, by id), get_context (the
answer-prompt block). Resources: `mem0g://graph/{user_id}`, a user's graph export (the JSON
dump, history included), and `mem0g://graph` for the configured tenant.

The tenant of a call is what it names, else the server's configured one (`--user/--agent/
--run`); either way it must be within the caller's key, checked exactly as the REST service
checks it (scope, then tenant grant, before anything is touched). Who the caller is:
- over streamable HTTP with a keys file, every HTTP request brings its own key
  (`Authorization: Bearer KEY`), verified against the keys file through the SDK's bearer-auth
  middleware (`KeysVerifier`: hashed keys, constant-time compare). No or an unknown key: HTTP
  401 before any MCP message is read. A key outside its scope or grant: the tool call fails
  with "forbidden: ..." (MCP reports tool errors in-band, the analogue of REST's 403) and
  nothing is touched. The SDK binds a session to the key that opened it, so another key cannot
  ride on it. With keys, HTTP may bind any address (like `mem0g serve`);
- over stdio, the one local client that launched us: the key is `--api-key`;
- no keys file: open (every call an admin), and HTTP binds loopback only.
Tool handlers run `Memory` on worker threads, so one slow add does not stall other requests.
Arguments are bounded by the service's `Limits`, as REST's are, and the tools' schemas say so.
(No `from __future__ import annotations`: the SDK reads the tools' annotations, which are
built from the limits inside `build_mcp`, with `eval_str`, where a closure's names are unseen.)
"""

from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import anyio
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, Field

from mem0g import export, validation
from mem0g.llm.client import LLMError
from mem0g.memory import Memory
from mem0g.service.auth import OPEN, Keyring, Principal, Scope, hash_key
from mem0g.service.settings import Limits, is_loopback
from mem0g.stores.base import StoreError
from mem0g.types import (
    AddResult,
    Entity,
    EntityEvent,
    Fact,
    FactEvent,
    FactResult,
    Relation,
    SearchResult,
    Tenant,
)

INSTRUCTIONS = (
    "Long-term graph memory. add_memory stores conversation turns (entities, relations and "
    "facts are extracted); search_memory and get_context recall them, with as_of for the past; "
    "contradicted facts are kept as history (include_invalid=true)."
)

_T = TypeVar("_T")


class EntityView(BaseModel):
    """An entity with its edges over time (oldest valid_from first) and its history."""

    entity: Entity
    relations: list[Relation] = Field(default_factory=list)
    history: list[EntityEvent] = Field(default_factory=list)


class MessageIn(BaseModel):
    role: str = "user"
    content: str
    name: str | None = None
    timestamp: str | None = None


class KeysVerifier:
    """The SDK's `TokenVerifier` over mem0g's keys file: a bearer key is valid when its hash
    is in the file (`Keyring.authenticate`: constant time). The access token carries the key's
    name (the SDK binds sessions to it) and the key's hash, never the key itself."""

    def __init__(self, keys: Keyring) -> None:
        self.keys = keys

    async def verify_token(self, token: str) -> AccessToken | None:
        found = self.keys.authenticate(token)
        if found is None:
            return None
        return AccessToken(token=hash_key(token), client_id=found.name, scopes=sorted(found.scopes))


def _bearer_auth(keys: Keyring) -> dict[str, Any]:
    """MCPServer arguments for per-request keys. `issuer_url` is required by the SDK's
    settings but only published with OAuth routes or resource metadata, neither of which is
    configured here (there is no OAuth server: keys come from the keys file)."""
    settings = AuthSettings(issuer_url="http://127.0.0.1", resource_server_url=None)
    return {"auth": settings, "token_verifier": KeysVerifier(keys)}


def build_mcp(
    memory: Memory,
    *,
    principal: Principal = OPEN,
    keys: Keyring | None = None,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    limits: Limits | None = None,
) -> MCPServer:
    """The MCP server. `keys` (a loaded keys file): each HTTP request is authenticated by its
    own bearer key and `principal` is ignored; else every call is `principal` (stdio).
    `limits`: the request bounds (default: the service's defaults, as `mem0g serve`'s)."""
    limits = limits or Limits()
    Query = Annotated[str, Field(min_length=1, max_length=limits.max_query_chars)]
    Limit = Annotated[int, Field(ge=1, le=limits.max_limit)]
    Tokens = Annotated[int, Field(ge=1, le=100_000)]  # as REST's max_tokens
    Messages = str | Annotated[list[MessageIn], Field(min_length=1, max_length=limits.max_messages)]
    defaults = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
    ring = keys if keys is not None and keys.configured else None  # per-request keys
    server = MCPServer(
        "mem0g", instructions=INSTRUCTIONS, **(_bearer_auth(ring) if ring is not None else {})
    )

    def caller(ctx: Context | None) -> Principal:
        """This request's principal: its bearer key's (per-request mode), else the fixed one.
        Fails closed: per-request mode without an authenticated request refuses."""
        if ring is None:
            return principal
        user = None
        request = ctx.request_context.request if ctx is not None else None
        if request is not None:
            user = request.scope.get("user")
        token = user.access_token if isinstance(user, AuthenticatedUser) else get_access_token()
        found = ring.named(token.client_id) if token is not None else None
        if found is None:
            raise ToolError("unauthenticated: a valid API key is required (Bearer KEY)")
        return found

    def scope(
        scope: Scope, given: dict[str, str | None], ctx: Context | None = None
    ) -> dict[str, str | None]:
        """The call's ids, else the configured ones; refused outside the key's grant. An
        empty id is a bad id (as in `Memory` and REST), not "none": else a client whose id
        came out empty would reach the configured tenant."""
        principal = caller(ctx)
        ids = given if any(v is not None for v in given.values()) else defaults
        if all(v is None for v in ids.values()):
            raise ToolError("name a tenant: user_id, agent_id or run_id (none is configured)")
        try:
            tenant = validation.tenant(memory.config.limits, **ids)
        except ValueError as err:
            raise ToolError(" ".join(str(err).split())) from err
        if not principal.has(scope):
            raise ToolError(f"forbidden: key {principal.name!r} lacks the {scope!r} scope")
        if not principal.reaches(tenant):
            raise ToolError(f"forbidden: key {principal.name!r} may not reach this tenant")
        return ids

    async def run(fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """`fn` on a worker thread; expected failures become the tool's error text, as REST
        gives them a status and detail (a store that cannot answer: its one-line reason, as
        REST's 503). An unexpected one stays a crash: logged with its traceback, a generic
        message sent."""
        try:
            return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
        except (ValueError, LookupError, LLMError, StoreError) as err:
            text = str(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
            raise ToolError(" ".join(text.split())) from err

    @server.tool()
    async def add_memory(
        messages: Messages,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        timestamp: str | None = None,
        infer: bool = True,
        ctx: Context | None = None,
    ) -> AddResult:
        """Remember conversation turns: a text, or messages {role, content, name, timestamp}.
        `infer=false` stores the text verbatim as facts (no extraction)."""
        ids = scope("write", {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}, ctx)
        items = messages if isinstance(messages, str) else [m.model_dump() for m in messages]
        return await run(memory.add, items, **ids, timestamp=timestamp, infer=infer)

    @server.tool()
    async def search_memory(
        query: Query,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: Limit = 10,
        as_of: str | None = None,
        include_invalid: bool = False,
        reference_time: str | None = None,
        ctx: Context | None = None,
    ) -> SearchResult:
        """Relations and facts relevant to `query`, best first. `as_of` (ISO date): the graph
        as it was then; `include_invalid`: contradicted (ended) relations too;
        `reference_time` (ISO date, default now): the "now" of "last year" in the query."""
        ids = scope("read", {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}, ctx)
        return await run(memory.search, query, **ids, limit=limit, as_of=as_of,
                         include_invalid=include_invalid,
                         reference_time=reference_time)  # fmt: skip

    @server.tool()
    async def get_context(
        query: Query,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: Limit = 10,
        max_tokens: Tokens = 1000,
        as_of: str | None = None,
        reference_time: str | None = None,
        ctx: Context | None = None,
    ) -> str:
        """The memory block for an answer prompt: "Memories for user X" and "Relations for
        user X", timestamped, within `max_tokens`; `as_of` and `reference_time` as in
        search_memory."""
        ids = scope("read", {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}, ctx)
        return await run(memory.context, query, **ids, limit=limit, max_tokens=max_tokens,
                         as_of=as_of, reference_time=reference_time)  # fmt: skip

    @server.tool()
    async def list_entities(
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        ctx: Context | None = None,
    ) -> list[Entity]:
        """Every entity of the tenant (id, name, type, aliases)."""
        ids = scope("read", {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}, ctx)
        return await run(memory.list_entities, **ids)

    @server.tool()
    async def get_entity(
        entity_id: str,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        ctx: Context | None = None,
    ) -> EntityView:
        """One entity with every edge at it over time (ended ones too: valid_from ->
        invalid_at) and its merge/split/rename history."""
        ids = scope("read", {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}, ctx)
        entity = await run(memory.get_entity, entity_id, **ids)
        if entity is None:
            raise ToolError(f"no entity {entity_id!r} for this tenant")
        relations = await run(memory.entity_relations, entity_id, **ids, include_invalid=True)
        relations.sort(key=lambda r: (r.valid_from or r.created_at, r.created_at))
        history = await run(memory.entity_history, entity_id, **ids)
        return EntityView(entity=entity, relations=relations, history=history)

    @server.tool()
    async def delete_memory(
        memory_id: str,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        ctx: Context | None = None,
    ) -> FactResult:
        """Delete one fact by id (from search_memory's facts); its history is kept."""
        ids = scope("write", {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}, ctx)
        return await run(memory.delete, memory_id, **ids)

    @server.tool()
    async def get_memory(
        memory_id: str,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        ctx: Context | None = None,
    ) -> Fact:
        """One fact by id (from search_memory's facts); another tenant's id is unknown."""
        ids = scope("read", {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}, ctx)
        found = await run(memory.get, memory_id, **ids)
        if found is None:
            raise ToolError(f"no fact {memory_id!r} for this tenant")
        return found

    @server.tool()
    async def update_memory(
        memory_id: str,
        text: str,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        ctx: Context | None = None,
    ) -> FactResult:
        """Replace one fact's text (a correction); the old text stays in its history."""
        ids = scope("write", {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}, ctx)
        return await run(memory.update, memory_id, text, **ids)

    @server.tool()
    async def memory_history(
        memory_id: str,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        ctx: Context | None = None,
    ) -> list[FactEvent]:
        """Every change of one fact (ADD, UPDATE, DELETE: old and new text, who, when),
        oldest first, kept after a delete."""
        ids = scope("read", {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}, ctx)
        return await run(memory.history, memory_id, **ids)

    async def graph_of(ids: dict[str, str | None], ctx: Context | None) -> str:
        try:
            ids = scope("read", ids, ctx)
        except ToolError as err:
            raise ResourceError(str(err)) from err
        snapshot = await run(memory.get_all, **ids, include_invalid=True)
        return export.to_json(snapshot, tenant=Tenant(**ids))

    @server.resource("mem0g://graph/{user_id}", mime_type="application/json")
    async def user_graph(user_id: str, ctx: Context | None = None) -> str:
        """A user's graph (entities, relations with history, facts) as mem0g's JSON dump."""
        return await graph_of({"user_id": user_id, "agent_id": None, "run_id": None}, ctx)

    if any(defaults.values()):

        @server.resource("mem0g://graph", mime_type="application/json")
        async def default_graph() -> str:
            """The configured tenant's graph as mem0g's JSON dump."""
            # the SDK injects no Context into static resources: the key is the request's
            # (its auth context variable; the session is bound to that key anyway)
            return await graph_of(dict(defaults), None)

    return server


def transport_security(host: str) -> TransportSecuritySettings | None:
    """DNS-rebinding protection for a loopback bind: the SDK turns it on by itself only for
    127.0.0.1, localhost and ::1, so another loopback address (127.0.0.2, which `check_bind`
    lets an open server use) would answer a web page whose name was rebound to it. Such a
    bind gets the SDK's protection with its own address allowed too. None elsewhere (the SDK's
    default; beyond loopback a keys file is required)."""
    if not is_loopback(host):
        return None
    names = {"127.0.0.1", "localhost", "[::1]", f"[{host}]" if ":" in host else host}
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=sorted(f"{name}:*" for name in names),
        allowed_origins=sorted(f"http://{name}:*" for name in names),
    )


def serve_mcp(server: MCPServer, transport: str, host: str, port: int) -> None:
    """Run over stdio (the client launched us) or streamable HTTP on host:port/mcp."""
    if transport == "stdio":
        server.run("stdio")
        return
    import uvicorn

    app = server.streamable_http_app(host=host, transport_security=transport_security(host))
    uvicorn.run(app, host=host, port=port, log_level="warning")
