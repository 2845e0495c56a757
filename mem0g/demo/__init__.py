"""`mem0g demo`: a bundled five-session conversation, ingested, queried and summarised.

It shows what the library does over a year of chat, on both memories at once: the graph (ADD,
UPDATE, INVALIDATE, NOOP, aliases, history, `as_of` queries) and the facts (ADD, UPDATE, DELETE,
NOOP, per-fact history), then the context block an answer prompt gets and the conversation
summary. It runs the real pipeline: the real `openai` client, the real MiniLM embedder and the
embedded store. Without an LLM it talks to the scripted TEST DOUBLE server, whose answers
(script.json) are the answer key a good model gives for sample.json, and it says so loudly.
Every number printed is measured during the run.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from mem0g.config import (
    EmbedderConfig,
    FactsConfig,
    GraphStoreConfig,
    LLMConfig,
    MemoryConfig,
    MemorySection,
    ResolverConfig,
    RetrievalConfig,
)
from mem0g.embed import make_embedder
from mem0g.llm.client import LLMClient, LLMError
from mem0g.memory import Memory
from mem0g.types import (
    AddResult,
    Event,
    Fact,
    FactEvent,
    FactHit,
    FactResult,
    Relation,
    RelationChange,
    SearchResult,
    Summary,
    Usage,
    to_utc,
)

__all__ = ["BANNER", "QUERIES", "SAMPLE_PATH", "SCRIPT_PATH", "USER_ID", "DemoReport", "run"]

SAMPLE_PATH = Path(__file__).with_name("sample.json")
SCRIPT_PATH = Path(__file__).with_name("script.json")
USER_ID = "maya"

BANNER = (
    "No LLM configured: this demo uses scripted answers for the bundled sample (a test double "
    "standing in for the LLM API), not a live model. Set OPENAI_API_KEY or MEM0G_LLM__BASE_URL "
    "to run it live."
)
# When an LLM is configured but --scripted was asked for, "No LLM configured" would be false.
BANNER_CHOSEN = (
    "Scripted mode: this demo uses scripted answers for the bundled sample (a test double "
    "standing in for the LLM API), not a live model. Run `mem0g demo --live` to use the "
    "configured LLM."
)
NOT_CONFIGURED = (
    "the live demo needs an LLM, and none is configured: set OPENAI_API_KEY (OpenAI), or "
    "MEM0G_LLM__BASE_URL for a local OpenAI-compatible server (Ollama, vLLM, LM Studio); "
    "or run `mem0g demo --scripted` for the scripted walk-through"
)

QUERIES: list[tuple[str, str | None]] = [
    ("Where does Maya live?", None),
    ("Where did Maya live in spring 2023?", "2023-04-15"),
    ("Who works with Sam?", None),
    ("What can't Maya eat?", None),
    ("Where does Leo Park work?", None),
    ("Where did Leo Park work in autumn 2023?", "2023-10-15"),
]
HITS_SHOWN = 5
FACT_HITS_SHOWN = 3
CONTEXT_QUERY = "What can't Maya eat?"
CONTEXT_LIMIT = 5

_STYLE = {
    Event.ADD: ("+", "bold green"),
    Event.UPDATE: ("~", "bold cyan"),
    Event.INVALIDATE: ("x", "bold red"),
    Event.NOOP: ("=", "dim"),
}
_FACT_STYLE = {
    "ADD": ("+", "bold green"),
    "UPDATE": ("~", "bold cyan"),
    "DELETE": ("-", "bold red"),
    "NOOP": ("=", "dim"),
}


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


def load_sessions(path: Path = SAMPLE_PATH) -> list[dict[str, Any]]:
    """The bundled sample: a list of {"title", "timestamp", "messages"} (also a valid input of
    `mem0g add --file`)."""
    sessions = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(sessions, list) or not sessions:
        raise ValueError(f"{path}: expected a non-empty list of sessions")
    return sessions


# ---------------------------------------------------------------- formatting helpers


def _date(value: datetime | None) -> str:
    return value.date().isoformat() if value is not None else "?"


def _interval(valid_from: datetime | None, invalid_at: datetime | None) -> str:
    return f"{_date(valid_from)} → {_date(invalid_at) if invalid_at else 'now'}"


def _fact(source: str, relation: str, destination: str, style: str = "") -> Text:
    text = Text()
    text.append(source, style=f"bold {style}".strip())
    text.append(f" {relation} ", style=f"italic {style}".strip())
    text.append(destination, style=f"bold {style}".strip())
    return text


def _seconds(value: float) -> str:
    return f"{value:.2f} s" if value < 10 else f"{value:.1f} s"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _tokens(usage: Usage) -> str:
    return f"{usage.prompt_tokens + usage.completion_tokens:,}"


def _change_line(change: RelationChange, session_time: datetime | None = None) -> Text:
    mark, style = _STYLE[change.event]
    line = Text("  ")
    line.append(f"{mark} {change.event.value:<10}", style=style)
    line.append(" ")
    dim = "dim" if change.event == Event.NOOP else ""
    line.append_text(_fact(change.source, change.relation, change.destination, dim))
    if change.event == Event.INVALIDATE:
        note = f"  valid {_interval(change.valid_from, change.invalid_at)}, kept as history"
    elif change.event == Event.NOOP:
        note = "  already known: one more mention"
    else:
        note = f"  valid from {_date(change.valid_from)}"
        if session_time and change.valid_from and change.valid_from.date() != session_time.date():
            note += " (a date the text gives)"
        if change.event == Event.UPDATE:
            note += ", refines the fact below"
    line.append(note, style="dim")
    return line


def _fact_line(result: FactResult) -> Text:
    mark, style = _FACT_STYLE[result.event]
    line = Text("  ")
    line.append(f"{mark} {result.event:<10}", style=style)
    line.append(" ")
    if result.event == "NOOP":
        line.append(result.text, style="dim")
        line.append("  already known", style="dim")
    elif result.event == "DELETE":
        line.append(result.text, style="strike")
        line.append("  no longer true: deleted, kept in its history", style="dim")
    else:
        line.append(result.text)
        if result.event == "UPDATE" and result.previous_text:
            line.append(f"\n{'':15}was: {result.previous_text}", style="dim")
    return line


def _aliases(memory: Memory) -> dict[str, tuple[str, set[str]]]:
    return {e.id: (e.name, set(e.aliases)) for e in memory.get_all(user_id=USER_ID).entities}


def _merge_lines(before: dict[str, tuple[str, set[str]]], after: dict[str, Any]) -> list[Text]:
    """Names this add resolved onto an existing entity (read back from the store)."""
    lines = []
    for entity_id, (name, aliases) in sorted(after.items(), key=lambda item: item[1][0]):
        new = sorted(aliases - before.get(entity_id, (name, set()))[1])
        if entity_id in before and new:
            line = Text("  ")
            line.append("& ALIAS     ", style="bold magenta")
            line.append(" " + ", ".join(f'"{a}"' for a in new), style="bold")
            line.append(" is ", style="dim")
            line.append(name, style="bold")
            line.append("  merged into the existing entity", style="dim")
            lines.append(line)
    return lines


def _messages_view(messages: Sequence[dict[str, Any]]) -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", style="bold", no_wrap=True)
    grid.add_column(style="dim")
    for m in messages:
        grid.add_row(Text(f"{m.get('name') or m.get('role', '?')}:"), Text(m["content"]))
    return grid


def _graph_tree(current: list[Relation], entities: dict[str, tuple[str, str, list[str]]]) -> Tree:
    """Current edges grouped by their source entity, in the order the entities appeared."""
    tree = Tree(
        Text(f"{len(entities)} entities, {len(current)} current relations", style="bold"),
        guide_style="dim",
    )
    by_source: dict[str, list[Relation]] = {}
    for rel in current:
        by_source.setdefault(rel.source_id, []).append(rel)
    # Busiest entity first, then by name: stable output whatever the ids are.
    order = sorted(by_source, key=lambda eid: (-len(by_source[eid]), entities[eid][0]))
    for entity_id in order:
        name, type_, aliases = entities[entity_id]
        rels = sorted(by_source[entity_id], key=lambda r: (r.valid_from or r.created_at, r.text))
        label = Text(name, style="bold")
        label.append(f" ({type_})", style="dim")
        if aliases:
            label.append("  aka " + ", ".join(aliases), style="magenta")
        branch = tree.add(label)
        for rel in rels:
            leaf = Text(f"{rel.relation} ", style="italic")
            dest = entities.get(rel.destination_id, (rel.destination, "", []))
            leaf.append(rel.destination, style="bold")
            leaf.append(f" ({dest[1]})" if dest[1] else "", style="dim")
            leaf.append(f"  since {_date(rel.valid_from)}", style="dim")
            if rel.mentions > 1:
                leaf.append(f"  mentioned {rel.mentions}x", style="cyan")
            branch.add(leaf)
    return tree


def _history_table(ended: list[Relation]) -> Table:
    table = Table(title=None, box=None, header_style="bold", pad_edge=False)
    table.add_column("fact")
    table.add_column("valid from", style="green")
    table.add_column("invalid from", style="red")
    for rel in sorted(ended, key=lambda r: (r.invalid_at or r.created_at, r.id)):
        table.add_row(
            _fact(rel.source, rel.relation, rel.destination),
            _date(rel.valid_from),
            _date(rel.invalid_at),
        )
    return table


def _said(fact: Fact | FactHit) -> str:
    """When a memory was first said (its conversation's time), not when it was stored; an
    update keeps this date (the history has the later ones)."""
    return _date(fact.provenance[0].timestamp if fact.provenance else fact.created_at)


def _fact_hits_table(result: SearchResult) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False, show_edge=False)
    table.add_column("score", justify="right", style="cyan")
    table.add_column("memory")
    table.add_column("first said", style="dim", no_wrap=True)
    for i, hit in enumerate(result.facts[:FACT_HITS_SHOWN]):
        table.add_row(
            f"{hit.score:.4f}", Text(hit.text, style="green" if i == 0 else ""), _said(hit)
        )
    return table


def _hits_table(result: SearchResult) -> Table:
    table = Table(box=None, header_style="bold", pad_edge=False, show_edge=False)
    table.add_column("score", justify="right", style="cyan")
    table.add_column("relation")
    table.add_column("valid", style="dim")
    for i, hit in enumerate(result.relations[:HITS_SHOWN]):
        fact = _fact(hit.source, hit.relation, hit.destination, "green" if i == 0 else "")
        table.add_row(f"{hit.score:.4f}", fact, _interval(hit.valid_from, hit.invalid_at))
    return table


def _memories_table(facts: list[Fact], order: dict[str, int], updated: dict[str, str]) -> Table:
    """Current memories in the order they were first learned; `updated`: id -> session."""
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("first said", style="dim", no_wrap=True)
    table.add_column("memory")
    table.add_column("updated", style="cyan", no_wrap=True)
    for fact in sorted(facts, key=lambda f: (order.get(f.id, len(order)), f.text)):
        table.add_row(_said(fact), Text(fact.text), updated.get(fact.id, ""))
    return table


def _fact_history_table(history: dict[str, list[FactEvent]], sessions: dict[str, str]) -> Table:
    """Each changed memory's events, grouped per memory: the old texts are still there."""
    table = Table(box=None, header_style="bold", pad_edge=False, show_header=True)
    table.add_column("session", style="dim", no_wrap=True)
    table.add_column("event", no_wrap=True)
    table.add_column("memory")
    for number, events in enumerate(history.values()):
        if number:
            table.add_row("", "", "")
        for event in events:
            mark, style = _FACT_STYLE[event.event]
            text = Text()
            if event.event == "UPDATE":
                text.append(event.old_text or "", style="dim")
                text.append("  →  ")
                text.append(event.new_text or "")
            elif event.event == "DELETE":
                text.append(event.old_text or "", style="strike")
            else:
                text.append(event.new_text or "")
            where = sessions.get(event.episode_id or "", "by hand")
            table.add_row(where, Text(f"{mark} {event.event}", style=style), text)
    return table


@contextmanager
def _status(console: Console, message: str) -> Iterator[None]:
    """A spinner on a terminal; nothing on a recorded or piped console."""
    if console.is_terminal and not console.record:
        with console.status(message, spinner="dots"):
            yield
    else:
        yield


# ---------------------------------------------------------------- the demo


def _choose_mode(live: bool | None) -> tuple[bool, MemoryConfig | None, bool]:
    """(live, env config, whether an LLM is configured); raises when --live has no LLM."""
    env_config = MemoryConfig()
    configured = env_config.llm.is_configured()
    if live is None:
        live = configured
    if live and not configured:
        raise LLMError(NOT_CONFIGURED)
    return live, env_config, configured


def _check_empty(memory: Memory, path: Path) -> None:
    """A second run on the same store would find every fact already known (and, scripted, no
    answers for the payloads that causes), so refuse instead of mixing the two."""
    stats = memory.stats(user_id=USER_ID)
    if stats.episodes or stats.entities:
        raise ValueError(
            f"{path} already holds a demo memory for user {USER_ID!r}; give an empty directory, "
            f"or clear it with `mem0g --path {path} delete --user {USER_ID}`"
        )


def run(console: Console, live: bool | None = None, path: str | Path | None = None) -> int:
    """`mem0g demo`: run it on `console` (see `run_demo`); returns the exit code, 0."""
    run_demo(console, live, path)
    return 0


def run_demo(
    console: Console, live: bool | None = None, path: str | Path | None = None
) -> DemoReport:
    """Run the demo on `console` and return what it measured. `live`: True = the configured
    LLM (error if none), False = the scripted test double, None = live when configured.
    `path`: keep the store there (default: a temporary directory, removed at the end)."""
    started = time.perf_counter()
    live, env_config, configured = _choose_mode(live)
    scripted = not live
    kept = path is not None
    store_path = (
        Path(path).expanduser()
        if path is not None
        else Path(tempfile.mkdtemp(prefix="mem0g-demo-"))
    )
    report = DemoReport(path=store_path, kept=kept, scripted=scripted)
    sessions = load_sessions()

    console.print()
    console.print(
        Rule(Text("mem0g demo: a year of chat, remembered as a graph and as facts", style="bold"))
    )
    if scripted:
        console.print(
            Panel(
                Text(BANNER if not configured else BANNER_CHOSEN, style="bold"),
                title="SCRIPTED MODE (no live model)",
                border_style="yellow",
                padding=(1, 2),
            )
        )

    server_cm: Any = nullcontext(None)
    if scripted:
        from mem0g.testing.server import ScriptedLLMServer

        server_cm = ScriptedLLMServer.from_file(SCRIPT_PATH)
    try:
        with server_cm as server:
            if server is not None:
                llm_config = LLMConfig(base_url=server.base_url, api_key="scripted")
                resolver, retrieval = ResolverConfig(), RetrievalConfig()
                # No background summary while adding: when it lands would change the payloads
                # from run to run. The demo refreshes it once, at the end.
                memory_section, facts = MemorySection(summary=False), FactsConfig()
                llm_line = f"scripted test double at {server.base_url} (script: {SCRIPT_PATH.name})"
            else:
                assert env_config is not None
                llm_config = env_config.llm
                resolver, retrieval = env_config.resolver, env_config.retrieval
                memory_section, facts = env_config.memory, env_config.facts
                endpoint = llm_config.resolved_base_url() or "the OpenAI API"
                llm_line = f"{llm_config.model} via {endpoint} ({llm_config.provider}, live)"
            config = MemoryConfig(
                llm=llm_config,
                embedder=EmbedderConfig(),
                graph_store=GraphStoreConfig(provider="embedded", path=str(store_path)),
                resolver=resolver,
                retrieval=retrieval,
                memory=memory_section,
                facts=facts,
            )
            t0 = time.perf_counter()
            with _status(console, "Loading the embedding model (all-MiniLM-L6-v2, offline)..."):
                embedder = make_embedder(config.embedder)
            load_seconds = time.perf_counter() - t0

            setup = Table.grid(padding=(0, 2))
            setup.add_column(style="bold")
            setup.add_column()
            setup.add_row("LLM", llm_line)
            setup.add_row(
                "Embedder",
                f"{embedder.name}, {embedder.dims} dims, local "
                f"(loaded in {_seconds(load_seconds)})",
            )
            summary_line = (
                f"refreshed in the background every {config.memory.summary_every} messages"
                if config.memory.summary
                else "refreshed once at the end (not in the background, so that scripted runs "
                "are all alike)"
            )
            paths = [
                name
                for name, on in (
                    ("graph (Mem0g)", config.memory.graph),
                    ("facts (Mem0)", config.memory.facts),
                )
                if on
            ]
            setup.add_row(
                "Memory",
                f"{' and '.join(paths) or 'no path'} on every add, side by side; "
                f"summary {summary_line}",
            )
            setup.add_row("Store", f"embedded, {store_path}" + ("" if kept else " (temporary)"))
            setup.add_row(
                "Conversation",
                f"{SAMPLE_PATH.name}: {len(sessions)} sessions, "
                f"{sessions[0]['timestamp'][:10]} to {sessions[-1]['timestamp'][:10]},"
                f" stored for user_id={USER_ID!r}",
            )
            console.print(setup)

            with Memory(config, llm=LLMClient(config.llm), embedder=embedder) as memory:
                _check_empty(memory, store_path)
                ingest_seconds = _ingest(console, memory, sessions, report)
                search_seconds = _show_results(console, memory, report, sessions)
                summary_seconds = _show_context_and_summary(console, memory, report)
                stats = memory.stats(user_id=USER_ID)
            if server is not None:
                report.server_requests = len(server.requests)
                report.unmatched_requests = len(server.unmatched)
    finally:
        if not kept:
            shutil.rmtree(store_path, ignore_errors=True)
    report.seconds = time.perf_counter() - started
    _summary(console, report, stats, load_seconds, ingest_seconds, search_seconds, summary_seconds)
    return report


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
            "\nMemory scores are the cosine similarity of query and memory. Relation scores are "
            "fused ranks (reciprocal-rank fusion of graph expansion and triple similarity): "
            "higher is better; only the order matters.",
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
