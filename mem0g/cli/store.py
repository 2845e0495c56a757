"""The commands on a store as a whole: `dump`, `stats`, `reindex`, `doctor` (config, LLM,
embedder and store checks), `warmup` (a Neo4j server's, in the foreground), `demo`, `reset`
and `delete` (a tenant's data)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, cast

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from mem0g import export
from mem0g.cli.common import (
    EXIT_FAILURE,
    STDIO,
    AgentOpt,
    JsonOpt,
    RunOpt,
    UserOpt,
    _describe,
    _err,
    _location,
    _out,
    _print_json,
    _reason,
    _say,
    _state,
    _tenant,
    app,
)
from mem0g.config import MemoryConfig, resolve_setting
from mem0g.embed import make_embedder
from mem0g.llm.client import LLMClient, LLMError
from mem0g.memory.upkeep import check_delete_scope
from mem0g.stores import make_store
from mem0g.stores.base import VECTOR_KINDS, GraphStore, WarmupStatus, wait_until_ended
from mem0g.types import Tenant

# ---------------------------------------------------------------- dump and stats


class DumpFormat(str, Enum):
    json = "json"
    graphml = "graphml"
    cypher = "cypher"
    mermaid = "mermaid"
    html = "html"  # the graph explorer page (mem0g/service/explorer.py), one offline file


@app.command()
def dump(
    ctx: typer.Context,
    fmt: Annotated[DumpFormat, typer.Option("--format", "-F", help="Output format.")] = (
        DumpFormat.json
    ),
    include_invalid: Annotated[
        bool,
        typer.Option("--include-invalid/--current-only", help="Keep ended facts (history) or not."),
    ] = True,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write here instead of stdout (-: stdout)."),
    ] = None,
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
) -> None:
    """Dump a tenant's graph (or, with no tenant given, every tenant's) as JSON, GraphML, a
    Neo4j Cypher script, Mermaid or the HTML graph explorer."""
    output = None if output == STDIO else output  # "-o -" wrote a file named "-"
    ids = {"user_id": user, "agent_id": agent, "run_id": run}
    scoped = any(ids.values())
    with _state(ctx).memory(embeddings=False) as memory:
        if scoped:
            snapshot = memory.get_all(**ids, include_invalid=include_invalid)
        else:
            snapshot = memory.get_everything(include_invalid=include_invalid)
        tenant = Tenant(**ids) if scoped else None
        episodes = export.html_episodes(memory, tenant) if fmt.value == "html" else []
    text = export.dump(snapshot, fmt.value, tenant=tenant, episodes=episodes)
    if output is None:
        typer.echo(text, nl=False)
        return
    from mem0g.archive import replacing

    with replacing(output) as handle:  # a failed write keeps the file it would replace
        handle.write(text)
    count = f"{len(snapshot.entities)} entities and {len(snapshot.relations)} relations"
    _say(_err(), f"wrote {count} to {output}")


@app.command()
def stats(
    ctx: typer.Context,
    as_json: JsonOpt = False,
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
) -> None:
    """Counts for a tenant, or for the whole store when no tenant is given."""
    ids = {"user_id": user, "agent_id": agent, "run_id": run}
    state = _state(ctx)
    with state.memory(embeddings=False) as memory:
        counts = memory.stats(**ids)
    absent = {name for name in ("warmup", "local_copy") if getattr(counts, name) is None}
    data = counts.model_dump(exclude=absent)
    if as_json:
        _print_json(data)
        return
    table = Table("", "count", title=Text(f"{_describe(ids)} in {_location(state.config())}"))
    for name, value in data.items():
        if name == "warmup" and counts.warmup is not None:
            w = counts.warmup
            value = f"{w.state}, {w.seconds:.1f} s, {_warmup_detail(w)}"
        if name == "local_copy" and counts.local_copy is not None:
            c = counts.local_copy
            value = (f"{c.tenants} of at most {c.limit} tenants held, {c.answered} searches "
                     f"answered, {c.declined} left to the server, {c.copied} tenants copied "
                     f"whole, {c.caught_up} plans caught up by, {c.evicted} tenants deleted "
                     "for the limit")  # fmt: skip
        table.add_row(name.replace("_", " "), str(value))
    _out().print(table)


# the choices of `reindex --kind`, from the stores' own list
IndexKind = Enum("IndexKind", {kind: kind for kind in VECTOR_KINDS}, type=str)  # type: ignore[misc]


_REINDEX_HELP = (
    "Rebuild the store's vector indexes, each in one pass. Neo4j writes an index fed by many "
    "small adds as many small pieces, and searches slow down as they pile up: run this after a "
    "bulk load or now and then (44-53 s for a 100k-edge store on 2 cores here). Searches keep "
    "working meanwhile, answered by exact scans. The embedded store keeps no index: nothing to "
    "do."
)


@app.command(help=_REINDEX_HELP)
def reindex(
    ctx: typer.Context,
    kinds: Annotated[
        list[IndexKind] | None,
        typer.Option("--kind", help="Only this index (repeatable); default: all three."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Rebuild the store's vector indexes, each in one pass (see _REINDEX_HELP)."""
    state = _state(ctx)
    where = _location(state.config())
    progress = Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        console=_err(),
        disable=as_json,
    )
    bars: dict[str, Any] = {}

    def advance(kind: str, percent: float) -> None:
        if kind not in bars:
            bars[kind] = progress.add_task(f"{kind} index", total=100.0)
        progress.update(bars[kind], completed=percent)

    with state.memory(embeddings=False) as memory, progress:
        chosen = None if not kinds else [kind.value for kind in kinds]
        done = memory.rebuild_indexes(chosen, progress=advance)
    if as_json:
        _print_json([item.model_dump() for item in done])
        return
    if not done:
        _say(_out(), f"nothing to rebuild: {where} keeps no vector index")
        return
    table = Table("index", "kind", "seconds", title=Text(f"rebuilt in {where}"))
    for item in done:
        table.add_row(item.index, item.kind, f"{item.seconds:.1f}")
    _out().print(table)


