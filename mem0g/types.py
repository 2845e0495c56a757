"""Records that flow through mem0g: tenants, entities, relations, episodes, plans and results.

Every stage takes and returns these pydantic models, so a stage can be tested alone and a store
only ever sees a finished :class:`WritePlan`.

(Over 500 lines: this is the single home of the records every room shares, with the small
methods that belong to them (`Usage.__add__`, `Fact.said_at`, `Validity.accepts`); one
vocabulary read in one place, imported by every room and importing only pydantic.)
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
import uuid
from collections.abc import Iterable, Mapping
from datetime import date, datetime, timezone
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

UTC = timezone.utc


def utcnow() -> datetime:
    """System time, always timezone-aware so comparisons never mix naive and aware values."""
    return datetime.now(UTC)


def to_utc(value: object) -> datetime | None:
    """Parse an ISO-8601 date or datetime, naive values taken as UTC; None and "" are "no
    time". The whole string must be one date or datetime: "2023-05-08T25:00:00", an offset
    beyond +-24h or trailing text raise ValueError, never a reading of a prefix. Numbers
    raise TypeError: an epoch could be seconds or milliseconds, so the caller converts it
    (`datetime.fromtimestamp(x, UTC)`). Times that leave years 1..9999 in UTC raise
    ValueError."""
    when = to_aware(value)
    return None if when is None else when.astimezone(UTC)


def time_argument(value: object, what: str, *, keep_zone: bool = False) -> datetime | None:
    """`to_utc` (or `to_aware`) of an argument, its errors naming it ("as_of: not an
    ISO-8601 ..."): a call with a timestamp, an as_of and a reference_time said only that one
    of them was bad."""
    try:
        return to_aware(value) if keep_zone else to_utc(value)
    except (TypeError, ValueError) as err:
        raise type(err)(f"{what}: {err}") from None


def to_aware(value: object) -> datetime | None:
    """`to_utc`, the time kept in its own zone (a naive one in UTC): a search's reference
    time, whose zone says which calendar day "yesterday" is for the one asking."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        text = value.strip()
        if text[-1:] in ("Z", "z"):
            text = text[:-1] + "+00:00"
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"not an ISO-8601 date or time: {value[:80]!r}") from None
    elif isinstance(value, datetime):
        when = value
    elif isinstance(value, date):
        when = datetime.combine(value, datetime.min.time())
    else:
        raise TypeError(
            f"a time must be a datetime, a date or an ISO-8601 string, not "
            f"{type(value).__name__} (convert an epoch with datetime.fromtimestamp(x, UTC))"
        )
    if when.tzinfo is None:
        return when.replace(tzinfo=UTC)
    try:
        when.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"{when.isoformat()} is outside the years 1..9999 in UTC") from None
    return when


def new_id() -> str:
    return uuid.uuid4().hex


def _word_char(char: str) -> bool:
    """A letter or digit of any script, or a mark (the vowel signs of Devanagari, ...)."""
    return char.isalnum() or unicodedata.category(char).startswith("M")


