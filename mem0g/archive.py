"""Full backup and restore (`mem0g export` / `mem0g import`, `Memory.export` /
`Memory.import_archive`): a versioned JSON Lines archive that holds everything a tenant is,
so a memory moves between stores (the laptop's embedded store to Neo4j) and comes back equal.

One JSON object per line, each with a `kind`:
  header   format "mem0g-archive", version, when, mem0g version, embedder model and dims,
           whether embeddings are included;
  tenant   opens one exact tenant's section; then its records:
  episode  (conversation order), entity (aliases, keys), relation (validity, mentions,
           provenance), fact (current facts), fact_event (every fact's whole history, deleted
           facts' too), duplicate (possible-duplicate pairs), entity_event (merges with
           their undo records, splits, renames: a restored merge can be split), summary;
  end      closes the section with its record counts (a cut-off archive is refused);
  footer   the number of tenants.
Embeddings, when included, are lists of floats of the header's model. Import re-embeds
(names, triples, facts) when they are absent or the model differs from the target's.

Import writes each tenant as one plan, so in one transaction: all of a tenant or none of it
(`batch` tenants may share a transaction: all of them or none). The exception: a tenant
with more than `part_records` (10,000) records to write, new or merged into, on a store
whose server bounds a transaction's memory (Neo4j, `StoreCapabilities.restore_in_parts`) is
written in parts of about that many records (`stores.plan_parts`); a failure midway leaves
the parts before it, and says so (the same import with `merge` finishes it).
An archive of a newer version is refused, and so is a tenant the target already has, unless
`merge` (then the records whose ids the target lacks are added beside its own).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError

from mem0g import validation
from mem0g.embed import CachedEmbedder, configured_name
from mem0g.resolve.links import plan_links
from mem0g.stores.archive_reads import (
    TenantRecords,
    entity_events,
    fact_events,
    tenant_records,
)
from mem0g.stores.base import StoreError
from mem0g.stores.plan_parts import plan_parts, plan_size
from mem0g.stores.repair import describe
from mem0g.types import (
    Entity,
    EntityEvent,
    Episode,
    Fact,
    FactChange,
    FactEvent,
    PossibleDuplicate,
    Relation,
    Summary,
    Tenant,
    Validity,
    WritePlan,
    utcnow,
)

if TYPE_CHECKING:
    from mem0g.memory import Memory
    from mem0g.stores.base import GraphStore

FORMAT = "mem0g-archive"
VERSION = 2  # 2: entity events (merge/split/rename history); version 1 archives still load
_Named = TypeVar("_Named", Relation, PossibleDuplicate)  # records naming entities


class ArchiveError(ValueError):
    """The archive cannot be read or imported as asked; nothing of the tenant was written."""


class Header(BaseModel):
    kind: Literal["header"] = "header"
    format: str = FORMAT
    version: int = VERSION
    created_at: datetime = Field(default_factory=utcnow)
    mem0g_version: str = ""
    embedder: str | None = None  # the model whose vectors the archive holds
    dims: int | None = None
    embeddings: bool = False


class TenantArchive(BaseModel):
    """One exact tenant's records, as exported and as imported."""

    tenant: Tenant
    episodes: list[Episode] = Field(default_factory=list)
    entities: list[Entity] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    facts: list[Fact] = Field(default_factory=list)
    fact_events: list[FactEvent] = Field(default_factory=list)
    duplicates: list[PossibleDuplicate] = Field(default_factory=list)
    entity_events: list[EntityEvent] = Field(default_factory=list)  # since version 2
    summary: Summary | None = None

    def counts(self) -> dict[str, int]:
        return {
            "episode": len(self.episodes),
            "entity": len(self.entities),
            "relation": len(self.relations),
            "fact": len(self.facts),
            "fact_event": len(self.fact_events),
            "duplicate": len(self.duplicates),
            "entity_event": len(self.entity_events),
            "summary": int(self.summary is not None),
        }


class ImportedTenant(BaseModel):
    tenant: Tenant
    counts: dict[str, int]
    merged: bool = False
    reembedded: bool = False


