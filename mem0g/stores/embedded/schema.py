"""The embedded store's SQLite layout: tables, indexes, upserts and deletes per
table, records <-> rows (JSON columns, float32 embedding blobs), and the few writes that are
plain statements (entity events, possible duplicates, a tenant's turn). Pure SQL and
conversions, no state; only the embedded store's modules import it."""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Iterable
from typing import Any

import numpy as np

from mem0g.stores.base import PlanConflict
from mem0g.stores.repair import pair_key
from mem0g.types import (
    Entity,
    EntityEvent,
    Episode,
    Fact,
    FactEvent,
    PossibleDuplicate,
    Relation,
    Summary,
    Tenant,
)

# v2 added the fact memory's tables, v3 the entity repair's (entity_events,
# possible_duplicates), v4 tenant_versions, v5 the FTS5 tables (stores/embedded/lexical.py),
# v6 fact_links (stores/embedded/links.py), v7 the FTS tables' scope column (lexical.py); an
# older file is upgraded in place when opened. The BM25 count tables (stores/embedded/bm25.py)
# joined v7 without a new version: the triggers that keep them live in the file, so an older
# mem0g's writes keep them in step too, and a file without them gets them when opened.
SCHEMA_VERSION = 7


_TENANT_COLS = ("user_id", "agent_id", "run_id", "tenant_key")


_COLUMNS: dict[str, tuple[str, ...]] = {
    "episodes": ("id", *_TENANT_COLS, "messages", "timestamp", "created_at"),
    "entities": ("id", *_TENANT_COLS, "name", "type", "aliases", "keys", "embedding",
                 "created_at", "updated_at"),
    "relations": ("id", *_TENANT_COLS, "source_id", "source", "relation", "destination_id",
                  "destination", "embedding", "valid_from", "invalid_at", "created_at",
                  "updated_at", "mentions", "provenance"),
    "facts": ("id", *_TENANT_COLS, "text", "embedding", "created_at", "updated_at", "provenance"),
    "fact_events": ("id", "fact_id", *_TENANT_COLS, "event", "old_text", "new_text", "actor",
                    "episode_id", "at"),
    "summaries": (*_TENANT_COLS, "text", "messages_covered", "updated_at"),
}  # fmt: skip


_JSON_COLS = frozenset({"messages", "aliases", "keys", "provenance"})


# Columns a write may change on an existing row (graph embeddings and creation data never do);
# tables without an entry are insert-only. A summary is one row per exact tenant key.
_MUTABLE: dict[str, tuple[str, ...]] = {
    "entities": ("name", "aliases", "keys", "updated_at"),  # name: a rename
    # the ends and their names change when a merge or split re-points an edge
    "relations": (
        "source_id",
        "source",
        "destination_id",
        "destination",
        "invalid_at",
        "mentions",
        "provenance",
        "updated_at",
    ),
    "facts": ("text", "embedding", "updated_at", "provenance"),  # an update adds its episode
    "summaries": ("text", "messages_covered", "updated_at"),
}


_CONFLICT = {"summaries": "tenant_key"}  # the unique column an upsert meets; "id" otherwise


_NOT_FIELDS = frozenset({*_TENANT_COLS, "embedding"})


_Record = Entity | Relation | Episode | Fact | FactEvent | Summary


_MODELS: dict[str, type[_Record]] = {
    "episodes": Episode, "entities": Entity, "relations": Relation, "facts": Fact,
    "fact_events": FactEvent, "summaries": Summary,
}  # fmt: skip