def snake_case(text: str) -> str:
    """Relation names are compared and stored in snake_case ("Works At" -> "works_at").
    Letters of every script are kept ("préfère", "住在"): a relation a model names in another
    language is stored as it said it, not cut to its ASCII letters ("pr_f_re", or nothing)."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", unicodedata.normalize("NFC", text).strip())
    return "_".join("".join(c if _word_char(c) else " " for c in spaced.lower()).split())


@functools.lru_cache(maxsize=1 << 16)
def _tenant_key(*ids: str | None) -> str:
    """`json.dumps(list(ids))`, without the encoder for plain printable ASCII ids; cached,
    because a store asks for a record's key once per record (a 20k-tenant reopen asked ~100k
    times) and a smaller cache thrashes there."""
    if all(i is None or (i.isascii() and i.isprintable() and '"' not in i and "\\" not in i)
           for i in ids):  # fmt: skip
        return "[" + ", ".join("null" if i is None else f'"{i}"' for i in ids) + "]"
    return json.dumps(list(ids))


class Tenant(BaseModel):
    """Who a record belongs to. At least one id is required; unset ids read as "any" in filters."""

    model_config = ConfigDict(frozen=True)

    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None

    @model_validator(mode="after")
    def _one_required(self) -> Tenant:
        if not (self.user_id or self.agent_id or self.run_id):
            raise ValueError("one of user_id, agent_id or run_id is required")
        return self

    @property
    def key(self) -> str:
        """Canonical string of the exact triple; entities and edges are resolved within one key."""
        return _tenant_key(self.user_id, self.agent_id, self.run_id)

    @classmethod
    def from_key(cls, key: str) -> Tenant:
        user_id, agent_id, run_id = json.loads(key)
        return cls(user_id=user_id, agent_id=agent_id, run_id=run_id)

    def matches(self, other: Tenant) -> bool:
        """True when `other` (a stored record's tenant) falls inside this filter."""
        return all(
            mine is None or mine == theirs
            for mine, theirs in (
                (self.user_id, other.user_id),
                (self.agent_id, other.agent_id),
                (self.run_id, other.run_id),
            )
        )


OPENAI_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
"""Roles read whatever their case ("User" is "user": the user's default name depends on it)."""


def calls_tools_only(message: Any) -> bool:
    """An OpenAI assistant message that only calls tools: `tool_calls` (or the older
    `function_call`) and no text (`content` None, missing or blank). It says nothing to
    remember, so an add skips it: before, one such message failed a whole transcript."""
    if not isinstance(message, Mapping):
        return False
    content = message.get("content")
    blank = content is None or (isinstance(content, str) and not content.strip())
    return blank and bool(message.get("tool_calls") or message.get("function_call"))


class Message(BaseModel):
    role: str = "user"
    content: str
    name: str | None = None
    timestamp: datetime | None = None

    @field_validator("role")
    @classmethod
    def _role_case(cls, value: str) -> str:
        lowered = value.strip().lower()
        return lowered if lowered in OPENAI_ROLES else value

    @field_validator("timestamp", mode="before")
    @classmethod
    def _strict_time(cls, value: Any) -> Any:
        """`to_utc`'s rules (whole ISO strings, no epoch numbers); a naive time stays naive
        here (`Memory.add` makes it UTC)."""
        if isinstance(value, str) and value.strip():
            to_utc(value)  # raises on anything but one whole date or datetime
            text = value.strip()
            return datetime.fromisoformat(text[:-1] + "+00:00" if text[-1] in "Zz" else text)
        if isinstance(value, int | float):  # bool too: a number is no time
            to_utc(value)
        return value

    @field_validator("content", mode="before")
    @classmethod
    def _text_parts(cls, value: Any) -> Any:
        """OpenAI's content parts (`[{"type": "text", "text": ...}]`) are read as their texts,
        one per line. Any other part (an image) is refused, not dropped: mem0g reads text only."""
        if not isinstance(value, list):
            return value
        if not value:
            raise ValueError("a list of content parts with no parts")
        texts = []
        for i, part in enumerate(value):
            if not isinstance(part, dict):
                raise ValueError(f"content part {i} must be a dict, not {type(part).__name__}")
            if part.get("type") != "text":
                raise ValueError(
                    f"content part {i} is of type {part.get('type')!r}; only text parts are read "
                    '({"type": "text", "text": ...}): send the text, or describe the image in it'
                )
            if not isinstance(part.get("text"), str):
                raise ValueError(f"content part {i} has no 'text' string")
            texts.append(part["text"])
        return "\n".join(texts)

    @field_validator("content")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("message content is empty")
        return value


class Provenance(BaseModel):
    """Where an edge came from: the episode (one `add`) and its messages' time."""

    episode_id: str
    timestamp: datetime


class Entity(BaseModel):
    id: str = Field(default_factory=new_id)
    tenant: Tenant
    name: str
    type: str = "entity"
    aliases: list[str] = Field(default_factory=list)
    # Normalised name and aliases, computed by the resolver; stores index them for exact lookup
    # without knowing the normalisation rules.
    keys: list[str] = Field(default_factory=list)
    embedding: list[float] | None = Field(default=None, repr=False)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class Relation(BaseModel):
    id: str = Field(default_factory=new_id)
    tenant: Tenant
    source_id: str
    source: str
    relation: str
    destination_id: str
    destination: str
    embedding: list[float] | None = Field(default=None, repr=False)
    valid_from: datetime | None = None
    invalid_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    mentions: int = 1
    provenance: list[Provenance] = Field(default_factory=list)

    @property
    def text(self) -> str:
        return triple_text(self.source, self.relation, self.destination)

    def valid_at(self, when: datetime) -> bool:
        """World-time validity: valid_from <= when < invalid_at (open ends allowed)."""
        if self.valid_from is not None and self.valid_from > when:
            return False
        return self.invalid_at is None or self.invalid_at > when


class Validity(BaseModel):
    """Which edges a read returns: current only (default), valid at `as_of`, or all history."""

    as_of: datetime | None = None
    include_invalid: bool = False

    def accepts(self, rel: Relation) -> bool:
        if self.include_invalid:
            return True
        if self.as_of is not None:
            return rel.valid_at(self.as_of)
        return rel.invalid_at is None


class UpdateQuery(BaseModel):
    """A new triple of an add, as the update resolver asks the store for the existing edges
    it may replace (`GraphStore.update_candidates`)."""

    source_id: str
    relation: str
    destination_id: str
    vector: list[float] | None = Field(default=None, repr=False)


def triple_text(source: str, relation: str, destination: str) -> str:
    return f"{source} {relation.replace('_', ' ')} {destination}"


class Episode(BaseModel):
    """The messages of one `add`, kept so every edge can point back to what it came from."""

    id: str = Field(default_factory=new_id)
    tenant: Tenant
    messages: list[Message]
    timestamp: datetime
    created_at: datetime = Field(default_factory=utcnow)


class Fact(BaseModel):
    """A Mem0-style natural-language memory, kept beside the graph."""

    id: str = Field(default_factory=new_id)
    tenant: Tenant
    text: str
    embedding: list[float] | None = Field(default=None, repr=False)
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    provenance: list[Provenance] = Field(default_factory=list)

    @property
    def said_at(self) -> datetime:
        """When it was said (its first episode's conversation time), else when it was stored."""
        return self.provenance[0].timestamp if self.provenance else self.created_at

    @property
    def text_said_at(self) -> datetime:
        """When its current text was said: the last episode that gave it (an update adds its
        episode to the provenance), else when it was stored."""
        return self.provenance[-1].timestamp if self.provenance else self.created_at


class FactEvent(BaseModel):
    """One line of a fact's history: deleted and replaced texts stay readable here."""

    id: str = Field(default_factory=new_id)
    fact_id: str
    tenant: Tenant
    event: FactOp
    old_text: str | None = None
    new_text: str | None = None
    actor: Literal["llm", "user"] = "llm"
    episode_id: str | None = None
    at: datetime = Field(default_factory=utcnow)


FactOp = Literal["ADD", "UPDATE", "DELETE"]


class FactResult(BaseModel):
    """One line of what an `add` (or a direct edit) did to the fact memory."""

    event: Literal["ADD", "UPDATE", "DELETE", "NOOP"]
    id: str
    text: str
    previous_text: str | None = None


class FactChange(BaseModel):
    """A fact whose text changes (UPDATE) or that goes away (text None: DELETE)."""

    fact_id: str
    text: str | None = None
    embedding: list[float] | None = Field(default=None, repr=False)
    # the episode that said the new text (an LLM's UPDATE), added to the fact's provenance:
    # its time dates the current text (`Fact.text_said_at`); none for an edit by hand
    provenance: Provenance | None = None


class FactLink(BaseModel):
    """A fact names an entity of its tenant (one of the entity's keys is a word n-gram of the
    fact's text, the match search uses to link a query): entity-centric search reaches the
    fact through it. Computed by `resolve.links`, written with the plan that makes it true."""

    fact_id: str
    entity_id: str


class Summary(BaseModel):
    """The running summary of one exact tenant's conversation."""

    tenant: Tenant
    text: str
    messages_covered: int  # how many of the tenant's messages (in episode order) it covers
    updated_at: datetime = Field(default_factory=utcnow)


# ---- write plan (the only input of a store write)


class Invalidation(BaseModel):
    relation_id: str
    invalid_at: datetime


class MentionUpdate(BaseModel):
    """A duplicate fact seen again: one more mention and one more provenance entry."""

    relation_id: str
    provenance: Provenance


class AliasUpdate(BaseModel):
    """Names merged into an existing entity: appended to its aliases and keys (no duplicates).
    `name`, when set, becomes the entity's display name (a fuller form arrived: "Sam" ->
    "Sam Okafor"); the old name stays an alias, and the entity's edges show the new name."""

    entity_id: str
    aliases: list[str]
    keys: list[str]
    name: str | None = None


class PossibleDuplicate(BaseModel):
    """A new entity that may be the same thing as an existing one of its tenant ("Diego" when
    the tenant holds several Diegos and nothing said which). Recorded for review, never
    merged by the resolver: a wrong merge corrupts two records, a kept duplicate none."""

    entity_id: str  # the entity the add created (or found)
    candidate_id: str  # the stored entity it may duplicate
    reason: str  # why, in words: "first name of 3 people", "nickname of Robert Chen"
    score: float = 0.0  # name-embedding cosine of the two, for ranking a review list
    created_at: datetime = Field(default_factory=utcnow)


EntityOp = Literal["MERGE", "SPLIT", "RENAME"]


class RepointedEdge(BaseModel):
    """An edge a merge moved: which of its ends were the merged-away entity."""

    id: str
    source: bool = False
    destination: bool = False


class MergeUndo(BaseModel):
    """What a MERGE changed, kept in its history event so `split_entity` can take it back."""

    other: Entity  # the merged-away entity as it was, embedding included
    aliases_added: list[str] = Field(default_factory=list)  # to keep's aliases
    keys_added: list[str] = Field(default_factory=list)  # to keep's keys
    edges: list[RepointedEdge] = Field(default_factory=list)
    dropped: list[Relation] = Field(default_factory=list)  # would-be self-loops, removed
    # other's possible-duplicate pairs with a third entity as recorded (a split puts them
    # back), and the pairs of keep the merge created from them (a split removes them)
    pairs: list[PossibleDuplicate] = Field(default_factory=list)
    pairs_created: list[str] = Field(default_factory=list)  # repair.pair_key of each


class EntityEvent(BaseModel):
    """One line of an entity's history: MERGE (`other_id` merged into `entity_id`), SPLIT
    (a merge taken back: `merge_id`), RENAME (display name `old_name` -> `new_name`). A MERGE
    carries its `undo`; the history of the merged-away id shows the merge too."""

    id: str = Field(default_factory=new_id)
    entity_id: str
    tenant: Tenant
    event: EntityOp
    other_id: str | None = None
    merge_id: str | None = None
    old_name: str | None = None
    new_name: str | None = None
    actor: Literal["resolver", "user"] = "user"
    episode_id: str | None = None
    at: datetime = Field(default_factory=utcnow)
    undo: MergeUndo | None = Field(default=None, repr=False)


class MergeResult(BaseModel):
    """What `merge_entities` did. `merge_id` takes it back (`split_entity`)."""

    merge_id: str
    keep: Entity  # as it is now (without its embedding)
    removed_id: str
    removed_name: str
    moved_relations: list[str] = Field(default_factory=list)  # re-pointed onto keep
    dropped_relations: list[str] = Field(default_factory=list)  # keep<->other: removed, kept
    aliases_added: list[str] = Field(default_factory=list)
    keys_added: list[str] = Field(default_factory=list)


class SplitResult(BaseModel):
    """What `split_entity` did: the merged-away entity is back with its own edges."""

    split_id: str
    merge_id: str
    keep: Entity
    restored: Entity
    moved_relations: list[str] = Field(default_factory=list)  # re-pointed back to restored
    restored_relations: list[str] = Field(default_factory=list)  # the merge's dropped edges


class GraphWrites(BaseModel):
    """The graph part of a `WritePlan` (the graph path of an add plans exactly these)."""

    new_entities: list[Entity] = Field(default_factory=list)
    alias_updates: list[AliasUpdate] = Field(default_factory=list)
    possible_duplicates: list[PossibleDuplicate] = Field(default_factory=list)
    new_relations: list[Relation] = Field(default_factory=list)
    invalidations: list[Invalidation] = Field(default_factory=list)
    mentions: list[MentionUpdate] = Field(default_factory=list)

    def graph_fields(self) -> dict[str, Any]:
        """These fields as they are (no copies), for `WritePlan(**part.graph_fields(), ...)`."""
        return {name: getattr(self, name) for name in GraphWrites.model_fields}


class WritePlan(GraphWrites):
    """Everything one `add` will write, computed before any write so the write can be atomic."""

    tenant: Tenant
    episode: Episode | None = None  # None for a user's direct fact edit (no conversation)
    # a restore's later episodes, in conversation order (only `mem0g import` sets them: one
    # plan, so one transaction, per restored tenant)
    more_episodes: list[Episode] = Field(default_factory=list)
    new_facts: list[Fact] = Field(default_factory=list)
    fact_changes: list[FactChange] = Field(default_factory=list)
    fact_events: list[FactEvent] = Field(default_factory=list)
    # a restore's entity histories (merges with their undo records, splits, renames), in
    # write order: only `mem0g import` sets them, so a restored merge can still be split
    entity_events: list[EntityEvent] = Field(default_factory=list)
    # links added by the plan; every fact the plan creates or changes gets its whole set here
    # (a changed or deleted fact's stored links are dropped first)
    fact_links: list[FactLink] = Field(default_factory=list)
    updated_at: datetime = Field(default_factory=utcnow)
    # the tenant's version (`GraphStore.tenant_version`) the plan was computed from: the store
    # refuses it with PlanConflict when another writer changed the tenant since
    based_on: str | None = None


# ---------------------------------------------------------------- results


class Event(str, Enum):
    ADD = "ADD"
    UPDATE = "UPDATE"
    INVALIDATE = "INVALIDATE"
    NOOP = "NOOP"


class RelationChange(BaseModel):
    """One line of what an `add` did to the graph."""

    event: Event
    id: str
    source: str
    relation: str
    destination: str
    valid_from: datetime | None = None
    invalid_at: datetime | None = None
    previous_id: str | None = None


class Usage(BaseModel):
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    by_task: dict[str, int] = Field(default_factory=dict)
    # calls per structured-output mode (tools, json_schema, json_object_schema, json)
    modes: dict[str, int] = Field(default_factory=dict)

    def add(
        self, task: str, prompt_tokens: int, completion_tokens: int, mode: str | None = None
    ) -> None:
        self.calls += 1
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.by_task[task] = self.by_task.get(task, 0) + 1
        if mode is not None:
            self.modes[mode] = self.modes.get(mode, 0) + 1

    def __add__(self, other: Usage) -> Usage:
        """The calls and tokens of both (an add's two paths, a command's adds)."""
        return Usage(
            calls=self.calls + other.calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            by_task=_sum_counts(self.by_task, other.by_task),
            modes=_sum_counts(self.modes, other.modes),
        )

    @classmethod
    def total(cls, parts: Iterable[Usage]) -> Usage:
        return sum(parts, cls())


def _sum_counts(one: dict[str, int], two: dict[str, int]) -> dict[str, int]:
    return {key: one.get(key, 0) + two.get(key, 0) for key in {**one, **two}}


class Rejection(BaseModel):
    """An extraction the sanity rules kept out of the graph (mem0g/extract/checks.py)."""

    kind: Literal["entity", "relation"]
    text: str  # the name, or "source -relation-> destination"
    rule: str  # which rule: placeholder entity name, stopword relation, self-named relation


class AddResult(BaseModel):
    episode_id: str
    relations: list[RelationChange] = Field(default_factory=list)
    facts: list[FactResult] = Field(default_factory=list)
    entities: list[Entity] = Field(default_factory=list)
    # names the add could not tell apart, kept as new nodes beside these stored ones
    possible_duplicates: list[PossibleDuplicate] = Field(default_factory=list)
    # broken extractions (placeholder names, stopword or self-named relations), not stored
    rejected: list[Rejection] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)


