"""`GraphStore` on a Neo4j 5.26+ server (Community is enough), behaving like the embedded store.

Every statement lives in ``cypher/*.cypher`` as a named block (``// name: x``), read once at
run time; values only ever travel as parameters, and labels are fixed (``:Entity``,
``:Episode``, ``:RELATES`` with the relation in its ``name`` property, as in the Cypher dump;
``:EntityKey`` nodes that index an entity's name/alias keys; the fact memory's ``:Fact``,
``:FactEvent`` and ``:Summary``, and ``:TenantSequence``).

Choices that make the two stores interchangeable:

* Datetimes are stored as Neo4j DATETIME normalised to UTC (Cypher orders equal instants with
  different offsets as unequal, so only one offset may ever be stored) and read back as
  timezone-aware UTC datetimes, equal to what went in.
* Vector search asks the HNSW index for ``want`` times a factor rows (it ranks every tenant;
  the factor, 1 up to ``overfetch``, is learned per scope),
  filters by tenant and validity, and falls back to an exact per-tenant scan when fewer than
  ``want`` survive (a scope whose scan found fewer than ``want`` in all goes straight to the
  scan next time); the candidates are then re-ranked in Python with the embedded store's
  float32 cosine, so both stores return the same ranking and scores.
* The entity resolver's candidates (``similar_entities(exact=True)``) do not come from the HNSW
  index, whose top k is not exact: the store holds the tenant's name vectors in memory
  (``entity_vectors.py``), brought up to date by plan number before each use, and scores them
  as the embedded store does.
* Rows carry ``written`` (the apply call, ns) and ``pos`` (position in its plan), so reads can
  return records in write order, as the embedded store does.
* A plan's transaction starts by taking its tenant's ``:TenantSequence`` lock and number
  (``seq``): writers of one tenant take turns, so a plan is checked against every earlier
  commit (as SQLite's single writer guarantees), and episodes and fact events carry ``seq``, so
  messages and fact histories come back in commit order even across processes, whose clocks
  (``written``) may disagree.
* The fact part of a plan is checked and written in the same transaction as the graph part,
  with the embedded store's rules; a deleted fact's node goes, its ``:FactEvent`` nodes stay.
"""

from __future__ import annotations

import functools
import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, TypeVar, overload

import numpy as np
from neo4j import (
    READ_ACCESS,
    WRITE_ACCESS,
    Driver,
    GraphDatabase,
    ManagedTransaction,
    Result,
    Session,
)
from neo4j.exceptions import (
    ClientError,
    DriverError,
    Neo4jError,
    ServiceUnavailable,
    SessionExpired,
    TransientError,
)

from mem0g.config import GraphStoreConfig
from mem0g.resources import read_text
from mem0g.stores import lexical_neo4j as lexical
from mem0g.stores.base import (
    VECTOR_KINDS,
    EdgeRef,
    IndexRebuild,
    PlanConflict,
    StoreError,
    StoreStats,
    WarmupStatus,
    check_index_kinds,
)
from mem0g.stores.entity_vectors import EntityVectors, Watermark
from mem0g.stores.neo4j_warmup import WARMUP_FILES, Warmup, warmup_params, warmup_statements
from mem0g.stores.plan import Existing, FactOutcome, check_plan, check_records, is_empty
from mem0g.stores.repair import (
    check_pair,
    find_merge,
    pair_key,
    plan_merge,
    plan_split,
    rename_event,
    repoint_pairs,
)
from mem0g.stores.vectors import (
    VectorBlock,
    as_vector,
    best_first,
    has_direction,
    row_scores,
    unit_rows,
    unit_vector,
)
from mem0g.types import (
    Entity,
    EntityEvent,
    Episode,
    Fact,
    FactEvent,
    GraphSnapshot,
    MergeResult,
    Message,
    PossibleDuplicate,
    Provenance,
    Relation,
    SplitResult,
    Summary,
    Tenant,
    Validity,
    WritePlan,
    plan_episodes,
    utcnow,
)

UTC = timezone.utc
_VECTOR_KINDS = VECTOR_KINDS  # one vector index each, named in cypher/schema.cypher:
_INDEX_NAMES = {
    "entities": "mem0g_entity_embedding",
    "relations": "mem0g_relation_embedding",
    "facts": "mem0g_fact_embedding",
}
# how long a store answers a kind by its exact scan after its index failed a query (missing,
# still populating after a rebuild that died, failed), before it asks the index again
_INDEX_ERROR_PAUSE = 30.0
# the server's answers when an index cannot be queried (Neo4j 5.26)
_INDEX_DOWN = ("no such vector schema index", "come online", "failed state")
_FIELDS = {"entities": "entity", "relations": "relation", "facts": "fact"}  # row key per kind
# what decides how many index rows survive the filters: the over-fetch is learned per these
_FETCH_KEY = ("user_id", "agent_id", "run_id", "exact", "tenant_key", "include_invalid")
# a scope with fewer than `want` candidates in all (see `_nearest`): answered by the exact scan
_SMALL_SCOPE = 0.0
CYPHER_FILES = (
    "schema", "write", "facts", "read", "retrieval", "export", "delete", "entities", "lexical",
    "archive",
)  # fmt: skip
_HEADER = re.compile(r"//\s*name:\s*([A-Za-z_][A-Za-z0-9_]*)\s*")
_T = TypeVar("_T")
SCHEMA_VERSION = 2  # the data layout (cypher/schema.cypher): 2 = with :EntityKey nodes
_ALL_ROWS = 2**62  # LIMIT for reads that want every row
_READ_ATTEMPTS = 3  # auto-commit reads: tries on a transient error (see _read)


# ---------------------------------------------------------------- statements


def parse_statements(text: str) -> dict[str, str]:
    """Split a .cypher file into named statements.

    ``// name: x`` opens statement ``x``; it runs to the next header. Other whole-line ``//``
    comments are dropped, as is the closing ``;`` (the driver sends one statement at a time).
    """
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        header = _HEADER.fullmatch(line.strip())
        if header:
            if header.group(1) in blocks:
                raise ValueError(f"statement {header.group(1)!r} is defined twice")
            current = blocks[header.group(1)] = []
        elif current is not None and not line.lstrip().startswith("//"):
            current.append(line.rstrip())
    out = {
        name: "\n".join(lines).strip().removesuffix(";").rstrip() for name, lines in blocks.items()
    }
    if empty := [name for name, body in out.items() if not body]:
        raise ValueError(f"empty statements: {', '.join(empty)}")
    return out


@functools.cache
def statements() -> dict[str, str]:
    """Every named statement of every cypher/ file, parsed once per process."""
    merged: dict[str, str] = {}
    for kind in CYPHER_FILES:
        for name, body in parse_statements(read_text("cypher", f"{kind}.cypher")).items():
            if name in merged:
                raise ValueError(f"statement {name!r} is defined in two cypher files")
            merged[name] = body
    return merged


def _rows(result: Result) -> list[dict[str, Any]]:
    """Records as dicts. Not `Result.data()`: it walks every value in Python to turn graph
    objects into dicts (our statements return maps and scalars only), which costs more than
    decoding a row's 384-float embedding."""
    return [dict(record) for record in result]


@contextmanager
def _errors(what: str) -> Iterator[None]:
    """Driver and server errors become StoreError; our own StoreErrors pass through."""
    try:
        yield
    except (Neo4jError, DriverError) as exc:
        raise StoreError(f"{what}: {exc}") from exc


def _index_down(exc: StoreError) -> bool:
    """Whether a failed index query means the index is missing, populating or failed."""
    cause = exc.__cause__
    return (
        isinstance(cause, ClientError)
        and cause.code == "Neo.ClientError.Procedure.ProcedureCallFailed"
        and any(text in (cause.message or "").lower() for text in _INDEX_DOWN)
    )


# ---------------------------------------------------------------- values in and out


def _db_time(value: datetime | None) -> datetime | None:
    """Aware datetimes go to the server in UTC; naive ones stay naive (LOCAL DATETIME)."""
    if value is None or value.tzinfo is None:
        return value
    return value.astimezone(UTC)


_ISO_TIME = re.compile(
    r"(\d{4,})-(\d\d)-(\d\d)T(\d\d):(\d\d)(?::(\d\d)(?:\.(\d{1,9}))?)?(Z|[+-]\d\d:\d\d)?"
)


def _parse_time(text: str) -> datetime:
    """Cypher's toString() of a DATETIME ("...Z" / "+01:00") or LOCAL DATETIME (no offset).

    Hot reads return times as strings: the driver's temporal decoding costs ~0.1 ms a value,
    more than the rest of a row. Cypher drops zero seconds ("2016-09-09T00:00Z") and trailing
    zeros of fractions, which `datetime.fromisoformat` of Python 3.10 does not accept."""
    match = _ISO_TIME.fullmatch(text)
    if match is None:
        raise StoreError(f"unexpected time value from Neo4j: {text!r}")
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    tz = None
    if offset == "Z":
        tz = UTC
    elif offset:
        sign = -1 if offset[0] == "-" else 1
        hours, minutes = int(offset[1:3]), int(offset[4:6])
        tz = timezone(sign * timedelta(hours=hours, minutes=minutes))
    value = datetime(
        int(year), int(month), int(day), int(hour), int(minute), int(second or 0), micro, tz
    )
    return value.astimezone(UTC) if tz is not None and tz is not UTC else value


