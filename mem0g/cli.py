"""The `mem0g` command line: a thin typer layer over `Memory` and `mem0g.export`.

Data goes to stdout (tables, JSON, dumps); progress and errors go to stderr, so output can
be piped. Exit codes: 0 ok, 1 a failure while working (LLM, store, a failed check), 2 bad input,
which includes a fact id the tenant does not have (unknown, deleted, or another tenant's: the
CLI cannot tell them apart, by design of the tenant scope).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, NoReturn, cast

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from mem0g import __version__, export
from mem0g.cli_args import rearrange, tidy_help
from mem0g.config import EmbedderConfig, MemoryConfig, resolve_setting
from mem0g.embed import CachedEmbedder, make_embedder
from mem0g.llm.client import LLMClient, LLMError
from mem0g.memory import Memory, make_store
from mem0g.stores.base import VECTOR_KINDS, GraphStore, StoreError
from mem0g.types import (
    AddResult,
    Event,
    Fact,
    FactEvent,
    FactHit,
    FactResult,
    Message,
    Tenant,
    Usage,
    to_utc,
)

EXIT_FAILURE = 1
EXIT_BAD_INPUT = 2


class InputError(ValueError):
    """Bad input from the command line or a file: reported as one line, exit code 2."""


def _out() -> Console:
    return Console(highlight=False)


def _err() -> Console:
    return Console(stderr=True, highlight=False)


def _reason(err: BaseException) -> str:
    """One line per error: pydantic's multi-line reports become `field: message; ...`."""
    if isinstance(err, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in err.errors()
        )
    return " ".join(str(err).split()) or type(err).__name__


def _say(console: Console, message: str, style: str = "") -> None:
    """Plain text, one line however long: never read as rich markup, never wrapped."""
    console.print(Text(message, style=style), soft_wrap=True)


def _keep_ids(table: Table) -> Table:
    """Id columns are never cut or wrapped (ids are copied into get/history/forget); the other
    columns wrap instead. Below ~70 columns, a long id folds rather than losing characters."""
    for column in table.columns:
        if str(column.header) in ID_HEADERS:
            column.no_wrap, column.overflow, column.min_width = True, "fold", ID_WIDTH
    return table


ID_HEADERS = ("id",)
ID_WIDTH = 32  # a uuid4 hex, the ids mem0g makes


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    _say(_err(), f"Error: {message}", "red")
    raise typer.Exit(code)


class _Group(TyperGroup):
    """Turns mem0g's expected errors into one red line and an exit code (`--debug`: traceback);
    takes global options after the subcommand and tenant options before it (cli_args)."""

    # ctx: a Context of typer's own copy of click or of the click package, by typer version
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        tidy_help(self)
        return super().parse_args(ctx, rearrange(self, ctx, args))

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (ValueError, LLMError, StoreError, OSError) as err:
            if isinstance(ctx.obj, _State) and ctx.obj.debug:
                raise
            _fail(_reason(err), EXIT_BAD_INPUT if isinstance(err, ValueError) else EXIT_FAILURE)


