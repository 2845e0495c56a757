"""Build scripted-LLM rule tables (for the TEST DOUBLE server) from short descriptions.

A turn of conversation needs one answer per protocol task; writing those JSON rules by hand is
noisy, so tests, the demo script and users' own tests describe a turn once and get the rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

EntitySpec = tuple[str, str]  # (name, type)
RelationSpec = tuple[str, str, str] | tuple[str, str, str, str | None]  # (+ valid_from)
OperationSpec = tuple[str, int | None, str | None]  # (op, new_index, existing_id)


def turn(
    contains: str | Sequence[str],
    entities: Sequence[EntitySpec],
    relations: Sequence[RelationSpec] = (),
    operations: Sequence[OperationSpec] | None = None,
    facts: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """Rules answering extract_entities, establish_relations and (optionally) resolve_updates
    for the messages whose text contains `contains`. `facts` scripts the fact path too (its
    extract_facts answer; `[]` for none): `Memory` runs it by default, so pass it unless the
    fact path is off (`{"memory": {"facts": False}}`)."""
    match = {"messages": contains}  # the new messages only, never the recent context
    rules: list[dict[str, Any]] = [
        {
            "task": "extract_entities",
            "match": match,
            "response": {"entities": [{"name": n, "type": t} for n, t in entities]},
        },
        {
            "task": "establish_relations",
            "match": match,
            "response": {
                "relations": [
                    {
                        "source": r[0],
                        "relation": r[1],
                        "destination": r[2],
                        "valid_from": r[3] if len(r) > 3 else None,
                    }
                    for r in relations
                ]
            },
        },
    ]
    if facts is not None:
        rules.append({"task": "extract_facts", "match": match, "response": {"facts": list(facts)}})
    if operations is not None:
        rules.append(
            {
                "task": "resolve_updates",
                # names in this payload are the resolved ones, so match on the relation only
                "match": {"contains": [f'"relation": "{r[1]}"' for r in relations[:1]]},
                "times": 1,
                "response": {
                    "operations": [
                        {"op": op, "new_index": index, "existing_id": existing}
                        for op, index, existing in operations
                    ]
                },
            }
        )
    return rules


def add_everything(times: int | None = None) -> dict[str, Any]:
    """A fallback rule: resolve_updates answers "add all" (no operations)."""
    rule: dict[str, Any] = {"task": "resolve_updates", "response": {"operations": []}}
    if times is not None:
        rule["times"] = times
    return rule
