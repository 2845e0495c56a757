"""The sections the demo prints after its setup: the adds one by one, the graph and the
memories with their history, the questions, the context block and the summary, and the
totals; each fills the `DemoReport` tests and callers read."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from mem0g.demo.sample import CONTEXT_LIMIT, CONTEXT_QUERY, HITS_SHOWN, QUERIES, USER_ID
from mem0g.demo.views import (
    _FACT_STYLE,
    _aliases,
    _change_line,
    _count,
    _fact_history_table,
    _fact_hits_table,
    _fact_line,
    _graph_tree,
    _history_table,
    _hits_table,
    _memories_table,
    _merge_lines,
    _messages_view,
    _seconds,
    _status,
    _tokens,
)
from mem0g.memory import Memory
from mem0g.types import AddResult, Event, Fact, FactEvent, SearchResult, Summary, Usage, to_utc


@dataclass
class DemoReport:
    """What the last `run` measured, so tests (and curious callers) need not parse text."""

    path: Path
    kept: bool
    scripted: bool
    results: list[AddResult] = field(default_factory=list)
    searches: dict[str, SearchResult] = field(default_factory=dict)
    facts: list[Fact] = field(default_factory=list)  # the current memories at the end
    fact_history: dict[str, list[FactEvent]] = field(default_factory=dict)  # changed ones
    context: str = ""  # memory.context(CONTEXT_QUERY, ...)
    summary: Summary | None = None
    usage: Usage = field(default_factory=Usage)
    server_requests: int | None = None  # scripted mode: requests the test double received
    unmatched_requests: int | None = None  # scripted mode: requests no rule answered
    seconds: float = 0.0


def _ingest(
    console: Console, memory: Memory, sessions: list[dict[str, Any]], report: DemoReport
) -> float:
    """One `add` per session, each followed by what it changed in the graph."""
    total = 0.0
    for number, session in enumerate(sessions, 1):
        when = session["timestamp"]
        speakers = ", ".join(dict.fromkeys(m.get("name") or m["role"] for m in session["messages"]))
        console.print()
        console.print(
            Rule(
                Text.assemble(
                    (f"Session {number}/{len(sessions)}", "bold"),
                    f"  {when[:10]}  ",
                    (session.get("title", ""), "italic"),
                    (f"  ({speakers})", "dim"),
                ),
                align="left",
                style="blue",
            )
        )
        console.print(_messages_view(session["messages"]))
        before = _aliases(memory)
        t0 = time.perf_counter()
        with _status(console, f"Session {number}/{len(sessions)}: memory.add(...)"):
            result = memory.add(session["messages"], user_id=USER_ID, timestamp=when)
        seconds = time.perf_counter() - t0
        total += seconds
        report.results.append(result)
        report.usage += result.usage

        console.print(Text("\nmemory.add(...) changed the graph:", style="bold"))
        for line in _merge_lines(before, _aliases(memory)):
            console.print(line)
        for change in result.relations:
            console.print(_change_line(change, to_utc(when)))
        if not result.relations:
            console.print(Text("  (no lasting relations found)", style="dim"))
        if memory.config.memory.facts:
            console.print(Text("and the memories (facts):", style="bold"))
            for fact in result.facts:
                console.print(_fact_line(fact))
            if not result.facts:
                console.print(Text("  (no lasting facts found)", style="dim"))
        console.print(
            Text(
                f"  {_count(len(result.entities), 'new entity', 'new entities')} · "
                f"{_count(result.usage.calls, 'LLM call', 'LLM calls')} "
                f"({', '.join(f'{k} {v}' for k, v in result.usage.by_task.items())}) · "
                f"{_tokens(result.usage)} tokens · {_seconds(seconds)}",
                style="dim",
            )
        )
    return total


def _show_results(
    console: Console, memory: Memory, report: DemoReport, sessions: list[dict[str, Any]]
) -> float:
    """The graph and the memories now, their history, and a few relational and temporal
    questions."""
    snapshot = memory.get_all(user_id=USER_ID)
    history = memory.get_all(user_id=USER_ID, include_invalid=True)
    entities = {e.id: (e.name, e.type, list(e.aliases)) for e in history.entities}
    ended = [r for r in history.relations if r.invalid_at is not None]

    console.print()
    console.print(Rule(Text("The graph now  (memory.get_all)", style="bold"), style="blue"))
    console.print(_graph_tree(snapshot.relations, entities))
    console.print()
    console.print(
        Rule(
            Text("History: invalidated edges, never deleted  (include_invalid=True)", style="bold"),
            style="blue",
        )
    )
    console.print(_history_table(ended))

    order: dict[str, int] = {}
    changed: dict[str, None] = {}  # ids of memories an add updated or deleted, in order
    where: dict[str, str] = {}
    for number, (result, session) in enumerate(zip(report.results, sessions, strict=True), 1):
        where[result.episode_id] = f"{number} · {session['timestamp'][:10]}"
        for fact in result.facts:
            order.setdefault(fact.id, len(order))
            if fact.event in ("UPDATE", "DELETE"):
                changed.setdefault(fact.id)
    report.facts = snapshot.facts
    report.fact_history = {i: memory.history(i, user_id=USER_ID) for i in changed}
    console.print()
    console.print(
        Rule(Text("The memories now  (memory.get_all().facts)", style="bold"), style="blue")
    )
    updated = {
        fact_id: where.get(events[-1].episode_id or "", "by hand")
        for fact_id, events in report.fact_history.items()
        if events and events[-1].event == "UPDATE"
    }
    console.print(_memories_table(snapshot.facts, order, updated))
    console.print()
    console.print(
        Rule(
            Text("History: updated and deleted memories  (memory.history)", style="bold"),
            style="blue",
        )
    )
    console.print(_fact_history_table(report.fact_history, where))

    console.print()
    title = Text("Questions  (memory.search, no LLM calls)", style="bold")
    console.print(Rule(title, style="blue"))
    total = 0.0
    for query, as_of in QUERIES:
        t0 = time.perf_counter()
        found = memory.search(query, user_id=USER_ID, limit=HITS_SHOWN, as_of=as_of)
        seconds = time.perf_counter() - t0
        total += seconds
        report.searches[query] = found
        title = Text("? ", style="bold yellow")
        title.append(query, style="bold")
        if as_of:
            title.append(f"   as_of={as_of}", style="yellow")
        title.append(f"   {_seconds(seconds)}", style="dim")
        console.print()
        console.print(title)
        if found.facts:
            console.print(_fact_hits_table(found))
        if found.relations:
            console.print(_hits_table(found))
        if not found.facts and not found.relations:
            console.print(Text("  nothing found", style="dim"))
    console.print(
        Text(
            "\nMemory scores add up each ranking's score scaled to 0-1 over this search "
            "(meaning: the embeddings' cosine; words: BM25), plus a boost when said in a time "
            "the question names and a share for being said beside a better match. Relation "
            "scores are fused ranks (reciprocal-rank fusion of graph expansion and triple "
            "similarity). Higher is better; only the order matters.",
            style="dim",
        )
    )
    return total


def _show_context_and_summary(console: Console, memory: Memory, report: DemoReport) -> float:
    """What an answer prompt gets for one question, then the conversation summary (the only
    LLM call after the adds); returns the summary's seconds."""
    report.context = memory.context(CONTEXT_QUERY, user_id=USER_ID, limit=CONTEXT_LIMIT)
    console.print()
    call = f'memory.context("{CONTEXT_QUERY}", user_id="{USER_ID}", limit={CONTEXT_LIMIT})'
    console.print(Rule(Text(f"The answer prompt's context  ({call})", style="bold"), style="blue"))
    console.print(
        Panel(
            Text(report.context),
            subtitle="the text to put in your own answer prompt; no LLM call",
            border_style="dim",
            padding=(0, 1),
        )
    )
    console.print()
    console.print(
        Rule(
            Text("Conversation summary  (memory.refresh_summary: one LLM call)", style="bold"),
            style="blue",
        )
    )
    t0 = time.perf_counter()
    with _status(console, "memory.refresh_summary(...)"):
        report.summary = memory.refresh_summary(user_id=USER_ID)
    seconds = time.perf_counter() - t0
    report.usage += memory.summaries.usage
    if report.summary is None:
        console.print(Text("  (no summary)", style="dim"))
        return seconds
    console.print(
        Panel(
            Text(report.summary.text),
            subtitle=f"covers {report.summary.messages_covered} messages · {_seconds(seconds)}",
            border_style="dim",
            padding=(0, 1),
        )
    )
    console.print(
        Text(
            "With memory.summary on (the default), it is refreshed in the background every "
            "memory.summary_every messages, and every extraction call gets it as context.",
            style="dim",
        )
    )
    return seconds


