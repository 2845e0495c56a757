"""Entity resolver: map each extracted name to an existing node of the tenant or a new one.

Candidates come from three cheap lookups: the exact normalised name or alias, the name's words
(`token:` blocking keys, with nickname variants: "Bob" finds the Roberts) and the top-k
name-embedding neighbours. `names.judge` decides among them (types, name structure, the
threshold for descriptive names). A short name that could be several people ("Diego" with ten
Diegos stored) is resolved from the conversation: the one whose full name this add or the
recent messages name. What is still ambiguous is left `pending`: the relation generator's LLM
call may settle it (`settle`), and otherwise it becomes a new node recorded as a *possible
duplicate* of its candidates, never merged. Never across tenants, never across incompatible
types.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime

import numpy as np
from pydantic import BaseModel, Field

from mem0g.embed import CachedEmbedder
from mem0g.resolve.names import (
    APOSTROPHES,
    Candidate,
    NameRelation,
    canonical_type,
    derived_alias,
    is_short_form,
    judge,
    lookup_keys,
    name_relation,
    name_size,
    normalize_name,
    token_keys,
    types_compatible,
    written_apart,
    written_in,
)
from mem0g.stores.base import GraphStore
from mem0g.stores.vectors import row_scores, top_k
from mem0g.types import AliasUpdate, Entity, PossibleDuplicate, Tenant


class Pending(BaseModel):
    """A name the rules and the conversation could not settle: it may be any of `candidates`."""

    name: str
    type: str
    vector: list[float] = Field(repr=False)
    candidates: list[Entity] = Field(default_factory=list)
    scores: dict[str, float] = Field(default_factory=dict)  # candidate id -> cosine
    reason: str = ""


class ResolvedEntities(BaseModel):
    ids: dict[str, str] = Field(default_factory=dict)  # extracted name -> entity id
    by_id: dict[str, Entity] = Field(default_factory=dict)  # every entity the add touches
    new_entities: list[Entity] = Field(default_factory=list)
    alias_updates: list[AliasUpdate] = Field(default_factory=list)
    pending: dict[str, Pending] = Field(default_factory=dict)  # name -> what it could be
    possible_duplicates: list[PossibleDuplicate] = Field(default_factory=list)
    renamed: dict[str, str] = Field(default_factory=dict)  # stored entity id -> new name


_POSSESSIVE = re.compile(rf"[{APOSTROPHES}]s\b")


class Mentions(BaseModel):
    """What the conversation names, nearest first: this add (its messages, its speakers and
    its extracted names), then each recent message, the latest first (a reader takes "Ravi"
    for the Ravi named a moment ago, not the one named five turns back). Normalised,
    space-padded texts."""

    levels: list[str] = Field(default_factory=list)
    speakers: set[str] = Field(default_factory=set)

    @classmethod
    def of(
        cls, current: Sequence[str], recent: Sequence[str] = (), speakers: Sequence[str] = ()
    ) -> Mentions:
        def text(parts: Sequence[str]) -> str:
            # "Patricia Castillo's cat": the possessive must not glue onto the name
            parts = [_POSSESSIVE.sub(" ", p) for p in parts]
            return " " + " | ".join(normalize_name(p) for p in parts) + " "

        return cls(
            levels=[text(current), *(text([m]) for m in reversed(recent))],
            speakers={normalize_name(s) for s in speakers if s and normalize_name(s)},
        )

    def named(self, candidates: Sequence[Entity]) -> list[set[str]]:
        """Per level, the candidates whose full name (two identifying words or more, or a
        speaker's name) the level names. A single word names nobody, nor does a title with
        one ("Dr. Zhang" stored on one Zhang), nor initials ("R. Horvat" stored on Richard
        Horvat may be Rebecca Horvat), nor a person's alias the node's own name explains
        ("Pat Kim" stored on Patrick Kim may be Patricia Kim): that is what we resolve."""
        # each form's key and size once, not once per level (a crowd has many candidates)
        forms = [
            (
                e.id,
                normalize_name(form),
                name_size(form, e.type) > 1
                and not is_short_form(form, e.type)
                and (form == e.name or not derived_alias(form, e.name, e.type)),
            )
            for e in candidates
            for form in (e.name, *e.aliases)
        ]
        out: list[set[str]] = []
        for level, text in enumerate(self.levels):
            ids = set()
            for id_, key, identifying in forms:
                full = identifying and written_in(key, text)
                if full or (level == 0 and key in self.speakers):
                    ids.add(id_)
            out.append(ids)
        return out


def _exact(candidates: list[Entity], type_: str) -> Entity | None:
    fitting = [e for e in candidates if types_compatible(e.type, type_)]
    same = [e for e in fitting if canonical_type(e.type) == canonical_type(type_)]
    best = same or fitting
    return best[0] if best else None


def _fuller(name: str, entity: Entity) -> bool:
    """`name` is a fuller structural form of the entity's display name ("Sam" -> "Sam
    Okafor", "Dr. Okafor" -> "Grace Okafor"): it should become the display name."""
    kind = canonical_type(entity.type)
    if len(normalize_name(name).split()) <= len(normalize_name(entity.name).split()):
        return False
    return name_relation(name, entity.name, kind) is NameRelation.ALIAS


class _Batch:
    """The add's own new entities, indexed as a store indexes its entities (by key, and by
    name vector for the top k), so resolving N names in one add is not N x N comparisons."""

    def __init__(self, entities: Sequence[Entity]) -> None:
        self.by_key: dict[str, dict[str, Entity]] = {}
        self.entities: list[Entity] = []
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        for entity in entities:
            self.add(entity)

    def add(self, entity: Entity) -> None:
        vector = np.asarray(entity.embedding or [], dtype=np.float32)
        if self.matrix.shape[0] == len(self.entities):  # full: double the capacity
            grown = np.zeros((max(8, 2 * len(self.entities)), vector.shape[0]), np.float32)
            if self.entities:
                grown[: len(self.entities)] = self.matrix[: len(self.entities)]
            self.matrix = grown
        self.matrix[len(self.entities)] = vector
        self.entities.append(entity)
        self.index(entity, entity.keys)

    def index(self, entity: Entity, keys: Sequence[str]) -> None:
        for key in keys:
            self.by_key.setdefault(key, {})[entity.id] = entity

    def near(self, keys: Sequence[str], vector: np.ndarray, k: int) -> dict[str, float]:
        """Entity id -> cosine, for entities holding a key or among the k most similar."""
        n = len(self.entities)
        if not n:
            return {}
        scores = row_scores(self.matrix[:n], vector)
        picked = {i: None for i in top_k(scores, k)}
        ids = {e.id: i for i, e in enumerate(self.entities)}
        for key in keys:
            for entity_id in self.by_key.get(key, {}):
                picked[ids[entity_id]] = None
        return {self.entities[i].id: float(scores[i]) for i in picked}


class _Resolver:
    """One add's resolution state; `resolve_entities` / `settle` / `finish` drive it."""

    def __init__(
        self,
        store: GraphStore,
        tenant: Tenant,
        threshold: float,
        k: int,
        now: datetime,
        out: ResolvedEntities,
        apart: Collection[frozenset[str]] = (),
    ) -> None:
        self.store, self.tenant, self.threshold, self.k, self.now = store, tenant, threshold, k, now
        self.out = out
        self.apart = apart
        self.batch = _Batch(out.new_entities)

    def merge(self, name: str, entity: Entity) -> None:
        out = self.out
        entity = out.by_id.setdefault(entity.id, entity)
        out.ids[name] = entity.id
        if name == entity.name or name in entity.aliases:
            return
        rename = _fuller(name, entity)
        if rename:
            entity.aliases.append(entity.name)
            entity.name = name
        else:
            entity.aliases.append(name)
        new_keys = [normalize_name(name), *token_keys(name, entity.type)]
        new_keys = [key for key in new_keys if key not in entity.keys]
        entity.keys.extend(new_keys)
        if entity in out.new_entities:
            self.batch.index(entity, new_keys)
            return
        update = next((u for u in out.alias_updates if u.entity_id == entity.id), None)
        if update is None:
            update = AliasUpdate(entity_id=entity.id, aliases=[], keys=[])
            out.alias_updates.append(update)
        update.aliases.append(entity.aliases[-1])
        update.keys.extend(new_keys)
        if rename:
            update.name = name
            out.renamed[entity.id] = name

    def named_apart(self, name: str, target: Entity) -> str | None:
        """Another name of this add, resolved to `target`, that this one is written apart
        from (`names.written_apart`: "John Smith and his son Ian Smith", which the nicknames
        list links), or that the add relates to this one (`apart`: "Alexander Smith father_of
        Alex Smith"): the message named two beings, and a merge would also drop the relation
        it states between them. A name the target already carries is the target ("Bob Chen"
        stored on Robert Chen)."""
        key = normalize_name(name)
        if key in {normalize_name(n) for n in (target.name, *target.aliases)}:
            return None
        for other, entity_id in self.out.ids.items():
            if entity_id == target.id and (
                written_apart(name, other, target.type) or frozenset((name, other)) in self.apart
            ):
                return other
        return None

    def create(self, name: str, type_: str, vector: np.ndarray) -> Entity:
        entity = Entity(
            tenant=self.tenant,
            name=name,
            type=(type_ or "").strip().lower() or "entity",
            keys=[normalize_name(name), *token_keys(name, type_)],
            embedding=[float(x) for x in vector],
            created_at=self.now,
            updated_at=self.now,
        )
        self.out.new_entities.append(entity)
        self.out.by_id[entity.id] = entity
        self.out.ids[name] = entity.id
        self.batch.add(entity)
        return entity

    def candidates(
        self, name: str, type_: str, vector: np.ndarray
    ) -> dict[str, tuple[Entity, float]]:
        found: dict[str, tuple[Entity, float]] = {}
        keys = [normalize_name(name), *lookup_keys(name, type_)]
        stored = self.store.find_entities(self.tenant, keys, exact=True)
        for e, score in self.store.similar_entities(self.tenant, vector, self.k, exact=True):
            found[e.id] = (self.out.by_id.get(e.id, e), score)
        for e in stored:
            if e.id not in found:
                emb = e.embedding
                score = float(np.dot(vector, np.asarray(emb, dtype=np.float32))) if emb else 0.0
                found[e.id] = (self.out.by_id.get(e.id, e), score)
        for entity_id, score in self.batch.near(keys, vector, self.k).items():
            found[entity_id] = (self.out.by_id[entity_id], score)
        return found

    def resolve(self, name: str, type_: str, vector: np.ndarray, mentions: Mentions) -> None:
        key = normalize_name(name)
        found = self.candidates(name, type_, vector)
        if key in mentions.speakers:  # a speaker is who the messages say, never a guess
            speaker = _exact([e for e, _ in found.values() if key in e.keys], type_)
            if speaker is not None:
                self.merge(name, speaker)
                return
        cands = [
            Candidate(id=e.id, name=e.name, type=e.type, aliases=list(e.aliases), similarity=score)
            for e, score in found.values()
        ]
        named = mentions.named([e for e, _ in found.values()])
        verdict = judge(name, type_, cands, self.threshold, named)
        target = None if verdict.target is None else found[verdict.target]
        rival = None if target is None else self.named_apart(name, target[0])
        if target is not None and rival is not None:  # another name of this add, apart
            entity = self.create(name, type_, vector)
            self.out.possible_duplicates.append(
                PossibleDuplicate(
                    entity_id=entity.id,
                    candidate_id=target[0].id,
                    reason=f"{name!r} and {rival!r} are named apart in one message",
                    score=round(target[1], 4),
                    created_at=self.now,
                )
            )
        elif target is not None:
            self.merge(name, target[0])
        elif verdict.ambiguous:
            self.out.pending[name] = Pending(
                name=name,
                type=type_,
                vector=[float(x) for x in vector],
                candidates=[found[i][0] for i in verdict.ambiguous],
                scores={i: found[i][1] for i in verdict.ambiguous},
                reason=verdict.reason,
            )
        else:
            entity = self.create(name, type_, vector)
            self.out.possible_duplicates += [
                PossibleDuplicate(
                    entity_id=entity.id,
                    candidate_id=kin,
                    reason=f"{name!r} {verdict.reason}",
                    score=round(found[kin][1], 4),
                    created_at=self.now,
                )
                for kin in verdict.kin
            ]


def _order(names: Mapping[str, str]) -> list[tuple[str, str]]:
    """Fuller names first, so "Diego" (or "Dr. Yilmaz") in the add that introduces "Diego
    Yilmaz" finds him."""
    wanted = [(n, t) for n, t in names.items() if normalize_name(n)]
    return sorted(wanted, key=lambda nt: -name_size(*nt))


def resolve_entities(
    store: GraphStore,
    embedder: CachedEmbedder,
    tenant: Tenant,
    names: Mapping[str, str],
    *,
    threshold: float,
    k: int,
    now: datetime,
    mentions: Mentions | None = None,
    out: ResolvedEntities | None = None,
    apart: Collection[frozenset[str]] = (),
) -> ResolvedEntities:
    """Resolve `names` (name -> type); later names may merge into earlier new ones. Names
    already resolved (or pending) in `out` are left alone. Nothing is written. `apart`:
    pairs of names the add relates to each other, so never one node by this resolution."""
    out = out or ResolvedEntities()
    mentions = mentions or Mentions()
    wanted = [(n, t) for n, t in _order(names) if n not in out.ids and n not in out.pending]
    if not wanted:
        return out
    resolver = _Resolver(store, tenant, threshold, k, now, out, apart)
    vectors = embedder.embed([name for name, _ in wanted])
    for (name, type_), vector in zip(wanted, vectors, strict=True):
        if name in out.ids:  # an earlier name of this batch settled it
            continue
        resolver.resolve(name, type_, vector, mentions)
    return out


def settle(
    store: GraphStore,
    tenant: Tenant,
    out: ResolvedEntities,
    identities: Mapping[str, str | None],
    *,
    now: datetime,
) -> ResolvedEntities:
    """Apply the LLM's answers for pending names (name -> candidate id, or None for "new"),
    then make every name still pending a new node recorded as a possible duplicate of each
    of its candidates. An answer naming no candidate of that name is ignored."""
    resolver = _Resolver(store, tenant, 0.0, 0, now, out)
    for name, pending in list(out.pending.items()):
        choice = identities.get(name, "unanswered")
        target = next((c for c in pending.candidates if c.id == choice), None)
        del out.pending[name]
        if target is not None:
            resolver.merge(name, out.by_id.get(target.id, target))
            continue
        entity = resolver.create(name, pending.type, np.asarray(pending.vector, dtype=np.float32))
        if choice is None:  # the LLM read the conversation and said: someone new
            continue
        for cand in pending.candidates:
            out.possible_duplicates.append(
                PossibleDuplicate(
                    entity_id=entity.id,
                    candidate_id=cand.id,
                    reason=f"{name!r} {pending.reason}; the conversation did not say which",
                    score=round(pending.scores.get(cand.id, 0.0), 4),
                    created_at=now,
                )
            )
    return out
