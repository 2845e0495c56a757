"""Records' own arithmetic (mem0g.types)."""

from __future__ import annotations

from datetime import datetime, timezone

from mem0g.types import Fact, FactHit, Provenance, Tenant, Usage


def test_usage_sums_calls_tokens_tasks_and_modes() -> None:
    graph, facts = Usage(), Usage()
    graph.add("extract_entities", 100, 10, mode="tools")
    graph.add("establish_relations", 200, 20, mode="tools")
    facts.add("extract_facts", 50, 5, mode="json_schema")
    total = graph + facts
    assert (total.calls, total.prompt_tokens, total.completion_tokens) == (3, 350, 35)
    assert total.by_task == {"extract_entities": 1, "establish_relations": 1, "extract_facts": 1}
    assert total.modes == {"tools": 2, "json_schema": 1}
    assert graph.calls == 2 and facts.modes == {"json_schema": 1}  # the parts are unchanged
    assert Usage.total([graph, facts, graph]).by_task["extract_entities"] == 2
    assert Usage.total([]) == Usage()


def test_a_fact_is_said_when_its_first_episode_was_not_when_it_was_stored() -> None:
    said = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    later = datetime(2023, 6, 1, tzinfo=timezone.utc)
    stored = datetime(2024, 1, 1, tzinfo=timezone.utc)
    first, second = (
        Provenance(episode_id="e1", timestamp=said),
        Provenance(episode_id="e2", timestamp=later),
    )
    fact = Fact(tenant=Tenant(user_id="u"), text="t", created_at=stored, provenance=[first, second])
    assert fact.said_at == said
    assert (
        Fact(tenant=Tenant(user_id="u"), text="t", created_at=stored).said_at == stored
    )  # by hand
    hit = FactHit(
        id="f", text="t", score=1.0, created_at=stored, updated_at=stored, provenance=[first]
    )
    assert hit.said_at == said and "said_at" not in hit.model_dump()  # not a stored field
