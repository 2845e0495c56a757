"""The fact half of `search`: which facts answer a query, ranked. No LLM calls.

Current facts (no `as_of`): the store's own rankings (dense `similar_facts`, lexical
`lexical_facts`, without the query words most of the scope's facts hold: `common_fact_words`),
fused by `retrieve.fusion`. With `as_of=T`: the versions of the scope's facts
true at T (`retrieve.timeline`: an updated fact's old text, nothing said after T) are ranked
here, by the same two signals computed in Python (an old text's embedding is computed at query
time, an old text is not in the store's indexes), and fused the same way.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from mem0g.config import RetrievalConfig
from mem0g.embed import CachedEmbedder
from mem0g.retrieve.episodes import NAME as EPISODE_CONTEXT
from mem0g.retrieve.episodes import capped, episode_context
from mem0g.retrieve.fusion import Ranking, diversify, fuse, ranked
from mem0g.retrieve.hubness import corrected
from mem0g.retrieve.timeline import FactVersion, as_of, versions
from mem0g.retrieve.timewin import QueryTime, with_time
from mem0g.stores.base import GraphStore, NameRanker
from mem0g.stores.lexical_query import query_terms, stems, terms
from mem0g.stores.vectors import Hub, hub_centre, row_scores, unit_rows, unit_vector
from mem0g.types import Fact, FactHit, Tenant, Validity


def hit(fact: Fact, score: float, *, start: datetime | None = None) -> FactHit:
    return FactHit(
        id=fact.id,
        text=fact.text,
        score=float(score),
        created_at=fact.created_at,
        updated_at=fact.updated_at,
        provenance=fact.provenance,
        valid_from=start,
    )


def version_hit(version: FactVersion, score: float) -> FactHit:
    if version.fact is not None:
        return hit(version.fact, score, start=version.start)
    return FactHit(
        id=version.fact_id,
        text=version.text,
        score=float(score),
        created_at=version.start,
        updated_at=version.start,
        valid_from=version.start,
        invalid_at=version.end,
    )


def bm25(
    docs: Sequence[list[str]], words: Sequence[str], k1: float = 1.2, b: float = 0.75
) -> np.ndarray:
    """Okapi BM25 of each tokenised doc for the query terms, with the engines' k1 and b
    (Lucene's idf, which is never negative). For the few texts of an `as_of` search."""
    n = len(docs)
    if not n or not words:
        return np.zeros(n, dtype=np.float64)
    avg = sum(len(d) for d in docs) / n or 1.0
    freq = [Counter(d) for d in docs]
    scores = np.zeros(n, dtype=np.float64)
    for word in set(words):
        having = sum(1 for f in freq if word in f)
        if not having:
            continue
        idf = math.log(1 + (n - having + 0.5) / (having + 0.5))
        for i, f in enumerate(freq):
            tf = f.get(word, 0)
            if tf:
                scores[i] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(docs[i]) / avg))
    return scores


class HistoricalFacts:
    """The scope's fact versions true at a time, scored by cosine and by BM25 in Python."""

    def __init__(self, store: GraphStore, embedder: CachedEmbedder) -> None:
        self.store = store
        self.embedder = embedder

    def at(self, scope: Tenant, when: datetime) -> list[FactVersion]:
        capable = self.store.capabilities.fact_timeline
        events = self.store.fact_timeline(scope) if capable else []
        return as_of(versions(self.store.facts(scope), events), when)

    def rankings(
        self,
        found: list[FactVersion],
        qvec: np.ndarray,
        words: list[str],
        k: int,
        share: float = 1.0,
    ) -> tuple[list[tuple[int, float]], list[tuple[int, float]], np.ndarray]:
        """(dense, lexical) rankings of `found`, as (index, score) best first, k each, and
        the unit vectors of `found`; BM25 leaves out the words more than `share` of `found`
        hold (`FusionConfig.common_words`, as the stores' `common_fact_words`)."""
        if not found:
            return [], [], np.zeros((0, 0), dtype=np.float32)
        vectors: list[np.ndarray | None] = [
            None if v.fact is None or v.fact.embedding is None else np.asarray(v.fact.embedding)
            for v in found
        ]
        missing = [i for i, vec in enumerate(vectors) if vec is None]
        if missing:  # old texts: embedded now (cached), they are in no index
            for i, vec in zip(missing, self.embedder.embed([found[i].text for i in missing]),
                              strict=True):  # fmt: skip
                vectors[i] = np.asarray(vec)
        matrix = unit_rows([np.asarray(v, dtype=np.float32) for v in vectors], None)
        dense = row_scores(matrix, unit_vector(qvec)[0])
        docs = [stems(terms(v.text)) for v in found]
        held = [set(d) for d in docs]
        stemmed = stems(words)
        rare = [w for w in stemmed if sum(w in h for h in held) <= share * len(found)]
        lexical = bm25(docs, rare or stemmed)  # every word common: none tells less than another
        order = range(len(found))
        # ties as the stores order them: cosine by write order (here: the versions' order),
        # BM25 by text; never by the random ids
        by_dense = sorted(order, key=lambda i: -dense[i])[:k]
        by_lex = sorted(order, key=lambda i: (-lexical[i], found[i].text, found[i].fact_id))
        by_lex = [i for i in by_lex if lexical[i] > 0][:k]
        return (
            [(i, float(dense[i])) for i in by_dense],
            [(i, float(lexical[i])) for i in by_lex],
            matrix,
        )


