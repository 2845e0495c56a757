"""Node extractor and relation generator: the first two LLM calls of an `add`.

Both are pure functions of (messages, context, time) -> typed answers; they write nothing.

What lives here: this module (the two calls and their payloads) and `checks.py` (the sanity
rules an answer passes before it reaches the graph). Who may import it: pipeline.py,
summary.py and `Memory` (the payload messages). It imports llm, types and resolve.names (the
name normalisation `checks` compares with).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from mem0g.llm.client import TaskCaller
from mem0g.llm.protocol import (
    ESTABLISH_RELATIONS,
    EXTRACT_ENTITIES,
    EXTRACT_FACTS,
    AmbiguousName,
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
    # ambiguous name -> the per-request candidate id the LLM chose, None for "new"
    identities: dict[str, str | None] = Field(default_factory=dict)


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


def _base(
    messages: Sequence[Message], reference_time: datetime, context: Context | None
) -> dict[str, Any]:
    return {
        "reference_time": reference_time.isoformat(),
        "messages": payload_messages(messages, reference_time),
        "context": context or Context(),
    }


def extract_entities(
    llm: TaskCaller,
    messages: Sequence[Message],
    reference_time: datetime,
    context: Context | None = None,
    usage: Usage | None = None,
) -> dict[str, str]:
    """Call 1: the entities named in the messages, name -> type (first type wins)."""
    payload = ExtractEntitiesPayload(**_base(messages, reference_time, context))
    found = llm.call(EXTRACT_ENTITIES, payload, usage)
    types: dict[str, str] = {}
    for entity in found.entities:  # a blank name is kept: the checks report it
        if entity.name not in types:
            types[entity.name] = entity.type or "entity"
    return types


def establish_relations(
    llm: TaskCaller,
    messages: Sequence[Message],
    reference_time: datetime,
    types: dict[str, str],
    context: Context | None = None,
    usage: Usage | None = None,
    candidates: Sequence[AmbiguousName] = (),
) -> Extraction:
    """Call 2: triples between the entities; with `candidates`, also which stored node each
    ambiguous name denotes (`Extraction.identities`, only names that were asked about)."""
    listed = [EntityIn(name=name, type=type_) for name, type_ in types.items()]
    payload = EstablishRelationsPayload(
        **_base(messages, reference_time, context),
        entities=listed,
        candidates=list(candidates) or None,
    )
    answer = llm.call(ESTABLISH_RELATIONS, payload, usage)
    triples = []
    seen: set[tuple[str, str, str]] = set()
    for rel in answer.relations:
        relation = snake_case(rel.relation)  # blank names stay: the checks report them
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
    asked = {c.name: {n.id for n in c.candidates} for c in candidates}
    identities: dict[str, str | None] = {}
    for ident in answer.identities:
        if ident.name in asked and ident.name not in identities:
            if ident.id.casefold() == "new":
                identities[ident.name] = None
            elif ident.id in asked[ident.name]:
                identities[ident.name] = ident.id
    return Extraction(entities=types, triples=triples, identities=identities)


def extract(
    llm: TaskCaller,
    messages: Sequence[Message],
    reference_time: datetime,
    context: Context | None = None,
    usage: Usage | None = None,
) -> Extraction:
    """Call 1 (entities) and call 2 (relations); skips call 2 when there are no entities."""
    types = extract_entities(llm, messages, reference_time, context, usage)
    if not types:
        return Extraction()
    return establish_relations(llm, messages, reference_time, types, context, usage)


_YEAR_OR_MONTH = re.compile(r"(\d{4})(?:-(\d{2}))?")


def _parse_date(value: str | None) -> datetime | None:
    """A bad date from the LLM is dropped (the add's time is used), not fatal. A year or a
    month alone ("2019", "2019-06": ISO 8601's reduced precision, when that is all the
    conversation says) is its first day."""
    reduced = _YEAR_OR_MONTH.fullmatch(value.strip()) if isinstance(value, str) else None
    if reduced is not None:
        value = f"{reduced.group(1)}-{reduced.group(2) or '01'}-01"
    try:
        return to_utc(value)
    except (ValueError, TypeError):
        return None


def extract_facts(
    llm: TaskCaller,
    messages: Sequence[Message],
    reference_time: datetime,
    context: Context | None = None,
    usage: Usage | None = None,
) -> list[str]:
    """Call 1 of the fact path: short, self-contained, dated facts (deduplicated, in order)."""
    payload = ExtractFactsPayload(**_base(messages, reference_time, context))
    answer = llm.call(EXTRACT_FACTS, payload, usage)
    return list(dict.fromkeys(answer.facts))