app = typer.Typer(
    name="mem0g",
    cls=_Group,
    help="Graph memory for AI agents: add conversations, search facts, dump the graph.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(__import__("mem0g.eval.cli", fromlist=["eval_app"]).eval_app)  # mem0g eval ...


class _DeferredEmbedder:
    """Loads the embedder on first use: stats, dump, delete and reset never embed, and a local
    model takes seconds to load."""

    def __init__(self, config: EmbedderConfig) -> None:
        self._config = config
        self._real: CachedEmbedder | None = None

    def __getattr__(self, name: str) -> Any:
        if self._real is None:
            self._real = make_embedder(self._config)
        return getattr(self._real, name)


@dataclass
class _State:
    config_file: Path | None = None
    path: Path | None = None
    debug: bool = False
    _config: MemoryConfig | None = field(default=None, repr=False)

    def config(self) -> MemoryConfig:
        """The --config file, --path on top, then MEM0G_* env vars and defaults underneath."""
        if self._config is not None:
            return self._config
        data: dict[str, Any] = {}
        if self.config_file is not None:
            data = _read_json_file(self.config_file)
            if not isinstance(data, dict):
                raise InputError(f"{self.config_file}: the config must be a JSON object")
        if self.path is not None:
            store = data.get("graph_store") or {}
            if not isinstance(store, dict):
                raise InputError(f"{self.config_file}: graph_store must be a JSON object")
            data["graph_store"] = {**store, "path": str(self.path)}
        try:
            self._config = MemoryConfig.load(data)
        except ValidationError as err:
            raise InputError(f"invalid config: {_reason(err)}") from err
        return self._config

    def memory(
        self,
        *,
        embeddings: bool = True,
        summary: bool = True,
        create: bool = False,
        llm: LLMClient | None = None,
    ) -> Memory:
        """A Memory; without `embeddings` the embedded store opens without loading a model;
        without `summary` no background summary refresh runs (an add that must not call the
        LLM). Only a command that adds (`create`) may start a new embedded store: elsewhere a
        mistyped --path must not look like an empty memory."""
        config = self.config()
        _check_store_path(config, create)
        # a one-shot command ends before a server warm-up would pay off (`serve` keeps it)
        store_config = config.graph_store.model_copy(update={"warmup": False})
        config = config.model_copy(update={"graph_store": store_config})
        if not summary:
            config = config.model_copy(
                update={"memory": config.memory.model_copy(update={"summary": False})}
            )
        if embeddings:
            return Memory(config, llm=llm)
        store = make_store(config, None)
        embedder = cast(CachedEmbedder, _DeferredEmbedder(config.embedder))
        return Memory(config, llm=llm, embedder=embedder, store=store)


def _check_store_path(config: MemoryConfig, create: bool) -> None:
    """The embedded store's directory must be a directory, and hold a store unless `create`."""
    if config.graph_store.provider != "embedded":
        return
    where = config.graph_store.resolved_path()
    if where.exists() and not where.is_dir():
        raise InputError(f"store path {where} is a file; --path takes a directory")
    if not create and not (where / "graph.db").is_file():
        raise InputError(
            f"no mem0g store at {where}: check --path (or graph_store.path), or create one "
            "with `mem0g add` or `mem0g demo --path DIR`"
        )


def _state(ctx: typer.Context) -> _State:
    obj = ctx.find_object(_State)
    return obj if obj is not None else _State()


def _location(config: MemoryConfig) -> str:
    store = config.graph_store
    if store.provider == "neo4j":
        return f"neo4j {store.resolved_url().value or '(no URL: set NEO4J_URI)'}"
    return str(store.resolved_path())


def _version(value: bool) -> None:
    if value:
        typer.echo(f"mem0g {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="JSON file with the Memory config dict."),
    ] = None,
    path: Annotated[
        Path | None,
        typer.Option("--path", help="Embedded store directory (sets graph_store.path)."),
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Graph memory for AI agents (the Mem0g design)."""
    ctx.obj = _State(config_file=config, path=path, debug=debug)


# ---------------------------------------------------------------- shared options

UserOpt = Annotated[str | None, typer.Option("--user", "-u", help="user_id of the tenant.")]
AgentOpt = Annotated[str | None, typer.Option("--agent", help="agent_id of the tenant.")]
RunOpt = Annotated[str | None, typer.Option("--run", help="run_id of the tenant.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def _tenant(user: str | None, agent: str | None, run: str | None) -> dict[str, str | None]:
    """Every memory belongs to a tenant, so reads and writes need at least one id."""
    if not (user or agent or run):
        _fail("this command needs a tenant: give --user/-u, --agent or --run")
    return {"user_id": user, "agent_id": agent, "run_id": run}


def _describe(ids: dict[str, str | None]) -> str:
    parts = [f"{k.removesuffix('_id')} {v!r}" for k, v in ids.items() if v]
    return ", ".join(parts) or "the whole store"


def _parse_time(value: object, option: str) -> datetime | None:
    if value is not None and not isinstance(value, str):
        raise InputError(f"{option}: expected an ISO-8601 string, got {value!r}")
    try:
        return to_utc(value)
    except ValueError:
        raise InputError(f"{option}: not an ISO-8601 date or datetime: {value!r}") from None


def _when(value: datetime | None) -> str:
    if value is None:
        return ""
    if (value.hour, value.minute, value.second, value.microsecond) == (0, 0, 0, 0):
        return value.date().isoformat()
    return value.strftime("%Y-%m-%d %H:%M")


def _print_json(data: Any) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def _said(fact: Fact | FactHit) -> datetime:
    """When a fact was said (its conversation's time), else when it was stored."""
    return fact.provenance[0].timestamp if fact.provenance else fact.created_at


def _unknown_fact(fact_id: str, ids: dict[str, str | None]) -> NoReturn:
    _fail(f"no fact {fact_id!r} for {_describe(ids)}")


# ---------------------------------------------------------------- input files


@dataclass
class EpisodeInput:
    """One future `Memory.add`: its messages, time, and where in the file it came from."""

    messages: list[Message]
    timestamp: datetime | None
    where: str


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror or err}") from None


def _json_error(path: Path, err: json.JSONDecodeError) -> InputError:
    return InputError(f"{path}: invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}")


def _read_json_file(path: Path) -> Any:
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError as err:
        raise _json_error(path, err) from None


def _message(obj: Any, where: str) -> Message:
    if not isinstance(obj, dict):
        raise InputError(f"{where}: a message must be a JSON object, got {type(obj).__name__}")
    if not isinstance(obj.get("content"), str) or not obj["content"].strip():
        raise InputError(f"{where}: message without content")
    data = dict(obj)
    if data.get("timestamp") is not None:
        data["timestamp"] = _parse_time(data["timestamp"], f"{where}: timestamp")
    try:
        return Message.model_validate(data)
    except ValidationError as err:
        raise InputError(f"{where}: {_reason(err)}") from None


def _episode(obj: dict[str, Any], where: str, default: datetime | None) -> EpisodeInput:
    messages = obj.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InputError(f"{where}: 'messages' must be a non-empty list")
    parsed = [_message(m, f"{where}, message {i}") for i, m in enumerate(messages, 1)]
    own = _parse_time(obj.get("timestamp"), f"{where}: timestamp")
    return EpisodeInput(parsed, own or parsed[0].timestamp or default, where)


def read_episodes(
    path: Path, *, batch: int = 2, timestamp: datetime | None = None
) -> list[EpisodeInput]:
    """Parse and validate a whole JSON/JSONL file before anything is added.

    Plain messages are grouped `batch` at a time (2 = one user/assistant exchange); objects
    with a "messages" list are one episode each. An episode's time is its own "timestamp",
    else its first message's, else `timestamp` (--timestamp), else the time of the add.
    """
    text = _read_text(path)
    if not text.strip():
        raise InputError(f"{path}: the file is empty")

    items: list[tuple[str, Any]]
    jsonl = path.suffix.lower() in {".jsonl", ".ndjson"}
    if not jsonl:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as err:
            if err.msg != "Extra data":  # several documents: read it as JSON Lines
                raise _json_error(path, err) from None
            jsonl = True
    if jsonl:
        items = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                items.append((f"line {lineno}", json.loads(line)))
            except json.JSONDecodeError as err:
                raise InputError(f"{path}: line {lineno}: invalid JSON: {err.msg}") from None
    elif isinstance(doc, dict) and "messages" in doc:
        if not isinstance(doc["messages"], list):
            raise InputError(f"{path}: 'messages' must be a list")
        timestamp = _parse_time(doc.get("timestamp"), f"{path}: timestamp") or timestamp
        items = [(f"message {i}", m) for i, m in enumerate(doc["messages"], 1)]
    elif isinstance(doc, list):
        items = [(f"item {i}", m) for i, m in enumerate(doc, 1)]
    else:
        raise InputError(f'{path}: expected a list of messages or {{"messages": [...]}}')
    if not items:
        raise InputError(f"{path}: no messages")

    is_episode = [isinstance(obj, dict) and "messages" in obj for _, obj in items]
    try:
        if all(is_episode):
            return [_episode(obj, where, timestamp) for where, obj in items]
        if any(is_episode):
            where = items[is_episode.index(True)][0]
            raise InputError(
                f'{where}: an {{"messages": [...]}} episode among plain messages; '
                "use one form per file"
            )
        messages = [_message(obj, where) for where, obj in items]
    except InputError as err:
        raise InputError(f"{path}: {err}") from None
    episodes = []
    for start in range(0, len(messages), batch):
        chunk = messages[start : start + batch]
        first, last = items[start][0], items[start + len(chunk) - 1][0]
        where = first if first == last else f"{first} to {last}"
        episodes.append(EpisodeInput(chunk, chunk[0].timestamp or timestamp, where))
    return episodes


# ---------------------------------------------------------------- add


def _changes_table(results: list[AddResult]) -> Table:
    table = Table(
        "event", "source", "relation", "destination", "valid from", "invalid at", title="relations"
    )
    for result in results:
        for c in result.relations:
            table.add_row(
                c.event.value,
                Text(c.source),
                Text(c.relation),
                Text(c.destination),
                _when(c.valid_from),
                _when(c.invalid_at),
            )
    return table


def _fact_changes_table(results: list[AddResult]) -> Table:
    table = Table("event", "id", "fact", "was", title="facts")
    for result in results:
        for f in result.facts:
            table.add_row(f.event, f.id, Text(f.text), Text(f.previous_text or ""))
    return _keep_ids(table)


FACT_EVENTS = ("ADD", "UPDATE", "DELETE", "NOOP")


def _summary_table(results: list[AddResult], total: int, extra: Usage) -> Table:
    """Counts of one `add` command; `extra`: LLM calls besides the adds (summary refreshes)."""
    events = Counter(c.event for r in results for c in r.relations)
    fact_events: Counter[str] = Counter(f.event for r in results for f in r.facts)
    usage = Usage.total([extra, *(r.usage for r in results)])
    table = Table("", "count", title="add summary")
    rows: list[tuple[str, int | str]] = [
        ("episodes stored", f"{len(results)}/{total}"),
        ("entities created", sum(len(r.entities) for r in results)),
        *((f"relations {event.value}", events.get(event, 0)) for event in Event),
        *((f"facts {event}", fact_events.get(event, 0)) for event in FACT_EVENTS),
        ("LLM calls", usage.calls),
        ("prompt tokens", usage.prompt_tokens),
        ("completion tokens", usage.completion_tokens),
    ]
    for name, count in rows:
        table.add_row(name, str(count))
    return table


@app.command()
def add(
    ctx: typer.Context,
    text: Annotated[str | None, typer.Argument(help="A message to remember.")] = None,
    file: Annotated[
        Path | None,
        typer.Option("--file", "-f", help="JSON/JSONL file of messages or episodes."),
    ] = None,
    timestamp: Annotated[
        str | None,
        typer.Option("--timestamp", "-t", help="When it was said (ISO); default now."),
    ] = None,
    batch: Annotated[
        int, typer.Option("--batch", min=1, help="Plain messages per episode (one add).")
    ] = 2,
    role: Annotated[str, typer.Option("--role", help="Role of TEXT.")] = "user",
    infer: Annotated[
        bool,
        typer.Option(
            "--infer/--no-infer",
            help="Extract with the LLM (default), or store each message verbatim as a fact "
            "(no LLM call, no graph).",
        ),
    ] = True,
    as_json: JsonOpt = False,
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
) -> None:
    """Add TEXT, or every episode of --file, to the tenant's memory (graph and facts).

    --file takes JSON Lines (.jsonl) or JSON: either episodes, {"messages": [...],
    "timestamp": "2024-05-08T13:56:00Z"}, one per line (each is one atomic add), or plain
    messages, {"role": "user", "name": "Maya", "content": "...", "timestamp": "..."}, grouped
    --batch at a time. Only "content" is required. The whole file is checked before the first
    add. Examples and details: docs/add-file-format.md, docs/examples/."""
    ids = _tenant(user, agent, run)
    if (text is None) == (file is None):
        _fail("give either TEXT or --file FILE")
    default_time = _parse_time(timestamp, "--timestamp")
    if file is not None:
        episodes = read_episodes(file, batch=batch, timestamp=default_time)
    else:
        message = _message({"role": role, "content": text}, "TEXT")
        episodes = [EpisodeInput([message], default_time, "TEXT")]
    state = _state(ctx)
    results: list[AddResult] = []
    failure: tuple[int, EpisodeInput, Exception] | None = None
    # --no-infer must not reach the LLM at all, not even for a background summary refresh.
    # An unconfigured or unreachable LLM fails here, before the embedding model loads.
    llm = None
    if infer:
        try:
            llm = LLMClient(state.config().llm)
            llm.check_reachable()
        except LLMError as err:
            raise LLMError(
                f"{_reason(err)}; or add with --no-infer to store the messages verbatim"
            ) from None
    with state.memory(summary=infer, create=True, llm=llm) as memory:
        progress = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=_err(),
            disable=file is None,
        )
        with progress:
            task = progress.add_task("adding episodes", total=len(episodes))
            for number, episode in enumerate(episodes, 1):
                try:
                    results.append(
                        memory.add(
                            episode.messages, **ids, timestamp=episode.timestamp, infer=infer
                        )
                    )
                except Exception as err:
                    if state.debug:
                        raise
                    failure = (number, episode, err)
                    break
                progress.advance(task)
    # read after close: it waits for a summary refresh in flight
    summary_usage = memory.summaries.usage
    if as_json:
        _print_json([r.model_dump(mode="json") for r in results])
    else:
        console = _out()
        if file is None and results:
            if results[0].relations:
                console.print(_changes_table(results))
            if results[0].facts:
                console.print(_fact_changes_table(results))
        console.print(_summary_table(results, len(episodes), summary_usage))
    if failure is not None:
        number, episode, error = failure
        _fail(
            f"episode {number}/{len(episodes)} ({episode.where}) failed: {_reason(error)}. "
            f"{number - 1} episode(s) before it are stored; it and the rest are not "
            "(each episode is atomic).",
            EXIT_FAILURE,
        )


# ---------------------------------------------------------------- search


@app.command()
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to look for.")],
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, help="Most facts, and most relations.")
    ] = 10,
    as_of: Annotated[
        str | None,
        typer.Option("--as-of", help="Facts and relations as they were at this ISO date/time."),
    ] = None,
    include_invalid: Annotated[
        bool, typer.Option("--include-invalid", help="Also relations that have ended.")
    ] = False,
    reference_time: Annotated[
        str | None,
        typer.Option(
            "--reference-time", help='"Now" for time words in the query ("last year"); ISO.'
        ),
    ] = None,
    as_json: JsonOpt = False,
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
) -> None:
    """Search the tenant's facts and relations, best first (no LLM call)."""
    ids = _tenant(user, agent, run)
    when = _parse_time(as_of, "--as-of")
    now = _parse_time(reference_time, "--reference-time")
    with _state(ctx).memory() as memory:
        result = memory.search(
            query, **ids, limit=limit, as_of=when, include_invalid=include_invalid,
            reference_time=now,
        )  # fmt: skip
        paths = memory.config.memory
    if as_json:
        _print_json(result.model_dump(mode="json"))
        return
    if result.facts:
        facts = Table("score", "id", "fact", "said", title="facts")
        for f in result.facts:
            facts.add_row(f"{f.score:.3f}", f.id, Text(f.text), _when(_said(f)))
        _out().print(_keep_ids(facts))
    elif paths.facts:
        _say(_err(), f"no facts found for {_describe(ids)}")
    if not result.relations:
        if paths.graph or not paths.facts:
            _say(_err(), f"no relations found for {_describe(ids)}")
        return
    table = Table(
        "score", "source", "relation", "destination", "valid from", "invalid at", title="relations"
    )
    for hit in result.relations:
        table.add_row(
            f"{hit.score:.3f}",
            Text(hit.source),
            Text(hit.relation),
            Text(hit.destination),
            _when(hit.valid_from),
            _when(hit.invalid_at),
        )
    _out().print(table)