# ---------------------------------------------------------------- doctor


def _mask(secret: str | None) -> str:
    """Enough to recognise which key is set, never enough to use it."""
    if not secret:
        return "unset"
    return f"***{secret[-4:]}" if len(secret) >= 16 else "***"


def _settings_line(config: MemoryConfig) -> str:
    llm, emb = config.llm, config.embedder
    url = resolve_setting("llm", "base_url", llm.base_url, "OPENAI_BASE_URL")
    key = resolve_setting("llm", "api_key", llm.api_key, "OPENAI_API_KEY")
    return (
        f"llm: {llm.provider} {llm.model} at {url.value or 'default URL'} ({url.source}), "
        f"key {_mask(key.value)} ({key.source}); "
        f"embedder: {emb.provider} {emb.model or 'default model'}"
        + (f", key {_mask(emb.api_key)}" if emb.provider == "openai" else "")
        + f"; store: {_store_settings(config)}"
    )


def _store_settings(config: MemoryConfig) -> str:
    """Each Neo4j setting as resolved, with where it came from (config, MEM0G_*, NEO4J_*)."""
    store = config.graph_store
    if store.provider != "neo4j":
        return f"embedded {store.resolved_path()}"
    url, user, password = store.resolved_url(), store.resolved_username(), store.resolved_password()
    return (
        f"neo4j {url.value or 'no URL'} ({url.source}), user {user.value} ({user.source}), "
        f"password {_mask(password.value)} ({password.source})"
    )


def _open_store(config: MemoryConfig, dims: int | None) -> GraphStore:
    """Either store opens without knowing the dimensions (it reads them from its data)."""
    return make_store(config, dims)


