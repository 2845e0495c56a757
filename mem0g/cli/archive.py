"""`mem0g export` and `mem0g import`: full backup and restore, and the way from one store to
another (a thin layer over mem0g/archive.py; it registers itself on the main app, which
imports it). A refused import is bad input (exit 2), one line on stderr; a tenant is written
whole or not at all."""

from __future__ import annotations

import io
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from mem0g.archive import (
    ImportedTenant,
    export_archive,
    import_archive,
    read_archive,
    replacing,
)
from mem0g.cli.common import (
    STDIO,
    AgentOpt,
    InputError,
    RunOpt,
    UserOpt,
    _describe,
    _err,
    _out,
    _say,
    _state,
    app,
)
from mem0g.stores.repair import describe
from mem0g.types import Tenant


@app.command("export")
def export_command(
    ctx: typer.Context,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Archive file (default, or -: stdout)."),
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
    output = None if output == STDIO else output  # "-o -" wrote a file named "-"
    err = _err()
    bar = _TenantBar("exporting")

    def progress(tenant: Tenant) -> None:
        bar.advance(f"exported {describe(tenant)}")

    with _state(ctx).memory(embeddings=False) as memory, bar:
        if output is None:
            count = export_archive(memory, sys.stdout, scope, embeddings=embeddings,
                                   progress=progress, start=bar.start)  # fmt: skip
        else:
            with replacing(output) as handle:  # a failed export keeps the file it replaces
                count = export_archive(memory, handle, scope, embeddings=embeddings,
                                       progress=progress, start=bar.start)  # fmt: skip
    where = str(output) if output is not None else "stdout"
    _say(err, f"exported {count} tenants of {_describe(ids)} to {where}")


@app.command("import")
def import_command(
    ctx: typer.Context,
    archive: Annotated[
        Path, typer.Argument(help="An archive written by `mem0g export` (-: stdin).")
    ],
    merge: Annotated[
        bool,
        typer.Option(
            "--merge",
            help="Add to tenants this store already has (records whose "
            "ids it lacks); without it such a tenant is refused.",
        ),
    ] = False,
    batch: Annotated[
        int,
        typer.Option(
            "--batch",
            min=1,
            help="New tenants written per transaction (each tenant stays all or nothing; "
            "a batch is all or nothing). Many small tenants load much faster in batches, "
            "on Neo4j above all.",
        ),
    ] = 1,
) -> None:
    """Restore an archive into the configured store (embedded or Neo4j), each tenant in one
    transaction (--batch: several per transaction; on Neo4j a tenant of more than 10,000
    records in parts of about that many, shown as it goes); re-embeds when the archive has no
    vectors or another model's."""
    bar = _TenantBar("importing")

    written: list[ImportedTenant] = []

    def progress(done: ImportedTenant) -> None:
        written.append(done)
        how = " (merged)" if done.merged else ""
        bar.advance(f"imported {describe(done.tenant)}{how}: {done.counts}")

    def part(tenant: Tenant, written: int, parts: int) -> None:
        bar.describe(f"importing {describe(tenant)}: part {written} of {parts} written")

    name = "stdin" if archive == STDIO else str(archive)
    with _open_archive(archive) as handle:
        try:
            lines = _checked_header(handle)  # a refused archive makes no store
            with _state(ctx).memory(create=True) as memory, bar:
                counted = archive != STDIO and archive.is_file()  # a pipe reads once
                bar.start(_tenant_lines(archive) if counted else None)
                done = import_archive(memory, lines, merge=merge, progress=progress,
                                      batch=batch, part_progress=part)  # fmt: skip
        except UnicodeDecodeError as err:  # named neither the file nor what was imported
            imported = len(written)
            raise InputError(
                f"{name}: not UTF-8 text (byte {err.object[err.start : err.start + 1]!r}); "
                f"{imported} tenants before it were imported"
            ) from None
    _say(_out(), f"imported {len(done)} tenants from {name}")


def _open_archive(archive: Path) -> IO[str]:
    if archive == STDIO:  # "import -" looked for a file named "-"
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")
    try:
        return archive.open(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{archive}: no such file") from None
    except OSError as err:
        raise InputError(f"{archive}: cannot read: {err.strerror or err}") from None


def _checked_header(handle: IO[str]) -> Iterator[str]:
    """The archive's lines, its header read and checked (`read_archive`) before any other."""
    head: list[str] = []
    for line in handle:
        head.append(line)
        if line.strip():
            break
    read_archive(head)
    return itertools.chain(head, handle)


class _TenantBar:
    """A progress bar on stderr over the tenants of an export or import (one line each
    would be 20k lines for a 20k-tenant store); the last tenant done is its description."""

    def __init__(self, verb: str) -> None:
        self.verb = verb
        self.progress = Progress(
            TextColumn("{task.description}", markup=False),  # tenant ids, never markup
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=_err(),
        )
        self.task: TaskID | None = None

    def start(self, tenants: int | None) -> None:
        """`None`: how many is not known (an archive read from a pipe)."""
        counted = "" if tenants is None else f" {tenants}"
        self.task = self.progress.add_task(f"{self.verb}{counted} tenants", total=tenants)

    def advance(self, what: str) -> None:
        if self.task is not None:
            self.progress.update(self.task, advance=1, description=what)

    def describe(self, what: str) -> None:
        """Say what is under way (a large tenant's parts) without advancing."""
        if self.task is not None:
            self.progress.update(self.task, description=what)

    def __enter__(self) -> _TenantBar:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()


def _tenant_lines(archive: Path) -> int:
    """How many tenants an archive holds, for the bar's total (a quick pass over the lines;
    the import itself streams them)."""
    with archive.open(encoding="utf-8") as handle:
        return sum(line.startswith('{"kind": "tenant"') for line in handle)