# ---------------------------------------------------------------- one fact, by id

FactIdArg = Annotated[str, typer.Argument(help="A fact id (from add, search or --json).")]


@app.command()
def get(
    ctx: typer.Context,
    fact_id: FactIdArg,
    as_json: JsonOpt = False,
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
) -> None:
    """Show one current fact of the tenant."""
    ids = _tenant(user, agent, run)
    with _state(ctx).memory(embeddings=False) as memory:
        fact = memory.get(fact_id, **ids)
    if fact is None:
        _unknown_fact(fact_id, ids)
    if as_json:
        _print_json(fact.model_dump(mode="json"))
        return
    table = Table("", "", show_header=False)
    table.add_row("id", fact.id)
    table.add_row("text", Text(fact.text))
    table.add_row("said", _when(_said(fact)))
    table.add_row("stored", _when(fact.created_at))
    table.add_row("updated", _when(fact.updated_at))
    table.add_row("tenant", _describe(fact.tenant.model_dump()))
    _out().print(table)


@app.command()
def update(
    ctx: typer.Context,
    fact_id: FactIdArg,
    text: Annotated[str, typer.Argument(help="The fact's new text.")],
    as_json: JsonOpt = False,
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
) -> None:
    """Replace a fact's text; the old text stays in its history."""
    ids = _tenant(user, agent, run)
    with _state(ctx).memory() as memory:
        try:
            result = memory.update(fact_id, text, **ids)
        except KeyError:
            _unknown_fact(fact_id, ids)
    _print_fact_result(result, as_json)