# what each record kind is, and where it goes in a TenantArchive
_KINDS: dict[str, tuple[type[BaseModel], str]] = {
    "episode": (Episode, "episodes"),
    "entity": (Entity, "entities"),
    "relation": (Relation, "relations"),
    "fact": (Fact, "facts"),
    "fact_event": (FactEvent, "fact_events"),
    "duplicate": (PossibleDuplicate, "duplicates"),
    "entity_event": (EntityEvent, "entity_events"),
}


# ---------------------------------------------------------------- export


def read_tenant(store: GraphStore, tenant: Tenant, *, embeddings: bool = True) -> TenantArchive:
    """Everything of exactly `tenant` in `store`, by the stores' exact reads: a filter's
    reads would also return (and, on Neo4j, read) every more specific tenant of the user, so
    a user of many runs would cost its whole data once per run. A store, not a Memory: the
    client-held copy (memory/copy.py) reads Neo4j's tenants with it too."""
    read = tenant_records(store, tenant, embeddings=embeddings) or _separately(
        store, tenant, embeddings
    )
    entities = [e for e in read.entities if e.tenant == tenant]
    ids = {e.id for e in entities}
    part = TenantArchive(
        tenant=tenant,
        episodes=[e for e in read.episodes if e.tenant == tenant],
        entities=entities,
        relations=[r for r in read.relations if r.tenant == tenant],
        facts=[f for f in read.facts if f.tenant == tenant],
        fact_events=read.fact_events,
        duplicates=[d for d in read.duplicates if {d.entity_id, d.candidate_id} <= ids],
        entity_events=read.entity_events,
        summary=read.summary,
    )
    if not embeddings:
        records: list[Entity | Relation | Fact] = [*part.entities, *part.relations, *part.facts]
        for record in records:
            record.embedding = None
    return part


def _separately(store: GraphStore, tenant: Tenant, embeddings: bool) -> TenantRecords:
    """A tenant by the stores' separate exact reads (a store without `tenant_records`)."""
    snapshot = store.snapshot(tenant, Validity(include_invalid=True), embeddings=embeddings,
                              exact=True)  # fmt: skip
    return TenantRecords(
        entities=snapshot.entities,
        relations=snapshot.relations,
        episodes=store.episodes(tenant, exact=True),
        facts=store.facts(tenant, exact=True),
        duplicates=store.possible_duplicates(tenant, exact=True),
        fact_events=fact_events(store, tenant),
        entity_events=entity_events(store, tenant),
        summary=store.get_summary(tenant),
    )


def export_lines(
    memory: Memory,
    scope: Tenant | None = None,
    *,
    embeddings: bool = True,
    progress: Callable[[Tenant], None] | None = None,
    start: Callable[[int], None] | None = None,
) -> Iterator[str]:
    """The archive, line by line: every exact tenant inside `scope` (None: the whole store).
    `start` hears how many tenants there are before the first, `progress` each one done."""
    from mem0g import __version__

    header = Header(
        mem0g_version=__version__,
        embedder=_embedder_name(memory) if embeddings else None,
        dims=getattr(memory.store, "dims", None) if embeddings else None,
        embeddings=embeddings,
    )
    tenants = [t for t in memory.tenants() if scope is None or scope.matches(t)]
    if start is not None:
        start(len(tenants))

    def parts() -> Iterator[TenantArchive]:
        for tenant in tenants:
            yield read_tenant(memory.store, tenant, embeddings=embeddings)
            if progress is not None:  # (the tenant's lines are all out by now)
                progress(tenant)

    yield from archive_lines(header, parts())


def archive_lines(header: Header, parts: Iterable[TenantArchive]) -> Iterator[str]:
    """An archive's lines: the header, each tenant's section (its records, then its `end`
    with their counts), the footer. `export_lines` writes a store's tenants with it; a bulk
    load may write tenants it made itself (scripts/bench_scale.py)."""
    yield header.model_dump_json()
    count = 0
    for part in parts:
        yield json.dumps({"kind": "tenant", "tenant": part.tenant.model_dump()})
        for kind, (_, field) in _KINDS.items():
            for record in getattr(part, field):
                yield _line(kind, record)
        if part.summary is not None:
            yield _line("summary", part.summary)
        yield json.dumps({"kind": "end", "tenant": part.tenant.model_dump(),
                          "counts": part.counts()})  # fmt: skip
        count += 1
    yield json.dumps({"kind": "footer", "tenants": count})


