"""The embedded store reads a tenant into memory when a call first touches it (issue #14:
reopening 20k tenants took seconds). What must hold: opening reads no tenant's records, every
read gives what a fully loaded store gave (orders across tenants included), and the plan rules
still see ids of tenants that are not in memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import (
    A_BOT,
    CURRENT,
    DIMS,
    EVERYTHING,
    T0,
    A,
    B,
    chain,
    entity,
    fact,
    fact_plan,
    ids,
    plan,
    unit,
)

from mem0g.stores import EmbeddedGraphStore, StoreError
from mem0g.types import FactChange, FactEvent, Summary, Tenant

A_ONLY_AGENT = Tenant(agent_id="bot")
SCOPES = (A, A_BOT, B, A_ONLY_AGENT, Tenant(user_id="a", agent_id="bot"))


def _fill(store: EmbeddedGraphStore, rng: np.random.Generator) -> dict[str, list[str]]:
    """Writes that interleave tenants, so write order across tenants differs from the order
    in which a reopened store reads them; returns the episode and fact ids in write order."""
    written: dict[str, list[str]] = {"episodes": [], "facts": []}
    for round_ in range(3):
        for tenant in (B, A_BOT, A):
            names = [f"{tenant.user_id}{tenant.run_id}{round_}-{i}" for i in range(3)]
            graph = chain(tenant, names, rng)
            store.apply(graph)
            new = [fact(tenant, f"{tenant.key} fact {round_} {i}", rng) for i in range(2)]
            facts = fact_plan(tenant, new)
            store.apply(facts)
            written["episodes"] += [graph.episode.id, facts.episode.id]  # type: ignore[union-attr]
            written["facts"] += ids(new)
    first = next(f for f in store.facts(A) if f.tenant == A)
    change = FactChange(fact_id=first.id, text="changed text", embedding=unit(rng).tolist())
    event = FactEvent(fact_id=first.id, tenant=A, event="UPDATE", old_text=first.text,
                      new_text="changed text")  # fmt: skip
    update = fact_plan(A, changes=[change], events=[event])
    store.apply(update)
    written["episodes"].append(update.episode.id)  # type: ignore[union-attr]
    store.set_summary(Summary(tenant=B, text="b's summary", messages_covered=1, updated_at=T0))
    return written


def _reads(store: EmbeddedGraphStore, scope: Tenant, query: np.ndarray) -> dict[str, Any]:
    """Every scoped read whose answer a full load fixed, as comparable values."""
    snapshot = store.snapshot(scope, EVERYTHING)
    entities = store.list_entities(scope)
    some = [e.id for e in entities[::3]]
    return {
        "episodes": ids(store.episodes(scope)),
        "facts": ids(store.facts(scope)),
        "timeline": [(e.fact_id, e.id, when) for e, when in store.fact_timeline(scope)],
        "entities": ids(entities),
        "snapshot": (ids(snapshot.entities), ids(snapshot.relations)),
        "similar_entities": [
            (e.id, round(s, 5)) for e, s in store.similar_entities(scope, query, 5)
        ],
        "similar_relations": [
            (r.id, round(r.score, 5)) for r in store.similar_relations(scope, query, 5, CURRENT)
        ],
        "similar_facts": [(f.id, round(s, 5)) for f, s in store.similar_facts(scope, query, 5)],
        "touching": ids(store.relations_touching(scope, some, CURRENT)),
        "expand": [
            (r.id, r.hop, round(r.score, 5))
            for r in store.expand(scope, some, 2, CURRENT, 20, vector=query)
        ],
        "stats": store.stats(scope).model_dump(),
    }


def test_reopened_store_reads_only_the_tenants_it_is_asked_about(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    with EmbeddedGraphStore(tmp_path / "s", dims=DIMS) as store:
        _fill(store, rng)
    with EmbeddedGraphStore(tmp_path / "s") as reopened:
        assert reopened.dims == DIMS  # learnt from the stored vectors without reading records
        assert reopened._buckets == {}  # nothing read yet
        assert [t.key for t in reopened.tenants()] == sorted([A.key, A_BOT.key, B.key])
        assert reopened._buckets == {}
        reopened.facts(B)
        assert set(reopened._buckets) == {B.key}  # B's filter matches B's key only
        assert reopened.get_summary(B) is not None
        assert set(reopened._buckets) == {B.key}


@pytest.mark.parametrize("first", [B, A_BOT, A], ids=["B first", "A_BOT first", "A first"])
def test_reads_after_a_reopen_equal_those_of_the_store_that_wrote(
    tmp_path: Path, rng: np.random.Generator, first: Tenant
) -> None:
    """Whichever tenant is read into memory first, every scope answers as before the reopen
    (the writer holds everything: it saw every write)."""
    query = unit(rng)
    with EmbeddedGraphStore(tmp_path / "s", dims=DIMS) as store:
        written = _fill(store, rng)
        before = {scope.key: _reads(store, scope, query) for scope in SCOPES}
    with EmbeddedGraphStore(tmp_path / "s") as reopened:
        reopened.facts(first)  # loads `first` (and what its filter covers) only
        after = {scope.key: _reads(reopened, scope, query) for scope in reversed(SCOPES)}
    assert after == before
    # A's filter covers A and A_BOT, whose writes interleave: write order across both
    episodes, timeline = after[A.key]["episodes"], after[A.key]["timeline"]
    assert episodes == [i for i in written["episodes"] if i in set(episodes)]
    assert len(episodes) == 2 * 3 * 2 + 1  # two plans a round each, three rounds, the update
    fact_order = list(dict.fromkeys(fact_id for fact_id, _, _ in timeline))
    assert len(fact_order) == 12
    assert [i for i in written["facts"] if i in set(fact_order)] == fact_order


def test_plan_rules_see_ids_of_tenants_not_in_memory(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    with EmbeddedGraphStore(tmp_path / "s", dims=DIMS) as store:
        b_plan = chain(B, ["x", "y"], rng)
        store.apply(b_plan)
        b_fact = fact(B, "b's fact", rng)
        store.apply(fact_plan(B, [b_fact]))
    with EmbeddedGraphStore(tmp_path / "s") as reopened:
        stolen = b_plan.new_entities[0].model_copy(update={"tenant": A})
        with pytest.raises(StoreError, match="already exists"):
            reopened.apply(plan(A, [stolen]))
        stolen_fact = b_fact.model_copy(update={"tenant": A})
        with pytest.raises(StoreError, match="already"):
            reopened.apply(fact_plan(A, [stolen_fact]))
        assert B.key not in reopened._buckets  # checked in SQLite, B was never read
        assert reopened.facts(A) == [] and reopened.list_entities(A) == []


def test_delete_and_stats_of_tenants_never_read(tmp_path: Path, rng: np.random.Generator) -> None:
    with EmbeddedGraphStore(tmp_path / "s", dims=DIMS) as store:
        _fill(store, rng)
        total = store.stats().model_dump()
        b_counts = store.stats(B).model_dump()
        a_counts = store.stats(A).model_dump()
    with EmbeddedGraphStore(tmp_path / "s") as reopened:
        assert reopened.stats().model_dump() == total
        assert total["facts"] == 18  # 2 a round, 3 rounds, 3 tenants
        assert [reopened.stats(s).model_dump() for s in (A, B)] == [a_counts, b_counts]
        # counted by SQLite: no tenant was read for a count (the whole store's stats read
        # every tenant's records, 20k of them for `mem0g stats` of the scale benchmark)
        assert reopened._buckets == {}
    with EmbeddedGraphStore(tmp_path / "s") as reopened:
        removed = reopened.delete_tenant(B)
        assert removed == b_counts["entities"] + b_counts["relations"]
        assert B.key not in {t.key for t in reopened.tenants()}
        assert reopened.stats(B).entities == 0 and reopened.facts(B) == []
        assert reopened.stats(A).entities == total["entities"] - b_counts["entities"]
    with EmbeddedGraphStore(tmp_path / "s") as again:
        assert {t.key for t in again.tenants()} == {A.key, A_BOT.key}
        assert again.get_summary(B) is None


def test_a_commit_by_another_connection_is_seen_without_a_full_reload(
    tmp_path: Path, rng: np.random.Generator
) -> None:
    with EmbeddedGraphStore(tmp_path / "s", dims=DIMS) as reader:
        reader.apply(chain(A, ["p", "q"], rng))
        reader.apply(chain(B, ["r", "s"], rng))
        assert len(reader.list_entities(A)) == 2
        with EmbeddedGraphStore(tmp_path / "s") as writer:
            writer.apply(plan(A, [entity(A, "later", rng)]))
        assert [e.name for e in reader.list_entities(A)] == ["p", "q", "later"]
        assert set(reader._buckets) == {A.key}  # memory was reset, B not read again