def _summary(
    console: Console,
    report: DemoReport,
    stats: Any,
    load_seconds: float,
    ingest_seconds: float,
    search_seconds: float,
    summary_seconds: float,
) -> None:
    usage = report.usage
    events: dict[str, int] = {e.value: 0 for e in Event}
    fact_events: dict[str, int] = {op: 0 for op in _FACT_STYLE}
    for result in report.results:
        for change in result.relations:
            events[change.event.value] += 1
        for fact in result.facts:
            fact_events[fact.event] += 1
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    table.add_row("Sessions", f"{len(report.results)} (one memory.add each)")
    table.add_row("Graph changes", " · ".join(f"{k} {v}" for k, v in events.items()))
    table.add_row("Memory changes", " · ".join(f"{k} {v}" for k, v in fact_events.items()))
    table.add_row(
        "Graph",
        f"{stats.entities} entities, {stats.valid_relations} current and "
        f"{stats.invalid_relations} invalidated relations, {stats.episodes} episodes",
    )
    table.add_row(
        "Memories",
        f"{len(report.facts)} current, {len(report.fact_history)} updated or deleted "
        "(their history kept)",
    )
    by_task = ", ".join(f"{k} {v}" for k, v in usage.by_task.items())
    calls = f"{usage.calls} ({by_task})"
    if report.server_requests is not None:
        calls += (
            f"; the test double received {report.server_requests} requests, "
            f"{report.unmatched_requests} without a scripted answer"
        )
    table.add_row("LLM calls", calls)
    tokens = f"{usage.prompt_tokens:,} prompt + {usage.completion_tokens:,} completion"
    if report.scripted:
        tokens += " (counted by the test double as characters / 4, not by a real tokenizer)"
    else:
        tokens += " (as reported by the LLM API)"
    table.add_row("Tokens", tokens)
    table.add_row(
        "Wall time",
        f"{_seconds(report.seconds)} total: model load {_seconds(load_seconds)}, "
        f"{len(report.results)} adds {_seconds(ingest_seconds)}, "
        f"{len(report.searches)} searches {_seconds(search_seconds)}, "
        f"summary {_seconds(summary_seconds)}",
    )
    commands: list[str] = []
    if report.kept:
        where = str(report.path)
        store = f"kept at {escape(where)} (commands to inspect it below)"
        commands = [
            f"mem0g --path {where} dump --user {USER_ID}",
            f'mem0g --path {where} search "Where does Maya live?" --user {USER_ID}',
        ]
        if report.fact_history:
            first = next(iter(report.fact_history))
            commands.append(f"mem0g --path {where} history {first} --user {USER_ID}")
    else:
        store = f"{escape(str(report.path))} (temporary, now deleted; pass --path DIR to keep it)"
    table.add_row("Store", store)
    console.print()
    console.print(Rule(Text("Totals (measured in this run)", style="bold"), style="blue"))
    console.print(table)
    console.print()
    if report.scripted:
        console.print(
            Text(
                "Done. The LLM answers in this run were scripted (a test double standing in for "
                "the LLM API), not a live model; embeddings, storage and search were real.",
                style="bold yellow",
            )
        )
    else:
        console.print(Text("Done. Every answer in this run came from the live LLM.", style="bold"))
    if commands:
        # one command per line, never wrapped, so each can be pasted as it is
        console.print("\nInspect the store:")
        for command in commands:
            console.print(Text(f"  {command}"), soft_wrap=True)