@app.command()
def forget(
    ctx: typer.Context,
    fact_id: FactIdArg,
    as_json: JsonOpt = False,
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
) -> None:
    """Delete one fact: gone from search and get, kept in its history."""
    ids = _tenant(user, agent, run)
    with _state(ctx).memory(embeddings=False) as memory:
        try:
            result = memory.delete(fact_id, **ids)
        except KeyError:
            _unknown_fact(fact_id, ids)
    _print_fact_result(result, as_json)


def _print_fact_result(result: FactResult, as_json: bool) -> None:
    if as_json:
        _print_json(result.model_dump(mode="json"))
    elif result.event == "UPDATE":
        _say(_out(), f"updated fact {result.id}: {result.previous_text} → {result.text}")
    else:
        _say(_out(), f"forgot fact {result.id}: {result.text} (kept in its history)")


def _history_row(event: FactEvent, said: dict[str, datetime]) -> tuple[str, str, str, str, Text]:
    """`said`: the conversation time of each episode (a change by hand has none)."""
    if event.event == "UPDATE":
        change = f"{event.old_text} → {event.new_text}"
    else:
        change = (event.new_text if event.event == "ADD" else event.old_text) or ""
    when = _when(said.get(event.episode_id or "")) or "by hand"
    return when, _when(event.at), event.event, event.actor, Text(change)