def export_archive(
    memory: Memory,
    out: IO[str],
    scope: Tenant | None = None,
    *,
    embeddings: bool = True,
    progress: Callable[[Tenant], None] | None = None,
    start: Callable[[int], None] | None = None,
) -> int:
    """Write the archive to `out`; returns the number of tenants written."""
    tenants = 0
    lines = export_lines(memory, scope, embeddings=embeddings, progress=progress, start=start)
    for line in lines:
        out.write(line + "\n")
        tenants += line.startswith('{"kind": "tenant"')
    return tenants


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[IO[str]]:
    """A text file for an archive at `path`, written beside it and moved onto it only when
    the block ends without an error: a failed or interrupted export leaves the file it would
    replace (the last good backup) as it was, and no cut-off archive under its name. A path
    that is no regular file (/dev/stdout, a pipe) is written in place."""
    target = os.path.realpath(path)  # a symlink's file is replaced, not the link
    if os.path.exists(target) and not os.path.isfile(target):
        with open(target, "w", encoding="utf-8") as handle:
            yield handle
        return
    folder, name = os.path.split(target)
    temp = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.part")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask's mode
    except OSError as err:  # named by the folder asked for, not by the temporary file
        raise type(err)(err.errno, err.strerror, folder) from None
    try:
        with contextlib.suppress(FileNotFoundError):  # a replaced file keeps its mode
            os.chmod(temp, stat.S_IMODE(os.stat(target).st_mode))
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yield handle
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _line(kind: str, record: BaseModel) -> str:
    return json.dumps({"kind": kind, "record": record.model_dump(mode="json")})


def _embedder_name(memory: Memory) -> str:
    """The model of the stored vectors; a command that never embeds has a deferred embedder,
    whose model is not loaded just for its name."""
    if isinstance(memory.embedder, CachedEmbedder):
        return memory.embedder.name
    return configured_name(memory.config.embedder)


# ---------------------------------------------------------------- import


def read_archive(lines: Iterable[str]) -> tuple[Header, Iterator[TenantArchive]]:
    """The header (checked first: a newer version is refused before anything is read), and
    the tenants, each checked complete (its `end` counts) before it is handed out."""
    numbered = ((n, line) for n, line in enumerate(lines, 1) if line.strip())
    first = next(numbered, None)
    if first is None:
        raise ArchiveError("the archive is empty")
    try:
        data = _json(*first)
    except ArchiveError:
        data = {}  # a dump's JSON, say (its first line is "{")
    if data.get("kind") != "header" or data.get("format") != FORMAT:
        raise ArchiveError("not a mem0g archive (its first line is no mem0g-archive header)")
    version = data.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise ArchiveError(
            f"the archive is version {version}; this mem0g ({VERSION}) reads versions up to "
            f"{VERSION}: upgrade mem0g to import it"
        )
    try:
        header = Header.model_validate(data)
    except ValidationError as err:
        raise ArchiveError(f"line {first[0]}: bad header: {err}") from err
    return header, _tenants(numbered)


def _tenants(numbered: Iterator[tuple[int, str]]) -> Iterator[TenantArchive]:
    part: TenantArchive | None = None
    footer = False
    for number, line in numbered:
        data = _json(number, line)
        kind = data.get("kind")
        if footer:
            raise ArchiveError(f"line {number}: records after the footer")
        if kind == "tenant":
            if part is not None:
                raise ArchiveError(f"line {number}: a tenant starts before the last one ended")
            part = TenantArchive(tenant=_record(Tenant, data.get("tenant"), number))
        elif kind == "end":
            if part is None:
                raise ArchiveError(f"line {number}: an end without a tenant")
            if not _same_counts(data.get("counts"), part.counts()):
                raise ArchiveError(
                    f"line {number}: {describe(part.tenant)} is incomplete: the archive "
                    f"says {data.get('counts')}, it holds {part.counts()}"
                )
            yield part
            part = None
        elif kind == "footer":
            if part is not None:
                raise ArchiveError(f"line {number}: the footer inside a tenant")
            footer = True
        elif kind in _KINDS or kind == "summary":
            if part is None:
                raise ArchiveError(f"line {number}: a {kind} outside a tenant")
            model = Summary if kind == "summary" else _KINDS[kind][0]
            record = _record(model, data.get("record"), number)
            if getattr(record, "tenant", part.tenant) != part.tenant:
                raise ArchiveError(f"line {number}: a {kind} of another tenant")
            if kind == "summary":
                if record.messages_covered < 0:  # the store refuses it after the tenant's
                    # transaction (a summary is written apart): refused here, before it
                    raise ArchiveError(f"line {number}: a summary of a negative message count")
                part.summary = record
            else:
                getattr(part, _KINDS[kind][1]).append(record)
        else:
            raise ArchiveError(f"line {number}: unknown record kind {kind!r}")
    if part is not None or not footer:
        raise ArchiveError("the archive is cut off (no footer): nothing after it was imported")


