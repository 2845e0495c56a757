"""The LLM protocol v1: one pydantic model per task payload and per answer.

The answer models generate the JSON schemas sent as tool parameters (and shipped in
mem0g/schemas/), and validate every answer. docs/llm-protocol.md is the prose version.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from mem0g.config import LimitsConfig

PROTOCOL_VERSION = 1
T = TypeVar("T")
_DEFAULT_LIMITS = LimitsConfig()


def _limit(info: ValidationInfo, name: str) -> int:
    """A size limit of the validating client (`model_validate(..., context={"limits": ...})`),
    the defaults otherwise."""
    limits = (info.context or {}).get("limits") or _DEFAULT_LIMITS
    return int(getattr(limits, name))


def _bounded(value: str, info: ValidationInfo, name: str, what: str) -> str:
    limit = _limit(info, name)
    if len(value) > limit:
        raise ValueError(f"{what} is {len(value)} characters long; at most {limit} are allowed")
    return value


def _few(items: list[T], info: ValidationInfo, name: str, what: str) -> list[T]:
    limit = _limit(info, name)
    if len(items) > limit:
        raise ValueError(
            f"{len(items)} {what} in one answer; at most {limit} are allowed "
            "(add the conversation in smaller parts)"
        )
    return items


class _Answer(BaseModel):
    """Answers ignore unknown keys: small local models often add chatter fields."""

    model_config = ConfigDict(extra="ignore")


# ---------------------------------------------------------------- payload pieces


class PayloadMessage(BaseModel):
    role: str
    name: str | None = None
    content: str
    timestamp: str | None = None


class Context(BaseModel):
    summary: str | None = None
    recent: list[PayloadMessage] = Field(default_factory=list)


class EntityIn(BaseModel):
    name: str
    type: str


# ---------------------------------------------------------------- extract_entities


class ExtractEntitiesPayload(BaseModel):
    task: Literal["extract_entities"] = "extract_entities"
    reference_time: str
    messages: list[PayloadMessage]
    context: Context = Field(default_factory=Context)


class ExtractedEntity(_Answer):
    name: str = Field(
        description="The entity's name as written; the speaker's own name for I/me/my."
    )
    type: str = Field(description="A short lowercase type such as person, organization, location.")

    @field_validator("name", "type")
    @classmethod
    def _strip(cls, value: str, info: ValidationInfo) -> str:
        limit = "max_name_chars" if info.field_name == "name" else "max_relation_chars"
        return _bounded(value.strip(), info, limit, f"an entity's {info.field_name}")


class ExtractEntitiesAnswer(_Answer):
    entities: list[ExtractedEntity]

    @field_validator("entities")
    @classmethod
    def _capped(cls, value: list[ExtractedEntity], info: ValidationInfo) -> list[ExtractedEntity]:
        return _few(value, info, "max_names", "entities")


# ---------------------------------------------------------------- establish_relations


class CandidateNode(BaseModel):
    """A stored entity an ambiguous name may denote; `id` is a short per-request id."""

    id: str
    name: str
    type: str
    aliases: list[str] = Field(default_factory=list)


class AmbiguousName(BaseModel):
    """A name of `entities` that could be any of several stored nodes ("Diego" when the
    memory knows several Diegos and the conversation did not say which)."""

    name: str
    candidates: list[CandidateNode]


class EstablishRelationsPayload(ExtractEntitiesPayload):
    task: Literal["establish_relations"] = "establish_relations"  # type: ignore[assignment]
    entities: list[EntityIn]
    # optional (protocol v1.1): sent only when some name is ambiguous; omitted otherwise
    candidates: list[AmbiguousName] | None = None


class ExtractedRelation(_Answer):
    source: str
    relation: str = Field(description="A short snake_case verb phrase, e.g. lives_in, works_at.")
    destination: str
    valid_from: str | None = Field(
        default=None,
        description="ISO date the fact became true, resolved against reference_time; "
        "null if unknown.",
    )

    @field_validator("source", "relation", "destination")
    @classmethod
    def _strip(cls, value: str, info: ValidationInfo) -> str:
        limit = "max_relation_chars" if info.field_name == "relation" else "max_name_chars"
        return _bounded(value.strip(), info, limit, f"a relation's {info.field_name}")

    @field_validator("valid_from")
    @classmethod
    def _short_date(cls, value: str | None) -> str | None:
        # an unusable date is dropped later (the fact is as of the message); a huge one is
        # no date at all
        return value if value is None or len(value) <= 64 else None


class Identity(_Answer):
    name: str = Field(description="A name from the payload's `candidates`.")
    id: str = Field(
        description='The id of the candidate it denotes, or "new" for someone or something else.'
    )

    @field_validator("name", "id")
    @classmethod
    def _strip(cls, value: str, info: ValidationInfo) -> str:
        return _bounded(value.strip(), info, "max_name_chars", "an identity's name or id")


class EstablishRelationsAnswer(_Answer):
    relations: list[ExtractedRelation]
    identities: list[Identity] = Field(
        default_factory=list,
        description="Only when the payload has `candidates`: which candidate each ambiguous "
        'name denotes, judged from the messages and context, or "new"; leave out a name the '
        "conversation does not settle.",
    )

    @field_validator("relations")
    @classmethod
    def _capped(
        cls, value: list[ExtractedRelation], info: ValidationInfo
    ) -> list[ExtractedRelation]:
        return _few(value, info, "max_relations", "relations")


# ---------------------------------------------------------------- resolve_updates


class NewTriple(BaseModel):
    index: int
    source: str
    relation: str
    destination: str
    valid_from: str | None = None


class ExistingTriple(BaseModel):
    id: str
    source: str
    relation: str
    destination: str
    valid_from: str | None = None
    created_at: str


class ResolveUpdatesPayload(BaseModel):
    task: Literal["resolve_updates"] = "resolve_updates"
    reference_time: str
    new: list[NewTriple]
    existing: list[ExistingTriple]


_NOOP_WORDS = frozenset({"NONE", "NO_OP", "NO-OP", "NO OP", "NOTHING"})
"""Mem0's own prompt calls a no-op "NONE"; models that learned it answer so."""