@app.command()
def history(
    ctx: typer.Context,
    fact_id: FactIdArg,
    as_json: JsonOpt = False,
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
) -> None:
    """Every change of one fact, oldest first, also after it was deleted: when it was said in
    the conversation ("by hand" for update/forget) and when it was stored."""
    ids = _tenant(user, agent, run)
    with _state(ctx).memory(embeddings=False) as memory:
        events = memory.history(fact_id, **ids)
        wanted = {e.episode_id for e in events if e.episode_id}
        said = {ep.id: ep.timestamp for ep in memory.episodes(**ids) if ep.id in wanted}
    if not events:
        _unknown_fact(fact_id, ids)
    if as_json:
        _print_json([e.model_dump(mode="json") for e in events])
        return
    title = f"history of fact {fact_id}"
    table = Table(
        "said", "stored", "event", "actor", "old → new", title=title, min_width=len(title)
    )
    for event in events:
        table.add_row(*_history_row(event, said))
    _out().print(table)


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
        Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")
    ] = None,
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
) -> None:
    """Dump a tenant's graph (or, with no tenant given, every tenant's) as JSON, GraphML, a
    Neo4j Cypher script or Mermaid."""
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
    output.write_text(text, encoding="utf-8")
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
    data = counts.model_dump(exclude={"warmup"} if counts.warmup is None else set())
    if as_json:
        _print_json(data)
        return
    table = Table("", "count", title=Text(f"{_describe(ids)} in {_location(state.config())}"))
    for name, value in data.items():
        if name == "warmup" and counts.warmup is not None:
            w = counts.warmup
            value = f"{w.state}, {w.seconds:.1f} s, {w.rounds} rounds"
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
            warmup = _warm(store, config)
        finally:
            store.close()
        check(
            "store",
            "ok",
            f"{_location(config)}: {counts.entities} entities, {counts.relations} "
            f"relations, {counts.episodes} episodes, {counts.tenants} tenants{warmup}",
        )
    except Exception as err:
        check("store", "fail", _reason(err))


