"""`Memory`: the one object users, the CLI and the demo talk to. It wires the stages and owns
the transaction boundary: the graph path and the fact path only read and plan (concurrently),
and the merged plan is applied in one transaction, so an `add` that fails anywhere writes
nothing.

What lives here: this module (`Memory`'s wiring, `add` through the LLM, `search`, `context`,
snapshots and backups; `parse_messages`; `make_store` is mem0g.stores', imported here as
before); `parts.py` (`MemoryPart`: the state and helpers every part shares); `facts.py`
(verbatim adds and one fact by id); `entities.py` (entity reads and repairs); `upkeep.py`
(tenants, deletes, counts, index rebuilds). `Memory` is one class assembled from those mixins,
as the stores are.

Who may import it: users, and the rooms above the stages (the CLI, the service doors, the
demo, the eval harness; archive.py for its types). Stages, retrievers and stores never do.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from mem0g import validation
from mem0g.config import MemoryConfig
from mem0g.embed import CachedEmbedder, make_embedder
from mem0g.extract import payload_messages
from mem0g.llm.client import LLMClient, ReplayingLLM
from mem0g.llm.protocol import Context
from mem0g.locks import TenantLocks
from mem0g.memory.copy import LocalCopy
from mem0g.memory.entities import EntityMethods
from mem0g.memory.facts import FactMethods
from mem0g.memory.upkeep import StoreUpkeep
from mem0g.pipeline import GraphPart, Stages
from mem0g.resolve.facts import FactPlan
from mem0g.resolve.links import plan_links
from mem0g.retrieve import DualRetriever, load_in_background
from mem0g.retrieve.context import ContextBlock
from mem0g.retrieve.context import render as render_context
from mem0g.retrieve.timeline import as_fact
from mem0g.retrieve.timewin import query_time
from mem0g.stores import make_store
from mem0g.stores.base import GraphStore, PlanConflict
from mem0g.summary import SummaryWorker
from mem0g.types import (
    AddResult,
    Episode,
    GraphSnapshot,
    Message,
    PossibleDuplicate,
    Provenance,
    SearchResult,
    Summary,
    Tenant,
    Usage,
    Validity,
    WritePlan,
    calls_tools_only,
    time_argument,
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
    parsed = [_message(i, m) for i, m in enumerate(items) if not calls_tools_only(m)]
    if not parsed:
        skipped = len(items)
        raise ValueError(
            f"no message with text to add ({skipped} tool-call messages skipped)"
            if skipped
            else "no messages to add"
        )
    return parsed


def _message(index: int, item: Any) -> Message:
    """One message, or a one-line ValueError naming its index in the list and the field:
    pydantic's report named neither, so in a long list the bad message had to be searched."""
    if isinstance(item, Message):  # a copy: `add` fills in its name and time
        return item.model_copy()
    if not isinstance(item, Mapping):
        raise ValueError(
            f"message {index} must be a message dict or a Message, not {type(item).__name__}"
        )
    try:
        return Message.model_validate(item)
    except ValidationError as err:
        reasons = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in err.errors()
        )
        raise ValueError(f"message {index}: {reasons}") from None


def _validity(as_of: datetime | str | None, include_invalid: bool) -> Validity:
    """Which edges a read returns. `include_invalid` is the whole history, at every time;
    `as_of` one time. Together the first would silently drop the second's filter (what was
    said after `as_of` came back), so they are refused together."""
    when = time_argument(as_of, "as_of")
    if when is not None and include_invalid:
        raise ValueError(
            "as_of and include_invalid exclude each other: as_of is the memory as it was at "
            "one time, include_invalid its whole history (ended relations too, at any time)"
        )
    return Validity(as_of=when, include_invalid=include_invalid)


def _collect(futures: list[Future[Any]]) -> list[Any]:
    """Wait for every path to finish (none is left running), then raise the first error."""
    wait(futures)
    for future in futures:
        error = future.exception()
        if error is not None:
            raise error
    return [f.result() for f in futures]