class RelationHit(BaseModel):
    id: str
    source: str
    relation: str
    destination: str
    score: float
    valid_from: datetime | None = None
    invalid_at: datetime | None = None
    created_at: datetime
    provenance: list[Provenance] = Field(default_factory=list)
    # the rankings that found it (retrieve/fusion.py names them) and its rank in each
    sources: dict[str, int] = Field(default_factory=dict)

    @classmethod
    def from_relation(
        cls, rel: Relation, score: float, sources: dict[str, int] | None = None
    ) -> RelationHit:
        return cls(
            sources=dict(sources or {}),
            id=rel.id,
            source=rel.source,
            relation=rel.relation,
            destination=rel.destination,
            score=score,
            valid_from=rel.valid_from,
            invalid_at=rel.invalid_at,
            created_at=rel.created_at,
            provenance=rel.provenance,
        )


class EntityHit(BaseModel):
    id: str
    name: str
    type: str
    aliases: list[str] = Field(default_factory=list)
    score: float
    matched_by: Literal["name", "lexical", "embedding"]


class FactHit(BaseModel):
    id: str
    text: str
    score: float
    created_at: datetime
    updated_at: datetime
    provenance: list[Provenance] = Field(default_factory=list)
    # the rankings that found it (retrieve/fusion.py names them) and its rank in each
    sources: dict[str, int] = Field(default_factory=dict)
    # with `as_of`: when this text of the fact became true (said, or changed to it) and when
    # it stopped (updated or deleted; None: still true), see `retrieve/timeline.py`
    valid_from: datetime | None = None
    invalid_at: datetime | None = None

    @property
    def said_at(self) -> datetime:
        """When it was said (its first episode's conversation time), else when it was stored."""
        return self.provenance[0].timestamp if self.provenance else self.created_at

    @property
    def text_said_at(self) -> datetime:
        """When this text was said: the last episode that gave it (see `Fact.text_said_at`)."""
        return self.provenance[-1].timestamp if self.provenance else self.created_at


class SearchResult(BaseModel):
    query: str
    facts: list[FactHit] = Field(default_factory=list)
    relations: list[RelationHit] = Field(default_factory=list)
    entities: list[EntityHit] = Field(default_factory=list)


class GraphSnapshot(BaseModel):
    """A tenant's whole graph, as `get_all` and the dump formats see it."""

    entities: list[Entity] = Field(default_factory=list)
    relations: list[Relation] = Field(default_factory=list)
    facts: list[Fact] = Field(default_factory=list)

    def model_post_init(self, __context: Any) -> None:
        self.entities.sort(key=lambda e: (e.created_at, e.id))
        self.relations.sort(key=lambda r: (r.created_at, r.id))
        self.facts.sort(key=lambda f: (f.created_at, f.id))


def plan_episodes(plan: WritePlan) -> list[Episode]:
    """Every episode a plan writes, in order."""
    return ([plan.episode] if plan.episode is not None else []) + list(plan.more_episodes)
