"""`Memory`: the one object users, the CLI and the demo talk to. It wires the stages and owns
the transaction boundary: the graph path and the fact path only read and plan (concurrently),
and the merged plan is applied in one transaction, so an `add` that fails anywhere writes
nothing."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from datetime import datetime
from typing import Any

from mem0g.config import MemoryConfig
from mem0g.embed import CachedEmbedder, make_embedder
from mem0g.extract import payload_messages
from mem0g.llm.client import LLMClient, ReplayingLLM
from mem0g.llm.protocol import Context
from mem0g.pipeline import GraphPart, Stages
from mem0g.resolve.facts import FactPlan
from mem0g.retrieve import DualRetriever
from mem0g.stores.base import (
    GraphStore,
    IndexRebuild,
    PlanConflict,
    StoreStats,
    UnknownEntityError,
)
from mem0g.stores.repair import describe
from mem0g.summary import SummaryWorker
from mem0g.types import (
    AddResult,
    Entity,
    EntityEvent,
    Episode,
    Fact,
    FactChange,
    FactEvent,
    FactHit,
    FactResult,
    GraphSnapshot,
    MergeResult,
    Message,
    PossibleDuplicate,
    Provenance,
    Relation,
    SearchResult,
    SplitResult,
    Summary,
    Tenant,
    Usage,
    Validity,
    WritePlan,
    to_utc,
    utcnow,
)

MessagesIn = str | Mapping[str, Any] | Iterable[Mapping[str, Any] | Message]

log = logging.getLogger(__name__)


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


def make_store(config: MemoryConfig, dims: int | None) -> GraphStore:
    """The configured store. `dims=None` (no embedder loaded): both stores take the size from
    the data they hold (the embedded store's matrices, Neo4j's vector indexes), so reads,
    dumps and deletes need no model."""
    settings = config.graph_store
    if settings.provider == "neo4j":
        from mem0g.stores.neo4j import Neo4jGraphStore  # imported lazily: optional server

        return Neo4jGraphStore.from_config(settings, dims=dims)
    from mem0g.stores.embedded import EmbeddedGraphStore

    return EmbeddedGraphStore(settings.resolved_path(), dims=dims)


def _collect(futures: list[Future[Any]]) -> list[Any]:
    """Wait for every path to finish (none is left running), then raise the first error."""
    wait(futures)
    for future in futures:
        error = future.exception()
        if error is not None:
            raise error
    return [f.result() for f in futures]


class Memory:
    """Long-term memory for agents: `add` conversation turns, `search` facts and relations,
    keep history. Graph (Mem0g) and facts (Mem0) side by side, each switchable in config."""

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
        concurrent = self.config.retrieval.concurrent_reads
        if concurrent is None:
            concurrent = bool(getattr(self.store, "concurrent_reads", False))
        self._reads = (
            ThreadPoolExecutor(max_workers=4, thread_name_prefix="mem0g-read")
            if concurrent
            else None
        )
        self.retriever = DualRetriever(
            self.store, self.embedder, self.config.retrieval, reads=self._reads
        )
        self._tenant_locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._paths = ThreadPoolExecutor(max_workers=4, thread_name_prefix="mem0g-path")
        self.summaries = SummaryWorker(lambda: self.llm, self.store, self.config.memory)
        self._closed = False

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | MemoryConfig) -> Memory:
        return cls(config)

    @property
    def llm(self) -> LLMClient:
        """Created on first use, so search, dumps and stats work without any LLM configured."""
        if self._llm is None:
            self._llm = LLMClient(self.config.llm)
        return self._llm

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Wait for a summary refresh in flight, then close the store. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.summaries.close()
        self._paths.shutdown(wait=True)
        if self._reads is not None:
            self._reads.shutdown(wait=True)
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
        infer: bool = True,
    ) -> AddResult:
        """Extract, resolve and apply one episode; all of it is written or none of it.

        `infer=False` stores each message verbatim as a fact, with no LLM call (imports)."""
        tenant = Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id)
        parsed = parse_messages(messages)
        when = to_utc(timestamp) or utcnow()
        for m in parsed:  # "I" needs a name to resolve to: default to the tenant's ids
            m.name = m.name or (user_id if m.role == "user" else agent_id)
            m.timestamp = to_utc(m.timestamp) or when
        with self._lock(tenant):
            result = (
                self._add(tenant, parsed, when) if infer else self._import(tenant, parsed, when)
            )
        self.summaries.maybe_refresh(tenant)
        return result

    def context_for(self, tenant: Tenant) -> Context:
        """What both extraction paths see besides the new messages: S and the last m messages."""
        summary = self.store.get_summary(tenant) if self.config.memory.summary else None
        limit = self.config.memory.recent_messages
        recent = self.store.recent_messages(tenant, limit) if limit else []
        return Context(
            summary=summary.text if summary else None,
            recent=payload_messages(recent, utcnow()),
        )

    def _add(self, tenant: Tenant, messages: list[Message], when: datetime) -> AddResult:
        """Plan from the tenant's current version and apply; when another writer (another
        `Memory`, another process) changed the tenant meanwhile, the store refuses the plan
        and it is made again from fresh reads. The context and every LLM answer to an
        unchanged request are reused, so a re-plan asks the LLM only where what it is shown
        changed (a new candidate, a new existing edge)."""
        now = utcnow()
        episode = Episode(tenant=tenant, messages=messages, timestamp=when, created_at=now)
        provenance = Provenance(episode_id=episode.id, timestamp=when)
        context = self.context_for(tenant)
        llm = ReplayingLLM(self.llm)
        graph_usage, fact_usage = Usage(), Usage()
        for attempt in range(self.config.memory.replans + 1):
            version = self.store.tenant_version(tenant)
            try:
                return self._plan_and_apply(
                    tenant, messages, when, episode, provenance, now, context, llm,
                    (graph_usage, fact_usage), version,
                )  # fmt: skip
            except PlanConflict:
                if attempt == self.config.memory.replans:
                    raise
                log.info("add for %s: tenant changed meanwhile, planning again", tenant.key)
        raise AssertionError("unreachable")

    def _plan_and_apply(
        self,
        tenant: Tenant,
        messages: list[Message],
        when: datetime,
        episode: Episode,
        provenance: Provenance,
        now: datetime,
        context: Context,
        llm: ReplayingLLM,
        usages: tuple[Usage, Usage],
        version: str,
    ) -> AddResult:
        stages = Stages(llm, self.embedder, self.store, self.config)  # type: ignore[arg-type]
        graph_usage, fact_usage = usages
        args = (tenant, messages, when, context, provenance, now)
        futures: list[Future[Any]] = []
        if self.config.memory.graph:
            futures.append(self._paths.submit(stages.graph_path, *args, graph_usage))
        if self.config.memory.facts:
            futures.append(self._paths.submit(stages.fact_path, *args, fact_usage))
        results = _collect(futures)
        graph = next((r for r in results if isinstance(r, GraphPart)), GraphPart())
        facts = next((r for r in results if isinstance(r, FactPlan)), FactPlan())
        plan = WritePlan(
            tenant=tenant,
            episode=episode,
            updated_at=now,
            new_entities=graph.new_entities,
            alias_updates=graph.alias_updates,
            new_relations=graph.new_relations,
            invalidations=graph.invalidations,
            mentions=graph.mentions,
            possible_duplicates=self._known_pairs(tenant, graph),
            new_facts=facts.new_facts,
            fact_changes=facts.changes,
            fact_events=facts.events,
            based_on=version,
        )
        self.store.apply(plan)
        return AddResult(
            episode_id=episode.id,
            relations=graph.changes,
            facts=facts.results,
            entities=[e.model_copy(update={"embedding": None}) for e in plan.new_entities],
            possible_duplicates=plan.possible_duplicates,
            rejected=graph.rejected,
            usage=graph_usage + fact_usage,
        )

    def _known_pairs(self, tenant: Tenant, graph: GraphPart) -> list[PossibleDuplicate]:
        """The graph path's possible duplicates whose entities the plan writes or the tenant
        has: the pipeline drops new entities no edge uses, and a review hint must never make
        the add fail (the store refuses a pair naming an unknown entity)."""
        if not graph.possible_duplicates:
            return []
        known = {e.id for e in graph.new_entities}
        named = {i for p in graph.possible_duplicates for i in (p.entity_id, p.candidate_id)}
        stored = self.store.get_entities(tenant, sorted(named - known))
        known |= {e.id for e in stored if e.tenant == tenant}
        return [
            p
            for p in graph.possible_duplicates
            if p.entity_id != p.candidate_id and {p.entity_id, p.candidate_id} <= known
        ]

    def _import(self, tenant: Tenant, messages: list[Message], when: datetime) -> AddResult:
        """Messages become facts as they are: no extraction, no LLM."""
        now = utcnow()
        episode = Episode(tenant=tenant, messages=messages, timestamp=when, created_at=now)
        provenance = Provenance(episode_id=episode.id, timestamp=when)
        texts = [m.content.strip() for m in messages]
        vectors = self.embedder.embed(texts)
        plan = WritePlan(tenant=tenant, episode=episode, updated_at=now)
        results = []
        for text, vector in zip(texts, vectors, strict=True):
            fact = Fact(
                tenant=tenant,
                text=text,
                embedding=[float(x) for x in vector],
                created_at=now,
                updated_at=now,
                provenance=[provenance],
            )
            plan.new_facts.append(fact)
            plan.fact_events.append(
                FactEvent(
                    fact_id=fact.id,
                    tenant=tenant,
                    event="ADD",
                    new_text=text,
                    actor="user",
                    episode_id=episode.id,
                    at=now,
                )
            )
            results.append(FactResult(event="ADD", id=fact.id, text=text))
        self.store.apply(plan)
        return AddResult(episode_id=episode.id, facts=results)

    def refresh_summary(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        wait: bool = True,
    ) -> Summary | None:
        """Refresh the conversation summary now (in the background unless `wait`)."""
        future = self.summaries.submit(Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id))
        return future.result() if wait else None

    def summary(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> Summary | None:
        return self.store.get_summary(Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id))

    # ------------------------------------------------------------------ facts, by id

    def get(
        self,
        fact_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> Fact | None:
        """One fact of the tenant, or None (also for another tenant's id)."""
        scope = Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id)
        found = self.store.get_facts(scope, [fact_id])
        return found[0].model_copy(update={"embedding": None}) if found else None

    def _fact_of(self, fact_id: str, scope: Tenant) -> Fact:
        found = self.store.get_facts(scope, [fact_id])
        if not found:
            raise KeyError(f"no fact {fact_id!r} for this tenant")
        return found[0]

    def update(
        self,
        fact_id: str,
        text: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> FactResult:
        """Replace a fact's text (the old text stays in its history)."""
        if not text or not text.strip():
            raise ValueError("text is empty")
        scope = Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id)
        with self._lock(scope):
            old = self._fact_of(fact_id, scope)
            now = utcnow()
            vector = self.embedder.embed([text.strip()])[0]
            plan = WritePlan(tenant=old.tenant, updated_at=now)
            plan.fact_changes.append(
                FactChange(fact_id=old.id, text=text.strip(), embedding=[float(x) for x in vector])
            )
            plan.fact_events.append(
                FactEvent(
                    fact_id=old.id,
                    tenant=old.tenant,
                    event="UPDATE",
                    old_text=old.text,
                    new_text=text.strip(),
                    actor="user",
                    at=now,
                )
            )
            self.store.apply(plan)
        return FactResult(event="UPDATE", id=old.id, text=text.strip(), previous_text=old.text)

    def delete(
        self,
        fact_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> FactResult:
        """Delete a fact: gone from search and get, kept in its history."""
        scope = Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id)
        with self._lock(scope):
            old = self._fact_of(fact_id, scope)
            now = utcnow()
            plan = WritePlan(tenant=old.tenant, updated_at=now)
            plan.fact_changes.append(FactChange(fact_id=old.id, text=None))
            plan.fact_events.append(
                FactEvent(
                    fact_id=old.id,
                    tenant=old.tenant,
                    event="DELETE",
                    old_text=old.text,
                    actor="user",
                    at=now,
                )
            )
            self.store.apply(plan)
        return FactResult(event="DELETE", id=old.id, text=old.text)

    def history(
        self,
        fact_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> list[FactEvent]:
        """Every change of a fact, oldest first, including after it was deleted."""
        scope = Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id)
        return self.store.fact_history(scope, fact_id)

    def episodes(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> list[Episode]:
        """The scope's episodes (the messages of each add, with the conversation's time), in
        the order they were written: what every edge and fact points back to."""
        return self.store.episodes(Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id))

    # ------------------------------------------------------------------ entities and repair

    def list_entities(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> list[Entity]:
        """Every entity of the scope, in write order, without embeddings."""
        return self.store.list_entities(Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id))

    def get_entity(
        self,
        entity_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> Entity | None:
        """One entity of the scope (None: unknown, merged away, or another tenant's)."""
        scope = Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id)
        found = self.store.get_entities(scope, [entity_id])
        return found[0].model_copy(update={"embedding": None}) if found else None

    def entity_relations(
        self,
        entity_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        include_invalid: bool = False,
    ) -> list[Relation]:
        """The edges at one entity (either end), without embeddings."""
        scope = Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id)
        validity = Validity(include_invalid=include_invalid)
        found = self.store.relations_touching(scope, [entity_id], validity)
        return [r.model_copy(update={"embedding": None}) for r in found]

    def merge_entities(
        self,
        keep_id: str,
        other_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> MergeResult:
        """Merge `other_id` into `keep_id` (two records of one thing): every edge of other is
        re-pointed onto keep, other's name, aliases and keys become keep's, other is deleted,
        and the merge is logged in both entities' history; one transaction. Edges between the
        two are removed (they would be self-loops) and kept in the log. `split_entity` takes it
        back. Both entities must be in the scope and of one exact tenant: raises
        `UnknownEntityError` / `CrossTenantError` (ValueErrors), writing nothing.

        Holds keep's tenant's add lock: an add planned around `other` in this process would
        otherwise fail at its write (its plan names an entity the merge removed)."""
        scope = Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id)
        found = self.store.get_entities(scope, [keep_id])
        if not found:
            raise UnknownEntityError(f"no entity {keep_id!r} in {describe(scope)}")
        with self._lock(found[0].tenant):
            return self.store.merge_entities(scope, keep_id, other_id)

    def split_entity(
        self,
        merge_id: str | None = None,
        *,
        entity_id: str | None = None,
        other_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> SplitResult:
        """Take a merge back, by its event id (`MergeResult.merge_id`, or from
        `entity_history`) or by (`entity_id`: the kept entity, `other_id`: the merged-away
        one: the latest such merge not split yet). The other entity returns with its id,
        name, type, aliases, keys and embedding, and exactly the edges that merge moved go
        back to it (edges keep gained since stay on keep); logged as SPLIT."""
        scope = Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id)
        if merge_id is None:
            if not (entity_id and other_id):
                raise ValueError("give a merge id, or the kept entity's id and the other's")
            events = self.store.entity_history(scope, entity_id)
            split = {e.merge_id for e in events if e.event == "SPLIT"}
            merges = [
                e
                for e in events
                if e.event == "MERGE"
                and (e.entity_id, e.other_id) == (entity_id, other_id)
                and e.id not in split
            ]
            if not merges:
                raise UnknownEntityError(
                    f"no merge of {other_id!r} into {entity_id!r} to split in {describe(scope)}"
                )
            merge_id = merges[-1].id
        return self.store.split_entity(scope, merge_id)

    def entity_history(
        self,
        entity_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> list[EntityEvent]:
        """MERGE, SPLIT and RENAME events naming the entity (also one merged away), oldest
        first; a MERGE's undo record comes without embeddings."""
        scope = Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id)
        events = self.store.entity_history(scope, entity_id)
        for event in events:
            if event.undo is not None:
                event.undo.other.embedding = None
                for rel in event.undo.dropped:
                    rel.embedding = None
        return events

    def possible_duplicates(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> list[PossibleDuplicate]:
        """Entity pairs the resolver recorded as maybe one thing, with the reason, oldest
        first; pairs settled by a merge or naming a deleted entity are gone from the list."""
        scope = Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id)
        return self.store.possible_duplicates(scope)

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
        facts = None
        if self.config.memory.facts:
            qvec = self.embedder.embed([query])[0]  # cached for the retriever's call
            facts = self.retriever.submit(self.store.similar_facts, scope, qvec, limit)
        result = self.retriever.search(query, scope, limit, validity)
        if facts is not None:
            result.facts = [
                FactHit(
                    id=f.id,
                    text=f.text,
                    score=float(score),
                    created_at=f.created_at,
                    updated_at=f.updated_at,
                    provenance=f.provenance,
                )
                for f, score in facts.result()
            ]
        return result

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
            facts=[f.model_copy(update={"embedding": None}) for f in self.store.facts(scope)],
        )

    def context(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 10,
        max_tokens: int = 1000,
        as_of: datetime | str | None = None,
    ) -> str:
        """The text block the Mem0g answer prompt expects ("Memories for user X" and
        "Relations for user X", timestamped), for the caller's own LLM. Deterministic for a
        given store; lines are dropped from the lowest-ranked up to stay within `max_tokens`
        (estimated as characters / 4)."""
        hits = self.search(
            query, user_id=user_id, agent_id=agent_id, run_id=run_id, limit=limit, as_of=as_of
        )
        who = user_id or agent_id or run_id
        memories = [
            f"- [{(f.provenance[0].timestamp if f.provenance else f.created_at):%Y-%m-%d}] {f.text}"
            for f in hits.facts
        ]
        relations = []
        for r in hits.relations:
            since = f" (since {r.valid_from:%Y-%m-%d})" if r.valid_from else ""
            until = f" (until {r.invalid_at:%Y-%m-%d})" if r.invalid_at else ""
            relations.append(f"- {r.source} -- {r.relation} --> {r.destination}{since}{until}")
        return _budgeted(
            [(f"Memories for user {who}:", memories), (f"Relations for user {who}:", relations)],
            max_tokens,
        )

    def tenants(self) -> list[Tenant]:
        """Every exact tenant that has data in the store."""
        return self.store.tenants()

    def get_everything(self, *, include_invalid: bool = True) -> GraphSnapshot:
        """All tenants' graphs in one snapshot: for operators' dumps and backups."""
        entities: dict[str, Any] = {}
        relations: dict[str, Any] = {}
        facts: dict[str, Any] = {}
        for tenant in self.tenants():
            part = self.get_all(**tenant.model_dump(), include_invalid=include_invalid)
            entities.update((e.id, e) for e in part.entities)
            relations.update((r.id, r) for r in part.relations)
            facts.update((f.id, f) for f in part.facts)
        return GraphSnapshot(
            entities=list(entities.values()),
            relations=list(relations.values()),
            facts=list(facts.values()),
        )

    def delete_all(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> int:
        scope = Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id)
        self.summaries.wait_idle()  # a refresh finishing later must not bring a summary back
        return self.store.delete_tenant(scope)

    def reset(self) -> None:
        self.summaries.wait_idle()
        self.store.reset()

    def stats(self, **ids: str | None) -> StoreStats:
        """Counts for a tenant scope (any ids given) or the whole store, facts included."""
        scope = Tenant(**ids) if any(ids.values()) else None
        counts = self.store.stats(scope)
        scopes = [scope] if scope is not None else self.store.tenants()
        # a tenant's scope also covers its narrower tenants (user a covers user a + agent x)
        facts = {fact.id for s in scopes for fact in self.store.facts(s)}
        warmup = self.store.warmup_status
        return counts.model_copy(
            update={"facts": len(facts), "warmup": None if warmup.state == "off" else warmup}
        )

    def rebuild_indexes(
        self,
        kinds: Sequence[str] | None = None,
        *,
        progress: Callable[[str, float], None] | None = None,
    ) -> list[IndexRebuild]:
        """Maintenance for a store that keeps vector indexes (Neo4j): rebuild them in one pass
        each, after a bulk load or many small adds; searches stay correct while it runs.
        Returns [] for the embedded store, which has none."""
        return self.store.rebuild_vector_indexes(kinds, progress=progress)


def _estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def _budgeted(sections: list[tuple[str, list[str]]], max_tokens: int) -> str:
    """Join sections, dropping the lowest-ranked lines (alternating sections) until it fits."""
    kept = [list(lines) for _, lines in sections]

    def render() -> str:
        blocks = []
        for (title, _), lines in zip(sections, kept, strict=True):
            blocks.append("\n".join([title, *(lines or ["- (none)"])]))
        return "\n\n".join(blocks)

    text = render()
    turn = 0
    while _estimate_tokens(text) > max_tokens and any(kept):
        longest = max(range(len(kept)), key=lambda i: (len(kept[i]), -((i + turn) % len(kept))))
        kept[longest].pop()
        turn += 1
        text = render()
    return text
