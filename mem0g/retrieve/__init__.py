"""Dual retriever: entity-centric expansion + triple-embedding search, fused, and (with
`facts=True`) the fact half of a search beside it, the query embedded once. No LLM calls.

(a) link the query to entities by exact n-gram / alias match and by name-embedding similarity,
walk their edges (`hops`), score each edge by cosine to the query; (b) nearest triples by
embedding; (c) fuse the two rankings with the recipe in `FusionConfig` (data, not branches).

Candidates are ranked as light `EdgeRef`s that the store scored itself (`expand(vector=)`,
`similar_relations`, `siblings`); only the `limit` edges returned are read as
records. Sibling edges come from `store.siblings` (only the edges with the seed edge's
relation and direction at each hub). What else a store offers (BM25 reads) is read from its
declared `capabilities`.

What lives here: this module (`DualRetriever`: linking, expansion, triple and lexical edge
search, both halves of a search), `facts.py` (fact rankings, as_of versions), `linked.py` (the
entity-linked facts ranking), `episodes.py` (the episode context ranking), `fusion.py`
(named rankings, presets), `timeline.py`, `timewin.py` (time), `context.py` (the context
block). Who may import it: `Memory` (and config, lazily, for the fusion presets' names).
It imports config, embed, types, resolve.links and the store seam (`stores.base`,
`stores.walk`, `stores.vectors`, `stores.lexical_query`), never a store.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from mem0g.config import RetrievalConfig
from mem0g.embed import CachedEmbedder
from mem0g.resolve.links import name_ngrams, named_in_full
from mem0g.retrieve import linked
from mem0g.retrieve.facts import FactRetriever
from mem0g.retrieve.fusion import fuse, ranked
from mem0g.retrieve.timewin import QueryTime, with_time
from mem0g.stores.base import EdgeRef, GraphStore, NameRanker
from mem0g.stores.lexical_query import query_terms, terms
from mem0g.stores.walk import WalkRequest, graph_ranking, sibling_keys
from mem0g.types import (
    Entity,
    EntityHit,
    Fact,
    Relation,
    RelationHit,
    SearchResult,
    Tenant,
    Validity,
)

_T = TypeVar("_T")


_LOADING: list[threading.Thread] = []
_LOADING_LOCK = threading.Lock()


def load_in_background() -> threading.Thread:
    """Load, once per process and on a daemon thread, what the first search would otherwise
    load on its own time: dateparser's time-zone patterns (~0.6 s on 2 cores) and
    lemminflect's dictionaries (~0.35 s). `Memory` calls it when it opens; never joined, so
    closing never waits."""
    with _LOADING_LOCK:
        if not _LOADING:
            thread = threading.Thread(target=_load, name="mem0g-load", daemon=True)
            thread.start()
            _LOADING.append(thread)
        return _LOADING[0]


def _load() -> None:
    from mem0g.retrieve.timewin import query_time

    for text in ("in May", "in June 2022", "two weeks ago", "last year"):  # its parsers' paths
        query_time(text)
    query_terms("went")


def query_ngrams(query: str, max_n: int = 4) -> list[str]:
    """Normalised word n-grams of the query that could be entity names: the rule that links
    facts to entities at add time (`resolve.links.name_ngrams`), so both match alike."""
    return name_ngrams(query, max_n)


@dataclass(frozen=True)
class EarlyReads:
    """The reads of a search that need no query vector, started before it is embedded."""

    names: Future[list[Entity]]  # find_entities: the query's n-grams as name/alias keys
    name_words: Future[list[tuple[Entity, float]]] | None  # lexical_entities (link_lexical)
    fact_words: Future[list[tuple[Fact, float]]] | None  # lexical_facts (the fact half)
    ranker: Future[NameRanker | None] | None = None  # name_ranker (`held_names`)
    # the scope's kept fact vector sum (`hub_penalty`), called where the fact half is fused:
    # from the name ranker's read on a store that holds names, else its own early read
    fact_sum: Callable[[], np.ndarray | None] | None = None


class DualRetriever:
    def __init__(
        self,
        store: GraphStore,
        embedder: CachedEmbedder,
        config: RetrievalConfig,
        reads: Executor | None = None,
    ):
        self.store = store
        self.embedder = embedder
        self.config = config
        self.reads = reads  # a pool for reads that can overlap (see `submit`), or None
        self.facts = FactRetriever(store, embedder, config, self.submit)  # the fact half

    def _expand(
        self,
        scope: Tenant,
        seeds: Sequence[str],
        hops: int,
        validity: Validity,
        limit: int,
        qvec: np.ndarray,
    ) -> list[EdgeRef]:
        return self.store.expand(scope, seeds, hops, validity, limit, vector=qvec)

    def _nearest(
        self, scope: Tenant, qvec: np.ndarray, k: int, validity: Validity
    ) -> list[tuple[str, float]]:
        hits = self.store.similar_relations(scope, qvec, k, validity)
        return [(ref.id, float(ref.score)) for ref in hits]

    def early_reads(
        self, query: str, scope: Tenant, limit: int = 0, validity: Validity | None = None
    ) -> EarlyReads:
        """Start the reads that need no query vector: the names the query's n-grams match,
        the names sharing its words (`link_lexical`) and, with `validity` (a search with
        its fact half), the BM25 facts of a current search (no as_of), so that on a server
        they run while the query is embedded. The same reads as before, only sooner."""
        lexical = self.store.capabilities.lexical
        names = self.submit(self.store.find_entities, scope, query_ngrams(query))
        words = None
        if lexical and self.config.link_lexical:
            k = self.config.link_top_k
            words = self.submit(self.store.lexical_entities, scope, query_terms(query), k)
        fact_words = None
        if lexical and validity is not None and FactRetriever.current(validity):
            k = max(self.config.fact_top_k, limit)
            fact_words = self.submit(self.facts.words_ranking, scope, query_terms(query), k)
        ranker = None
        if self.store.capabilities.held_names:
            ranker = self.submit(self.store.name_ranker, scope)
        fact_sum = None
        if validity is not None and FactRetriever.current(validity):
            fact_sum = self.facts.centroid(scope, ranker)
        return EarlyReads(names=names, name_words=words, fact_words=fact_words, ranker=ranker,
                          fact_sum=fact_sum)  # fmt: skip

    def link(
        self, query: str, qvec: np.ndarray, scope: Tenant, early: EarlyReads | None = None
    ) -> list[EntityHit]:
        """Entities the query names: exact name/alias n-grams first, then close name embeddings.
        `early`: the vector-free reads already started (`early_reads`)."""
        if early is None:
            early = self.early_reads(query, scope)
        hits: dict[str, EntityHit] = {}
        k, threshold = self.config.link_top_k, self.config.link_threshold
        ranker = None if early.ranker is None else early.ranker.result()
        if ranker is None:  # the store's vector read, sent before the names are awaited
            nearest = functools.partial(self.store.similar_entities, light=True)
            similar = self.submit(nearest, scope, qvec, k)
        named = early.names.result()
        if len(named) > 1:  # "Tom Baker Jr." names the son, not his father "Tom Baker" too
            owners: dict[str, set[str]] = {}
            for entity in named:
                for key in entity.keys:
                    owners.setdefault(key, set()).add(entity.id)
            full = named_in_full(query, owners)
            named = [entity for entity in named if entity.id in full]
        if ranker is not None:  # ranked here, exactly; only names not yet in hand are read
            known = {entity.id for entity in named}
            similar = self.submit(ranker.similar, qvec, k, threshold, known)
        for entity in named:
            hits[entity.id] = EntityHit(
                id=entity.id,
                name=entity.name,
                type=entity.type,
                aliases=entity.aliases,
                score=1.0,
                matched_by="name",
            )
        if early.name_words is not None:  # a name's word: "Caroline" for "Caroline Smith"
            for found in linked.lexical_links(early.name_words.result(), hits):
                hits[found.id] = found
        for entity, score in similar.result():
            if score >= threshold and entity.id not in hits:
                hits[entity.id] = EntityHit(
                    id=entity.id,
                    name=entity.name,
                    type=entity.type,
                    aliases=entity.aliases,
                    score=float(score),
                    matched_by="embedding",
                )
        # ties (every exact name scores 1) by name, then id: not in the store's own order,
        # which a restore or another store does not keep
        return sorted(hits.values(), key=lambda h: (-h.score, h.name, h.id))

    def _siblings(
        self,
        scope: Tenant,
        seeds: set[str],
        walked: list[EdgeRef],
        validity: Validity,
        qvec: np.ndarray,
    ) -> list[EdgeRef]:
        """Edges sharing a relation and an endpoint with a seed's edge (X works_at C -> Y
        works_at C): how "who works with X" reaches coworkers without a full second hop.
        Only the hubs of the `sibling_hubs` best-scoring hop-1 edges, best first (a seed such
        as a city has hundreds of edges, and the query names the relation it asks about);
        at most `sibling_limit` edges, hop 2 (the caller divides scores by the hop)."""
        keys = sibling_keys(walked, seeds, self.config.sibling_hubs)
        if not keys:
            return []
        return self._read_siblings(scope, keys, validity, self.config.sibling_limit, qvec)

    def _read_siblings(
        self,
        scope: Tenant,
        keys: list[tuple[str, str, bool]],
        validity: Validity,
        limit: int,
        qvec: np.ndarray,
    ) -> list[EdgeRef]:
        """Only the matching edges of each hub are read (`GraphStore.siblings`)."""
        return self.store.siblings(scope, keys, validity, limit, vector=qvec)

    @property
    def one_trip(self) -> bool:
        """Whether the graph half after linking is one `store.walk` call (`walk_statement`)."""
        chosen = self.config.walk_statement
        return self.store.capabilities.walk_statement if chosen is None else chosen

    def submit(self, fn: Callable[..., _T], /, *args: Any) -> Future[_T]:
        """`fn(*args)` on the read pool when there is one (a store whose reads wait on a
        server: the waits overlap), else now, in this thread."""
        if self.reads is not None:
            return self.reads.submit(fn, *args)
        future: Future[_T] = Future()
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # re-raised by .result(), where the caller waits
            future.set_exception(exc)
        return future

    def search(
        self,
        query: str,
        scope: Tenant,
        limit: int,
        validity: Validity,
        qt: QueryTime | None = None,
        *,
        facts: bool = False,
    ) -> SearchResult:
        """Relations (and entities) for the query; with `facts`, the fact half too. The query
        is embedded once; the fact reads start first and are fused last, so they overlap the
        graph half's reads on the read pool (no pool task ever waits on another)."""
        early = self.early_reads(query, scope, limit, validity if facts else None)
        qvec = self.embedder.embed([query])[0]
        # the dense relation read goes first: the fact half's may wait for the centroid,
        # which comes with the name ranker's read (a scope's first search loads its names)
        k = max(self.config.triple_top_k, limit)
        nearest = self.submit(self._nearest, scope, qvec, k, validity)
        finish = (
            self.facts.begin(
                query, qvec, scope, limit, validity, qt, early.fact_words, early.fact_sum
            )
            if facts
            else None
        )
        result = self._relations(query, qvec, scope, limit, validity, qt, early, nearest)
        if finish is not None:
            extra = None
            if linked.wanted(self.store, self.config):  # facts about the linked entities
                k = max(self.config.fact_top_k, limit)
                extra = linked.linked_facts(self.store, scope, result.entities, qvec, k)
            result.facts = finish(extra)
        return result

    def _relations(
        self,
        query: str,
        qvec: np.ndarray,
        scope: Tenant,
        limit: int,
        validity: Validity,
        qt: QueryTime | None,
        early: EarlyReads | None = None,
        nearest_ref: Future[list[tuple[str, float]]] | None = None,
    ) -> SearchResult:
        k = max(self.config.triple_top_k, limit)
        if nearest_ref is None:  # the dense relation read, unless the caller started it
            nearest_ref = self.submit(self._nearest, scope, qvec, k, validity)
        linked = self.link(query, qvec, scope, early)
        # BM25 over "source relation destination" with the words of the query that do not
        # name a linked entity: those entities' edges come from the walk, and their names,
        # in every edge of theirs, would only rank the shortest edges first
        named = {t for h in linked for n in (h.name, *h.aliases) for t in terms(n)}
        words = [t for t in query_terms(query) if t not in named]
        records: dict[str, Relation] = {}  # the records read (scored reads copy none)
        seeds = [h.id for h in linked] if self.config.hops > 0 else []
        lexical: list[tuple[str, float]] | None  # the BM25 ranking, when the store has one
        if self.one_trip:  # the rest of the graph half in one read
            nearest = nearest_ref.result()  # started first: its best hits' records come along
            # with a time window, the first 3 x limit fused hits are read for their spans
            wanted = 3 * limit if qt is not None and qt.window is not None else limit
            walk = self.store.walk(scope, WalkRequest(
                seeds=seeds, validity=validity, vector=qvec, hops=self.config.hops,
                limit=self.config.expansion_limit,
                sibling_hubs=self.config.sibling_hubs if self.config.siblings else 0,
                sibling_limit=self.config.sibling_limit,
                words=words if self.store.capabilities.lexical else None, lexical_k=k,
                rows=[rid for rid, _ in nearest[:wanted]], top=wanted,
            ))  # fmt: skip
            expanded = graph_ranking(walk.walked)
            lexical = [(r.id, float(r.score)) for r in walk.lexical]
            records.update(walk.records)
        else:
            lexical_ref = (
                self.submit(self.store.lexical_relations, scope, words, k, validity)
                if self.store.capabilities.lexical
                else None
            )
            expanded = []
            if seeds:
                walked = self._expand(
                    scope, seeds, self.config.hops, validity, self.config.expansion_limit, qvec
                )
                if self.config.siblings:
                    walked += self._siblings(scope, set(seeds), walked, validity, qvec)
                expanded = graph_ranking(walked)
            nearest = nearest_ref.result()
            lexical = (
                None
                if lexical_ref is None
                else [(r.id, float(r.score)) for r in lexical_ref.result()]
            )

        rankings = {"graph_expansion": expanded, "dense_relations": nearest}
        if lexical is not None:
            rankings["bm25_relations"] = lexical
        recipe = self.config.fusion.for_relations()
        if qt is not None and qt.window is not None:  # edges valid in the query's window
            pool = [rid for rid, _ in ranked(*fuse(rankings, recipe), rankings)][: 3 * limit]
            if unread := [rid for rid in pool if rid not in records]:
                records.update((r.id, r) for r in self.store.get_relations(scope, unread))
            spans = {rid: (records[rid].valid_from, records[rid].invalid_at)
                     for rid in pool if rid in records}  # fmt: skip
            rankings = with_time(rankings, spans, {}, qt.window_only(), recipe)
        fused, sources = fuse(rankings, recipe)
        top = ranked(fused, sources, rankings)[:limit]
        missing = [rid for rid, _ in top if rid not in records]
        if missing:  # the few records returned, read once (scored reads copied none)
            records.update((rel.id, rel) for rel in self.store.get_relations(scope, missing))
        return SearchResult(
            query=query,
            relations=[
                RelationHit.from_relation(records[rid], score, sources[rid])
                for rid, score in top
                if rid in records  # an edge deleted meanwhile (delete_tenant) is left out
            ],
            entities=linked,
        )
