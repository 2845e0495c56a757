"""`mem0g entities ...`: list, show and repair a tenant's entities (a thin layer over
`Memory`'s entity methods; it registers itself on the main app, which imports it).

Errors follow the main CLI: an unknown id, a merge across tenants or a split that cannot be
done is bad input (exit 2), one line on stderr; nothing is written then.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from mem0g.cli.common import (
    AgentOpt,
    JsonOpt,
    RunOpt,
    UserOpt,
    _describe,
    _fail,
    _keep_ids,
    _out,
    _print_json,
    _say,
    _state,
    _tenant,
    _when,
    app,
)
from mem0g.types import Entity, EntityEvent, MergeResult, SplitResult

entities_app = typer.Typer(
    name="entities",
    help="List a tenant's entities, review possible duplicates, merge and split them.",
    no_args_is_help=True,
)

EntityArg = Annotated[str, typer.Argument(help="An entity id (from `entities list --json`).")]


def _brief(entity: Entity | None, entity_id: str) -> dict[str, Any]:
    if entity is None:
        return {"id": entity_id, "name": None, "type": None}
    return {"id": entity.id, "name": entity.name, "type": entity.type}


def _entity_json(entity: Entity) -> dict[str, Any]:
    return entity.model_dump(mode="json", exclude={"embedding"})


def _event_line(event: EntityEvent) -> str:
    if event.event == "RENAME":
        return f"renamed {event.old_name!r} → {event.new_name!r}"
    if event.event == "MERGE":
        return f"merged {event.old_name!r} ({event.other_id}) into {event.entity_id}"
    return f"split {event.new_name!r} ({event.other_id}) off again (merge {event.merge_id})"


@entities_app.command("list")
def list_entities(
    ctx: typer.Context,
    as_json: JsonOpt = False,
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
) -> None:
    """Every entity of the tenant, in the order they were written."""
    ids = _tenant(user, agent, run)
    with _state(ctx).memory(embeddings=False) as memory:
        entities = memory.list_entities(**ids)
    if as_json:
        _print_json([_entity_json(e) for e in entities])
        return
    if not entities:
        _say(_out(), f"no entities for {_describe(ids)}")
        return
    table = Table("id", "name", "type", "aliases", title="entities")
    for e in entities:
        table.add_row(e.id, Text(e.name), Text(e.type), Text(", ".join(e.aliases)))
    _out().print(_keep_ids(table))


@entities_app.command()
def show(
    ctx: typer.Context,
    entity_id: EntityArg,
    as_json: JsonOpt = False,
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
) -> None:
    """One entity, its edges (ended ones too) and its history; an entity merged away shows
    only its history (where it went)."""
    ids = _tenant(user, agent, run)
    with _state(ctx).memory(embeddings=False) as memory:
        entity = memory.get_entity(entity_id, **ids)
        history = memory.entity_history(entity_id, **ids)
        relations = memory.entity_relations(entity_id, **ids, include_invalid=True)
    if entity is None and not history:
        _fail(f"no entity {entity_id!r} for {_describe(ids)}")
    if as_json:
        _print_json(
            {
                "entity": None if entity is None else _entity_json(entity),
                "relations": [r.model_dump(mode="json", exclude={"embedding"}) for r in relations],
                "history": [e.model_dump(mode="json", exclude={"undo"}) for e in history],
            }
        )
        return
    if entity is None:
        _say(_out(), f"entity {entity_id} no longer exists")
    else:
        table = Table("", "", show_header=False)
        table.add_row("id", entity.id)
        table.add_row("name", Text(entity.name))
        table.add_row("type", Text(entity.type))
        table.add_row("aliases", Text(", ".join(entity.aliases)))
        table.add_row("tenant", Text(_describe(entity.tenant.model_dump())))
        _out().print(table)
    if relations:
        rels = Table("id", "source", "relation", "destination", "invalid at", title="relations")
        for r in relations:
            rels.add_row(r.id, Text(r.source), Text(r.relation), Text(r.destination),
                         _when(r.invalid_at))  # fmt: skip
        _out().print(_keep_ids(rels))
    if history:
        events = Table("at", "event", "id", "what", title="history")
        for e in history:
            events.add_row(_when(e.at), e.event, e.id, Text(_event_line(e)))
        _out().print(_keep_ids(events))


@entities_app.command()
def duplicates(
    ctx: typer.Context,
    as_json: JsonOpt = False,
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
) -> None:
    """Entity pairs the resolver did not merge but found ambiguous, with the reason; merge
    the right ones with `entities merge KEEP OTHER`."""
    ids = _tenant(user, agent, run)
    with _state(ctx).memory(embeddings=False) as memory:
        pairs = memory.possible_duplicates(**ids)
        named = {i for p in pairs for i in (p.entity_id, p.candidate_id)}
        found = {e.id: e for e in memory.list_entities(**ids) if e.id in named}
    rows: list[dict[str, Any]] = [
        {
            "entity": _brief(found.get(p.entity_id), p.entity_id),
            "candidate": _brief(found.get(p.candidate_id), p.candidate_id),
            "reason": p.reason,
            "score": p.score,
            "created_at": p.created_at.isoformat(),
        }
        for p in pairs
    ]
    if as_json:
        _print_json(rows)
        return
    if not rows:
        _say(_out(), f"no possible duplicates for {_describe(ids)}")
        return
    table = Table("", "name", "id", "reason", "score", title="possible duplicates")
    for row in rows:
        one, two = row["entity"], row["candidate"]
        table.add_row("entity", Text(one["name"]), one["id"], Text(row["reason"]),
                      f"{row['score']:.3f}")  # fmt: skip
        table.add_row("may be", Text(two["name"]), two["id"], "", "", end_section=True)
    _out().print(_keep_ids(table))


@entities_app.command()
def merge(
    ctx: typer.Context,
    keep_id: Annotated[str, typer.Argument(help="The entity to keep.")],
    other_id: Annotated[str, typer.Argument(help="The entity merged into it (deleted).")],
    as_json: JsonOpt = False,
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
) -> None:
    """Merge OTHER into KEEP: its edges, name and aliases move to KEEP (one transaction,
    logged; `entities split MERGE_ID` takes it back)."""
    ids = _tenant(user, agent, run)
    with _state(ctx).memory(embeddings=False) as memory:
        result = memory.merge_entities(keep_id, other_id, **ids)
    _print_repair(result, as_json)


@entities_app.command()
def split(
    ctx: typer.Context,
    merge_id: Annotated[
        str | None, typer.Argument(help="The merge's id (from merge or show).")
    ] = None,
    keep: Annotated[str | None, typer.Option("--keep", help="The kept entity's id.")] = None,
    other: Annotated[
        str | None, typer.Option("--other", help="The merged-away entity's id.")
    ] = None,
    as_json: JsonOpt = False,
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
) -> None:
    """Take a merge back, by its id or by --keep/--other (the latest such merge): the other
    entity returns with exactly the edges that merge moved."""
    ids = _tenant(user, agent, run)
    if merge_id is None and not (keep and other):
        _fail("give a merge id, or --keep and --other")
    with _state(ctx).memory(embeddings=False) as memory:
        result = memory.split_entity(merge_id, entity_id=keep, other_id=other, **ids)
    _print_repair(result, as_json)


def _print_repair(result: MergeResult | SplitResult, as_json: bool) -> None:
    if as_json:
        _print_json(result.model_dump(mode="json"))
    elif isinstance(result, MergeResult):
        _say(
            _out(),
            f"merged {result.removed_name!r} ({result.removed_id}) into {result.keep.name!r} "
            f"({result.keep.id}): {len(result.moved_relations)} edges moved, "
            f"{len(result.dropped_relations)} between them removed; undo with "
            f"`mem0g entities split {result.merge_id}`",
        )
    else:
        _say(
            _out(),
            f"split {result.restored.name!r} ({result.restored.id}) off {result.keep.name!r}: "
            f"{len(result.moved_relations)} edges moved back, "
            f"{len(result.restored_relations)} restored",
        )


app.add_typer(entities_app, name="entities")

__all__ = ["entities_app"]
