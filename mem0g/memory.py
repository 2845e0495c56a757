"""`Memory`: the one object users, the CLI and the demo talk to. It wires the stages and owns
the transaction boundary: every stage before `store.apply` only reads, so an `add` that fails
anywhere writes nothing."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from mem0g.config import MemoryConfig
from mem0g.embed import CachedEmbedder, make_embedder
from mem0g.extract import extract
from mem0g.llm.client import LLMClient
from mem0g.resolve.entities import resolve_entities
from mem0g.resolve.updates import resolve_updates
from mem0g.retrieve import DualRetriever
from mem0g.stores.base import GraphStore, StoreStats
from mem0g.types import (
    AddResult,
    Episode,
    Event,
    GraphSnapshot,
    Invalidation,
    MentionUpdate,
    Message,
    Provenance,
    Relation,
    RelationChange,
    SearchResult,
    Tenant,
    Usage,
    Validity,
    WritePlan,
    to_utc,
    triple_text,
    utcnow,
)

MessagesIn = str | Mapping[str, Any] | Iterable[Mapping[str, Any] | Message]


def parse_messages(messages: MessagesIn) -> list[Message]:
    """Accept a string, one message dict, or a list of dicts/Messages (mem0's shapes)."""
    if isinstance(messages, str):
        items: list[Any] = [{"role": "user", "content": messages}]
    elif isinstance(messages, Mapping):
        items = [messages]
    else:
        items = list(messages)
    parsed = [m if isinstance(m, Message) else Message.model_validate(m) for m in items]
    if not parsed:
        raise ValueError("no messages to add")
    return parsed


def make_store(config: MemoryConfig, dims: int) -> GraphStore:
    settings = config.graph_store
    if settings.provider == "neo4j":
        from mem0g.stores.neo4j import Neo4jGraphStore  # imported lazily: optional server

        return Neo4jGraphStore.from_config(settings, dims=dims)
    from mem0g.stores.embedded import EmbeddedGraphStore

    return EmbeddedGraphStore(settings.resolved_path(), dims=dims)


class Memory:
    """Graph memory for agents: `add` conversation turns, `search` relations, keep history."""

    def __init__(
        self,
        config: MemoryConfig | Mapping[str, Any] | None = None,
        *,
        llm: LLMClient | None = None,
        embedder: CachedEmbedder | None = None,
        store: GraphStore | None = None,
    ) -> None:
        self.config = MemoryConfig.load(dict(config) if isinstance(config, Mapping) else config)
        self._llm = llm
        self.embedder = embedder or make_embedder(self.config.embedder)
        self.store = store or make_store(self.config, self.embedder.dims)
        self.retriever = DualRetriever(self.store, self.embedder, self.config.retrieval)
        self._tenant_locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | MemoryConfig) -> Memory:
        return cls(config)

    @property
    def llm(self) -> LLMClient:
        """Created on first `add`, so search, dumps and stats work without any LLM configured."""
        if self._llm is None:
            self._llm = LLMClient(self.config.llm)
        return self._llm

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.store.close()

    def _lock(self, tenant: Tenant) -> threading.Lock:
        """Adds of one tenant are serialised so two of them cannot both create "Alice"."""
        with self._locks_guard:
            return self._tenant_locks.setdefault(tenant.key, threading.Lock())

    # ------------------------------------------------------------------ add

    def add(
        self,
        messages: MessagesIn,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        timestamp: datetime | str | None = None,
    ) -> AddResult:
        """Extract, resolve and apply one episode; all of it is written or none of it."""
        tenant = Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id)
        parsed = parse_messages(messages)
        for m in parsed:  # "I" needs a name to resolve to: default to the tenant's ids
            m.name = m.name or (user_id if m.role == "user" else agent_id)
        when = to_utc(timestamp) or utcnow()
        with self._lock(tenant):
            return self._add(tenant, parsed, when)

    def _add(self, tenant: Tenant, messages: list[Message], when: datetime) -> AddResult:
        usage = Usage()
        now = utcnow()
        episode = Episode(tenant=tenant, messages=messages, timestamp=when, created_at=now)
        found = extract(self.llm, messages, when, usage=usage)
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
        provenance = Provenance(episode_id=episode.id, timestamp=when)
        candidates: dict[tuple[str, str, str], Relation] = {}
        for t in found.triples:
            src = resolved.ids.get(t.source)
            dst = resolved.ids.get(t.destination)
            if src is None or dst is None or src == dst or (src, t.relation, dst) in candidates:
                continue
            source, destination = resolved.by_id[src].name, resolved.by_id[dst].name
            candidates[(src, t.relation, dst)] = Relation(
                tenant=tenant,
                source_id=src,
                source=source,
                relation=t.relation,
                destination_id=dst,
                destination=destination,
                valid_from=t.valid_from or when,
                created_at=now,
                updated_at=now,
                provenance=[provenance],
            )
        new = list(candidates.values())
        if new:
            vectors = self.embedder.embed([r.text for r in new])
            for rel, vector in zip(new, vectors, strict=False):
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
        plan = WritePlan(tenant=tenant, episode=episode, updated_at=now)
        changes: list[RelationChange] = []
        invalidated: set[str] = set()

        def invalidate(old: Relation, at: datetime) -> None:
            if old.id in invalidated:
                return
            invalidated.add(old.id)
            plan.invalidations.append(Invalidation(relation_id=old.id, invalid_at=at))
            changes.append(_change(Event.INVALIDATE, old, invalid_at=at))

        for rel, decision in zip(new, outcome.decisions, strict=False):
            if decision.event == Event.NOOP:
                if decision.duplicate_of is not None:
                    dup = decision.duplicate_of
                    plan.mentions.append(MentionUpdate(relation_id=dup.id, provenance=provenance))
                    changes.append(_change(Event.NOOP, dup))
                for old in decision.supersedes:
                    invalidate(old, rel.valid_from or when)
                continue
            rel.invalid_at = decision.invalid_at
            plan.new_relations.append(rel)
            previous = decision.supersedes[0].id if decision.supersedes else None
            event = Event.UPDATE if decision.event == Event.UPDATE else Event.ADD
            changes.append(_change(event, rel, previous_id=previous))
            for old in decision.supersedes:
                invalidate(old, rel.valid_from or when)
        for old in outcome.orphan_invalidations:
            invalidate(old, when)

        used = {r.source_id for r in plan.new_relations} | {
            r.destination_id for r in plan.new_relations
        }
        plan.new_entities = [e for e in resolved.new_entities if e.id in used]
        plan.alias_updates = resolved.alias_updates
        self.store.apply(plan)
        return AddResult(
            episode_id=episode.id,
            relations=changes,
            entities=[e.model_copy(update={"embedding": None}) for e in plan.new_entities],
            usage=usage,
        )

    # ------------------------------------------------------------------ read

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 10,
        as_of: datetime | str | None = None,
        include_invalid: bool = False,
    ) -> SearchResult:
        """Relations relevant to `query`, best first; current facts unless told otherwise."""
        if not query or not query.strip():
            raise ValueError("query is empty")
        if limit < 1:
            raise ValueError("limit must be at least 1")
        scope = Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id)
        validity = Validity(as_of=to_utc(as_of), include_invalid=include_invalid)
        return self.retriever.search(query, scope, limit, validity)

    def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        include_invalid: bool = False,
        as_of: datetime | str | None = None,
    ) -> GraphSnapshot:
        scope = Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id)
        validity = Validity(as_of=to_utc(as_of), include_invalid=include_invalid)
        snapshot = self.store.snapshot(scope, validity)
        return GraphSnapshot(
            entities=[e.model_copy(update={"embedding": None}) for e in snapshot.entities],
            relations=[r.model_copy(update={"embedding": None}) for r in snapshot.relations],
        )

    def tenants(self) -> list[Tenant]:
        """Every exact tenant that has data in the store."""
        return self.store.tenants()

    def get_everything(self, *, include_invalid: bool = True) -> GraphSnapshot:
        """All tenants' graphs in one snapshot: for operators' dumps and backups."""
        entities: dict[str, Any] = {}
        relations: dict[str, Any] = {}
        for tenant in self.tenants():
            part = self.get_all(**tenant.model_dump(), include_invalid=include_invalid)
            entities.update((e.id, e) for e in part.entities)
            relations.update((r.id, r) for r in part.relations)
        return GraphSnapshot(entities=list(entities.values()), relations=list(relations.values()))

    def delete_all(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> int:
        return self.store.delete_tenant(Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id))

    def reset(self) -> None:
        self.store.reset()

    def stats(self, **ids: str | None) -> StoreStats:
        return self.store.stats(Tenant(**ids) if any(ids.values()) else None)


def _change(
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


__all__ = ["Memory", "parse_messages", "triple_text"]