class FactRetriever:
    """Ranks a scope's facts for a query: current facts, or those true at `as_of`."""

    def __init__(
        self,
        store: GraphStore,
        embedder: CachedEmbedder,
        config: RetrievalConfig,
        submit: Callable[..., Future[Any]],
    ) -> None:
        self.store = store
        self.config = config
        self.submit = submit
        self.history = HistoricalFacts(store, embedder)
        self.lexical = store.capabilities.lexical  # the store ranks facts by BM25

    def begin(
        self,
        query: str,
        qvec: np.ndarray,
        scope: Tenant,
        limit: int,
        validity: Validity,
        qt: QueryTime | None = None,
        lexical: Future[list[tuple[Fact, float]]] | None = None,
        total: Callable[[], np.ndarray | None] | None = None,
    ) -> Callable[[Mapping[str, Ranking] | None], list[FactHit]]:
        """Start the store's reads (on the read pool, if any) and return `finish(extra)`,
        which waits for them and fuses (the `time` ranking included); `extra`: more named
        rankings of fact ids found meanwhile by the graph half of a search. Two steps, so
        that no read-pool task ever waits on another (no pool deadlock). `lexical`: the BM25
        read of a current search, already started (`DualRetriever.early_reads`), and `total`
        its `centroid`."""
        k = max(self.config.fact_top_k, limit)
        words = query_terms(query)
        if not self.current(validity):
            when = validity.as_of
            assert when is not None
            return lambda extra: self._historical(qvec, words, scope, when, k, limit, extra, qt)
        total_ref = total if total is not None else self.centroid(scope)
        # the store corrects the dense ranking for hubness where the vectors are, so none
        # is sent: the centre (read while the query was embedded) goes with the read
        centre = hub_centre(total_ref()) if total_ref is not None else None
        hub = None if centre is None else Hub(centre, self.config.fusion.hub_penalty)
        dense_ref = self.submit(functools.partial(self.store.similar_facts, hub=hub),
                                scope, qvec, k)  # fmt: skip
        lexical_ref = lexical
        if lexical_ref is None and self.lexical:
            lexical_ref = self.submit(self.words_ranking, scope, words, k)

        def finish(extra: Mapping[str, Ranking] | None) -> list[FactHit]:
            records: dict[str, Fact] = {}
            rankings: dict[str, Ranking] = {}
            for name, ref in (("dense_facts", dense_ref), ("bm25_facts", lexical_ref)):
                if ref is not None:
                    rankings[name] = []
                    for fact, score in ref.result():
                        records.setdefault(fact.id, fact)
                        rankings[name].append((fact.id, float(score)))
            return self._current(scope, records, {**rankings, **(extra or {})}, limit, qt)

        return finish

    def centroid(
        self, scope: Tenant, ranker: Future[NameRanker | None] | None = None
    ) -> Callable[[], np.ndarray | None] | None:
        """The scope's kept fact vector sum, when the recipe corrects the dense ranking for
        hubness (retrieve/hubness.py), as a call to make where the facts are fused (in the
        caller's thread, never a read-pool task). A store that holds names brings the sum
        with the name ranker's read (`ranker`, already started): no read of its own, unless
        that read did not bring it. Otherwise the read starts now: it needs no query vector,
        so a search starts it while the query is embedded."""
        if self.config.fusion.hub_penalty <= 0 or not self.store.capabilities.fact_vector_sum:
            return None
        if ranker is not None:

            def from_ranker() -> np.ndarray | None:
                held = ranker.result()
                if held is not None and held.fact_sum_read:
                    return held.fact_sum
                return self.store.fact_vector_sum(scope)

            return from_ranker
        return self.submit(self.store.fact_vector_sum, scope).result

    def words_ranking(self, scope: Tenant, words: list[str], k: int) -> list[tuple[Fact, float]]:
        """The store's BM25 over the query words that do not fill the scope
        (`FusionConfig.common_words`): a user's own name, in most of their facts, is rare
        store-wide (other tenants lack it), so BM25 weighs it high and, matched by nearly
        every fact, it ranks the scope's shortest facts first whatever they say."""
        assert self.lexical
        share = self.config.fusion.common_words
        if share < 1.0 and words:
            common = set(self.store.common_fact_words(scope, words, share))
            # only beside a rarer word: when every word is common (one word, a tiny scope)
            # none tells the facts apart less than another, and BM25 still ranks by them
            words = [w for w in words if w not in common] or words
        return self.store.lexical_facts(scope, words, k)

    @staticmethod
    def current(validity: Validity) -> bool:
        """The current facts answer (the store's own rankings), not the versions of as_of."""
        return validity.as_of is None or validity.include_invalid

    def search(
        self,
        query: str,
        qvec: np.ndarray,
        scope: Tenant,
        limit: int,
        validity: Validity,
        extra: Mapping[str, Ranking] | None = None,
        qt: QueryTime | None = None,
    ) -> list[FactHit]:
        return self.begin(query, qvec, scope, limit, validity, qt)(extra)

    def _historical(
        self,
        qvec: np.ndarray,
        words: list[str],
        scope: Tenant,
        when: datetime,
        k: int,
        limit: int,
        extra: Mapping[str, Ranking] | None,
        qt: QueryTime | None,
    ) -> list[FactHit]:
        found = self.history.at(scope, when)
        share = self.config.fusion.common_words
        dense, lexical, matrix = self.history.rankings(found, qvec, words, k, share)
        penalty = self.config.fusion.hub_penalty
        rankings: dict[str, Ranking] = {
            "dense_facts": corrected(
                [(found[i].fact_id, s) for i, s in dense],
                [matrix[i] for i, _ in dense],
                matrix.sum(axis=0, dtype=np.float64) if len(found) else None,
                penalty,
            ),
            "bm25_facts": [(found[i].fact_id, s) for i, s in lexical],
            **(extra or {}),
        }
        by_id = {v.fact_id: v for v in found}
        vectors = {v.fact_id: matrix[i] for i, v in enumerate(found)}
        if qt is not None:
            spans = {i: (v.start, v.start + timedelta(seconds=1)) for i, v in by_id.items()}
            texts = {i: v.text for i, v in by_id.items()}
            rankings = with_time(rankings, spans, texts, qt, self.config.fusion)
        episodes = {i: [p.episode_id for p in v.fact.provenance if p.timestamp <= when]
                    for i, v in by_id.items() if v.fact is not None}  # fmt: skip
        rankings, fused, sources = self._fused(rankings, episodes)
        true_then = {i: s for i, s in fused.items() if i in by_id}
        order = ranked(true_then, sources, rankings)
        texts = {i: v.text for i, v in by_id.items()}
        top = diversify(order, vectors, limit, self.config.fusion, texts)
        return [_sourced(version_hit(by_id[i], s), sources[i]) for i, s in top]

    def _fused(
        self, rankings: Mapping[str, Ranking], episodes: Mapping[str, list[str]]
    ) -> tuple[dict[str, Ranking], dict[str, float], dict[str, dict[str, int]]]:
        """`rankings` fused, with, when the recipe weighs it, the `episode_context` ranking
        over the candidates (`episodes`: their episode ids) from the other rankings' fused
        order, each neighbour held below its seed (`episodes.capped`)."""
        recipe = self.config.fusion
        before, sources = fuse(rankings, recipe)
        if recipe.weights.episode_context <= 0:
            return dict(rankings), before, sources
        near = episode_context(before, sources, rankings, episodes, recipe.context_seeds)
        rankings = {**rankings, EPISODE_CONTEXT: near}
        fused, sources = fuse(rankings, recipe)
        return rankings, capped(fused, before, near), sources

    def _current(
        self,
        scope: Tenant,
        records: dict[str, Fact],
        rankings: Mapping[str, Ranking],
        limit: int,
        qt: QueryTime | None = None,
    ) -> list[FactHit]:
        if qt is not None:  # when each candidate's text was said (an update's episode, if any)
            spans = {i: (f.text_said_at, f.text_said_at + timedelta(seconds=1))
                     for i, f in records.items()}  # fmt: skip
            texts = {i: f.text for i, f in records.items()}
            rankings = with_time(rankings, spans, texts, qt, self.config.fusion)
        episodes = {i: [p.episode_id for p in f.provenance] for i, f in records.items()}
        rankings, fused, sources = self._fused(rankings, episodes)
        pool = ranked(fused, sources, rankings)[: max(3 * limit, limit + 10)]
        unknown = [i for i, _ in pool if i not in records]
        if unknown:  # found only by an extra ranking: read them
            records.update((f.id, f) for f in self.store.get_facts(scope, unknown))
        pool = [(i, s) for i, s in pool if i in records]  # a fact deleted meanwhile is left out
        vectors: dict[str, np.ndarray] = {}
        recipe = self.config.fusion
        if recipe.near_duplicate < 1.0 or recipe.mmr_lambda is not None:
            bare = [i for i, _ in pool if records[i].embedding is None]
            if bare:  # a store's lexical read may leave the vector out
                records.update((f.id, f) for f in self.store.get_facts(scope, bare))
            vectors = {i: np.asarray(records[i].embedding, dtype=np.float32)
                       for i, _ in pool if records[i].embedding is not None}  # fmt: skip
        texts = {i: records[i].text for i, _ in pool}
        top = diversify(pool, vectors, limit, recipe, texts)
        return [_sourced(hit(records[i], s), sources[i]) for i, s in top]


def _sourced(found: FactHit, sources: dict[str, int]) -> FactHit:
    found.sources = dict(sources)
    return found
