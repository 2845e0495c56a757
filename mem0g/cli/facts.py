"""`mem0g search`, and the commands on one fact by id: `get`, `update`, `forget`, `history`."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from mem0g.cli.common import (
    AgentOpt,
    JsonOpt,
    RunOpt,
    UserOpt,
    _describe,
    _err,
    _keep_ids,
    _out,
    _parse_time,
    _print_json,
    _say,
    _state,
    _tenant,
    _unknown_fact,
    _when,
    app,
)
from mem0g.types import FactEvent, FactResult

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
        bool,
        typer.Option(
            "--include-invalid",
            help="Also relations that have ended, at any time (so not with --as-of).",
        ),
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
    _parse_time(reference_time, "--reference-time")  # refused here, with the option's name
    with _state(ctx).memory() as memory:
        result = memory.search(  # the string, whose zone says which day "yesterday" was
            query, **ids, limit=limit, as_of=when, include_invalid=include_invalid,
            reference_time=reference_time,
        )  # fmt: skip
        paths = memory.config.memory
    if as_json:
        _print_json(result.model_dump(mode="json"))
        return
    if result.facts:
        facts = Table("score", "id", "fact", "said", title="facts")
        for f in result.facts:
            facts.add_row(f"{f.score:.3f}", f.id, Text(f.text), _when(f.text_said_at))
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
    table.add_row("said", _when(fact.said_at))
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
