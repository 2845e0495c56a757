"""`mem0g add`: TEXT or every episode of a file into the tenant's memory, one atomic add per
episode, with a progress bar and a table of what changed."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from mem0g.cli.common import (
    EXIT_FAILURE,
    AgentOpt,
    JsonOpt,
    RunOpt,
    UserOpt,
    _err,
    _fail,
    _keep_ids,
    _out,
    _parse_time,
    _print_json,
    _reason,
    _state,
    _tenant,
    _when,
    app,
)
from mem0g.cli.inputs import Checks, EpisodeInput, _message, read_episodes
from mem0g.llm.client import LLMClient, LLMError
from mem0g.types import AddResult, Event, Usage

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
        typer.Option("--file", "-f", help="JSON/JSONL file of messages or episodes (-: stdin)."),
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
    state = _state(ctx)
    checks = Checks(state.config().limits, as_facts=not infer)
    if file is not None:
        episodes = read_episodes(file, batch=batch, timestamp=default_time, checks=checks)
    else:
        message = _message({"role": role, "content": text}, "TEXT", checks)
        episodes = [EpisodeInput([message], default_time, "TEXT")]
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
