"""The two paths of one `add`, each a pure planner: graph (Mem0g) and facts (Mem0).

Both read the store and call the LLM, neither writes: each returns its part of the WritePlan,
and `Memory` applies the merged plan in one transaction.
"""

from __future__ import annotations

import functools
from datetime import datetime

from pydantic import Field

from mem0g.config import MemoryConfig
from mem0g.embed import CachedEmbedder
from mem0g.extract import establish_relations, extract_entities, extract_facts
from mem0g.extract.checks import (
    RULE_ONE_ENTITY,
    known_endpoints,
    screen_entities,
    screen_triples,
)
from mem0g.llm.client import TaskCaller
from mem0g.llm.protocol import AmbiguousName, CandidateNode, Context
from mem0g.resolve.entities import Mentions, ResolvedEntities, resolve_entities, settle
from mem0g.resolve.facts import FactPlan, resolve_facts
from mem0g.resolve.updates import resolve_updates
from mem0g.stores.base import GraphStore
from mem0g.types import (
    GraphWrites,
    Message,
    Provenance,
    Rejection,
    Relation,
    RelationChange,
    Tenant,
    Usage,
)


class GraphPart(GraphWrites):
    """The graph path's part of the plan (the plan's own graph fields), and its report."""

    changes: list[RelationChange] = Field(default_factory=list)
    rejected: list[Rejection] = Field(default_factory=list)


class Stages:
    """What both paths need: the LLM, the embedder, the store and the settings."""

    def __init__(
        self, llm: TaskCaller, embedder: CachedEmbedder, store: GraphStore, config: MemoryConfig
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
        """Extract entities (call 1), resolve them, establish relations (call 2, which also
        settles names the conversation left ambiguous), resolve updates (<= 1 call)."""
        part = GraphPart()
        speakers = [m.name for m in messages if m.name]
        types = extract_entities(self.llm, messages, when, context, usage)
        types, part.rejected = screen_entities(types, speakers)
        if not types:
            return part
        mentions = Mentions.of(
            current=[m.content for m in messages] + list(types),
            recent=[m.content for m in context.recent],
            speakers=speakers,
        )
        resolve = functools.partial(
            resolve_entities,
            threshold=self.config.resolver.threshold,
            k=self.config.resolver.candidates,
            now=now,
            mentions=mentions,
        )
        resolved = resolve(self.store, self.embedder, tenant, types)
        asked, short_ids = _ambiguous_names(resolved)
        found = establish_relations(
            self.llm, messages, when, types, context, usage, candidates=asked
        )
        found.triples, rejected = screen_triples(found.triples, speakers, types)
        part.rejected += rejected
        found.triples, rejected = known_endpoints(found.triples, types)
        part.rejected += rejected
        used_names: dict[str, str] = {}
        for t in found.triples:
            used_names.setdefault(t.source, t.source_type)
            used_names.setdefault(t.destination, t.destination_type)
        resolve(self.store, self.embedder, tenant, used_names, out=resolved)
        identities = {
            name: short_ids[choice] if choice is not None else None
            for name, choice in found.identities.items()
        }
        settle(self.store, tenant, resolved, identities, now=now)
        apart = {
            frozenset((t.source, t.destination))
            for t in found.triples
            if t.source != t.destination and resolved.ids.get(t.source) is not None
            and resolved.ids.get(t.source) == resolved.ids.get(t.destination)
        }  # fmt: skip
        if apart:  # the add relates two names this resolution made one node: two beings
            resolved = resolve(self.store, self.embedder, tenant, types, apart=apart)
            resolve(self.store, self.embedder, tenant, used_names, out=resolved, apart=apart)
            settle(self.store, tenant, resolved, identities, now=now)
        candidates: dict[tuple[str, str, str], Relation] = {}
        for t in found.triples:
            src = resolved.ids.get(t.source)
            dst = resolved.ids.get(t.destination)
            if src is not None and src == dst:  # still one node: the names are its own
                text = f"{t.source} -{t.relation}-> {t.destination}"
                part.rejected.append(Rejection(kind="relation", text=text, rule=RULE_ONE_ENTITY))
                continue
            if src is None or dst is None or (src, t.relation, dst) in candidates:
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
            renamed=resolved.renamed,
        )
        edges = outcome.writes(new, provenance, when)
        part.new_relations, part.invalidations = edges.new_relations, edges.invalidations
        part.mentions, part.changes = edges.mentions, edges.changes
        used = {r.source_id for r in part.new_relations}
        used |= {r.destination_id for r in part.new_relations}
        part.new_entities = [e for e in resolved.new_entities if e.id in used]
        part.alias_updates = [u for u in resolved.alias_updates if u.entity_id in used]
        unused = {e.id for e in resolved.new_entities} - used
        part.possible_duplicates = [
            d
            for d in resolved.possible_duplicates
            if d.entity_id in used and d.candidate_id not in unused
        ]
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


def _ambiguous_names(
    resolved: ResolvedEntities,
) -> tuple[list[AmbiguousName], dict[str, str]]:
    """The pending names as the relation generator is asked about them, with short
    per-request candidate ids (c1, c2, ...), and the map back to entity ids."""
    asked: list[AmbiguousName] = []
    short_ids: dict[str, str] = {}
    for name, pending in resolved.pending.items():
        nodes = []
        for cand in pending.candidates:
            sid = next((s for s, eid in short_ids.items() if eid == cand.id), None)
            if sid is None:
                sid = f"c{len(short_ids) + 1}"
                short_ids[sid] = cand.id
            nodes.append(
                CandidateNode(id=sid, name=cand.name, type=cand.type, aliases=cand.aliases[:8])
            )
        asked.append(AmbiguousName(name=name, candidates=nodes))
    return asked, short_ids