def _json(number: int, line: str) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except (ValueError, RecursionError) as err:
        raise ArchiveError(f"line {number}: not JSON ({err})") from err
    if not isinstance(data, dict):
        raise ArchiveError(f"line {number}: not a JSON object")
    return data


def _record(model: type[Any], data: Any, number: int) -> Any:
    try:
        record = model.model_validate(data)
    except ValidationError as err:
        raise ArchiveError(f"line {number}: bad {model.__name__}: {err}") from err
    # what `Memory` never stores: a blank (or not valid Unicode) fact text or entity name,
    # which a hand-edited archive carried into the store unchecked
    field = "text" if model is Fact else "name" if model is Entity else None
    if field is not None:
        try:
            validation.text(getattr(record, field), f"a {model.__name__.lower()}'s {field}")
        except ValueError as err:
            raise ArchiveError(f"line {number}: {err}") from None
    return record


def import_archive(
    memory: Memory,
    lines: Iterable[str],
    *,
    merge: bool = False,
    progress: Callable[[ImportedTenant], None] | None = None,
    batch: int = 1,
    part_records: int = 10_000,
    part_progress: Callable[[Tenant, int, int], None] | None = None,
) -> list[ImportedTenant]:
    """Load an archive into `memory`'s store, the archive read as a stream; `progress` hears
    of each tenant written. Each tenant is one plan; `batch` new tenants share one
    transaction (`GraphStore.apply_many`: one commit for many small tenants, where a commit
    costs far more than a small tenant's rows on Neo4j). A tenant merged into is written
    alone, after the tenants before it. A tenant of more than `part_records` records to write
    (new, or merged into), on a store that restores in parts (Neo4j), is written alone in
    parts of about that many (`_write_in_parts`); `part_progress(tenant, written, parts)`
    hears of each part."""
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    if part_records < 1:
        raise ValueError(f"part_records must be at least 1, got {part_records}")
    header, tenants = read_archive(lines)
    # another model's vectors, or the same model's at another size (OpenAI's `dims`: the
    # name is the same at 1536 and at 512 dimensions, and the store takes one size)
    reembed = (
        not header.embeddings
        or header.embedder != memory.embedder.name
        or (header.dims is not None and header.dims != memory.embedder.dims)
    )
    done: list[ImportedTenant] = []
    pending: list[tuple[WritePlan, Summary | None, ImportedTenant]] = []
    present = set(memory.store.tenants())  # read once: a store may hold many tenants

    def flush() -> None:
        if not pending:
            return
        memory.store.apply_many([plan for plan, _, _ in pending])
        for _, summary, result in pending:
            if summary is not None:  # derived data (the background worker remakes it)
                memory.store.set_summary(summary)
            done.append(result)
            if progress is not None:
                progress(result)
        pending.clear()

    while True:
        try:
            part = next(tenants, None)
        except ArchiveError:
            flush()  # the complete tenants before the bad line are imported, as without batches
            raise
        if part is None:
            break
        try:  # ids every Memory call would refuse: the tenant could not be read or deleted
            validation.tenant(memory.config.limits, **part.tenant.model_dump())
        except ValueError as err:
            flush()
            raise ArchiveError(f"{describe(part.tenant)}: {err}") from None
        exists = part.tenant in present
        if exists:  # refused, or merged from the store's records: the earlier ones go first
            flush()
        plan, result = _tenant_plan(memory, part, exists, merge=merge, reembed=reembed)
        present.add(part.tenant)
        in_parts = memory.store.capabilities.restore_in_parts
        if in_parts and plan_size(plan) > part_records:
            flush()
            _write_in_parts(memory.store, plan, part.summary, part_records, part_progress,
                            merged=exists)  # fmt: skip
            done.append(result)
            if progress is not None:
                progress(result)
            continue
        pending.append((plan, part.summary, result))
        if exists or len(pending) >= batch:
            flush()
    flush()
    return done