def _py_time(value: Any) -> Any:
    """A driver temporal, or its Cypher toString(), back to a `datetime` (aware ones in
    `datetime.timezone.utc`)."""
    if value is None:
        return None
    if isinstance(value, str):
        return _parse_time(value)
    native = value.to_native() if hasattr(value, "to_native") else value
    if isinstance(native, datetime) and native.tzinfo is not None:
        return native.astimezone(UTC)
    return native


@functools.lru_cache(maxsize=4096)
def _tenant_from_key(key: str) -> Tenant:
    return Tenant.from_key(key)


def _tenant(props: dict[str, Any]) -> Tenant:
    """Records we wrote carry tenant_key; a loaded dump only has the three ids."""
    key = props.get("tenant_key")
    if key is not None:
        return _tenant_from_key(key)
    return Tenant(
        user_id=props.get("user_id"), agent_id=props.get("agent_id"), run_id=props.get("run_id")
    )


def _version(epoch: str | None, seq: int | None) -> str:
    return f"{epoch or ''}:{seq or 0}"


def _check_version(based_on: str | None, epoch: str | None, seq: int) -> None:
    """Inside the plan's transaction, holding the tenant's turn (lock_tenant moved seq on):
    the plan must have been computed from the version just before this turn. A tenant that
    had no sequence node (":0") gets one with seq 1 and a new epoch here."""
    if based_on is None:
        return
    before = _version(epoch, seq - 1)
    if based_on != before and not (based_on == ":0" and seq == 1):
        raise PlanConflict(
            f"the tenant changed since this plan was made (version {based_on} -> {before})"
        )


def _tenant_props(tenant: Tenant) -> dict[str, Any]:
    return {
        "tenant_key": tenant.key,
        "user_id": tenant.user_id,
        "agent_id": tenant.agent_id,
        "run_id": tenant.run_id,
    }


def _vector(values: Sequence[float] | None) -> tuple[list[float] | None, bool]:
    """(float32-rounded list, has no direction): the embedded store keeps float32 too."""
    vec = as_vector(values)
    if vec is None:
        return None, False
    return vec.tolist(), not has_direction(vec)


def _id_vectors(rows: list[list[Any]]) -> tuple[list[str], list[list[float]]]:
    """[id, embedding] pairs from entity_vectors_* as two lists."""
    return [row[0] for row in rows], [row[1] for row in rows]


def _entity(props: dict[str, Any]) -> Entity:
    created = _py_time(props["created_at"])
    return Entity(
        id=props["id"],
        tenant=_tenant(props),
        name=props["name"],
        type=props.get("type", "entity"),
        aliases=list(props.get("aliases") or []),
        keys=list(props.get("keys") or []),
        embedding=props.get("embedding"),
        created_at=created,
        updated_at=_py_time(props.get("updated_at")) or created,
    )


def _relation(props: dict[str, Any]) -> Relation:
    created = _py_time(props["created_at"])
    return Relation(
        id=props["id"],
        tenant=_tenant(props),
        source_id=props["source_id"],
        source=props.get("source", props.get("source_name")),
        relation=props["name"],
        destination_id=props["destination_id"],
        destination=props.get("destination", props.get("destination_name")),
        embedding=props.get("embedding"),
        valid_from=_py_time(props.get("valid_from")),
        invalid_at=_py_time(props.get("invalid_at")),
        created_at=created,
        updated_at=_py_time(props.get("updated_at")) or created,
        mentions=props.get("mentions", 1),
        provenance=_provenance(props, created),
    )


def _episode(props: dict[str, Any]) -> Episode:
    return Episode(
        id=props["id"],
        tenant=_tenant(props),
        messages=json.loads(props["messages"]),
        timestamp=_py_time(props["timestamp"]),
        created_at=_py_time(props["created_at"]),
    )


def _provenance(props: dict[str, Any], created: datetime) -> list[Provenance]:
    """Provenance from its two parallel lists; a dump carries episode ids but no timestamps,
    so the record's creation stands in."""
    stamps = [_py_time(t) for t in props.get("provenance_at") or []]
    episode_ids = props.get("episode_ids") or []
    stamps += [created] * (len(episode_ids) - len(stamps))
    return [
        Provenance(episode_id=e, timestamp=t) for e, t in zip(episode_ids, stamps, strict=False)
    ]


def _fact(props: dict[str, Any]) -> Fact:
    created = _py_time(props["created_at"])
    return Fact(
        id=props["id"],
        tenant=_tenant(props),
        text=props["text"],
        embedding=props.get("embedding"),
        created_at=created,
        updated_at=_py_time(props.get("updated_at")) or created,
        provenance=_provenance(props, created),
    )


def _fact_event(props: dict[str, Any]) -> FactEvent:
    return FactEvent(
        id=props["id"],
        fact_id=props["fact_id"],
        tenant=_tenant(props),
        event=props["event"],
        old_text=props.get("old_text"),
        new_text=props.get("new_text"),
        actor=props.get("actor", "llm"),
        episode_id=props.get("episode_id"),
        at=_py_time(props["at"]),
    )


def _summary(props: dict[str, Any]) -> Summary:
    return Summary(
        tenant=_tenant(props),
        text=props["text"],
        messages_covered=props["messages_covered"],
        updated_at=_py_time(props["updated_at"]),
    )


