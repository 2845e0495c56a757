"""Fact <-> entity links in the Neo4j store: `(:Fact)-[:NAMES]->(:Entity)`, from
cypher/links.cypher. Written in the plan's transaction (`write`), moved by a merge, recomputed
by a split between keep and the restored entity; a DETACH DELETE of either end removes them.
`LinkReads` is a mixin of `Neo4jGraphStore`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from neo4j import ManagedTransaction

from mem0g.stores.neo4j.rows import _scope
from mem0g.stores.vectors import rank_linked
from mem0g.types import Entity, Tenant, WritePlan

Run = Callable[[ManagedTransaction, str, dict[str, Any]], Any]


def write(run: Run, tx: ManagedTransaction, plan: WritePlan) -> None:
    """A checked plan's links, after its facts: a changed fact's stored links go first."""
    changed = [c.fact_id for c in plan.fact_changes if c.text is not None]
    if changed:
        run(tx, "unlink_facts", {"ids": changed})
    if plan.fact_links:
        rows = [link.model_dump() for link in plan.fact_links]
        run(tx, "link_facts", {"rows": rows, "tenant_key": plan.tenant.key})


def merge(run: Run, tx: ManagedTransaction, key: str, keep_id: str, other_id: str) -> None:
    run(tx, "merge_links", {"keep_id": keep_id, "other_id": other_id, "tenant_key": key})


def split(run: Run, tx: ManagedTransaction, keep: Entity, restored: Entity) -> None:
    """The links of keep's facts between keep and the restored entity, recomputed from the
    texts and the two entities' keys as the split leaves them (`resolve.links`)."""
    from mem0g.resolve.links import split_links  # the matching rule (a stage's module)

    key = keep.tenant.key
    rows, _ = run(tx, "linked_to", {"id": keep.id, "tenant_key": key})
    texts = {row["id"]: row["text"] for row in rows}
    if not texts:
        return
    run(tx, "unlink_between", {"facts": list(texts), "entities": [keep.id, restored.id]})
    found = split_links(texts, keep, restored)
    if found:
        rows = [{"fact_id": f, "entity_id": e} for f, e in found]
        run(tx, "link_facts", {"rows": rows, "tenant_key": key})


class LinkReads:
    """`linked_facts` (a mixin of `Neo4jGraphStore`)."""

    if TYPE_CHECKING:  # the store's (stubs here would shadow them in the MRO)

        def _read(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]: ...
        def _unit_query(self, vector: np.ndarray) -> tuple[np.ndarray, bool]: ...

    def linked_facts(
        self, scope: Tenant, entity_ids: Sequence[str], vector: np.ndarray, k: int
    ) -> list[tuple[str, float, int]]:
        if not entity_ids or k <= 0:
            return []
        query, directed = self._unit_query(vector)
        params = {
            **_scope(scope),
            "entity_ids": list(dict.fromkeys(entity_ids)),
            "vector": query.tolist(),
            "zero_query": not directed,
            "fetch": k + 10,  # re-scored here: extra rows absorb float differences at the cut
        }
        rows = self._read("linked_facts", params)
        counts = {row["id"]: int(row["named"]) for row in rows}
        vectors = {row["id"]: np.asarray(row["embedding"], dtype=np.float32)
                   for row in rows if row["embedding"] is not None}  # fmt: skip
        order = {row["id"]: n for n, row in enumerate(rows)}
        return rank_linked(counts, vectors, order, vector, k)