def _write_in_parts(
    store: GraphStore,
    plan: WritePlan,
    summary: Summary | None,
    size: int,
    progress: Callable[[Tenant, int, int], None] | None = None,
    *,
    merged: bool = False,
) -> None:
    """A tenant's records too many for one transaction, in consecutive plans (`plan_parts`;
    a merge's plan creates records only, so it is cut as a new tenant's is). A failure after
    the first part leaves the parts before it: the error says so, and how to finish. The
    tenant is then in the store, so the same import with merge writes just the records its
    parts lacked (a fact is never cut from its history)."""
    parts = plan_parts(plan, size)
    for number, piece in enumerate(parts):
        try:
            store.apply(piece)
        except StoreError as exc:
            if number == 0:
                raise
            other = "" if merged else ", or delete it (mem0g delete) and import the archive again"
            raise StoreError(
                f"{describe(plan.tenant)} was {'merged' if merged else 'imported'} in part only "
                f"({number} of {len(parts)} parts written) when this failed: {exc}. To finish, "
                f"import the archive again with --merge (merge=True): the records already "
                f"written are left as they are{other}"
            ) from exc
        if progress is not None:
            progress(plan.tenant, number + 1, len(parts))
    if summary is not None:
        store.set_summary(summary)


def _tenant_plan(
    memory: Memory, part: TenantArchive, exists: bool, *, merge: bool, reembed: bool
) -> tuple[WritePlan, ImportedTenant]:
    """The plan that writes a tenant's records (refused when the store has the tenant and
    `merge` is off), with its links (recomputed: texts and keys decide them)."""
    tenant = part.tenant
    if exists and not merge:
        raise ArchiveError(
            f"{describe(tenant)} already has data in this store; pass merge=True (--merge) "
            "to add the archive's records beside it, or delete it first"
        )
    if exists:
        part = _new_records(memory, part)
    if reembed:
        _embed(memory, part)
    result = ImportedTenant(tenant=tenant, counts=part.counts(), merged=exists, reembedded=reembed)
    return tenant_plan(memory.store, part, stored=exists), result


def tenant_plan(store: GraphStore, part: TenantArchive, *, stored: bool = False) -> WritePlan:
    """The plan that writes `part`'s records into `store` as they are (ids, vectors,
    history), with its links recomputed (texts and keys decide them); `stored`: the store
    already holds records of the tenant (a merge), which the links must read. Also how the
    client-held copy (memory/copy.py) writes a tenant read from Neo4j."""
    tenant = part.tenant
    deleted = [_deleted_fact(fact_id, events, tenant) for fact_id, events in _orphans(part)]
    episodes = part.episodes
    plan = WritePlan(
        tenant=tenant,
        episode=episodes[0] if episodes else None,
        more_episodes=episodes[1:],
        new_entities=part.entities,
        new_relations=part.relations,
        new_facts=[*part.facts, *deleted],
        fact_changes=[FactChange(fact_id=f.id, text=None) for f in deleted],
        fact_events=part.fact_events,
        possible_duplicates=part.duplicates,
        entity_events=part.entity_events,
    )
    return plan_links(store, plan, stored=stored)  # a new tenant: no reads


def _orphans(part: TenantArchive) -> Iterator[tuple[str, list[FactEvent]]]:
    """Facts with history but no current record: deleted ones."""
    current = {f.id for f in part.facts}
    history: dict[str, list[FactEvent]] = {}
    for event in part.fact_events:
        history.setdefault(event.fact_id, []).append(event)
    for fact_id, events in history.items():
        if fact_id not in current:
            yield fact_id, events


def _deleted_fact(fact_id: str, events: list[FactEvent], tenant: Tenant) -> Fact:
    """A deleted fact as the plan creates it and deletes it again at once, so only its
    history is written (the stores' rule for a fact created and deleted in one plan)."""
    text = next((e.old_text or e.new_text for e in reversed(events) if e.old_text or e.new_text),
                "(deleted)")  # fmt: skip
    return Fact(id=fact_id, tenant=tenant, text=text, created_at=events[0].at)


