"""Values in and out of Neo4j: times (stored as UTC DATETIME, read back from
`toString()` on hot paths), tenants, vectors, and records (entities, relations, episodes, facts,
events, summaries) from the maps the statements return; scope and validity parameters."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np

from mem0g.stores.base import PlanConflict, StoreError
from mem0g.stores.vectors import as_vector, has_direction
from mem0g.types import (
    Entity,
    Episode,
    Fact,
    FactEvent,
    Provenance,
    Relation,
    Summary,
    Tenant,
    Validity,
)

UTC = timezone.utc


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
    """Records we (and the Cypher dump) wrote carry tenant_key; an older dump only the ids."""
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


_ALWAYS = ("id", "created_at")
_ENDS = ("source_id", "destination_id", "source_name", "destination_name")


def present(props: dict[str, Any] | None) -> bool:
    """Whether a row read back a node or edge that still exists. Reads are read-committed:
    one that a concurrent transaction deleted after the read matched it comes back without
    its properties, or, deleted between two keys of the projection, with `.*` read and the
    keys computed after it (`created_at`, an end's id) null. Either way it is gone, as if
    deleted just before the read, not an error."""
    if not props or any(props.get(key) is None for key in _ALWAYS):
        return False
    return all(props[key] is not None for key in _ENDS if key in props)


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
    """Provenance from its two parallel lists; an older Cypher dump carried episode ids but
    no timestamps, so the record's creation stands in."""
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
        **_seek(scope, exact),
    }


def _seek(scope: Tenant, exact: bool) -> dict[str, Any]:
    """The one index a scoped statement's anchors seek (cypher/read.cypher, "anchors"): the
    others get null, which seeks nothing. Why: the server runs every branch of a UNION ALL,
    whatever parameter-only predicates say, so a branch per id with such guards read the
    user's whole index range for a run's scope, and a shared agent's for a user's. The most
    selective one: the exact tenant's key; a user's run by the (user_id, run_id) indexes; a
    user; an agent's run by the run (a run is one conversation); an agent; a run."""
    seek: dict[str, Any] = dict.fromkeys(
        ("seek_tenant_key", "seek_user_id", "seek_user_run", "seek_agent_id", "seek_run_id")
    )
    if exact:
        seek["seek_tenant_key"] = scope.key
    elif scope.user_id is not None and scope.run_id is not None:
        seek["seek_user_run"] = [scope.user_id, scope.run_id]
    elif scope.user_id is not None:
        seek["seek_user_id"] = scope.user_id
    elif scope.run_id is not None:
        seek["seek_run_id"] = scope.run_id
    else:
        seek["seek_agent_id"] = scope.agent_id
    return seek


def _validity(validity: Validity) -> dict[str, Any]:
    return {"include_invalid": validity.include_invalid, "as_of": _db_time(validity.as_of)}


def _check_dims(dims: Any) -> int | None:
    """The one number that reaches DDL (inside $options): it must be a positive int."""
    if dims is None:
        return None
    if isinstance(dims, bool) or not isinstance(dims, (int, np.integer)) or dims <= 0:
        raise StoreError(f"dims must be a positive integer, not {dims!r}")
    return int(dims)


_ALL_ROWS = 2**62  # LIMIT for reads that want every row
