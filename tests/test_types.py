"""Records' own arithmetic (mem0g.types)."""

from __future__ import annotations

from mem0g.types import Usage


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