def _warm(store: GraphStore, config: MemoryConfig) -> str:
    """How long the server's warm-up takes when a store opens (Neo4j): doctor runs one."""
    settings = config.graph_store
    if settings.provider != "neo4j":
        return ""
    if not settings.warmup:
        return "; warm-up off (graph_store.warmup)"
    from mem0g.stores.neo4j import Neo4jGraphStore

    warmup = cast(Neo4jGraphStore, store).start_warmup(settings.warmup_seconds)
    warmup.join(settings.warmup_seconds + 10)
    status = warmup.status
    if status.state == "failed":
        return f"; warm-up failed after {status.seconds:.1f} s: {status.error}"
    return (
        f"; warm-up {status.state} in {status.seconds:.1f} s "
        f"({status.rounds} rounds of {status.statements} read statements)"
    )


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
    styles = {"ok": "green", "warn": "yellow", "fail": "red"}
    table = Table("check", "status", "detail", title="mem0g doctor")
    for name, status, detail in checks:
        table.add_row(name, Text(status, style=styles[status]), Text(detail))
    _out().print(table)
    if any(status == "fail" for _, status, _ in checks):
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
    if not yes:
        typer.confirm(f"Delete every memory of every tenant in {where}?", abort=True)
    with state.memory(embeddings=False) as memory:
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
) -> None:
    """Delete every entity, relation, fact (with its history) and episode of a tenant (unset
    ids match any)."""
    ids = _tenant(user, agent, run)
    with _state(ctx).memory(embeddings=False) as memory:
        before = memory.stats(**ids)
        memory.delete_all(**ids, all_users=all_users)
    kinds = ("entities", "relations", "facts", "episodes")
    counts = ", ".join(f"{getattr(before, kind)} {kind}" for kind in kinds)
    _say(_out(), f"deleted {counts} of {_describe(ids)}, with their history")


__all__ = ["EpisodeInput", "InputError", "app", "read_episodes"]


# ---------------------------------------------------------------- entities (sub-app)

# registers itself on `app` (importing this module first works too: it imports us)
# export / import (full backup and restore), registered the same way
import mem0g.cli_archive  # noqa: E402
import mem0g.cli_entities  # noqa: E402, F401

__import__("mem0g.service.cli", fromlist=["register"]).register(app)  # serve, mcp, keys