def _same_counts(said: Any, held: dict[str, int]) -> bool:
    """The `end` line's counts match the records read; a kind an older version did not
    write (entity_event before version 2) counts as none."""
    if not isinstance(said, dict):
        return False
    return all(said.get(kind, 0) == held.get(kind, 0) for kind in {*said, *held})


def _new_records(memory: Memory, part: TenantArchive) -> TenantArchive:
    """For a merge: only the records whose ids the target tenant lacks. A fact is one record
    with its history: one the target has or had (current, or deleted: its events) keeps the
    target's version and history; the archive's later edits of it are not replayed (its
    events alone would look like a deleted fact to recreate, which the store refuses). So is
    an entity: one the target merged away stays merged (`_merged_into`)."""
    have = read_tenant(memory.store, part.tenant, embeddings=False)

    def fresh(records: list[Any], stored: list[Any]) -> list[Any]:
        ids = {r.id for r in stored}
        return [r for r in records if r.id not in ids]

    pairs = {(d.entity_id, d.candidate_id) for d in have.duplicates}
    known = {f.id for f in have.facts} | {e.fact_id for e in have.fact_events}
    events = [e for e in fresh(part.fact_events, have.fact_events) if e.fact_id not in known]
    merged = _merged_into(have)
    duplicates = [
        d for d in _onto_kept(part.duplicates, merged)
        if (d.entity_id, d.candidate_id) not in pairs
    ]  # fmt: skip
    return TenantArchive(
        tenant=part.tenant,
        episodes=fresh(part.episodes, have.episodes),
        entities=[e for e in fresh(part.entities, have.entities) if e.id not in merged],
        relations=_onto_kept(fresh(part.relations, have.relations), merged),
        facts=[f for f in part.facts if f.id not in known],
        fact_events=events,
        duplicates=duplicates,
        entity_events=fresh(part.entity_events, have.entity_events),
        summary=part.summary if have.summary is None else None,
    )


def _merged_into(have: TenantArchive) -> dict[str, Entity]:
    """Entities the target merged away (a MERGE not split since) -> the entity each lives on
    now (following later merges). An entity the target had is its version, as a fact is: an
    older archive must not bring it back beside the one it was merged into."""
    split = {e.merge_id for e in have.entity_events if e.event == "SPLIT"}
    into = {e.other_id: e.entity_id for e in have.entity_events
            if e.event == "MERGE" and e.other_id and e.id not in split}  # fmt: skip
    current = {e.id: e for e in have.entities}
    found: dict[str, Entity] = {}
    for gone in into:
        seen, at = {gone}, into[gone]
        while at in into and at not in seen:
            seen.add(at)
            at = into[at]
        if at in current:
            found[gone] = current[at]
    return found


def _onto_kept(records: list[_Named], merged: dict[str, Entity]) -> list[_Named]:
    """The archive's edges and pairs with a merged-away end on the entity it was merged into
    (names as the merge shows them); those that would join an entity to itself are left out,
    as the merge left them out."""
    out: list[_Named] = []
    for record in records:
        if isinstance(record, Relation):
            ends: dict[str, str] = {}
            for end in ("source", "destination"):
                kept = merged.get(getattr(record, f"{end}_id"))
                if kept is not None:
                    ends |= {f"{end}_id": kept.id, end: kept.name}
            record = record.model_copy(update=ends)
            if record.source_id == record.destination_id and ends:
                continue
        else:
            ids = {"entity_id": record.entity_id, "candidate_id": record.candidate_id}
            moved = {k: kept.id for k, v in ids.items() if (kept := merged.get(v)) is not None}
            record = record.model_copy(update=moved)
            if record.entity_id == record.candidate_id:
                continue
        out.append(record)
    return out


def _embed(memory: Memory, part: TenantArchive) -> None:
    """Vectors of the target's model: entity names, triples, facts (in one batch each)."""
    embedder = memory.embedder
    named: tuple[tuple[Sequence[Entity | Relation | Fact], list[str]], ...] = (
        (part.entities, [e.name for e in part.entities]),
        (part.relations, [r.text for r in part.relations]),
        (part.facts, [f.text for f in part.facts]),
    )
    for records, texts in named:
        if records:
            for record, vector in zip(records, embedder.embed(texts), strict=True):
                record.embedding = [float(x) for x in vector]