def _probe_mode(client: LLMClient, detail: str) -> tuple[str, str, str]:
    """One small call finds the structured-output mode the endpoint takes (with fallback)."""
    try:
        mode = client.probe()
    except LLMError as err:
        return "llm", "warn", f"{detail}; structured output not verified: {_reason(err)}"
    tried = f" (after {'; '.join(client.fallbacks)})" if client.fallbacks else ""
    return "llm", "ok", f"{detail}; structured output: mode {mode} works{tried}"


def _store_check(
    config: MemoryConfig, dims: int | None, check: Callable[[str, str, str], None]
) -> None:
    try:
        # opened without its own warm-up: doctor runs one itself, and waits for it
        quiet = config.graph_store.model_copy(update={"warmup": False})
        store = _open_store(config.model_copy(update={"graph_store": quiet}), dims)
        try:
            counts = store.stats()
            upgraded = _schema_upgrade(store, config)
            warmup = _warm(store, config)
        finally:
            store.close()
        check(
            "store",
            "ok",
            f"{_location(config)}: {counts.entities} entities, {counts.relations} "
            f"relations, {counts.episodes} episodes, {counts.tenants} tenants{upgraded}{warmup}",
        )
    except Exception as err:
        check("store", "fail", _reason(err))


def _schema_upgrade(store: GraphStore, config: MemoryConfig) -> str:
    """What opening the store changed in the database's schema (Neo4j): a store that finds an
    older layout or missing indexes brings them up to date, doctor's store as any other."""
    if config.graph_store.provider != "neo4j":
        return ""
    from mem0g.stores.neo4j import Neo4jGraphStore

    neo4j_store = cast(Neo4jGraphStore, store)
    if not neo4j_store.schema_gaps:
        return ""
    gaps = "; ".join(neo4j_store.schema_gaps)
    return f"; schema brought up to date in {neo4j_store.schema_seconds or 0.0:.1f} s ({gaps})"


def _copy_check(path: str, limit: int) -> tuple[str, str, str]:
    """The client-held copy (`graph_store.local_copy`): what its directory holds, read
    without opening it (a running client holds it)."""
    from mem0g.memory.copy import peek

    try:
        found = peek(Path(path))
    except Exception as err:  # unreadable: the copy reports it when opened, doctor says it now
        return ("local copy", "fail", f"{path}: {_reason(err)}")
    if found is None:
        return ("local copy", "ok", f"{path}: none made yet; searches make it (at most "
                f"{limit} tenants)")  # fmt: skip
    use = "; in use by a running process" if found.in_use else ""
    return ("local copy", "ok", f"{path}: {found.tenants} of at most {limit} tenants held, "
            f"{found.size_bytes / 1e6:.1f} MB on disk{use}")  # fmt: skip


DOCTOR_WARMUP_CAP = 30.0
"""Seconds of warm-up work doctor waits for at most: a check, not a deploy step (the bound,
120 s by default, is for `mem0g warmup` and the store's background warm-up)."""


def _warm(store: GraphStore, config: MemoryConfig) -> str:
    """How long the server's warm-up takes when a store opens (Neo4j): doctor runs one,
    for at most DOCTOR_WARMUP_CAP seconds of its work."""
    settings = config.graph_store
    if settings.provider != "neo4j":
        return ""
    if not settings.warmup:
        return "; warm-up off (graph_store.warmup)"
    from mem0g.stores.neo4j import Neo4jGraphStore

    bound = min(settings.warmup_seconds, DOCTOR_WARMUP_CAP)
    warmup = cast(Neo4jGraphStore, store).start_warmup(bound)
    warmup.join(bound + 10)
    status = warmup.status
    if status.state == "failed":
        return f"; warm-up failed after {status.seconds:.1f} s: {status.error}"
    capped = ""
    if bound < settings.warmup_seconds and not status.settled and not status.stood_down:
        capped = f"; doctor stops at {bound:g} s, `mem0g warmup` runs it to the end"
    detail = _warmup_detail(status)
    return f"; warm-up {status.state} in {status.seconds:.1f} s ({detail}){capped}"


