"""The demo's renderings: rich lines, tables and trees of what an add changed, the graph,
the memories, their history and the search hits. Pure functions of the records."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from mem0g.demo.sample import FACT_HITS_SHOWN, HITS_SHOWN, USER_ID
from mem0g.memory import Memory
from mem0g.types import (
    Event,
    Fact,
    FactEvent,
    FactHit,
    FactResult,
    Relation,
    RelationChange,
    SearchResult,
    Usage,
)

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
    return _date(fact.said_at)


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
