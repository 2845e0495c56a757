"""`mem0g export` and `mem0g import`: full backup and restore, and the way from one store to
another (a thin layer over mem0g/archive.py; it registers itself on the main app, which
imports it). A refused import is bad input (exit 2), one line on stderr; a tenant is written
whole or not at all."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from mem0g.archive import ImportedTenant, export_archive, import_archive
from mem0g.cli import AgentOpt, RunOpt, UserOpt, _describe, _err, _out, _say, _state, app
from mem0g.stores.repair import describe
from mem0g.types import Tenant


@app.command("export")
def export_command(
    ctx: typer.Context,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Archive file (default: stdout).")
    ] = None,
    user: UserOpt = None,
    agent: AgentOpt = None,
    run: RunOpt = None,
    embeddings: Annotated[
        bool,
        typer.Option(
            "--embeddings/--no-embeddings",
            help="Include the vectors (import re-embeds without them, or for another model).",
        ),
    ] = True,
) -> None:
    """Write a full backup (JSON Lines, versioned) of every tenant, or of those the ids
    select: entities, edges with their history, episodes, facts with their history,
    summaries."""
    ids = {"user_id": user, "agent_id": agent, "run_id": run}
    scope = Tenant(**ids) if any(ids.values()) else None
    err = _err()

    def progress(tenant: Tenant) -> None:
        _say(err, f"exported {describe(tenant)}", "dim")

    with _state(ctx).memory(embeddings=False) as memory:
        if output is None:
            count = export_archive(memory, sys.stdout, scope, embeddings=embeddings,
                                   progress=progress)  # fmt: skip
        else:
            with output.open("w", encoding="utf-8") as handle:
                count = export_archive(memory, handle, scope, embeddings=embeddings,
                                       progress=progress)  # fmt: skip
    where = str(output) if output is not None else "stdout"
    _say(err, f"exported {count} tenants of {_describe(ids)} to {where}")


@app.command("import")
def import_command(
    ctx: typer.Context,
    archive: Annotated[Path, typer.Argument(help="An archive written by `mem0g export`.")],
    merge: Annotated[
        bool,
        typer.Option(
            "--merge",
            help="Add to tenants this store already has (records whose "
            "ids it lacks); without it such a tenant is refused.",
        ),
    ] = False,
) -> None:
    """Restore an archive into the configured store (embedded or Neo4j), one transaction per
    tenant; re-embeds when the archive has no vectors or another model's."""
    err = _err()

    def progress(done: ImportedTenant) -> None:
        how = " (merged)" if done.merged else ""
        _say(err, f"imported {describe(done.tenant)}{how}: {done.counts}", "dim")

    with _state(ctx).memory(create=True) as memory, archive.open(encoding="utf-8") as handle:
        done = import_archive(memory, handle, merge=merge, progress=progress)
    _say(_out(), f"imported {len(done)} tenants from {archive}")
