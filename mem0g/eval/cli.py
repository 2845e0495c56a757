"""`mem0g eval ...`: the harness as a typer sub-app (registered in mem0g/cli/common.py)."""

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

eval_app = typer.Typer(
    name="eval",
    help="Run LoCoMo / LongMemEval against mem0g (full mode with an LLM, or retrieval mode "
    "with none) and render reports.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class Mode(str, Enum):
    full = "full"
    retrieval = "retrieval"


class Facts(str, Enum):
    turns = "turns"
    observation = "observation"


class Store(str, Enum):
    embedded = "embedded"
    neo4j = "neo4j"


def _fail(message: str, code: int = 2) -> None:
    Console(stderr=True, highlight=False).print(
        Text(f"Error: {message}", style="red"), soft_wrap=True
    )
    raise typer.Exit(code)


def _memory_config(ctx: typer.Context) -> dict[str, Any]:
    """The parent command's --config file (mem0g settings: llm, embedder, graph_store...)."""
    config_file = getattr(ctx.obj, "config_file", None) if ctx.obj is not None else None
    if config_file is None:
        return {}
    try:
        data = json.loads(Path(config_file).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        _fail(f"{config_file}: {err}")
    if not isinstance(data, dict):
        _fail(f"{config_file}: the config must be a JSON object")
    loaded: dict[str, Any] = data
    return loaded


def _saved(run_dir: Path) -> str:
    """What a run that stopped keeps, and how to go on: the end of its one-line message."""
    from mem0g.eval.rundir import _jsonl

    if not (run_dir / "config.json").exists():
        return f"nothing was saved ({run_dir} holds no run yet)"
    adds = len(_jsonl(run_dir / "ingest.jsonl"))
    answered = len({r.get("id") for r in _jsonl(run_dir / "questions.jsonl")})
    return (
        f"{adds} adds and {answered} questions done are saved in {run_dir}: run the same "
        "command to resume"
    )


RunDir = Annotated[
    Path | None,
    typer.Option("--run-dir", "-o", help="Run directory (default: runs/<benchmark>-<mode>)."),
]


def _run(
    ctx: typer.Context,
    benchmark: str,
    path: Path,
    run_dir: Path | None,
    mode: Mode,
    facts: Facts,
    store: Store,
    *,
    llm_model: str | None,
    llm_base_url: str | None,
    llm_mode: str | None,
    quiet: bool,
    **options: Any,
) -> None:
    from mem0g.eval.data import EvalInputError
    from mem0g.eval.runner import EvalOptions, run_eval

    config = _memory_config(ctx)
    llm = dict(config.get("llm") or {})
    if llm_model:
        llm["model"] = llm_model
    if llm_base_url:
        llm.setdefault("provider", "openai-compatible")
        llm["base_url"] = llm_base_url
    if llm_mode:
        llm["mode"] = llm_mode
    if llm:
        config["llm"] = llm
    run = EvalOptions(
        benchmark=benchmark,
        data=path,
        run_dir=run_dir or Path("runs") / f"{benchmark}-{mode.value}",
        mode=mode.value,
        facts=facts.value,
        store=store.value,
        memory_config=config,
        progress=not quiet,
        **options,
    )
    debug = bool(getattr(ctx.obj, "debug", False))
    try:
        results = run_eval(run)
    except EvalInputError as err:
        _fail(str(err), 2)
        return
    except KeyboardInterrupt:
        if debug:
            raise
        _fail(f"interrupted; {_saved(run.run_dir)}", 130)
        return
    except Exception as err:  # one line, not a traceback (`mem0g --debug eval ...` for one)
        if debug:
            raise
        _fail(f"{type(err).__name__}: {err}; {_saved(run.run_dir)}", 1)
        return
    out = Console(highlight=False)
    out.print(Text(f"report: {run.run_dir / 'report.md'}"), soft_wrap=True)
    if run.mode == "full":
        for name, entry in results.get("scores", {}).items():
            out.print(Text(f"{name}: J {entry['J_mean']} ± {entry['J_std']} (n={entry['n']})"))
    else:
        for system, per in results["retrieval"].items():
            key = "overall 1-4" if benchmark == "locomo" else "overall"
            kind = "evidence" if benchmark == "locomo" else "session"
            row = per.get(key, {})
            out.print(Text(f"{system}: {kind} recall@10 {row.get(f'{kind}_recall@10')}"))


def _command(benchmark: str, label: str) -> Any:
    def command(
        ctx: typer.Context,
        path: Annotated[Path, typer.Argument(help=f"{label} file (you supply it).")],
        run_dir: RunDir = None,
        mode: Annotated[
            Mode, typer.Option(help="full: answer + judge via an LLM; retrieval: no LLM.")
        ] = Mode.full,
        facts: Annotated[
            Facts, typer.Option(help="retrieval mode: store the turns, or LoCoMo's observations.")
        ] = Facts.turns,
        store: Annotated[
            Store, typer.Option(help="embedded (in the run dir) or neo4j (NEO4J_URI).")
        ] = Store.embedded,
        workers: Annotated[int, typer.Option(help="conversations ingested at once.")] = 2,
        limit_conversations: Annotated[
            int | None, typer.Option(help="first N conversations.")
        ] = None,
        limit_questions: Annotated[
            int | None,
            typer.Option(help="LoCoMo: N questions per conversation; LongMemEval: N in all."),
        ] = None,
        limit_sessions: Annotated[
            int | None, typer.Option(help="first N sessions of each.")
        ] = None,
        limit_turns: Annotated[
            int | None, typer.Option(help="first N turns of each session.")
        ] = None,
        categories: Annotated[
            list[str] | None,
            typer.Option(
                help="LoCoMo 1-5 or names; LongMemEval question types (repeat or comma-separate)."
            ),
        ] = None,
        judge_runs: Annotated[int, typer.Option(help="judge runs (mean ± std).")] = 3,
        llm_model: Annotated[str | None, typer.Option(help="memory LLM model (ingestion).")] = None,
        llm_base_url: Annotated[str | None, typer.Option(help="memory LLM endpoint.")] = None,
        llm_mode: Annotated[
            str | None, typer.Option(help="structured-output mode to try first.")
        ] = None,
        answer_model: Annotated[
            str | None, typer.Option(help="answer model (default: memory LLM).")
        ] = None,
        answer_base_url: Annotated[str | None, typer.Option(help="answer endpoint.")] = None,
        judge_model: Annotated[
            str | None, typer.Option(help="judge model (default: answer model).")
        ] = None,
        judge_base_url: Annotated[str | None, typer.Option(help="judge endpoint.")] = None,
        cache: Annotated[
            Path | None, typer.Option(help="shared LLM response cache (SQLite file).")
        ] = None,
        rescore: Annotated[
            bool, typer.Option(help="answer and judge again (from the cache) on the stored memory.")
        ] = False,
        quiet: Annotated[bool, typer.Option(help="no progress bars.")] = False,
    ) -> None:
        _run(**{k: v for k, v in locals().items() if k != "benchmark"}, benchmark=benchmark)

    command.__doc__ = f"Evaluate mem0g on {label} (resumes an existing --run-dir)."
    return command


eval_app.command("locomo")(_command("locomo", "LoCoMo (data/locomo10.json)"))
eval_app.command("longmemeval")(_command("longmemeval", "LongMemEval (longmemeval_s_cleaned.json)"))


@eval_app.command("report")
def report(run_dir: Annotated[Path, typer.Argument(help="A run directory.")]) -> None:
    """Re-render results.json, report.md and plots/ of a run directory."""
    from mem0g.eval.data import EvalInputError
    from mem0g.eval.report import partial_line, render

    try:
        results = render(run_dir)
    except EvalInputError as err:
        _fail(str(err))
        return
    out = Console(highlight=False)
    out.print(Text(f"report: {run_dir / 'report.md'}"), soft_wrap=True)
    if partial := results.get("partial"):
        out.print(Text(partial_line(partial), style="yellow"), soft_wrap=True)