def _warmup_detail(status: WarmupStatus) -> str:
    """What a warm-up did: its searches over the store's own data (by rounds of `shapes`),
    the statements read apart against the empty tenant, and whether the rounds settled."""
    if status.shapes:
        done = (
            f"{status.searches} searches of its own data ({status.shapes} a round), "
            f"{status.planned_apart} statements read apart, {status.rounds} rounds"
        )
    else:
        done = f"{status.rounds} rounds of {status.statements} read statements (an empty store)"
    if status.stood_down:
        return f"{done}, stood down: {status.real_calls} real reads had warmed the server"
    return f"{done}, {'settled' if status.settled else 'not settled within the bound'}"


@app.command()
def doctor(ctx: typer.Context) -> None:
    """Check the config, the LLM endpoint, the embedder and the store."""
    checks: list[tuple[str, str, str]] = []

    def check(name: str, status: str, detail: str) -> None:
        checks.append((name, status, detail))

    state = _state(ctx)
    config: MemoryConfig | None = None
    try:
        config = state.config()
        check("config", "ok", _settings_line(config))
    except ValueError as err:
        check("config", "fail", _reason(err))
    if config is not None:
        try:
            client = LLMClient(config.llm)
        except LLMError as err:
            check("llm", "warn", f"not configured: {_reason(err)}")
        else:
            try:
                started = time.perf_counter()
                models = client.ping()
                took = (time.perf_counter() - started) * 1000
                listed = "listed" if config.llm.model in models else "not listed"
                detail = (
                    f"reachable in {took:.0f} ms; {len(models)} model(s), "
                    f"{config.llm.model} {listed}"
                )
            except LLMError as err:
                check("llm", "fail", _reason(err))
            else:
                check(*_probe_mode(client, detail))
        dims: int | None = None
        try:
            started = time.perf_counter()
            embedder = make_embedder(config.embedder)
            vector = embedder.embed(["mem0g doctor"])[0]
            took = (time.perf_counter() - started) * 1000
            dims = int(vector.shape[0])
            check("embedder", "ok", f"{embedder.name}: {dims} dims, {took:.0f} ms")
        except Exception as err:  # any failure to load or run a model is this check's result
            check("embedder", "fail", _reason(err))
        where = config.graph_store.resolved_path()
        if config.graph_store.provider == "embedded" and not (where / "graph.db").is_file():
            kind = "is a file, not a directory" if where.is_file() else "holds no store yet"
            status = "fail" if where.is_file() else "warn"
            check("store", status, f"{where} {kind}; the first `mem0g add` creates one")
        else:
            _store_check(config, dims, check)
        if config.graph_store.local_copy is not None:
            check(
                *_copy_check(config.graph_store.local_copy, config.graph_store.local_copy_tenants)
            )
    styles = {"ok": "green", "warn": "yellow", "fail": "red"}
    table = Table("check", "status", "detail", title="mem0g doctor")
    for name, status, detail in checks:
        table.add_row(name, Text(status, style=styles[status]), Text(detail))
    _out().print(table)
    if any(status == "fail" for _, status, _ in checks):
        raise typer.Exit(EXIT_FAILURE)