def covering_scopes(tenants: Sequence[Tenant]) -> list[tuple[Tenant, bool]]:
    """Scopes whose reads together return every record of `tenants` once: one scope per user
    (it holds all the user's agents and runs), then each tenant without a user exactly. Why:
    one read per tenant, each by its user's scope, read a user of n runs n times over (on
    Neo4j, 89 s for one user of 4,000 runs); stored tenants are not checked against today's
    limits."""
    users = dict.fromkeys(t.user_id for t in tenants if t.user_id is not None)
    return [(Tenant(user_id=u), False) for u in users] + [
        (t, True) for t in tenants if t.user_id is None
    ]


class Memory(FactMethods, EntityMethods, StoreUpkeep):
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
        loaded = isinstance(self.embedder, CachedEmbedder)  # not the CLI's deferred one
        if loaded and self.store.dims is not None and self.store.dims != self.embedder.dims:
            # said now, not at the first write after its LLM calls (commands that never
            # embed, such as `mem0g entities`, defer the embedder and skip this)
            raise ValueError(
                f"the store holds {self.store.dims}-dimensional embeddings and the embedder "
                f"makes {self.embedder.dims}-dimensional ones: use the embedder the store was "
                "written with, or move the data with `mem0g export` / `mem0g import`, "
                "which re-embeds"
            )
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
        self.copy: LocalCopy | None = None  # graph_store.local_copy (memory/copy.py)
        if self.config.graph_store.local_copy is not None:
            self.copy = LocalCopy(self.store, Path(self.config.graph_store.local_copy),
                                  self.embedder.dims,
                                  self.config.graph_store.local_copy_tenants)  # fmt: skip
            self._copy_retriever = DualRetriever(self.copy.store, self.embedder,
                                                 self.config.retrieval)  # fmt: skip
        load_in_background()  # the first search's lazy loads, while the caller does other work
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
        if self.copy is not None:
            self.copy.close()
        self.store.close()

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

        `messages` is a string, a message dict or a list of them: `{role, content, name,
        timestamp}`, `content` a string or OpenAI's text parts (`[{"type": "text", ...}]`).

        The episode's time (which relative dates resolve against, and the conversation time
        of its facts and edges) is `timestamp`, else its first message's, else now, as for
        `mem0g add --file`.

        `infer=False` stores each message verbatim as a fact, with no LLM call (imports): no
        summary refresh either; the next add that infers, or `refresh_summary`, covers them."""
        tenant = self._tenant(user_id, agent_id, run_id)
        parsed = parse_messages(messages)
        validation.messages(self.config.limits, parsed, as_facts=not infer)
        when = time_argument(timestamp, "timestamp") or to_utc(parsed[0].timestamp) or utcnow()
        for m in parsed:  # "I" needs a name to resolve to: default to the tenant's ids
            m.name = m.name or (user_id if m.role == "user" else agent_id)
            m.timestamp = to_utc(m.timestamp) or when
        with self._lock(tenant):
            result = (
                self._add(tenant, parsed, when) if infer else self._import(tenant, parsed, when)
            )
        if infer:  # an import (infer=False) calls no LLM, not even for the summary; the
            self._queue_refresh(tenant)  # next inferring add's refresh covers it
        return result

    def _queue_refresh(self, tenant: Tenant) -> None:
        """After the add committed: an error here (a `close()` that overtook the add, a
        store error) must not tell the caller the add failed, or a retry stores it twice.
        The refresh is best-effort; the next add's covers these messages."""
        try:
            self.summaries.maybe_refresh(tenant)
        except Exception as error:
            log.warning("add for %s written; its summary refresh not queued: %s", tenant.key,
                        error)  # fmt: skip

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
        linked = plan_links(self.store, plan)
        self.store.apply(linked)
        if self.copy is not None:
            self.copy.written(linked)
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
        the add fail (the store refuses a pair naming an unknown entity). Nor two the add
        relates to each other: an edge says they are two ("John Smith father_of Ian Smith")."""
        if not graph.possible_duplicates:
            return []
        related = {frozenset((r.source_id, r.destination_id)) for r in graph.new_relations}
        known = {e.id for e in graph.new_entities}
        named = {i for p in graph.possible_duplicates for i in (p.entity_id, p.candidate_id)}
        stored = self.store.get_entities(tenant, sorted(named - known))
        known |= {e.id for e in stored if e.tenant == tenant}
        return [
            p
            for p in graph.possible_duplicates
            if p.entity_id != p.candidate_id
            and {p.entity_id, p.candidate_id} <= known
            and frozenset((p.entity_id, p.candidate_id)) not in related
        ]

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
        if limit > validation.MAX_LIMIT:  # what both stores can read (see MAX_LIMIT)
            raise ValueError(f"limit must be at most {validation.MAX_LIMIT}")
        scope = self._tenant(user_id, agent_id, run_id)
        validity = _validity(as_of, include_invalid)
        qt = query_time(query, time_argument(reference_time, "reference_time", keep_zone=True))
        facts = self.config.memory.facts
        if self.copy is not None:  # the client-held copy, if it holds the scope as it is
            retriever = self._copy_retriever
            found = self.copy.search(
                scope, lambda _: retriever.search(query, scope, limit, validity, qt, facts=facts)
            )
            if found is not None:
                return found
        return self.retriever.search(query, scope, limit, validity, qt, facts=facts)

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
        return self._snapshot(scope, _validity(as_of, include_invalid))

    def _snapshot(self, scope: Tenant, validity: Validity, exact: bool = False) -> GraphSnapshot:
        snapshot = self.store.snapshot(scope, validity, embeddings=False, exact=exact)
        if validity.as_of is None:
            facts = [f.model_copy(update={"embedding": None})
                     for f in self.store.facts(scope, exact=exact)]  # fmt: skip
        else:
            versions = self.facts.history.at(scope, validity.as_of)
            facts = [as_fact(v) for v in versions if not exact or v.tenant == scope]
        return GraphSnapshot(entities=snapshot.entities, relations=snapshot.relations, facts=facts)

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
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):  # as `limit`
            raise TypeError(f"max_tokens must be an int, not {type(max_tokens).__name__}")
        if max_tokens < 1:
            raise ValueError("max_tokens must be at least 1")
        hits = self.search(
            query, user_id=user_id, agent_id=agent_id, run_id=run_id, limit=limit, as_of=as_of,
            reference_time=reference_time,
        )  # fmt: skip
        return render_context(hits, user_id or agent_id or run_id, max_tokens, to_utc(as_of))

    def get_everything(self, *, include_invalid: bool = True) -> GraphSnapshot:
        """All tenants' graphs in one snapshot: for operators' dumps and backups."""
        entities: dict[str, Any] = {}
        relations: dict[str, Any] = {}
        facts: dict[str, Any] = {}
        validity = _validity(None, include_invalid)
        for scope, exact in covering_scopes(self.tenants()):
            part = self._snapshot(scope, validity, exact)
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
        from mem0g.archive import export_archive, replacing

        given = (user_id, agent_id, run_id)
        scope = self._tenant(*given) if any(v is not None for v in given) else None
        if isinstance(out, str | os.PathLike):
            with replacing(out) as handle:  # a failed export keeps the file it would replace
                return export_archive(self, handle, scope, embeddings=embeddings)
        return export_archive(self, out, scope, embeddings=embeddings)

    def import_archive(
        self,
        source: str | os.PathLike[str] | IO[str],
        *,
        merge: bool = False,
        batch: int = 1,
        part_records: int = 10_000,
    ) -> list[Any]:
        """Restore an archive written by `export` into this store, each tenant atomic (`batch`
        new tenants per transaction: faster for many small tenants, on Neo4j above all);
        re-embeds when the archive has no vectors or another model's. A tenant this store
        already has is refused (`ArchiveError`) unless `merge`. On Neo4j a new tenant of more
        than `part_records` records is written in parts of about that many (one transaction
        for all of it can exceed the server's transaction memory)."""
        from mem0g.archive import import_archive

        if isinstance(source, str | os.PathLike):
            with open(source, encoding="utf-8") as handle:
                return import_archive(
                    self, handle, merge=merge, batch=batch, part_records=part_records
                )
        return import_archive(self, source, merge=merge, batch=batch, part_records=part_records)
