"""Fact <-> entity links in the embedded store: the `fact_links` table (schema v6).

A row (fact, entity) says the fact names the entity (`resolve.links` decides which, at add
time). Rows are written by `apply` inside the plan's transaction; triggers drop a fact's or an
entity's rows when its row is deleted (a deleted fact, a merged-away entity, a deleted
tenant), so no code path can leave a dangling link. Reads go to SQLite (an indexed seek), and
the facts found are scored with the fact vectors held in memory.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from mem0g.stores.embedded.facts import FactIndex
from mem0g.stores.embedded.graph import _locked
from mem0g.stores.vectors import rank_linked
from mem0g.types import Entity, Fact, Tenant, WritePlan

TABLES = ("fact_links",)  # tenant-keyed: schema.py's per-tenant deletes cover them
SCHEMA = (
    """CREATE TABLE IF NOT EXISTS fact_links (fact_id TEXT NOT NULL, entity_id TEXT NOT NULL,
        tenant_key TEXT NOT NULL, PRIMARY KEY (fact_id, entity_id)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS fact_links_entity ON fact_links (entity_id)",
    "CREATE INDEX IF NOT EXISTS fact_links_tenant ON fact_links (tenant_key)",
    """CREATE TRIGGER IF NOT EXISTS fact_links_fact_gone AFTER DELETE ON facts BEGIN
        DELETE FROM fact_links WHERE fact_id = old.id; END""",
    """CREATE TRIGGER IF NOT EXISTS fact_links_entity_gone AFTER DELETE ON entities BEGIN
        DELETE FROM fact_links WHERE entity_id = old.id; END""",
)


def write(conn: sqlite3.Connection, plan: WritePlan, tenant_key: str) -> None:
    """A checked plan's links: the stored links of every fact it changes go first (the plan
    carries a changed fact's whole new set), then its links are added."""
    changed = [(c.fact_id,) for c in plan.fact_changes]
    conn.executemany("DELETE FROM fact_links WHERE fact_id = ?", changed)
    conn.executemany(
        "INSERT OR IGNORE INTO fact_links (fact_id, entity_id, tenant_key) VALUES (?, ?, ?)",
        [(link.fact_id, link.entity_id, tenant_key) for link in plan.fact_links],
    )


def backfill(conn: sqlite3.Connection, facts: Iterable[Fact], entities: Iterable[Entity]) -> int:
    """Links of every current fact, computed from the texts and keys (`resolve.links`): for
    a store written before schema v6, once, when it is opened. Returns the links written."""
    from mem0g.resolve.links import all_links  # the matching rule (a stage's module)

    facts = list(facts)
    tenant_of = {f.id: f.tenant.key for f in facts}
    rows = [(f, e, tenant_of[f]) for f, e in all_links(facts, entities)]
    conn.executemany(
        "INSERT OR IGNORE INTO fact_links (fact_id, entity_id, tenant_key) VALUES (?, ?, ?)", rows
    )
    return len(rows)


def merge(conn: sqlite3.Connection, keep_id: str, other_id: str) -> None:
    """`other`'s links move onto `keep` (before `other`'s row goes: its trigger then drops
    the rows a fact naming both already had on `keep`)."""
    conn.execute(
        "UPDATE OR IGNORE fact_links SET entity_id = ? WHERE entity_id = ?", (keep_id, other_id)
    )


def linked_to(conn: sqlite3.Connection, entity_id: str) -> list[str]:
    rows = conn.execute("SELECT fact_id FROM fact_links WHERE entity_id = ?", (entity_id,))
    return [row["fact_id"] for row in rows]


def relink(
    conn: sqlite3.Connection,
    tenant_key: str,
    facts: Sequence[str],
    entities: Sequence[str],
    links: Iterable[tuple[str, str]],
) -> None:
    """Replace the links between these facts and these entities (a split's recomputation)."""
    for entity_id in entities:
        conn.executemany(
            "DELETE FROM fact_links WHERE fact_id = ? AND entity_id = ?",
            [(fact_id, entity_id) for fact_id in facts],
        )
    conn.executemany(
        "INSERT OR IGNORE INTO fact_links (fact_id, entity_id, tenant_key) VALUES (?, ?, ?)",
        [(f, e, tenant_key) for f, e in links],
    )


def linked_facts(
    conn: sqlite3.Connection,
    tenant_keys: Sequence[str],
    entity_ids: Sequence[str],
    vectors: dict[str, np.ndarray],
    order: dict[str, int],
    query: np.ndarray,
    k: int,
) -> list[tuple[str, float, int]]:
    """(fact id, cosine with the query, how many of the entities it names) of the current
    facts of these tenants linked to any of the entities: most entities named first, then
    by cosine, then write order; at most k."""
    if not entity_ids or not tenant_keys:
        return []
    counts: dict[str, int] = {}
    keys = set(tenant_keys)
    for entity_id in dict.fromkeys(entity_ids):
        rows = conn.execute(
            "SELECT fact_id, tenant_key FROM fact_links WHERE entity_id = ?", (entity_id,)
        )
        for row in rows:
            if row["tenant_key"] in keys and row["fact_id"] in order:
                counts[row["fact_id"]] = counts.get(row["fact_id"], 0) + 1
    return rank_linked(counts, vectors, order, query, k)


class LinkReads:
    """`linked_facts` (a mixin of `EmbeddedGraphStore`)."""

    _facts: FactIndex

    if TYPE_CHECKING:  # the store's (stubs here would shadow them in the MRO)

        def _connection(self) -> sqlite3.Connection: ...
        def _scope_keys(self, scope: Tenant, exact: bool = False) -> list[str]: ...

    @_locked
    def linked_facts(
        self, scope: Tenant, entity_ids: Sequence[str], vector: np.ndarray, k: int
    ) -> list[tuple[str, float, int]]:
        keys = [key for key in self._scope_keys(scope) if key in self._facts.tenants]
        order = {i: n for n, i in enumerate(self._facts.current_ids(keys))}
        return linked_facts(
            self._connection(), keys, entity_ids, self._facts.vectors, order, vector, k
        )