_TENANT_SQL = "user_id TEXT, agent_id TEXT, run_id TEXT, tenant_key TEXT NOT NULL"


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    f"""CREATE TABLE IF NOT EXISTS entities (id TEXT PRIMARY KEY, {_TENANT_SQL},
        name TEXT NOT NULL, type TEXT NOT NULL, aliases TEXT NOT NULL, keys TEXT NOT NULL,
        embedding BLOB, created_at TEXT NOT NULL, updated_at TEXT NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS relations (id TEXT PRIMARY KEY, {_TENANT_SQL},
        source_id TEXT NOT NULL, source TEXT NOT NULL, relation TEXT NOT NULL,
        destination_id TEXT NOT NULL, destination TEXT NOT NULL, embedding BLOB,
        valid_from TEXT, invalid_at TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        mentions INTEGER NOT NULL, provenance TEXT NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS episodes (id TEXT PRIMARY KEY, {_TENANT_SQL},
        messages TEXT NOT NULL, timestamp TEXT NOT NULL, created_at TEXT NOT NULL)""",
    # v2: the fact memory
    f"""CREATE TABLE IF NOT EXISTS facts (id TEXT PRIMARY KEY, {_TENANT_SQL},
        text TEXT NOT NULL, embedding BLOB, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
        provenance TEXT NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS fact_events (id TEXT PRIMARY KEY, fact_id TEXT NOT NULL,
        {_TENANT_SQL}, event TEXT NOT NULL, old_text TEXT, new_text TEXT, actor TEXT NOT NULL,
        episode_id TEXT, at TEXT NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS summaries ({_TENANT_SQL}, text TEXT NOT NULL,
        messages_covered INTEGER NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY (tenant_key))""",
    # v3: the entity repair's records. An event is its EntityEvent as JSON (a MERGE carries
    # its undo record); a pair is unordered (`pair` = repair.pair_key), first record wins.
    f"""CREATE TABLE IF NOT EXISTS entity_events (id TEXT PRIMARY KEY, entity_id TEXT NOT NULL,
        other_id TEXT, {_TENANT_SQL}, event TEXT NOT NULL, data TEXT NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS possible_duplicates ({_TENANT_SQL}, pair TEXT NOT NULL,
        entity_id TEXT NOT NULL, candidate_id TEXT NOT NULL, data TEXT NOT NULL,
        PRIMARY KEY (tenant_key, pair))""",
    # v4: each exact tenant's write counter (tenant_version): kept through a delete, so a plan
    # computed before the delete can never pass for one computed after it
    """CREATE TABLE IF NOT EXISTS tenant_versions (tenant_key TEXT PRIMARY KEY,
        version INTEGER NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS entity_events_tenant ON entity_events (tenant_key)",
    "CREATE INDEX IF NOT EXISTS entity_events_entity ON entity_events (entity_id)",
    "CREATE INDEX IF NOT EXISTS entity_events_other ON entity_events (other_id)",
    "CREATE INDEX IF NOT EXISTS episodes_tenant ON episodes (tenant_key)",
    "CREATE INDEX IF NOT EXISTS entities_tenant ON entities (tenant_key)",
    "CREATE INDEX IF NOT EXISTS relations_tenant ON relations (tenant_key)",
    "CREATE INDEX IF NOT EXISTS facts_tenant ON facts (tenant_key)",
    "CREATE INDEX IF NOT EXISTS fact_events_tenant ON fact_events (tenant_key)",
    # a new fact's id must be free of histories too (loading.TakenIds asks per id)
    "CREATE INDEX IF NOT EXISTS fact_events_fact ON fact_events (fact_id)",
    # summaries and possible_duplicates: their primary keys start with tenant_key already
)  # fmt: skip


_REPAIR_TABLES = ("entity_events", "possible_duplicates")  # written by their own statements


# Deletes per table, written out in full: statements are literal text, values go in as ?.
_DELETE_TENANT = {
    "episodes": "DELETE FROM episodes WHERE tenant_key = ?",
    "entities": "DELETE FROM entities WHERE tenant_key = ?",
    "relations": "DELETE FROM relations WHERE tenant_key = ?",
    "facts": "DELETE FROM facts WHERE tenant_key = ?",
    "fact_events": "DELETE FROM fact_events WHERE tenant_key = ?",
    "summaries": "DELETE FROM summaries WHERE tenant_key = ?",
    "entity_events": "DELETE FROM entity_events WHERE tenant_key = ?",
    "possible_duplicates": "DELETE FROM possible_duplicates WHERE tenant_key = ?",
    "fact_links": "DELETE FROM fact_links WHERE tenant_key = ?",
}


_DELETE_ALL = {
    "episodes": "DELETE FROM episodes",
    "entities": "DELETE FROM entities",
    "relations": "DELETE FROM relations",
    "facts": "DELETE FROM facts",
    "fact_events": "DELETE FROM fact_events",
    "summaries": "DELETE FROM summaries",
    "entity_events": "DELETE FROM entity_events",
    "possible_duplicates": "DELETE FROM possible_duplicates",
    "fact_links": "DELETE FROM fact_links",
}


# `stats`: counted by SQLite over the tenant_key indexes, so no tenant is read into memory for
# a count (the whole store's `mem0g stats` read every record of 20k tenants). A current fact is
# a row of `facts` (a delete removes the row; its history stays in fact_events). A scope's
# exact tenant keys go in as one JSON array, as loading.py reads a tenant set's rows.
_COUNTED = "entities, relations, invalid, episodes, facts"
_IN_KEYS = "WHERE tenant_key IN (SELECT value FROM json_each(:keys))"
_COUNTS = {
    scoped: f"""SELECT {_COUNTED} FROM
        (SELECT count(*) AS entities FROM entities {where}),
        (SELECT count(*) AS relations, count(invalid_at) AS invalid FROM relations {where}),
        (SELECT count(*) AS episodes FROM episodes {where}),
        (SELECT count(*) AS facts FROM facts {where})"""
    for scoped, where in ((False, ""), (True, _IN_KEYS))
}


# Upserts (built from the constant column names above; values always go in as ? parameters).
# ON CONFLICT updates in place, so a record keeps its rowid and the load order stays stable.
_UPSERT = {
    table: f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
    + (f" ON CONFLICT ({_CONFLICT.get(table, 'id')}) DO UPDATE SET " if table in _MUTABLE else "")
    + ", ".join(f"{c} = excluded.{c}" for c in _MUTABLE.get(table, ()))
    for table, cols in _COLUMNS.items()
}


def _tenant_ids(tenant: Tenant) -> list[tuple[str, str]]:
    """The ids a tenant sets (a scope's filter), as index keys."""
    ids = (("user_id", tenant.user_id), ("agent_id", tenant.agent_id), ("run_id", tenant.run_id))
    return [(field, value) for field, value in ids if value is not None]


def _take_turn(conn: sqlite3.Connection, tenant_key: str, based_on: str | None) -> None:
    """Inside a write transaction (BEGIN IMMEDIATE holds SQLite's one write lock, across
    processes): check the plan's version, then move the tenant's version on."""
    row = conn.execute(
        "SELECT version FROM tenant_versions WHERE tenant_key = ?", (tenant_key,)
    ).fetchone()
    version = row["version"] if row else 0
    if based_on is not None and based_on != str(version):
        raise PlanConflict(
            f"the tenant changed since this plan was made (version {based_on} -> {version})"
        )
    conn.execute(
        "INSERT INTO tenant_versions VALUES (?, 1) ON CONFLICT (tenant_key) "
        "DO UPDATE SET version = version + 1",
        (tenant_key,),
    )


def _vec_blob(blob: bytes | None) -> np.ndarray | None:
    return None if blob is None else np.frombuffer(blob, dtype=np.float32).copy()


@functools.lru_cache(maxsize=4096)
def _key(tenant: Tenant) -> str:
    """`Tenant.key` re-serialises JSON on every call; a store asks for it once per record."""
    return tenant.key


@functools.lru_cache(maxsize=1 << 16)  # a smaller cache thrashes on a 20k-tenant reopen
def _tenant(key: str) -> Tenant:
    """One shared (frozen) Tenant per key while loading, instead of one per row."""
    return Tenant.from_key(key)


def _detached(record: Entity | Relation) -> Any:
    """A copy without the embedding that shares no mutable list with the caller's record;
    much cheaper than a deep copy, which would first copy the whole embedding list."""
    update: dict[str, Any] = {"embedding": None}
    if isinstance(record, Entity):
        update.update(aliases=list(record.aliases), keys=list(record.keys))
    else:
        update["provenance"] = [p.model_copy() for p in record.provenance]
    return record.model_copy(update=update)


def _to_row(table: str, record: _Record, vec: np.ndarray | None) -> tuple[Any, ...]:
    """Column values in `_COLUMNS` order: lists as JSON, datetimes as ISO-8601 with offset."""
    data = record.model_dump(mode="json", exclude={"tenant", "embedding"})
    data["embedding"] = None if vec is None else vec.tobytes()
    t = record.tenant
    data.update(user_id=t.user_id, agent_id=t.agent_id, run_id=t.run_id, tenant_key=_key(t))
    return tuple(json.dumps(data[c]) if c in _JSON_COLS else data[c] for c in _COLUMNS[table])


def _from_row(table: str, row: sqlite3.Row) -> Any:
    """A record without its embedding (the store keeps that apart, as a float32 array)."""
    columns = (c for c in _COLUMNS[table] if c not in _NOT_FIELDS)
    data = {c: json.loads(row[c]) if c in _JSON_COLS else row[c] for c in columns}
    data["tenant"] = _tenant(row["tenant_key"])
    return _MODELS[table].model_validate(data)


def _write_entity_event(conn: sqlite3.Connection, event: EntityEvent) -> None:
    t = event.tenant
    conn.execute(
        "INSERT INTO entity_events (id, entity_id, other_id, user_id, agent_id, run_id, "
        "tenant_key, event, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (event.id, event.entity_id, event.other_id, t.user_id, t.agent_id, t.run_id,
         _key(t), event.event, event.model_dump_json()),
    )  # fmt: skip


def _write_pairs(
    conn: sqlite3.Connection, tenant: Tenant, pairs: Iterable[PossibleDuplicate]
) -> None:
    """Record possible duplicates; a pair recorded already (either order) keeps its record."""
    for pair in pairs:
        conn.execute(
            "INSERT INTO possible_duplicates (user_id, agent_id, run_id, tenant_key, pair, "
            "entity_id, candidate_id, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (tenant_key, pair) DO NOTHING",
            (tenant.user_id, tenant.agent_id, tenant.run_id, _key(tenant),
             pair_key(pair.entity_id, pair.candidate_id), pair.entity_id, pair.candidate_id,
             pair.model_dump_json()),
        )  # fmt: skip
