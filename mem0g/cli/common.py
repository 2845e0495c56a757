"""The CLI's shared core: the typer `app` and its error handling (`_Group`), the per-command
state (`_State`: config file, --path, the `Memory` a command opens), the tenant and output
options every command takes, and the helpers that print (stdout for data, stderr for
progress and errors) and parse (times, JSON files) the same way for every command.

Every other module of `mem0g.cli` imports this one; it imports none of them.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, NoReturn, cast

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from mem0g import __version__
from mem0g.cli.args import rearrange, tidy_help
from mem0g.config import EmbedderConfig, MemoryConfig
from mem0g.embed import CachedEmbedder, make_embedder
from mem0g.llm.client import LLMClient, LLMError
from mem0g.memory import Memory
from mem0g.stores import make_store
from mem0g.stores.base import StoreError
from mem0g.types import to_utc

STDIO = Path("-")
"""The file name that means stdout (`export -o -`, `dump -o -`) or stdin (`import -`,
`add --file -`), as in most command-line tools."""
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
    takes global options after the subcommand and tenant options before it (args.py)."""

    # ctx: a Context of typer's own copy of click or of the click package, by typer version
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        tidy_help(self)
        return super().parse_args(ctx, rearrange(self, ctx, args))

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:  # stdout's reader left (`| head`): typer ends quietly, exit 1
            raise
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
        if self.path is not None and self._config.graph_store.provider != "embedded":
            # else --path was ignored, and a `reset -y` meant for it emptied the server
            provider = self._config.graph_store.provider
            self._config = None
            raise InputError(
                f"--path picks an embedded store, but the config (or "
                f"MEM0G_GRAPH_STORE__PROVIDER) picks {provider}: give one of them"
            )
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


def _unknown_fact(fact_id: str, ids: dict[str, str | None]) -> NoReturn:
    _fail(f"no fact {fact_id!r} for {_describe(ids)}")


# ---------------------------------------------------------------- files the user names


def _read_text(path: Path) -> str:
    try:
        if path == STDIO:
            return sys.stdin.buffer.read().decode("utf-8")
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
