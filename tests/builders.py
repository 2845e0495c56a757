"""Record and plan builders for store-level tests, in one place (issue #13): tenants, times,
unit vectors, entities, relations, facts and the write plans that carry them. The fixtures
that open stores (`rng`, `open_store`, `store`, `embedded_store`) are in conftest.py.

A vector comes from a `Source`: a numpy Generator draws the next random unit vector (tests
that need many distinct ones), an int seeds a fixed one (tests that need the same one again)."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pytest

from mem0g.stores import EmbeddedGraphStore
from mem0g.stores.neo4j import Neo4jGraphStore
from mem0g.types import (
    Entity,
    Episode,
    Fact,
    FactChange,
    FactEvent,
    Message,
    Relation,
    Tenant,
    Validity,
    WritePlan,
)

DIMS = 8
UTC = timezone.utc
T0 = datetime(2024, 1, 1, tzinfo=UTC)
A = Tenant(user_id="a")
A_BOT = Tenant(user_id="a", agent_id="bot", run_id="r1")
B = Tenant(user_id="b")
USER_A = Tenant(user_id="a")  # a filter scope: A, A_BOT and every other tenant of user a
CURRENT = Validity()
EVERYTHING = Validity(include_invalid=True)
Store = EmbeddedGraphStore | Neo4jGraphStore
Source = np.random.Generator | int
Reopen = Callable[[Store], Store]  # the `reopen` fixture (conftest.py)


def unit(source: Source, dims: int = DIMS) -> np.ndarray:
    """A random unit vector: the generator's next one, or the one an int seed fixes."""
    rng = source if isinstance(source, np.random.Generator) else np.random.default_rng(source)
    vec = rng.standard_normal(dims).astype(np.float32)
    return vec / np.linalg.norm(vec)


def vec(source: Source) -> list[float]:
    return unit(source).tolist()


def episode(tenant: Tenant, ts: datetime = T0, content: str = "hello") -> Episode:
    return Episode(tenant=tenant, messages=[Message(content=content, timestamp=ts)], timestamp=ts)


def talk(tenant: Tenant, *contents: str, when: Any = T0) -> Episode:
    """An episode of several messages without their own timestamps."""
    return Episode(tenant=tenant, messages=[Message(content=c) for c in contents], timestamp=when)


def entity(tenant: Tenant, name: str, source: Source = 1, aliases: Sequence[str] = ()) -> Entity:
    keys = [name.lower(), *(a.lower() for a in aliases)]
    return Entity(tenant=tenant, name=name, aliases=list(aliases), keys=keys, embedding=vec(source))


def relation(
    tenant: Tenant, src: Entity, rel: str, dst: Entity, source: Source = 2, **kw: Any
) -> Relation:
    return Relation(
        tenant=tenant, source_id=src.id, source=src.name, relation=rel,
        destination_id=dst.id, destination=dst.name, embedding=vec(source), **kw,
    )  # fmt: skip


def fact(tenant: Tenant, text: str, source: Source = 0, **kw: Any) -> Fact:
    return Fact(tenant=tenant, text=text, embedding=vec(source), **kw)


def added(*facts: Fact) -> list[FactEvent]:
    """The ADD events a plan writing these new facts carries."""
    return [FactEvent(fact_id=f.id, tenant=f.tenant, event="ADD", new_text=f.text) for f in facts]


def plan(
    tenant: Tenant,
    entities: Sequence[Entity] = (),
    relations: Sequence[Relation] = (),
    **kw: Any,
) -> WritePlan:
    return WritePlan(
        tenant=tenant, episode=episode(tenant), new_entities=list(entities),
        new_relations=list(relations), **kw,
    )  # fmt: skip


def chain(tenant: Tenant, names: Sequence[str], rng: np.random.Generator) -> WritePlan:
    """Entities linked in a line: names[0] -r0-> names[1] -r1-> names[2] ..."""
    ents = [entity(tenant, n, rng) for n in names]
    pairs = enumerate(itertools.pairwise(ents))
    rels = [relation(tenant, s, f"r{i}", d, rng) for i, (s, d) in pairs]
    return plan(tenant, ents, rels)


