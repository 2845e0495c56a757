"""The two paths of one `add`, each a pure planner: graph (Mem0g) and facts (Mem0).

Both read the store and call the LLM, neither writes: each returns its part of the WritePlan,
and `Memory` applies the merged plan in one transaction.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from mem0g.config import MemoryConfig
from mem0g.embed import CachedEmbedder
from mem0g.extract import extract, extract_facts
from mem0g.llm.client import LLMClient
from mem0g.llm.protocol import Context
from mem0g.resolve.entities import resolve_entities
from mem0g.resolve.facts import FactPlan, resolve_facts
from mem0g.resolve.updates import resolve_updates
from mem0g.stores.base import GraphStore
from mem0g.types import (
    AliasUpdate,
    Entity,
    Event,
    Invalidation,
    MentionUpdate,
    Message,
    PossibleDuplicate,
    Provenance,
    Relation,
    RelationChange,
    Tenant,
    Usage,
)


class GraphPart(BaseModel):
    new_entities: list[Entity] = Field(default_factory=list)
    alias_updates: list[AliasUpdate] = Field(default_factory=list)
    new_relations: list[Relation] = Field(default_factory=list)
    invalidations: list[Invalidation] = Field(default_factory=list)
    mentions: list[MentionUpdate] = Field(default_factory=list)
    changes: list[RelationChange] = Field(default_factory=list)
    # ambiguous names the resolver did not merge, recorded for review (Memory.possible_duplicates)
    possible_duplicates: list[PossibleDuplicate] = Field(default_factory=list)


class Stages:
    """What both paths need: the LLM, the embedder, the store and the settings."""

    def __init__(
        self, llm: LLMClient, embedder: CachedEmbedder, store: GraphStore, config: MemoryConfig
    ) -> None:
        self.llm = llm
        self.embedder = embedder
        self.store = store
        self.config = config

    def graph_path(
        self,
        tenant: Tenant,
        messages: list[Message],
        when: datetime,
        context: Context,
        provenance: Provenance,
        now: datetime,
        usage: Usage,
    ) -> GraphPart:
        """Extract (2 calls), resolve entities, resolve updates (<= 1 call)."""
        part = GraphPart()
        found = extract(self.llm, messages, when, context, usage)
        used_names: dict[str, str] = {}
        for t in found.triples:
            used_names.setdefault(t.source, t.source_type)
            used_names.setdefault(t.destination, t.destination_type)
        resolved = resolve_entities(
            self.store,
            self.embedder,
            tenant,
            used_names,
            threshold=self.config.resolver.threshold,
            k=self.config.resolver.candidates,
            now=now,
        )
        candidates: dict[tuple[str, str, str], Relation] = {}
        for t in found.triples:
            src = resolved.ids.get(t.source)
            dst = resolved.ids.get(t.destination)
            if src is None or dst is None or src == dst or (src, t.relation, dst) in candidates:
                continue
            candidates[(src, t.relation, dst)] = Relation(
                tenant=tenant,
                source_id=src,
                source=resolved.by_id[src].name,
                relation=t.relation,
                destination_id=dst,
                destination=resolved.by_id[dst].name,
                valid_from=t.valid_from or when,
                created_at=now,
                updated_at=now,
                provenance=[provenance],
            )
        new = list(candidates.values())
        if new:
            vectors = self.embedder.embed([r.text for r in new])
            for rel, vector in zip(new, vectors, strict=True):
                rel.embedding = [float(x) for x in vector]
        outcome = resolve_updates(
            self.llm,
            self.store,
            tenant,
            new,
            reference_time=when,
            max_existing=self.config.resolver.max_existing,
            usage=usage,
        )
        invalidated: set[str] = set()

        def invalidate(old: Relation, at: datetime) -> None:
            if old.id not in invalidated:
                invalidated.add(old.id)
                part.invalidations.append(Invalidation(relation_id=old.id, invalid_at=at))
                part.changes.append(change(Event.INVALIDATE, old, invalid_at=at))

        for rel, decision in zip(new, outcome.decisions, strict=True):
            if decision.event == Event.NOOP:
                if decision.duplicate_of is not None:
                    dup = decision.duplicate_of
                    part.mentions.append(MentionUpdate(relation_id=dup.id, provenance=provenance))
                    part.changes.append(change(Event.NOOP, dup))
            else:
                rel.invalid_at = decision.invalid_at
                part.new_relations.append(rel)
                previous = decision.supersedes[0].id if decision.supersedes else None
                event = Event.UPDATE if decision.event == Event.UPDATE else Event.ADD
                part.changes.append(change(event, rel, previous_id=previous))
            for old in decision.supersedes:
                invalidate(old, rel.valid_from or when)
        for old in outcome.orphan_invalidations:
            invalidate(old, when)
        used = {r.source_id for r in part.new_relations}
        used |= {r.destination_id for r in part.new_relations}
        part.new_entities = [e for e in resolved.new_entities if e.id in used]
        part.alias_updates = resolved.alias_updates
        return part

    def fact_path(
        self,
        tenant: Tenant,
        messages: list[Message],
        when: datetime,
        context: Context,
        provenance: Provenance,
        now: datetime,
        usage: Usage,
    ) -> FactPlan:
        """Extract facts (1 call), then ADD/UPDATE/DELETE/NOOP against similar ones (<= 1)."""
        texts = extract_facts(self.llm, messages, when, context, usage)
        return resolve_facts(
            self.llm,
            self.store,
            self.embedder,
            tenant,
            texts,
            reference_time=when,
            provenance=provenance,
            max_existing=self.config.facts.max_existing,
            min_similarity=self.config.facts.min_similarity,
            now=now,
            usage=usage,
        )


def change(
    event: Event,
    rel: Relation,
    *,
    previous_id: str | None = None,
    invalid_at: datetime | None = None,
) -> RelationChange:
    return RelationChange(
        event=event,
        id=rel.id,
        source=rel.source,
        relation=rel.relation,
        destination=rel.destination,
        valid_from=rel.valid_from,
        invalid_at=invalid_at or rel.invalid_at,
        previous_id=previous_id,
    )