def _messages(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages (as JSON objects) of episode rows, in row order."""
    return [m for row in rows for m in json.loads(row["messages"])]


def _scope(scope: Tenant, exact: bool = False) -> dict[str, Any]:
    return {
        "user_id": scope.user_id,
        "agent_id": scope.agent_id,
        "run_id": scope.run_id,
        "tenant_key": scope.key,
        "exact": exact,
    }


def _validity(validity: Validity) -> dict[str, Any]:
    return {"include_invalid": validity.include_invalid, "as_of": _db_time(validity.as_of)}


def _check_dims(dims: Any) -> int | None:
    """The one number that reaches DDL (inside $options): it must be a positive int."""
    if dims is None:
        return None
    if isinstance(dims, bool) or not isinstance(dims, (int, np.integer)) or dims <= 0:
        raise StoreError(f"dims must be a positive integer, not {dims!r}")
    return int(dims)


# ---------------------------------------------------------------- plan rows


def _plan_rows(plan: WritePlan, written: int) -> dict[str, Any]:
    """The parameters of write.cypher for one plan; a plan's repeated updates of one record
    are merged here, so each statement touches a record once."""
    # a plan without a conversation (a direct edit) has no episode; a restore has several,
    # ordered by `written` as commits are
    episodes = [
        {
            "id": ep.id,
            **_tenant_props(ep.tenant),
            "messages": json.dumps([m.model_dump(mode="json") for m in ep.messages]),
            "message_count": len(ep.messages),
            "timestamp": _db_time(ep.timestamp),
            "created_at": _db_time(ep.created_at),
            "written": written + pos,
        }
        for pos, ep in enumerate(plan_episodes(plan))
    ]
    episode = episodes[0] if episodes else None
    entities = [_entity_row(e, written, pos) for pos, e in enumerate(plan.new_entities)]
    aliases: dict[str, dict[str, list[str]]] = {}
    names: dict[str, str] = {}  # display names (AliasUpdate.name): the last one wins
    for a in plan.alias_updates:
        row = aliases.setdefault(a.entity_id, {"aliases": [], "keys": []})
        row["aliases"] += a.aliases
        row["keys"] += a.keys
        if a.name is not None:
            names[a.entity_id] = a.name
    relations = [_relation_row(r, written, pos) for pos, r in enumerate(plan.new_relations)]
    invalid = {i.relation_id: _db_time(i.invalid_at) for i in plan.invalidations}  # last wins
    mentions: dict[str, dict[str, list[Any]]] = {}
    for m in plan.mentions:
        row = mentions.setdefault(m.relation_id, {"episode_ids": [], "timestamps": []})
        row["episode_ids"].append(m.provenance.episode_id)
        row["timestamps"].append(_db_time(m.provenance.timestamp))
    return {
        "written": written,
        "episode": episode,
        "more_episodes": episodes[1:],
        "entities": entities,
        "aliases": [{"id": k, **v} for k, v in aliases.items()],
        "relations": relations,
        "renames": [{"id": k, "name": v} for k, v in names.items()],
        "pairs": _pair_rows(plan.tenant, plan.possible_duplicates, written),
        "invalidations": [{"id": k, "invalid_at": v} for k, v in invalid.items()],
        "mentions": [{"id": k, **v} for k, v in mentions.items()],
    }


def _entity_row(e: Entity, written: int, pos: int) -> dict[str, Any]:
    """create_entities' row for one entity."""
    vector, flat = _vector(e.embedding)
    props = {
        "id": e.id,
        **_tenant_props(e.tenant),
        "name": e.name,
        "type": e.type,
        "aliases": list(e.aliases),
        "keys": list(e.keys),
        "created_at": _db_time(e.created_at),
        "updated_at": _db_time(e.updated_at),
        "written": written,
        "pos": pos,
        "embedding_zero": True if flat else None,
    }
    return {"props": props, "embedding": vector}


def _relation_row(r: Relation, written: int, pos: int) -> dict[str, Any]:
    """create_relations' row for one edge."""
    vector, flat = _vector(r.embedding)
    props = {
        "id": r.id,
        **_tenant_props(r.tenant),
        "name": r.relation,
        "source": r.source,
        "destination": r.destination,
        "valid_from": _db_time(r.valid_from),
        "invalid_at": _db_time(r.invalid_at),
        "created_at": _db_time(r.created_at),
        "updated_at": _db_time(r.updated_at),
        "mentions": r.mentions,
        "episode_ids": [p.episode_id for p in r.provenance],
        "provenance_at": [_db_time(p.timestamp) for p in r.provenance],
        "written": written,
        "pos": pos,
        "embedding_zero": True if flat else None,
    }
    return {
        "source_id": r.source_id,
        "destination_id": r.destination_id,
        "props": props,
        "embedding": vector,
    }


def _pair_rows(
    tenant: Tenant, pairs: Sequence[PossibleDuplicate], written: int
) -> list[dict[str, Any]]:
    """create_pairs' rows."""
    rows = []
    for pos, p in enumerate(pairs):
        props = {
            **_tenant_props(tenant),
            "entity_id": p.entity_id,
            "candidate_id": p.candidate_id,
            "data": p.model_dump_json(),
            "written": written,
            "pos": pos,
        }
        rows.append({"pair": pair_key(p.entity_id, p.candidate_id), "props": props})
    return rows


def _event_rows(events: Sequence[EntityEvent], written: int) -> list[dict[str, Any]]:
    """create_entity_events' rows."""
    return [
        {
            "id": ev.id,
            **_tenant_props(ev.tenant),
            "entity_id": ev.entity_id,
            "other_id": ev.other_id,
            "event": ev.event,
            "data": ev.model_dump_json(),
            "at": _db_time(ev.at),
            "written": written,
            "pos": pos,
        }
        for pos, ev in enumerate(events)
    ]


def _names_row(new: Entity, old: Entity) -> dict[str, Any]:
    """set_entity_names' row: `old` as stored, `new` as it ends up."""
    return {
        "id": new.id,
        "name": new.name,
        "aliases": list(new.aliases),
        "keys": list(new.keys),
        "updated_at": _db_time(new.updated_at),
        "removed_keys": [k for k in old.keys if k not in new.keys],
        "added_keys": [k for k in new.keys if k not in old.keys],
    }


def _ends_rows(relations: Sequence[Relation]) -> list[dict[str, Any]]:
    """repoint_relations' rows."""
    return [
        {
            "id": r.id,
            "source_id": r.source_id,
            "source": r.source,
            "destination_id": r.destination_id,
            "destination": r.destination,
        }
        for r in relations
    ]


@dataclass
class _FactRows:
    """A plan's fact part as create_facts, update_facts, delete_facts and create_fact_events
    write it, after the checks against the database."""

    deletes: list[str] = field(default_factory=list)  # stored facts that go away
    creates: list[dict[str, Any]] = field(default_factory=list)  # new facts, as they end up
    updates: list[dict[str, Any]] = field(default_factory=list)  # stored facts that change
    events: list[dict[str, Any]] = field(default_factory=list)


def _fact_refs(plan: WritePlan) -> dict[str, list[str]]:
    """plan_check's fact parameters: the ids the plan creates, and the fact ids it refers to."""
    new_ids = {f.id for f in plan.new_facts}
    refs = {c.fact_id for c in plan.fact_changes} | {e.fact_id for e in plan.fact_events}
    return {
        "new_fact_ids": sorted(new_ids),
        "new_event_ids": sorted({e.id for e in plan.fact_events}),
        "fact_refs": sorted(refs - new_ids),
    }


def _fact_rows(plan: WritePlan, outcome: FactOutcome, written: int) -> _FactRows:
    """The fact part's rows, from its checked outcome (`stores.plan`)."""
    live = outcome.live
    rows = _FactRows(deletes=list(outcome.deletes))
    for pos, f in enumerate(plan.new_facts):
        if f.id not in live:  # deleted again within the plan
            continue
        state = live[f.id]
        vector, flat = _vector(state.embedding)
        updated = plan.updated_at if state.changed else f.updated_at
        props = {
            "id": f.id,
            **_tenant_props(f.tenant),
            "text": state.text,
            "created_at": _db_time(f.created_at),
            "updated_at": _db_time(updated),
            "episode_ids": [p.episode_id for p in f.provenance],
            "provenance_at": [_db_time(p.timestamp) for p in f.provenance],
            "written": written,
            "pos": pos,
            "embedding_zero": True if flat else None,
        }
        rows.creates.append({"props": props, "embedding": vector})
    created = {f.id for f in plan.new_facts}
    for fact_id, state in live.items():
        if fact_id not in created:
            vector, flat = _vector(state.embedding)
            row = {"id": fact_id, "text": state.text, "embedding": vector}
            rows.updates.append({**row, "embedding_zero": True if flat else None})
    for pos, ev in enumerate(plan.fact_events):
        rows.events.append(
            {
                "id": ev.id,
                "fact_id": ev.fact_id,
                **_tenant_props(ev.tenant),
                "event": ev.event,
                "old_text": ev.old_text,
                "new_text": ev.new_text,
                "actor": ev.actor,
                "episode_id": ev.episode_id,
                "at": _db_time(ev.at),
                "written": written,
                "pos": pos,
            }
        )
    return rows


# ---------------------------------------------------------------- the store


class Neo4jGraphStore:
    """`GraphStore` on a Neo4j server; thread-safe (the driver pools connections).

    `driver_or_uri` is a bolt/neo4j URI (the store then owns and closes its driver) or a
    `neo4j.Driver` the caller keeps owning. Schema is applied on first use.
    """

    # A read is a round trip to the server: a search may run its independent reads at once
    # (RetrievalConfig.concurrent_reads); the waits overlap, the GIL is free meanwhile.
    concurrent_reads = True

    def __init__(
        self,
        driver_or_uri: str | Driver,
        auth: Any = None,
        database: str | None = None,
        dims: int | None = None,
        *,
        overfetch: int = 10,
        min_fetch: int = 50,
        max_fetch: int = 10_000,
        reset_batch: int = 10_000,
        index_check_interval: float = 1.0,
        entity_vectors: int = 250_000,
        warmup_seconds: float = 0.0,
    ) -> None:
        if isinstance(driver_or_uri, str):
            self._driver: Driver | None = GraphDatabase.driver(driver_or_uri, auth=auth)
            self._owns_driver = True
        else:
            self._driver, self._owns_driver = driver_or_uri, False
        self.database = database
        self.dims = _check_dims(dims)
        self.overfetch = max(1, overfetch)
        self.max_fetch = max(1, max_fetch)
        self.min_fetch = min(max(1, min_fetch), self.max_fetch)
        self.reset_batch = max(1, reset_batch)
        self._lock = threading.RLock()
        self._schema_ready = False
        self._vector_indexes = False
        self._fetch_factor: dict[tuple[Any, ...], float] = {}  # see _from_index
        # rebuild markers (see rebuild_vector_indexes) are read at most this often
        self.index_check_interval = max(0.0, index_check_interval)
        self._paused: dict[str, float] = {}  # kind -> monotonic time its index is asked again
        self._rebuilding: frozenset[str] = frozenset()  # kinds with a live marker, as last read
        self._markers_read = -math.inf
        # the resolver's exact candidates: tenants' name vectors, at most this many in all
        self._entity_vectors = EntityVectors(entity_vectors)
        # the server's read paths warmed in the background (neo4j_warmup); 0: none
        self._warmup: Warmup | None = None
        self._warmup_budget = warmup_seconds
        if warmup_seconds > 0:
            self.start_warmup(warmup_seconds)

    @classmethod
    def from_config(cls, config: GraphStoreConfig, dims: int | None = None) -> Neo4jGraphStore:
        """Settings first, then NEO4J_URI / NEO4J_USERNAME / NEO4J_PASSWORD."""
        url = config.resolved_url().value
        if not url:
            raise StoreError("the neo4j store needs graph_store.url (or NEO4J_URI)")
        username = config.resolved_username().value or "neo4j"
        password = config.resolved_password().value
        auth = (username, password) if password is not None else None
        return cls(
            url, auth, database=config.database, dims=dims, entity_vectors=config.entity_vectors,
            warmup_seconds=config.warmup_seconds if config.warmup else 0.0,
        )  # fmt: skip

    def __enter__(self) -> Neo4jGraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start_warmup(self, budget: float) -> Warmup:
        """Warm the server's read paths in the background for at most `budget` seconds (see
        mem0g.stores.neo4j_warmup); a warm-up already running is stopped first."""
        if self._warmup is not None:
            self._warmup.stop()

        def plan() -> tuple[list[str], dict[str, Any]]:
            self._ready()  # the schema, and the dims the data holds
            params = warmup_params(self.dims)
            files = {name: parse_statements(read_text("cypher", f"{name}.cypher"))
                     for name in WARMUP_FILES if name in CYPHER_FILES}  # fmt: skip
            return warmup_statements(files, params), params

        self._warmup = Warmup(self._read, plan, budget)
        self._warmup.start()
        return self._warmup

    @property
    def warmup_status(self) -> WarmupStatus:
        return self._warmup.status if self._warmup is not None else WarmupStatus(state="off")

    def close(self) -> None:
        """Idempotent; every later call raises StoreError. A caller's driver stays open."""
        if self._warmup is not None:
            self._warmup.stop()
        with self._lock:
            driver, self._driver = self._driver, None
        if driver is not None and self._owns_driver:
            driver.close()

    # ------------------------------------------------------------------ plumbing

    def _connected(self) -> Driver:
        driver = self._driver
        if driver is None:
            raise StoreError("the store is closed")
        return driver

    def _ready(self) -> Driver:
        """The driver, after the schema has been applied once by this store."""
        driver = self._connected()
        if not self._schema_ready:
            with self._lock:
                if not self._schema_ready:
                    with _errors("could not apply the schema"):
                        self._apply_schema(driver)
                    self._schema_ready = True
        return driver

    def _session(self, driver: Driver, access: str = WRITE_ACCESS) -> Session:
        """Sessions share the driver's bookmark manager (reads see earlier writes, also on a
        cluster) and ask for no notifications: the statements name properties that an
        empty database does not know yet, which is expected, not worth a warning."""
        return driver.session(
            database=self.database,
            default_access_mode=access,
            bookmark_manager=driver.execute_query_bookmark_manager,
            notifications_min_severity="OFF",
        )

    def _auto(self, driver: Driver, name: str, params: dict[str, Any] | None = None) -> Any:
        """Run a statement in an auto-commit transaction (schema, batched deletes)."""
        with self._session(driver) as session:
            result = session.run(statements()[name], params or {})
            records = _rows(result)
            result.consume()
            return records

    def _ddl(self, driver: Driver, name: str, params: dict[str, Any] | None = None) -> None:
        """A schema statement; IF NOT EXISTS makes it idempotent, and a store that loses the
        race to create the same rule concurrently gets "already exists", which is fine."""
        try:
            self._auto(driver, name, params)
        except ClientError as exc:
            if not (exc.code or "").endswith("AlreadyExists"):
                raise

    def _apply_schema(self, driver: Driver) -> None:
        for name in statements():
            if name.startswith(("constraint_", "index_", "fulltext_index_")):
                self._ddl(driver, name)
        (row,) = self._auto(driver, "schema_version")
        if (row["version"] or 0) < SCHEMA_VERSION:  # an empty or older database
            self._auto(driver, "backfill_entity_keys", {"batch": self.reset_batch})
            self._auto(driver, "set_schema_version", {"version": SCHEMA_VERSION})
        found = {r["name"]: r["dims"] for r in self._auto(driver, "vector_index_dims")}
        if self.dims is None and found:
            sizes = set(found.values())
            if len(sizes) > 1:
                raise StoreError(f"mem0g vector indexes of different sizes: {found}")
            self.dims = _check_dims(sizes.pop())
        self._ensure_vector_indexes(driver, found)

    def _ensure_vector_indexes(self, driver: Driver, found: dict[str, int] | None = None) -> None:
        """Create the vector indexes (entities, relations, facts) for `self.dims`; one of
        another size is replaced only while no embedding is stored (a reset store may change
        embedders)."""
        if self.dims is None:
            return
        if found is None:
            found = {r["name"]: r["dims"] for r in self._auto(driver, "vector_index_dims")}
        if any(size != self.dims for size in found.values()):
            if self._auto(driver, "stored_embeddings")[0]["found"]:
                raise StoreError(
                    f"the database holds embeddings that are not {self.dims}-dimensional "
                    f"(vector indexes: {found})"
                )
            for kind in _VECTOR_KINDS:
                self._ddl(driver, f"drop_vector_index_{kind}")
        for kind in _VECTOR_KINDS:
            self._ddl(driver, f"vector_index_{kind}", {"options": self._vector_options()})
        if not self._auto(driver, "rebuilding_kinds")[0]["kinds"]:
            # (during a rebuild the index populates for minutes: searches scan meanwhile)
            self._auto(driver, "await_indexes", {"seconds": 300})
        self._vector_indexes = True

    def _vector_options(self) -> dict[str, Any]:
        return {
            "indexConfig": {
                "vector.dimensions": self.dims,
                "vector.similarity_function": "cosine",
                # exact float32 distances: candidates are re-ranked exactly anyway, and
                # quantized scores would need a larger over-fetch to find the same ones
                "vector.quantization.enabled": False,
            }
        }

    # ------------------------------------------------------------------ maintenance

    def rebuild_vector_indexes(
        self,
        kinds: Sequence[str] | None = None,
        *,
        progress: Callable[[str, float], None] | None = None,
        timeout: float = 3600.0,
        lease: float = 60.0,
        poll: float = 1.0,
    ) -> list[IndexRebuild]:
        """Drop and re-create each vector index in turn, so the server populates it in one
        pass. Why: Neo4j writes an index fed by many small transactions as many small Lucene
        segments, and every HNSW query visits each of them; on the 100k-edge benchmark a
        rebuild cut the server's CPU per search by up to 2.3x (docs/benchmarks.md).

        A query on a populating index blocks for 30 s and then fails, so first a marker
        (:Mem0gRebuild) tells every store, within its `index_check_interval`, to answer that
        kind by the exact tenant scan until the index is online: searches stay correct, only
        slower. The marker is a lease of `lease` seconds, renewed every `poll` while the index
        populates, so one left by a rebuild that died lapses by itself. Raises StoreError if an
        index fails or is still populating after `timeout` seconds."""
        chosen = check_index_kinds(kinds)
        driver = self._ready()
        if self.dims is None:  # nothing was ever embedded: there is no index yet
            return []
        rebuilt: list[IndexRebuild] = []
        for kind in chosen:
            begin = time.monotonic()
            with _errors(f"rebuilding the {kind} vector index failed"):
                self._auto(driver, "mark_rebuild", {"kind": kind, "lease": lease})
                with self._lock:
                    self._paused[kind] = math.inf
                try:
                    time.sleep(1.5 * self.index_check_interval)  # every store saw the marker
                    self._ddl(driver, f"drop_vector_index_{kind}")
                    options = {"options": self._vector_options()}
                    self._ddl(driver, f"vector_index_{kind}", options)
                    self._await_online(driver, kind, begin + timeout, lease, poll, progress)
                    self._auto(driver, "clear_rebuild", {"kind": kind})
                finally:  # after a failure the marker lapses, then the error pause protects
                    with self._lock:
                        self._paused.pop(kind, None)
            rebuilt.append(
                IndexRebuild(
                    kind=kind,
                    index=_INDEX_NAMES[kind],
                    seconds=round(time.monotonic() - begin, 3),
                )
            )
        if self._warmup_budget > 0 and rebuilt:  # new indexes: their query plans are cold
            self.start_warmup(self._warmup_budget)
        return rebuilt

    def _await_online(
        self,
        driver: Driver,
        kind: str,
        deadline: float,
        lease: float,
        poll: float,
        progress: Callable[[str, float], None] | None,
    ) -> None:
        """Poll the index's state until it is online, renewing the rebuild marker."""
        while True:
            states = {r["name"]: r for r in self._auto(driver, "vector_index_states")}
            state = states.get(_INDEX_NAMES[kind])
            if state is None:
                raise StoreError(f"the {kind} vector index disappeared while it was rebuilt")
            if state["state"] == "ONLINE":
                if progress is not None:
                    progress(kind, 100.0)
                return
            if state["state"] == "FAILED":
                raise StoreError(f"the {kind} vector index failed: {state['failure']}")
            if progress is not None:
                progress(kind, float(state["percent"] or 0.0))
            if time.monotonic() > deadline:
                raise StoreError(
                    f"the {kind} vector index is still populating "
                    f"({float(state['percent'] or 0.0):.0f}%); searches use the exact scan "
                    "until it is online"
                )
            self._auto(driver, "mark_rebuild", {"kind": kind, "lease": lease})
            time.sleep(poll)

    def _index_usable(self, kind: str) -> bool:
        """False while `kind`'s index is being rebuilt (a live marker, read at most once per
        `index_check_interval`) or paused after it failed a query."""
        now = time.monotonic()
        if now - self._markers_read >= self.index_check_interval:
            (row,) = self._read("rebuilding_kinds", {})
            with self._lock:
                self._rebuilding = frozenset(row["kinds"])
                self._markers_read = now
        return kind not in self._rebuilding and self._paused.get(kind, 0.0) <= now

    def _read(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """One statement as an auto-commit read: one round trip, where a managed transaction
        takes two (BEGIN with RUN, then COMMIT), and a search makes several reads. A read is
        idempotent, so transient failures are retried here as execute_read would."""
        driver = self._ready()
        text = statements()[name]
        for attempt in range(_READ_ATTEMPTS):
            try:
                with self._session(driver, READ_ACCESS) as session:
                    return _rows(session.run(text, params))  # type: ignore[arg-type]
            except (TransientError, SessionExpired, ServiceUnavailable) as exc:
                if attempt + 1 == _READ_ATTEMPTS:
                    raise StoreError(f"read {name} failed: {exc}") from exc
                time.sleep(0.05 * 2**attempt)
            except (Neo4jError, DriverError) as exc:
                raise StoreError(f"read {name} failed: {exc}") from exc
        raise AssertionError("unreachable")

    def _read_tx(self, what: str, work: Callable[[ManagedTransaction], _T]) -> _T:
        """One managed read transaction, for reads that need more than one statement to see
        the same data."""
        driver = self._ready()
        with _errors(f"read {what} failed"), self._session(driver, READ_ACCESS) as session:
            return session.execute_read(work)

    def _write(self, name: str, work: Callable[[ManagedTransaction], _T]) -> _T:
        """One managed write transaction (retried by the driver on transient errors)."""
        driver = self._ready()
        with (
            _errors(f"{name} failed, nothing was written"),
            self._session(driver) as session,
        ):
            return session.execute_write(work)

    def _run(self, tx: ManagedTransaction, name: str, params: dict[str, Any]) -> Any:
        """Every statement of a write transaction goes through here: (rows, counters)."""
        result = tx.run(statements()[name], params)
        rows = _rows(result)
        return rows, result.consume().counters

    # ------------------------------------------------------------------ writes

    def tenant_version(self, tenant: Tenant) -> str:
        (row,) = self._read("tenant_version", {"tenant_key": tenant.key})
        return _version(row["epoch"], row["seq"])

    def apply(self, plan: WritePlan) -> None:
        """Validate, then write the whole plan in one transaction; a bad plan writes nothing."""
        driver = self._ready()
        check_records(plan)
        if is_empty(plan):
            return
        records = (*plan.new_entities, *plan.new_relations, *plan.new_facts, *plan.fact_changes)
        sizes = {len(r.embedding) for r in records if r.embedding is not None}
        sizes |= {self.dims} - {None}
        if len(sizes) > 1:
            raise StoreError(f"embeddings of different sizes in one store: {sizes}")
        if sizes and not self._vector_indexes:
            with self._lock:
                self.dims = self.dims or sizes.pop()
                with _errors("could not create the vector indexes"):
                    self._ensure_vector_indexes(driver)
        rows = _plan_rows(plan, time.time_ns())
        self._write("apply", lambda tx: self._write_plan(tx, plan, rows))

    def _write_plan(self, tx: ManagedTransaction, plan: WritePlan, rows: dict[str, Any]) -> None:
        """The transaction function: take the tenant's turn, check the plan against the
        database, then write it with one batched statement per kind of change (a retry runs all
        of it again)."""
        (turn,), _ = self._run(tx, "lock_tenant", _tenant_props(plan.tenant))
        seq = turn["seq"]
        if seq is None:
            # MERGE found the sequence node, then waited for the lock while a delete_tenant
            # deleted it (the SET was then a no-op): no turn was taken, so the driver must
            # run the whole function again, which starts the tenant's sequence afresh.
            raise TransientError("the tenant was deleted while this plan waited for its turn")
        _check_version(plan.based_on, turn["epoch"], seq)
        facts = self._check_plan(tx, plan, rows["written"])
        updated_at = _db_time(plan.updated_at)
        if rows["episode"] is not None:
            _, counters = self._run(tx, "create_episode", {"props": rows["episode"], "seq": seq})
            if counters.nodes_created != 1:
                raise StoreError("the episode was not created")
        for row in rows["more_episodes"]:  # a restore (the id constraint refuses a taken one)
            self._run(tx, "create_episode", {"props": row, "seq": seq})
        if rows["entities"]:
            _, counters = self._run(tx, "create_entities", {"rows": rows["entities"], "seq": seq})
            keys = sum(len(row["props"]["keys"]) for row in rows["entities"])
            if counters.nodes_created != len(rows["entities"]) + keys:  # entities, their keys
                raise StoreError("not every entity was created")
        if rows["aliases"]:
            self._run(tx, "update_aliases", {"rows": rows["aliases"], "updated_at": updated_at})
        if rows["relations"]:
            _, counters = self._run(tx, "create_relations", {"rows": rows["relations"]})
            if counters.relationships_created != len(rows["relations"]):
                raise StoreError("not every relation was created")
        if rows["renames"]:
            self._rename(tx, plan, rows["renames"], seq)
        if rows["pairs"]:
            self._run(tx, "create_pairs", {"rows": rows["pairs"], "tenant_key": plan.tenant.key})
        if rows["invalidations"]:
            self._run(
                tx,
                "invalidate_relations",
                {"rows": rows["invalidations"], "updated_at": updated_at},
            )
        if rows["mentions"]:
            self._run(tx, "add_mentions", {"rows": rows["mentions"], "updated_at": updated_at})
        if facts.deletes:
            _, counters = self._run(tx, "delete_facts", {"ids": facts.deletes})
            if counters.nodes_deleted != len(facts.deletes):
                raise StoreError("not every deleted fact was found")
        if facts.creates:
            _, counters = self._run(tx, "create_facts", {"rows": facts.creates, "seq": seq})
            if counters.nodes_created != len(facts.creates):
                raise StoreError("not every fact was created")
        if facts.updates:
            self._run(tx, "update_facts", {"rows": facts.updates, "updated_at": updated_at})
        if facts.events:
            _, counters = self._run(tx, "create_fact_events", {"rows": facts.events, "seq": seq})
            if counters.nodes_created != len(facts.events):
                raise StoreError("not every fact event was created")

    def _check_plan(self, tx: ManagedTransaction, plan: WritePlan, written: int) -> _FactRows:
        """The embedded store's checks, inside the writing transaction: new ids are free, and
        every id the plan refers to exists and belongs to the plan's exact tenant. Returns the
        fact part's rows."""
        new_entities = {e.id for e in plan.new_entities}
        new_relations = {r.id for r in plan.new_relations}
        pair_ends = [i for p in plan.possible_duplicates for i in (p.entity_id, p.candidate_id)]
        entity_refs = (
            [a.entity_id for a in plan.alias_updates]
            + [end for r in plan.new_relations for end in (r.source_id, r.destination_id)]
            + pair_ends
        )
        relation_refs = [i.relation_id for i in plan.invalidations] + [
            m.relation_id for m in plan.mentions
        ]
        (check,), _ = self._run(
            tx,
            "plan_check",
            {
                "episode_id": plan.episode.id if plan.episode is not None else None,
                "new_entity_ids": sorted(new_entities),
                "new_relation_ids": sorted(new_relations),
                "entity_refs": sorted(set(entity_refs) - new_entities),
                "relation_refs": sorted(set(relation_refs) - new_relations),
                **_fact_refs(plan),
                "tenant_key": plan.tenant.key,
            },
        )
        existing = Existing(
            episodes={check["episode_id"]} if check["episode_taken"] else set(),
            entities=set(check["entities_taken"]),
            relations=set(check["relations_taken"]),
            facts=set(check["facts_taken"]),
            fact_events=set(check["events_taken"]),
            own_entities=set(check["entities_owned"]),
            own_relations=set(check["relations_owned"]),
            own_facts=set(check["facts_owned"]),
            own_fact_history=set(check["facts_with_history"]),
        )
        return _fact_rows(plan, check_plan(plan, existing), written)

    def _rename(
        self, tx: ManagedTransaction, plan: WritePlan, rows: list[dict[str, Any]], seq: int
    ) -> None:
        """Display names (`AliasUpdate.name`), after the plan's edges exist so that they show
        the new name too; one RENAME event per entity whose name changed."""
        params = {"rows": rows, "tenant_key": plan.tenant.key}
        done, _ = self._run(
            tx, "rename_entities", {**params, "updated_at": _db_time(plan.updated_at)}
        )
        episode_id = plan.episode.id if plan.episode is not None else None
        events = [
            rename_event(
                row["id"], plan.tenant, row["old"], row["name"], plan.updated_at, episode_id
            )
            for row in done
        ]
        if events:
            self._run(
                tx,
                "create_entity_events",
                {"rows": _event_rows(events, time.time_ns()), "seq": seq},
            )

    def delete_tenant(self, scope: Tenant) -> int:
        """Delete every record the scope filter matches, in one transaction."""
        params = _scope(scope)

        def work(tx: ManagedTransaction) -> int:
            self._run(tx, "delete_tenant_sequences", params)  # first: waits for writers
            (rels,), _ = self._run(tx, "delete_tenant_relations", params)
            (ents,), _ = self._run(tx, "delete_tenant_entities", params)
            names = ("episodes", "facts", "fact_events", "summaries", "entity_events",
                     "possible_duplicates")  # fmt: skip
            for name in names:
                self._run(tx, f"delete_tenant_{name}", params)
            return int(rels["deleted"]) + int(ents["deleted"])

        deleted = self._write("delete_tenant", work)
        with self._lock:  # (other stores see the tenant's new epoch when it is written again)
            self._entity_vectors.forget()
        return deleted

    def reset(self) -> None:
        """Delete every node of mem0g's labels (and the edges between entities); schema and
        the layout version (:Mem0gSchema) stay, and nodes of other labels are left alone.
        Batched, so a large store does not need one huge transaction: unlike `apply` it is not
        atomic, and a failure midway leaves part of the data (run it again)."""
        driver = self._ready()
        with _errors("reset failed"):
            self._auto(driver, "reset_relations", {"batch": self.reset_batch})
            self._auto(driver, "reset_nodes", {"batch": self.reset_batch})
        with self._lock:
            self._entity_vectors.forget()

    # ------------------------------------------------------------------ entity repair

    def _repair(
        self, what: str, tenant: Tenant, work: Callable[[ManagedTransaction, int], _T]
    ) -> _T:
        """One managed transaction of an exact tenant: its turn and a new epoch first
        (repair_lock), then `work(tx, seq)`; held entity vectors of the tenant are dropped
        after, here and (by the epoch) in every other store."""

        def run(tx: ManagedTransaction) -> _T:
            (turn,), _ = self._run(tx, "repair_lock", _tenant_props(tenant))
            if turn["seq"] is None:  # as in _write_plan: a delete_tenant got there first
                raise TransientError("the tenant was deleted while this repair waited")
            return work(tx, turn["seq"])

        try:
            return self._write(what, run)
        finally:
            with self._lock:
                self._entity_vectors.forget(tenant.key)

    def _tx_entities(self, tx: ManagedTransaction, scope: Tenant, ids: list[str]) -> list[Entity]:
        rows, _ = self._run(tx, "get_entities", {**_scope(scope), "ids": ids})
        return [_entity(row["entity"]) for row in rows]

    def list_entities(self, scope: Tenant) -> list[Entity]:
        """The scope's entities in write order (the dump's read), without embeddings."""
        rows = [row["entity"] for row in self._read("snapshot_entities", _scope(scope))]
        rows.sort(
            key=lambda e: (e.get("written") or 0, e.get("pos") or 0, e["created_at"], e["id"])
        )
        return [_entity({**props, "embedding": None}) for props in rows]

    def merge_entities(
        self, scope: Tenant, keep_id: str, other_id: str, *, at: datetime | None = None
    ) -> MergeResult:
        """One managed transaction (rules: `repair.plan_merge`): the pair is read and checked
        under the tenant's lock, then keep's names, the re-pointed and dropped edges, the
        deletion of other, the MERGE event and the possible-duplicate pairs are written."""
        at = at or utcnow()
        # which tenant to lock: read once outside, and again under the lock
        keep, _ = check_pair(
            scope, keep_id, other_id, self.get_entities(scope, [keep_id, other_id])
        )
        tenant = keep.tenant

        def work(tx: ManagedTransaction, seq: int) -> MergeResult:
            found = self._tx_entities(tx, scope, [keep_id, other_id])
            keep, other = check_pair(scope, keep_id, other_id, found)
            if keep.tenant != tenant:
                raise TransientError("the entity moved while this merge waited")
            params = {**_scope(tenant, True), **_validity(Validity(include_invalid=True))}
            edges, _ = self._run(
                tx,
                "edges_at",
                {**params, "ids": [other_id], "vector": None, "row_limit": _ALL_ROWS},
            )
            change = plan_merge(keep, other, [_relation(row["relation"]) for row in edges], at)
            key = tenant.key
            pairs_rows, _ = self._run(
                tx, "pairs_of", {"tenant_key": key, "ids": [keep_id, other_id]}
            )
            pairs = repoint_pairs(
                [PossibleDuplicate.model_validate_json(r["data"]) for r in pairs_rows],
                keep_id,
                other_id,
            )
            self._run(
                tx, "set_entity_names", {"rows": [_names_row(change.keep, keep)], "tenant_key": key}
            )
            if change.moved:
                self._repoint(tx, key, change.moved)
            if change.dropped:
                _, counters = self._run(
                    tx,
                    "delete_relations",
                    {"ids": [r.id for r in change.dropped], "tenant_key": key},
                )
                if counters.relationships_deleted != len(change.dropped):
                    raise StoreError("not every dropped relation was deleted")
            _, counters = self._run(tx, "delete_entity", {"id": other_id, "tenant_key": key})
            if counters.nodes_deleted < 1:
                raise StoreError(f"entity {other_id} was not deleted")
            written = time.time_ns()
            self._run(
                tx,
                "create_entity_events",
                {"rows": _event_rows([change.event], written), "seq": seq},
            )
            if pairs.deletes:
                self._run(tx, "delete_pairs", {"pairs": pairs.deletes, "tenant_key": key})
            if pairs.creates:
                self._run(
                    tx,
                    "create_pairs",
                    {"rows": _pair_rows(tenant, pairs.creates, written), "tenant_key": key},
                )
            return change.result

        return self._repair("merge_entities", tenant, work)

    def _repoint(self, tx: ManagedTransaction, key: str, relations: Sequence[Relation]) -> None:
        _, counters = self._run(
            tx, "repoint_relations", {"rows": _ends_rows(relations), "tenant_key": key}
        )
        moved = len(relations)
        if (counters.relationships_deleted, counters.relationships_created) != (moved, moved):
            raise StoreError("not every relation was re-pointed")

    def split_entity(
        self, scope: Tenant, merge_id: str, *, at: datetime | None = None
    ) -> SplitResult:
        """One managed transaction (rules: `repair.plan_split`)."""
        at = at or utcnow()
        rows = self._read("merge_event_entity", {"id": merge_id})
        events = self.entity_history(scope, rows[0]["entity_id"]) if rows else []
        merge, _ = find_merge(scope, merge_id, events)

        def work(tx: ManagedTransaction, seq: int) -> SplitResult:
            history, _ = self._run(
                tx, "entity_history", {**_scope(scope), "entity_id": merge.entity_id}
            )
            events = [EntityEvent.model_validate_json(row["data"]) for row in history]
            merge_now, split = find_merge(scope, merge_id, events)
            undo = merge_now.undo
            assert undo is not None
            found = {
                e.id: e
                for e in self._tx_entities(tx, merge.tenant, [merge.entity_id, undo.other.id])
            }
            keep = found.get(merge.entity_id)
            exact = {
                **_scope(merge.tenant),
                "ids": [e.id for e in undo.edges] + [r.id for r in undo.dropped],
            }
            rel_rows, _ = self._run(tx, "get_relations", exact)
            stored = {row["relation"]["id"]: _relation(row["relation"]) for row in rel_rows}
            edges = [stored[e.id] for e in undo.edges if e.id in stored]
            taken = [r.id for r in undo.dropped if r.id in stored]
            change = plan_split(merge_now, split, keep, undo.other.id in found, edges, taken, at)
            key = merge.tenant.key
            written = time.time_ns()
            _, counters = self._run(
                tx,
                "create_entities",
                {"rows": [_entity_row(change.restored, written, 0)], "seq": seq},
            )
            if counters.nodes_created != 1 + len(change.restored.keys):
                raise StoreError("the entity was not restored")
            assert keep is not None  # plan_split refused otherwise
            self._run(
                tx, "set_entity_names", {"rows": [_names_row(change.keep, keep)], "tenant_key": key}
            )
            if change.moved:
                self._repoint(tx, key, change.moved)
            if change.recreated:
                recreated = [
                    _relation_row(r, written, pos) for pos, r in enumerate(change.recreated)
                ]
                _, counters = self._run(tx, "create_relations", {"rows": recreated})
                if counters.relationships_created != len(recreated):
                    raise StoreError("not every dropped relation was restored")
            self._run(
                tx,
                "create_entity_events",
                {"rows": _event_rows([change.event], written), "seq": seq},
            )
            return change.result

        return self._repair("split_entity", merge.tenant, work)

    def entity_history(self, scope: Tenant, entity_id: str) -> list[EntityEvent]:
        rows = self._read("entity_history", {**_scope(scope), "entity_id": entity_id})
        return [EntityEvent.model_validate_json(row["data"]) for row in rows]

    def possible_duplicates(self, scope: Tenant) -> list[PossibleDuplicate]:
        rows = self._read("possible_duplicates", _scope(scope))
        return [PossibleDuplicate.model_validate_json(row["data"]) for row in rows]

    # ------------------------------------------------------------------ reads

    def get_entities(self, scope: Tenant, ids: Sequence[str]) -> list[Entity]:
        rows = self._read("get_entities", {**_scope(scope), "ids": list(dict.fromkeys(ids))})
        return [_entity(row["entity"]) for row in rows]

    def get_relations(self, scope: Tenant, ids: Sequence[str]) -> list[Relation]:
        rows = self._read("get_relations", {**_scope(scope), "ids": list(dict.fromkeys(ids))})
        return [_relation(row["relation"]) for row in rows]

    def find_entities(
        self, scope: Tenant, keys: Sequence[str], *, exact: bool = False
    ) -> list[Entity]:
        self._ready()
        if not keys:
            return []
        rows = self._read("find_entities", {**_scope(scope, exact), "keys": list(keys)})
        return [_entity(row["entity"]) for row in rows]

    def similar_entities(
        self, scope: Tenant, vector: np.ndarray, k: int, *, exact: bool = False, light: bool = False
    ) -> list[tuple[Entity, float]]:
        """With `light`: entities without their embedding, ranked by Neo4j's own cosine (the
        same order; scores agree with the embedded store's to ~1e-7): 50 rows of 384 floats
        cost the server and the client more than the HNSW query that found them."""
        if exact and (held := self._exact_entities(scope, vector, k, light)) is not None:
            return held
        params = {**_scope(scope, exact), "light": light}
        hits = self._nearest("entities", params, vector, k, light=light)
        return [(_entity(props), score) for props, score in hits]

    def _exact_entities(
        self, tenant: Tenant, vector: np.ndarray, k: int, light: bool
    ) -> list[tuple[Entity, float]] | None:
        """The exact top k of an exact tenant (the entity resolver's candidates), scored here
        on its held name vectors with the embedded store's arithmetic and order; None for a
        tenant too large to hold (the index answers it). See stores/entity_vectors.py."""
        self._ready()
        if self._entity_vectors.max_rows == 0:
            return None
        query, _ = self._unit_query(vector)
        if k <= 0:
            return []
        block = self._entity_block(tenant.key)
        if block is None:
            return None
        with self._lock:  # the block grows in place when another thread brings it up to date
            if not block.ids:
                return []
            if block.matrix.shape[1] != query.shape[0]:
                raise StoreError(f"query has {query.shape[0]} dims, the store {self.dims}")
            scores = row_scores(block.matrix, query)
            best = best_first(scores, k)  # as the embedded store ranks
            picked = [(block.ids[row], float(scores[row])) for row in best]
        rows = self._read("get_entities", {**_scope(tenant), "ids": [i for i, _ in picked]})
        found = {row["entity"]["id"]: row["entity"] for row in rows}
        return [
            (_entity({**found[i], "embedding": None} if light else found[i]), score)
            for i, score in picked
            if i in found  # (gone if the tenant was deleted since)
        ]

    def _entity_block(self, key: str) -> VectorBlock | None:
        """The tenant's name vectors, brought up to date: one read of the entities of plans
        committed since the held plan number, or of all of them on first use (or when the
        tenant was deleted and written again since). None when it is too large to hold."""
        held = self._entity_vectors
        with self._lock:
            mark = held.mark(key)
        if mark is not None:
            (row,) = self._read("entity_vectors_since", {"tenant_key": key, "since": mark.seq})
            if row["seq"] is not None and (row["epoch"] or "") == mark.epoch:
                ids, vectors = _id_vectors(row["rows"])
                with self._lock:
                    block = held.extend(key, Watermark(mark.epoch, row["seq"]), ids, vectors)
                if block is not None:
                    return block
        (row,) = self._read("entity_vectors_all", {"tenant_key": key, "max_rows": held.max_rows})
        ids, vectors = _id_vectors(row["rows"])
        if row["size"] > held.max_rows:
            return None
        dims = self.dims or (len(vectors[0]) if vectors else None)
        if dims is None:  # nothing in the database has an embedding yet
            return VectorBlock.empty()
        mark = None if row["seq"] is None else Watermark(row["epoch"] or "", row["seq"])
        with self._lock:
            return held.load(key, mark, ids, vectors, dims)

    def _unit_query(self, vector: np.ndarray) -> tuple[np.ndarray, bool]:
        """The query in the embedded store's float32 arithmetic, so scores and ties agree: at
        unit length, and whether it has a direction (a zero query stays as it is)."""
        query, directed = unit_vector(vector)
        if self.dims is not None and query.shape[0] != self.dims:
            raise StoreError(f"query has {query.shape[0]} dims, the store {self.dims}")
        return query, directed

    @overload
    def similar_relations(
        self,
        scope: Tenant,
        vector: np.ndarray,
        k: int,
        validity: Validity,
        *,
        refs: Literal[False] = False,
    ) -> list[tuple[Relation, float]]: ...

    @overload
    def similar_relations(
        self, scope: Tenant, vector: np.ndarray, k: int, validity: Validity, *, refs: Literal[True]
    ) -> list[EdgeRef]: ...

    def similar_relations(
        self, scope: Tenant, vector: np.ndarray, k: int, validity: Validity, *, refs: bool = False
    ) -> list[tuple[Relation, float]] | list[EdgeRef]:
        """With `refs`: light rows ranked by Neo4j's own cosine (the same order; scores agree
        with the embedded store's float32 ones to ~1e-7), no embeddings sent."""
        params = {**_scope(scope), **_validity(validity), "light": refs}
        hits = self._nearest("relations", params, vector, k, light=refs)
        if refs:
            return [
                EdgeRef(p["id"], p["source_id"], p["name"], p["destination_id"], 0, score)
                for p, score in hits
            ]
        return [(_relation(props), score) for props, score in hits]

    def _nearest(
        self, kind: str, params: dict[str, Any], vector: np.ndarray, k: int, light: bool = False
    ) -> list[tuple[dict[str, Any], float]]:
        """Candidates from the index (over-fetched) or an exact tenant scan, re-ranked here
        with the embedded store's arithmetic; `light` rows carry no embedding, so they keep
        Neo4j's order and score, mapped from (1 + cos) / 2 back to the cosine."""
        self._ready()
        if k <= 0:
            return []
        query, directed = self._unit_query(vector)
        # Extra candidates absorb float differences and ties at the k-th place when re-ranked,
        # and either way a larger k widens the HNSW search (its recall at k=5 is not exact)
        want = k + 10
        params = {**params, "vector": query.tolist(), "zero_query": not directed, "want": want}
        key = (kind, params.get("as_of") is None, *(params.get(name) for name in _FETCH_KEY))
        small = self._fetch_factor.get(key) == _SMALL_SCOPE
        rows: list[dict[str, Any]] = []
        if (
            not small
            and self._vector_indexes
            and directed
            and want <= self.max_fetch
            and self._index_usable(kind)
        ):
            rows = self._from_index(kind, key, params, want)
        if len(rows) < want:  # too few of this scope among the global top-`fetch`
            rows = self._read(f"similar_{kind}_scan", params)
            # fewer than `want` in the whole scope: its exact scan is cheap, so the next
            # search skips the index; once it holds `want`, the index is tried again (a
            # scope that shares the index keeps the over-fetch `_from_index` learned)
            if len(rows) < want:
                self._remember(key, _SMALL_SCOPE)
            elif small:
                self._remember(key, None)
        if not rows:
            return []
        column = _FIELDS[kind]
        if light:
            return [(row[column], 2.0 * float(row["score"]) - 1.0) for row in rows[:k]]
        matrix = unit_rows(np.array([row[column]["embedding"] for row in rows], np.float32), None)
        scores = row_scores(matrix, query)
        order = sorted(range(len(rows)), key=lambda i: -scores[i])[:k]
        return [(rows[i][column], float(scores[i])) for i in order]

    def _from_index(
        self, kind: str, key: tuple[Any, ...], params: dict[str, Any], want: int
    ) -> list[dict[str, Any]]:
        """Ask the index for `want` times a factor rows and keep the scope's. The factor starts
        at 1 (a tenant that owns the index needs no over-fetch, and the HNSW search costs more
        the more rows it returns); when too few survive it becomes `overfetch`, and is
        remembered per scope: a tenant that shares the index goes straight to the large fetch
        (then, if still short, the caller's exact scan) next time. Never fewer than
        `min_fetch` rows: the HNSW search widens with the rows asked for, and its recall at
        k=15 is not exact."""
        factor = self._fetch_factor.get(key, 1.0)
        while True:
            fetch = min(max(math.ceil(want * factor), self.min_fetch), self.max_fetch)
            try:
                rows = self._read(f"similar_{kind}_index", {**params, "fetch": fetch})
            except StoreError as exc:
                if not _index_down(exc):
                    raise
                with self._lock:  # the caller's exact scan answers, now and for a while
                    self._paused[kind] = time.monotonic() + _INDEX_ERROR_PAUSE
                return []
            if len(rows) >= want or factor >= self.overfetch or fetch >= self.max_fetch:
                break
            factor = float(self.overfetch)
        self._remember(key, factor)
        return rows

    def _remember(self, key: tuple[Any, ...], factor: float | None) -> None:
        """What `_nearest` learned about a scope (None: forget it)."""
        if factor is None:
            self._fetch_factor.pop(key, None)
            return
        if len(self._fetch_factor) >= 4096:  # many scopes: forget, relearn as they come back
            self._fetch_factor.clear()
        self._fetch_factor[key] = factor

    def relations_touching(
        self, scope: Tenant, entity_ids: Sequence[str], validity: Validity, *, exact: bool = False
    ) -> list[Relation]:
        self._ready()
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return []
        params = {
            **_scope(scope, exact),
            **_validity(validity),
            "ids": ids,
            "vector": None,
            "row_limit": _ALL_ROWS,
        }
        found: dict[str, Relation] = {}
        for row in self._read("edges_at", params):
            rel_id = row["relation"]["id"]
            if rel_id not in found:
                found[rel_id] = _relation(row["relation"])
        return list(found.values())

    @overload
    def expand(
        self,
        scope: Tenant,
        entity_ids: Sequence[str],
        hops: int,
        validity: Validity,
        limit: int,
        *,
        vector: None = None,
    ) -> list[tuple[Relation, int]]: ...

    @overload
    def expand(
        self,
        scope: Tenant,
        entity_ids: Sequence[str],
        hops: int,
        validity: Validity,
        limit: int,
        *,
        vector: np.ndarray,
    ) -> list[EdgeRef]: ...

    def expand(
        self,
        scope: Tenant,
        entity_ids: Sequence[str],
        hops: int,
        validity: Validity,
        limit: int,
        *,
        vector: np.ndarray | None = None,
    ) -> list[tuple[Relation, int]] | list[EdgeRef]:
        """Breadth-first, direction ignored, walking only accepted in-scope edges; one query
        per hop, the bookkeeping as in the embedded store so both return the same order.
        With `vector`: light `EdgeRef`s scored in Cypher by the cosine to `vector` (equal to
        `edge_score` for unit vectors, to ~1e-7), so a hub's edges cost no embedding transfer."""
        self._ready()
        result: list[Any] = []
        if limit <= 0:
            return result
        seen: set[str] = set()
        frontier = list(dict.fromkeys(entity_ids))
        visited = set(frontier)
        query = None if vector is None else np.asarray(vector, dtype=np.float32).ravel().tolist()
        base = {**_scope(scope), **_validity(validity), "vector": query}
        for hop in range(1, hops + 1):
            if not frontier:
                break
            next_frontier: list[str] = []
            # An edge comes at most twice in a hop (both ends in the frontier), and so may each
            # edge already taken: these rows hold every edge the bookkeeping below can take.
            row_limit = 2 * (limit - len(result)) + 2 * len(seen)
            params = {**base, "ids": frontier, "row_limit": row_limit}
            for row in self._read("edges_at", params):
                props = row["relation"]
                if props["id"] in seen:
                    continue
                if len(result) >= limit:
                    return result
                seen.add(props["id"])
                if query is None:
                    result.append((_relation(props), hop))
                else:
                    result.append(
                        EdgeRef(
                            props["id"],
                            props["source_id"],
                            props["name"],
                            props["destination_id"],
                            hop,
                            float(props["score"]),
                        )
                    )
                node = frontier[row["i"]]
                other = (
                    props["destination_id"] if props["source_id"] == node else props["source_id"]
                )
                if other not in visited:
                    visited.add(other)
                    next_frontier.append(other)
            frontier = next_frontier
        return result

    def siblings(
        self,
        scope: Tenant,
        keys: Sequence[tuple[str, str, bool]],
        validity: Validity,
        limit: int,
        *,
        vector: np.ndarray,
    ) -> list[EdgeRef]:
        """One read (`sibling_edges`): per key, the hub is sought by id and only the edges in
        the key's direction with the key's relation name are read; cut to `limit` in Cypher
        and returned light, scored by Cypher's cosine as `expand(vector=)` is."""
        self._ready()
        if limit <= 0 or not keys:
            return []
        params = {
            **_scope(scope),
            **_validity(validity),
            "keys": [
                {"hub_id": hub, "relation": name, "hub_is_destination": bool(hub_is_destination)}
                for hub, name, hub_is_destination in keys
            ],
            "limit": limit,
            "vector": np.asarray(vector, dtype=np.float32).ravel().tolist(),
        }
        refs = []
        for row in self._read("sibling_edges", params):
            props = row["relation"]
            refs.append(
                EdgeRef(
                    props["id"],
                    props["source_id"],
                    props["name"],
                    props["destination_id"],
                    2,
                    float(props["score"]),
                )
            )
        return refs

    def snapshot(self, scope: Tenant, validity: Validity) -> GraphSnapshot:
        params = {**_scope(scope), **_validity(validity)}
        entities = [_entity(row["entity"]) for row in self._read("snapshot_entities", params)]
        relations = [_relation(r["relation"]) for r in self._read("snapshot_relations", params)]
        return GraphSnapshot(entities=entities, relations=relations)

    def episodes(self, scope: Tenant) -> list[Episode]:
        """The scope's episodes in the order they were written."""
        return [_episode(row["episode"]) for row in self._read("episodes", _scope(scope))]

    # ------------------------------------------------------------------ the fact memory

    def get_facts(self, scope: Tenant, ids: Sequence[str]) -> list[Fact]:
        rows = self._read("get_facts", {**_scope(scope), "ids": list(dict.fromkeys(ids))})
        return [_fact(row["fact"]) for row in rows]

    def facts(self, scope: Tenant) -> list[Fact]:
        """All current facts of the scope, oldest first (ties keep write order)."""
        return [_fact(row["fact"]) for row in self._read("facts", _scope(scope))]

    def similar_facts(
        self, scope: Tenant, vector: np.ndarray, k: int, *, exact: bool = False
    ) -> list[tuple[Fact, float]]:
        hits = self._nearest("facts", _scope(scope, exact), vector, k)
        return [(_fact(props), score) for props, score in hits]

    def lexical_facts(
        self, scope: Tenant, words: list[str], k: int, *, exact: bool = False
    ) -> list[tuple[Fact, float]]:
        """BM25 top-k current facts for query terms (stores/lexical_neo4j.py)."""
        self._ready()
        hits = lexical.search(self._read, "lexical_facts", _scope(scope, exact), words, k,
                              self.max_fetch)  # fmt: skip
        return [(_fact(h["fact"]), float(h["score"])) for h in hits]

    def lexical_relations(
        self, scope: Tenant, words: list[str], k: int, validity: Validity
    ) -> list[EdgeRef]:
        self._ready()
        params = {**_scope(scope), **_validity(validity)}
        hits = lexical.search(self._read, "lexical_relations", params, words, k, self.max_fetch)
        return lexical.edge_refs(hits)

    def lexical_entities(
        self, scope: Tenant, words: list[str], k: int
    ) -> list[tuple[Entity, float]]:
        self._ready()
        hits = lexical.search(self._read, "lexical_entities", _scope(scope), words, k,
                              self.max_fetch)  # fmt: skip
        return [(_entity(h["entity"]), float(h["score"])) for h in hits]

    def fact_timeline(self, scope: Tenant) -> list[tuple[FactEvent, datetime | None]]:
        """Every fact event of the scope, per fact in write order, with its episode's time."""
        rows = self._read("fact_timeline", _scope(scope))
        return [(_fact_event(r["event"]), _py_time(r["said"])) for r in rows]

    def fact_history(self, scope: Tenant, fact_id: str) -> list[FactEvent]:
        """Every event of one fact in write order, also after the fact was deleted."""
        rows = self._read("fact_history", {**_scope(scope), "fact_id": fact_id})
        return [_fact_event(row["event"]) for row in rows]

    def recent_messages(self, tenant: Tenant, limit: int) -> list[Message]:
        """The last `limit` messages of the exact tenant, from at most `limit` episodes."""
        self._ready()
        if limit <= 0:
            return []
        rows = self._read("recent_episodes", {"tenant_key": tenant.key, "limit": limit})
        return [Message.model_validate(m) for m in _messages(rows[::-1])[-limit:]]

    def message_count(self, tenant: Tenant) -> int:
        (row,) = self._read("message_count", {"tenant_key": tenant.key})
        return int(row["n"])

    def messages_since(self, tenant: Tenant, offset: int) -> list[Message]:
        """The exact tenant's messages after the first `offset`: the episode sizes say which
        episodes hold them, and only those are read (one transaction, one snapshot)."""
        offset = max(offset, 0)

        def work(tx: ManagedTransaction) -> list[dict[str, Any]]:
            sizes = _rows(tx.run(statements()["episode_sizes"], {"tenant_key": tenant.key}))
            wanted: list[str] = []
            seen = skip = 0
            for row in sizes:
                count = row["n"] or 0
                if seen + count > offset:
                    if not wanted:
                        skip = offset - seen  # messages of the first episode already covered
                    wanted.append(row["id"])
                seen += count
            if not wanted:
                return []
            rows = _rows(tx.run(statements()["episode_messages"], {"ids": wanted}))
            return _messages(rows)[skip:]

        return [Message.model_validate(m) for m in self._read_tx("messages_since", work)]

    def get_summary(self, tenant: Tenant) -> Summary | None:
        rows = self._read("get_summary", {"tenant_key": tenant.key})
        return _summary(rows[0]["summary"]) if rows else None

    def set_summary(self, summary: Summary) -> None:
        """Replace the exact tenant's summary in its own small transaction."""
        self._ready()
        if summary.messages_covered < 0:
            raise StoreError(f"a summary can't cover {summary.messages_covered} messages")
        props = {
            **_tenant_props(summary.tenant),
            "text": summary.text,
            "messages_covered": summary.messages_covered,
            "updated_at": _db_time(summary.updated_at),
        }
        params = {"tenant_key": summary.tenant.key, "props": props}

        def work(tx: ManagedTransaction) -> None:
            (row,), _ = self._run(tx, "set_summary", params)
            if row["text"] is None:  # as in _write_plan: a delete_tenant got there first
                raise TransientError("the summary was deleted while this write waited for it")

        self._write("set_summary", work)

    # ------------------------------------------------------------------ the whole store

    def tenants(self) -> list[Tenant]:
        """Every exact tenant holding at least one record, sorted by key."""
        keys = sorted(row["key"] for row in self._read("tenants", {}))
        return [_tenant_from_key(key) for key in keys]

    def stats(self, scope: Tenant | None = None) -> StoreStats:
        if scope is None:
            (row,) = self._read("stats_all", {})
            tenants = len(self._read("tenants", {}))
        else:
            (row,) = self._read("stats_scope", _scope(scope))
            tenants = len(set(row["keys"]))
        return StoreStats(
            entities=row["entities"],
            relations=row["relations"],
            valid_relations=row["relations"] - row["invalid"],
            invalid_relations=row["invalid"],
            episodes=row["episodes"],
            tenants=tenants,
        )


__all__ = ["CYPHER_FILES", "Neo4jGraphStore", "parse_statements", "statements"]