@app.command()
def warmup(
    ctx: typer.Context,
    seconds: Annotated[
        float | None,
        typer.Option(
            "--seconds",
            min=0.1,
            help="The warm-up's bound, in seconds of its own work (default: "
            "graph_store.warmup_seconds).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Warm a freshly started Neo4j server's read paths, in the foreground, then exit.

    Run it after the server starts and before traffic arrives (a deploy step, or
    `scripts/neo4j start && mem0g warmup`): the server plans and compiles the search and
    add paths over this store's own data, so the first real searches are fast. It reads
    only; a progress line every 5 s goes to stderr. The embedded store runs inside each
    process and has no server to warm."""
    config = _state(ctx).config()
    settings = config.graph_store
    if settings.provider != "neo4j":
        _say(_err(), "the embedded store runs inside each process: it has no server to warm")
        return
    bound = seconds if seconds is not None else settings.warmup_seconds
    quiet = settings.model_copy(update={"warmup": False})
    from mem0g.stores.neo4j import Neo4jGraphStore

    store = cast(
        Neo4jGraphStore, _open_store(config.model_copy(update={"graph_store": quiet}), None)
    )
    # the command reports a failure itself: the warm-up's own warning would say it twice
    warm_log = logging.getLogger("mem0g.stores.neo4j.warmup")
    was_disabled, warm_log.disabled = warm_log.disabled, True
    try:
        _say(_err(), f"warming {_location(config)} for at most {bound:g} s of its own work")
        running = store.start_warmup(bound)

        def show(status: WarmupStatus) -> None:
            _say(_err(), f"  {status.seconds:.0f} s: {status.rounds} rounds, "
                 f"{status.searches} searches of its own data")  # fmt: skip

        status = wait_until_ended(lambda: running.status, progress=show)
    finally:
        warm_log.disabled = was_disabled
        store.close()
    if as_json:
        _print_json(status.model_dump(mode="json"))
    elif status.state == "failed":
        _say(_err(), f"warm-up failed after {status.seconds:.1f} s: {status.error}", "red")
    else:
        _say(_out(), f"warm-up {status.state} in {status.seconds:.1f} s ({_warmup_detail(status)})")
    if status.state == "failed":
        raise typer.Exit(EXIT_FAILURE)


# ---------------------------------------------------------------- demo, reset, delete


@app.command()
def demo(
    ctx: typer.Context,
    live: Annotated[
        bool | None,
        typer.Option(
            "--live/--scripted",
            help="A real LLM, or the scripted test-double server (default: decided by the demo).",
        ),
    ] = None,
    path: Annotated[
        Path | None, typer.Option("--path", help="Store directory (default: a fresh temp dir).")
    ] = None,
) -> None:
    """Ingest the bundled multi-session sample, show the graph, the facts and their history,
    answer queries."""
    from mem0g.demo import run  # loads rich tables and the sample only when asked for

    # None lets the demo use (and then remove) a temporary store of its own
    raise typer.Exit(run(_out(), live, path or _state(ctx).path))


@app.command()
def reset(
    ctx: typer.Context,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete everything in the store, every tenant."""
    state = _state(ctx)
    where = _location(state.config())
    with state.memory(embeddings=False) as memory:  # no store there: said before asking
        if not yes:
            typer.confirm(f"Delete every memory of every tenant in {where}?", abort=True)
        with _err().status(f"resetting {where}"):  # a large Neo4j store takes a while
            memory.reset()
    _say(_out(), f"reset {where}")


@app.command()
def delete(
    ctx: typer.Context,
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
    all_users: Annotated[
        bool, typer.Option("--all-users", help="Confirm a delete without --user (every user).")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete every entity, relation, fact (with its history) and episode of a tenant (unset
    ids match any); asks first, as `reset` does, saying how much."""
    ids = _tenant(user, agent, run)
    kinds = ("entities", "relations", "facts", "episodes")
    with _state(ctx).memory(embeddings=False) as memory:
        check_delete_scope(Tenant(**ids), all_users)  # refused before asking
        before = memory.stats(**ids)
        counts = ", ".join(f"{getattr(before, kind)} {kind}" for kind in kinds)
        if not yes and any(getattr(before, kind) for kind in kinds):
            typer.confirm(f"Delete {counts} of {_describe(ids)}?", abort=True)
        with _err().status(f"deleting {counts} of {_describe(ids)}"):  # 100k edges: ~20 s
            memory.delete_all(**ids, all_users=all_users)
    _say(_out(), f"deleted {counts} of {_describe(ids)}, with their history")
