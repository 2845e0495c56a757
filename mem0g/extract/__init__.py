"""Node extractor and relation generator: the first two LLM calls of an `add`.

Both are pure functions of (messages, context, time) -> typed answers; they write nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, Field

from mem0g.llm.client import LLMClient
from mem0g.llm.protocol import (
    Context,
    EntityIn,
    EstablishRelationsPayload,
    ExtractEntitiesPayload,
    ExtractFactsPayload,
    PayloadMessage,
)
from mem0g.types import Message, Usage, snake_case, to_utc


class ExtractedTriple(BaseModel):
    """A relation as the LLM stated it, names not yet resolved to graph nodes."""

    source: str
    source_type: str
    relation: str
    destination: str
    destination_type: str
    valid_from: datetime | None = None


class Extraction(BaseModel):
    entities: dict[str, str] = Field(default_factory=dict)  # name -> type
    triples: list[ExtractedTriple] = Field(default_factory=list)


def payload_messages(messages: Sequence[Message], default_time: datetime) -> list[PayloadMessage]:
    return [
        PayloadMessage(
            role=m.role,
            name=m.name,
            content=m.content,
            timestamp=(m.timestamp or default_time).isoformat(),
        )
        for m in messages
    ]


def extract(
    llm: LLMClient,
    messages: Sequence[Message],
    reference_time: datetime,
    context: Context | None = None,
    usage: Usage | None = None,
) -> Extraction:
    """Call 1 (entities) and call 2 (relations); skips call 2 when there are no entities."""
    context = context or Context()
    base = {
        "reference_time": reference_time.isoformat(),
        "messages": payload_messages(messages, reference_time),
        "context": context,
    }
    found = llm.call("extract_entities", ExtractEntitiesPayload(**base), usage)
    types: dict[str, str] = {}
    for entity in found.entities:
        if entity.name and entity.name not in types:
            types[entity.name] = entity.type or "entity"
    if not types:
        return Extraction()
    listed = [EntityIn(name=name, type=type_) for name, type_ in types.items()]
    answer = llm.call(
        "establish_relations", EstablishRelationsPayload(**base, entities=listed), usage
    )
    triples = []
    seen: set[tuple[str, str, str]] = set()
    for rel in answer.relations:
        relation = snake_case(rel.relation)
        if not (rel.source and rel.destination and relation):
            continue
        key = (rel.source.casefold(), relation, rel.destination.casefold())
        if key in seen or rel.source.casefold() == rel.destination.casefold():
            continue
        seen.add(key)
        triples.append(
            ExtractedTriple(
                source=rel.source,
                source_type=types.get(rel.source, "entity"),
                relation=relation,
                destination=rel.destination,
                destination_type=types.get(rel.destination, "entity"),
                valid_from=_parse_date(rel.valid_from),
            )
        )
    return Extraction(entities=types, triples=triples)


def _parse_date(value: str | None) -> datetime | None:
    """A bad date from the LLM is dropped (the add's time is used), not fatal."""
    try:
        return to_utc(value)
    except (ValueError, TypeError):
        return None


def extract_facts(
    llm: LLMClient,
    messages: Sequence[Message],
    reference_time: datetime,
    context: Context | None = None,
    usage: Usage | None = None,
) -> list[str]:
    """Call 1 of the fact path: short, self-contained, dated facts (deduplicated, in order)."""
    payload = ExtractFactsPayload(
        reference_time=reference_time.isoformat(),
        messages=payload_messages(messages, reference_time),
        context=context or Context(),
    )
    answer = llm.call("extract_facts", payload, usage)
    return list(dict.fromkeys(answer.facts))
