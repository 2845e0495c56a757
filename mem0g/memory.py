"""`Memory`: the one object users, the CLI and the demo talk to. It wires the stages and owns
the transaction boundary: the graph path and the fact path only read and plan (concurrently),
and the merged plan is applied in one transaction, so an `add` that fails anywhere writes
nothing."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager
from datetime import datetime
from typing import IO, Any

from mem0g import validation
from mem0g.config import MemoryConfig
from mem0g.embed import CachedEmbedder, make_embedder
from mem0g.extract import payload_messages
from mem0g.llm.client import LLMClient, ReplayingLLM
from mem0g.llm.protocol import Context
from mem0g.locks import TenantLocks
from mem0g.pipeline import GraphPart, Stages
from mem0g.resolve.facts import FactPlan
from mem0g.resolve.links import plan_links
from mem0g.retrieve import DualRetriever
from mem0g.retrieve.context import ContextBlock
from mem0g.retrieve.context import render as render_context
from mem0g.retrieve.timeline import as_fact
from mem0g.retrieve.timewin import query_time
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
    elif isinstance(messages, Iterable) and not isinstance(messages, bytes):
        items = list(messages)
    else:
        raise TypeError(
            "messages must be a string, a message dict or a list of them, not "
            f"{type(messages).__name__}"
        )
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
            concurrent = self.store.capabilities.concurrent_reads
        self._reads = (
            ThreadPoolExecutor(max_workers=4, thread_name_prefix="mem0g-read")
            if concurrent
            else None
        )
        self.retriever = DualRetriever(
            self.store, self.embedder, self.config.retrieval, reads=self._reads
        )
        self.facts = self.retriever.facts
        self._tenant_locks = TenantLocks()
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
            self._llm = LLMClient(self.config.llm, limits=self.config.limits)
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

    def _tenant(self, user_id: Any, agent_id: Any, run_id: Any) -> Tenant:
        return validation.tenant(self.config.limits, user_id, agent_id, run_id)

    def _lock(self, tenant: Tenant) -> AbstractContextManager[None]:
        """Adds of one tenant are serialised so two of them cannot both create "Alice"."""
        return self._tenant_locks.hold(tenant.key)

    def _forget(self, scope: Tenant) -> None:
        """After a delete: no per-tenant state is kept for tenants that are gone."""
        self.summaries.forget(scope)

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
        tenant = self._tenant(user_id, agent_id, run_id)
        parsed = parse_messages(messages)
        validation.messages(self.config.limits, parsed, as_facts=not infer)
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
        stages = Stages(llm, self.embedder, self.store, self.config)
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
        graph.possible_duplicates = self._known_pairs(tenant, graph)
        plan = WritePlan(
            tenant=tenant,
            episode=episode,
            updated_at=now,
            **graph.graph_fields(),
            new_facts=facts.new_facts,
            fact_changes=facts.changes,
            fact_events=facts.events,
            based_on=version,
        )
        self.store.apply(plan_links(self.store, plan))
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
        self._apply_linked(plan)
        return AddResult(episode_id=episode.id, facts=results)

    def _apply_linked(self, plan: WritePlan) -> None:
        """Apply a plan made without the LLM, with its fact links, from the tenant's version:
        a name another process's add brings meanwhile would otherwise miss these facts (each
        add links only the facts it can see), so a moved version means linking again."""
        for attempt in range(self.config.memory.replans + 1):
            plan.based_on = self.store.tenant_version(plan.tenant)
            try:
                self.store.apply(plan_links(self.store, plan))
                return
            except PlanConflict:
                if attempt == self.config.memory.replans:
                    raise

    def refresh_summary(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        wait: bool = True,
    ) -> Summary | None:
        """Refresh the conversation summary now (in the background unless `wait`)."""
        future = self.summaries.submit(self._tenant(user_id, agent_id, run_id))
        return future.result() if wait else None

    def summary(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> Summary | None:
        return self.store.get_summary(self._tenant(user_id, agent_id, run_id))

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
        scope = self._tenant(user_id, agent_id, run_id)
        found = self.store.get_facts(scope, [fact_id])
        return found[0].model_copy(update={"embedding": None}) if found else None

    def _fact_of(self, fact_id: str, scope: Tenant) -> Fact:
        validation.text(fact_id, "fact_id")
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
        validation.text(fact_id, "fact_id")
        validation.text(text, "text", self.config.limits.max_fact_chars)
        scope = self._tenant(user_id, agent_id, run_id)
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
            self._apply_linked(plan)
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
        scope = self._tenant(user_id, agent_id, run_id)
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
        scope = self._tenant(user_id, agent_id, run_id)
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
        return self.store.list_entities(self._tenant(user_id, agent_id, run_id))

    def get_entity(
        self,
        entity_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> Entity | None:
        """One entity of the scope (None: unknown, merged away, or another tenant's)."""
        scope = self._tenant(user_id, agent_id, run_id)
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
        scope = self._tenant(user_id, agent_id, run_id)
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
        scope = self._tenant(user_id, agent_id, run_id)
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
        scope = self._tenant(user_id, agent_id, run_id)
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
        scope = self._tenant(user_id, agent_id, run_id)
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
        scope = self._tenant(user_id, agent_id, run_id)
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
        reference_time: datetime | str | None = None,
    ) -> SearchResult:
        """Facts and relations relevant to `query`, best first, with no LLM call; current
        ones, or those true at `as_of` (a hard filter). Time expressions in the query ("in
        May 2023", "last year") are read relative to `reference_time` (default now) and
        boost what was said or valid then; "when" questions prefer facts that name a time."""
        validation.text(query, "query", self.config.limits.max_query_chars)
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(f"limit must be an int, not {type(limit).__name__}")
        if limit < 1:
            raise ValueError("limit must be at least 1")
        scope = self._tenant(user_id, agent_id, run_id)
        validity = Validity(as_of=to_utc(as_of), include_invalid=include_invalid)
        qt = query_time(query, to_utc(reference_time))
        return self.retriever.search(
            query, scope, limit, validity, qt, facts=self.config.memory.facts
        )

    def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        include_invalid: bool = False,
        as_of: datetime | str | None = None,
    ) -> GraphSnapshot:
        scope = self._tenant(user_id, agent_id, run_id)
        validity = Validity(as_of=to_utc(as_of), include_invalid=include_invalid)
        snapshot = self.store.snapshot(scope, validity)
        return GraphSnapshot(
            entities=[e.model_copy(update={"embedding": None}) for e in snapshot.entities],
            relations=[r.model_copy(update={"embedding": None}) for r in snapshot.relations],
            facts=[f.model_copy(update={"embedding": None}) for f in self.store.facts(scope)]
            if validity.as_of is None
            else [as_fact(v) for v in self.facts.history.at(scope, validity.as_of)],
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
        reference_time: datetime | str | None = None,
    ) -> str:
        """The text block the Mem0g answer prompt expects ("Memories for user X" and
        "Relations for user X", timestamped), for the caller's own LLM. Deterministic for a
        given store; lines are dropped from the lowest-ranked up to stay within `max_tokens`
        (estimated as characters / 4). `context_block` also says how many tokens it used."""
        return self.context_block(
            query, user_id=user_id, agent_id=agent_id, run_id=run_id, limit=limit,
            max_tokens=max_tokens, as_of=as_of, reference_time=reference_time,
        ).text  # fmt: skip

    def context_block(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 10,
        max_tokens: int = 1000,
        as_of: datetime | str | None = None,
        reference_time: datetime | str | None = None,
    ) -> ContextBlock:
        """`context` with what it used: estimated tokens, lines kept and dropped."""
        if max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        hits = self.search(
            query, user_id=user_id, agent_id=agent_id, run_id=run_id, limit=limit, as_of=as_of,
            reference_time=reference_time,
        )  # fmt: skip
        return render_context(hits, user_id or agent_id or run_id, max_tokens)

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

    def export(
        self,
        out: str | os.PathLike[str] | IO[str],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        embeddings: bool = True,
    ) -> int:
        """Write a full backup (mem0g/archive.py: JSON Lines, versioned) of every exact
        tenant in the filter (no ids: the whole store) to a path or text file; returns the
        number of tenants. `embeddings=False` leaves the vectors out (import re-embeds)."""
        from mem0g.archive import export_archive

        given = (user_id, agent_id, run_id)
        scope = self._tenant(*given) if any(v is not None for v in given) else None
        if isinstance(out, str | os.PathLike):
            with open(out, "w", encoding="utf-8") as handle:
                return export_archive(self, handle, scope, embeddings=embeddings)
        return export_archive(self, out, scope, embeddings=embeddings)

    def import_archive(
        self, source: str | os.PathLike[str] | IO[str], *, merge: bool = False
    ) -> list[Any]:
        """Restore an archive written by `export` into this store, one transaction per
        tenant; re-embeds when the archive has no vectors or another model's. A tenant this
        store already has is refused (`ArchiveError`) unless `merge`."""
        from mem0g.archive import import_archive

        if isinstance(source, str | os.PathLike):
            with open(source, encoding="utf-8") as handle:
                return import_archive(self, handle, merge=merge)
        return import_archive(self, source, merge=merge)

    def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        all_users: bool = False,
    ) -> int:
        """Delete every record the filter matches (unset ids match anything, as in reads).
        Without `user_id` the filter spans users (`agent_id="x"` is agent x with *every*
        user), so it must be confirmed with `all_users=True`; ValueError otherwise."""
        scope = self._tenant(user_id, agent_id, run_id)
        if scope.user_id is None and not all_users:
            raise ValueError(
                f"delete_all without user_id deletes the data of {describe(scope)} for every "
                "user; pass all_users=True (CLI: --all-users) to confirm"
            )
        self.summaries.wait_idle()  # a refresh finishing later must not bring a summary back
        deleted = self.store.delete_tenant(scope)
        self._forget(scope)
        return deleted

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