def ring(
    tenant: Tenant, size: int, edges: int, rng: np.random.Generator
) -> tuple[list[Entity], list[Relation]]:
    """`size` entities n0.. and `edges` relations around them: edge i (named r{i}) goes from
    n[i % size] to n[(i + 1) % size] and holds from day i after T0."""
    ents = [entity(tenant, f"n{i}", rng) for i in range(size)]
    rels = [
        relation(tenant, ents[i % size], f"r{i}", ents[(i + 1) % size], rng,
                 valid_from=T0 + timedelta(days=i))
        for i in range(edges)
    ]  # fmt: skip
    return ents, rels


def fact_plan(
    tenant: Tenant,
    new: Sequence[Fact] = (),
    changes: Sequence[FactChange] = (),
    events: Sequence[FactEvent] | None = None,
    *,
    episode: bool = True,
    **kw: Any,
) -> WritePlan:
    """A plan with facts (ADD events for the new ones unless `events` is given)."""
    return WritePlan(
        tenant=tenant,
        episode=talk(tenant, "hi") if episode else None,
        new_facts=list(new),
        fact_changes=list(changes),
        fact_events=added(*new) if events is None else list(events),
        **kw,
    )


def ids(records: Sequence[Any]) -> list[str]:
    return [r.id for r in records]


def scope_state(store: Any, scope: Tenant = USER_A) -> tuple[Any, ...]:
    """Everything of a scope a failed write must leave as it was."""
    facts = store.facts(scope)
    return (
        facts,
        {f.id: store.fact_history(scope, f.id) for f in facts},
        store.snapshot(scope, EVERYTHING),
        store.episodes(scope),
        store.stats(),
        store.tenants(),
    )


def similar(
    store: Any, scope: Tenant, query: np.ndarray, k: int, validity: Validity
) -> list[tuple[Relation, float]]:
    """`similar_relations` as (record, score) pairs, in its order: its `EdgeRef`s read back
    by id (a ref outside the scope has no record there, so a leak fails with a KeyError)."""
    refs = store.similar_relations(scope, query, k, validity)
    by_id = {r.id: r for r in store.get_relations(scope, [ref.id for ref in refs])}
    return [(by_id[ref.id], ref.score) for ref in refs]


def walk(
    store: Any, scope: Tenant, seeds: Sequence[str], hops: int, validity: Validity, limit: int
) -> list[tuple[Relation, int]]:
    """`expand` as (record, hop) pairs, in its order (scored against a fixed vector; the
    scores are not what these tests look at)."""
    dims = store.dims or DIMS
    refs = store.expand(scope, seeds, hops, validity, limit, vector=unit(0, dims))
    by_id = {r.id: r for r in store.get_relations(scope, [ref.id for ref in refs])}
    return [(by_id[ref.id], ref.hop) for ref in refs]


def texts(records: Sequence[Any]) -> list[str]:
    """The texts of facts, or of (fact, score) hits."""
    return [(r[0] if isinstance(r, tuple) else r).text for r in records]


def fail_on(
    store: EmbeddedGraphStore,
    monkeypatch: pytest.MonkeyPatch,
    table: str,
    n: int,
    exc: BaseException,
) -> list[str]:
    """Fault injection at the SQL layer: let the embedded store write normally until the n-th
    row of `table`, then raise `exc`; returns the tables written so far, in order."""
    written: list[str] = []
    real = store._write

    def flaky(conn: sqlite3.Connection, tbl: str, record: Any, vec: Any) -> None:
        if tbl == table and sum(w == table for w in written) + 1 == n:
            raise exc
        real(conn, tbl, record, vec)
        written.append(tbl)

    monkeypatch.setattr(store, "_write", flaky)
    return written