class _Operation(_Answer):
    """One operation of an update answer (the graph's or the facts'): `op`, declared by each
    with its own choices, is read whatever its case and spacing (" add" is ADD), and Mem0's
    "NONE" as NOOP (a model without structured output answering it failed the whole add)."""

    @field_validator("op", mode="before", check_fields=False)
    @classmethod
    def _upper(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        word = value.strip().upper()
        return "NOOP" if word in _NOOP_WORDS else word


class UpdateOperation(_Operation):
    op: Literal["ADD", "UPDATE", "INVALIDATE", "NOOP"]
    new_index: int | None = None
    existing_id: str | None = None


class ResolveUpdatesAnswer(_Answer):
    operations: list[UpdateOperation]


# ---------------------------------------------------------------- the fact path (Mem0)


class ExtractFactsPayload(BaseModel):
    task: Literal["extract_facts"] = "extract_facts"
    reference_time: str
    messages: list[PayloadMessage]
    context: Context = Field(default_factory=Context)


class ExtractFactsAnswer(_Answer):
    facts: list[str] = Field(
        description="Short, self-contained, dated facts worth remembering; none from small talk."
    )

    @field_validator("facts")
    @classmethod
    def _drop_blank(cls, value: list[str], info: ValidationInfo) -> list[str]:
        facts = [f.strip() for f in _few(value, info, "max_relations", "facts") if f.strip()]
        return [_bounded(f, info, "max_fact_chars", "a fact") for f in facts]


class NewFact(BaseModel):
    index: int
    text: str


class ExistingFact(BaseModel):
    id: str
    text: str
    created_at: str


class UpdateMemoryPayload(BaseModel):
    task: Literal["update_memory"] = "update_memory"
    reference_time: str
    new: list[NewFact]
    existing: list[ExistingFact]


class MemoryOperation(_Operation):
    op: Literal["ADD", "UPDATE", "DELETE", "NOOP"]
    new_index: int | None = None
    existing_id: str | None = None
    text: str | None = None

    @field_validator("text")
    @classmethod
    def _bounded_text(cls, value: str | None, info: ValidationInfo) -> str | None:
        return value if value is None else _bounded(value, info, "max_fact_chars", "a fact")


class UpdateMemoryAnswer(_Answer):
    operations: list[MemoryOperation]


class SummarizePayload(BaseModel):
    task: Literal["summarize"] = "summarize"
    summary: str | None
    messages: list[PayloadMessage]


class SummarizeAnswer(_Answer):
    summary: str

    @field_validator("summary")
    @classmethod
    def _bounded_summary(cls, value: str, info: ValidationInfo) -> str:
        return _bounded(value, info, "max_message_chars", "the summary")


P = TypeVar("P", bound=BaseModel)
A = TypeVar("A", bound=BaseModel)


@dataclass(frozen=True)
class Task(Generic[P, A]):
    """One protocol task: its name (the tool's name, the prompt's file) and the models of
    its payload and answer. `LLMClient.call(task, payload)` takes a `P` and returns an `A`,
    so a caller's answer is typed by the task it names (no `Any` crosses the seam)."""

    name: str
    payload: type[P]
    answer: type[A]


EXTRACT_ENTITIES = Task("extract_entities", ExtractEntitiesPayload, ExtractEntitiesAnswer)
ESTABLISH_RELATIONS = Task(
    "establish_relations", EstablishRelationsPayload, EstablishRelationsAnswer
)
RESOLVE_UPDATES = Task("resolve_updates", ResolveUpdatesPayload, ResolveUpdatesAnswer)
EXTRACT_FACTS = Task("extract_facts", ExtractFactsPayload, ExtractFactsAnswer)
UPDATE_MEMORY = Task("update_memory", UpdateMemoryPayload, UpdateMemoryAnswer)
SUMMARIZE = Task("summarize", SummarizePayload, SummarizeAnswer)

TASKS: dict[str, Task[Any, Any]] = {
    task.name: task
    for task in (
        EXTRACT_ENTITIES,
        ESTABLISH_RELATIONS,
        RESOLVE_UPDATES,
        EXTRACT_FACTS,
        UPDATE_MEMORY,
        SUMMARIZE,
    )
}


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def answer_schema(task: str) -> dict[str, Any]:
    """JSON schema of a task's answer, as sent in the tool definition."""
    schema: dict[str, Any] = TASKS[task].answer.model_json_schema()
    return schema


SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"


def shipped_schema(task: str) -> dict[str, Any]:
    """The schema document shipped in the package for `task` (payload and answer)."""
    doc: dict[str, Any] = json.loads((SCHEMA_DIR / f"{task}.json").read_text(encoding="utf-8"))
    return doc


def write_schemas(directory: Path = SCHEMA_DIR) -> list[Path]:
    """Regenerate the shipped schema files (tests check they are current)."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, task in TASKS.items():
        doc = {
            "protocol_version": PROTOCOL_VERSION,
            "task": name,
            "payload": task.payload.model_json_schema(),
            "answer": task.answer.model_json_schema(),
        }
        path = directory / f"{name}.json"
        path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        written.append(path)
    return written
