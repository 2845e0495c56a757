"""CLI commands of the doors, registered onto `mem0g.cli.app` by `register`: `mem0g serve`,
`mem0g mcp` and `mem0g keys add`. Kept out of cli.py so the command line grows by one line;
each command builds a `Memory` the way every other command does (`--config`, `--path`,
`MEM0G_*`) and hands it to its door."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer


class Transport(str, Enum):
    stdio = "stdio"
    http = "http"


class ScopeName(str, Enum):
    read = "read"
    write = "write"
    admin = "admin"


def _settings(service_config: Path | None, **overrides: Any) -> Any:
    from mem0g.service.settings import ServiceSettings

    data: dict[str, Any] = {}
    if service_config is not None:
        data = json.loads(service_config.read_text(encoding="utf-8"))
    data.update({k: v for k, v in overrides.items() if v is not None})
    return ServiceSettings(**data)


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(
        ctx: typer.Context,
        host: Annotated[str | None, typer.Option(help="Bind address (default 127.0.0.1).")] = None,
        port: Annotated[int | None, typer.Option(help="Port (default 8000).")] = None,
        keys: Annotated[
            Path | None, typer.Option("--keys", help="API keys file (mem0g keys add).")
        ] = None,
        service_config: Annotated[
            Path | None,
            typer.Option(help="JSON with service settings: limits, queue (MEM0G_SERVICE_*)."),
        ] = None,
        check: Annotated[
            bool, typer.Option("--check", help="Validate settings and keys, open nothing, exit.")
        ] = False,
    ) -> None:
        """Serve the REST API (/v1, OpenAPI at /openapi.json, explorer at /ui)."""
        from mem0g.cli.common import _say, _state
        from mem0g.service.auth import Keyring
        from mem0g.service.settings import check_bind, limit_inference_threads

        settings = _settings(service_config, host=host, port=port, keys_file=keys)
        limit_inference_threads(settings.inference_threads)
        ring = Keyring.load(settings.keys_file)
        check_bind(settings.host, ring.configured)
        state = _state(ctx)
        config = state.config()
        if check:
            access = f"{len(ring.entries or [])} keys" if ring.configured else "open (no keys)"
            where = f"http://{settings.host}:{settings.port}"
            _say(_console(), f"ok: {where}, {access}, store {config.graph_store.provider}")
            return
        from mem0g.service.app import serve as run

        run(_server_memory(ctx), settings)

    @app.command()
    def mcp(
        ctx: typer.Context,
        transport: Annotated[Transport, typer.Option(help="stdio or streamable HTTP.")] = (
            Transport.stdio
        ),
        host: Annotated[
            str, typer.Option(help="HTTP bind address (other than loopback: keys required).")
        ] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="HTTP port (path /mcp).")] = 8001,
        user: Annotated[str | None, typer.Option("--user", "-u", help="Default user_id.")] = None,
        agent: Annotated[str | None, typer.Option("--agent", help="Default agent_id.")] = None,
        run: Annotated[str | None, typer.Option("--run", help="Default run_id.")] = None,
        keys: Annotated[Path | None, typer.Option("--keys", help="API keys file.")] = None,
        api_key: Annotated[
            str | None,
            typer.Option(
                envvar="MEM0G_API_KEY",
                help="stdio: the key whose grants bound every call (HTTP: each request's own "
                "Authorization: Bearer key counts instead).",
            ),
        ] = None,
    ) -> None:
        """Serve memory to MCP clients (Claude Desktop, Cursor, ...) over stdio or HTTP."""
        from mem0g.service.app import freeze_startup_heap, release_startup_heap
        from mem0g.service.auth import OPEN, Keyring
        from mem0g.service.mcp_server import build_mcp, serve_mcp
        from mem0g.service.settings import check_bind, limit_inference_threads

        settings = _settings(None)
        limit_inference_threads(settings.inference_threads)
        ring = Keyring.load(keys or settings.keys_file)
        if transport is Transport.http:  # every request brings its own key (keys file)
            check_bind(host, ring.configured)
            principal, per_request = OPEN, ring  # (the principal is then ignored)
        else:  # stdio: one local client, one key
            found = ring.authenticate(api_key)
            if found is None:
                raise ValueError("a valid --api-key (MEM0G_API_KEY) is required with a keys file")
            principal, per_request = found, None
        memory = _server_memory(ctx)
        frozen = False
        try:
            server = build_mcp(
                memory, principal=principal, keys=per_request,
                user_id=user, agent_id=agent, run_id=run, limits=settings.limits,
            )  # fmt: skip
            if settings.gc_freeze:  # as `serve` does at startup (app.freeze_startup_heap)
                freeze_startup_heap()
                frozen = True
            serve_mcp(server, transport.value, host, port)
        finally:
            if frozen:
                release_startup_heap()
            memory.close()

    keys_app = typer.Typer(name="keys", help="API keys for mem0g serve / mem0g mcp.")
    app.add_typer(keys_app)

    @keys_app.command("add")
    def keys_add(
        name: Annotated[str, typer.Argument(help="A name for the key (shown in logs).")],
        keys: Annotated[Path, typer.Option("--keys", help="The keys file (made if missing).")],
        scope: Annotated[list[ScopeName], typer.Option("--scope", help="read/write/admin.")],
        user: Annotated[list[str] | None, typer.Option("--user", help="user_id grant.")] = None,
        user_prefix: Annotated[
            list[str] | None, typer.Option("--user-prefix", help="user_id prefix grant.")
        ] = None,
        agent: Annotated[list[str] | None, typer.Option("--agent", help="agent_id grant.")] = None,
        all_tenants: Annotated[bool, typer.Option("--all-tenants", help="Every tenant.")] = False,
    ) -> None:
        """Create a key, store its hash, print the key once."""
        from mem0g.service.auth import Grant, Prefix, add_key

        grants = [Grant(user_id=u) for u in user or []]
        grants += [Grant(user_id=Prefix(prefix=p)) for p in user_prefix or []]
        grants += [Grant(agent_id=a) for a in agent or []]
        if all_tenants == bool(grants):
            raise ValueError("give --all-tenants or at least one --user/--user-prefix/--agent")
        key = add_key(keys, name, [s.value for s in scope], "*" if all_tenants else grants)
        typer.echo(key)


def _server_memory(ctx: typer.Context) -> Any:
    """The command's `Memory`, for a long-running server: it may start a new embedded store
    (it takes adds), and keeps the config's Neo4j warm-up (one-shot commands switch it off)."""
    from mem0g.cli.common import _check_store_path, _state
    from mem0g.memory import Memory

    config = _state(ctx).config()
    _check_store_path(config, True)
    return Memory(config)


def _console() -> Any:
    from rich.console import Console

    return Console(highlight=False)
