"""Dual retriever: entity-centric expansion + triple-embedding search, fused. No LLM calls.

(a) link the query to entities by exact n-gram / alias match and by name-embedding similarity,
walk their edges (`hops`), score each edge by cosine to the query; (b) nearest triples by
embedding; (c) fuse the two rankings with the recipe in `FusionConfig` (data, not branches).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from mem0g.config import FusionConfig, RetrievalConfig
from mem0g.embed import CachedEmbedder
from mem0g.resolve.names import normalize_name
from mem0g.stores.base import GraphStore
from mem0g.types import EntityHit, Relation, RelationHit, SearchResult, Tenant, Validity

_STOP = frozenset(
    """a an and are as at be by did do does for from had has have he her him his how i in is it
    its me my of on or our she so that the their them they this to was we were what when where
    which who whom whose why will with you your before after now still ever""".split()
)
_TOKEN = re.compile(r"[\w'&.-]+", re.UNICODE)


def query_ngrams(query: str, max_n: int = 4) -> list[str]:
    """Normalised word n-grams of the query that could be entity names (no pure stopwords)."""
    tokens = [t.strip(".'-") for t in _TOKEN.findall(query)]
    tokens = [t for t in tokens if t]
    grams: list[str] = []
    for n in range(min(max_n, len(tokens)), 0, -1):
        for start in range(len(tokens) - n + 1):
            words = tokens[start : start + n]
            if all(w.casefold() in _STOP for w in words):
                continue
            key = normalize_name(" ".join(words))
            if key and key not in grams:
                grams.append(key)
    return grams


def fuse(
    rankings: Sequence[tuple[list[tuple[str, float]], float]], recipe: FusionConfig
) -> dict[str, float]:
    """Combine ranked (id, score) lists, each with a weight, into one score per id."""
    fused: dict[str, float] = {}
    for ranking, weight in rankings:
        for rank, (item, score) in enumerate(ranking, start=1):
            if recipe.method == "rrf":
                gain = weight / (recipe.rrf_k + rank)
            else:
                gain = weight * score
            fused[item] = fused.get(item, 0.0) + gain
    return fused


class DualRetriever:
    def __init__(self, store: GraphStore, embedder: CachedEmbedder, config: RetrievalConfig):
        self.store = store
        self.embedder = embedder
        self.config = config

    def link(self, query: str, qvec: np.ndarray, scope: Tenant) -> list[EntityHit]:
        """Entities the query names: exact name/alias n-grams first, then close name embeddings."""
        hits: dict[str, EntityHit] = {}
        for entity in self.store.find_entities(scope, query_ngrams(query)):
            hits[entity.id] = EntityHit(
                id=entity.id,
                name=entity.name,
                type=entity.type,
                aliases=entity.aliases,
                score=1.0,
                matched_by="name",
            )
        for entity, score in self.store.similar_entities(scope, qvec, self.config.link_top_k):
            if score >= self.config.link_threshold and entity.id not in hits:
                hits[entity.id] = EntityHit(
                    id=entity.id,
                    name=entity.name,
                    type=entity.type,
                    aliases=entity.aliases,
                    score=float(score),
                    matched_by="embedding",
                )
        return sorted(hits.values(), key=lambda h: -h.score)

    def _siblings(
        self,
        scope: Tenant,
        seeds: set[str],
        walked: list[tuple[Relation, int]],
        validity: Validity,
    ) -> list[tuple[Relation, int]]:
        """Edges sharing a relation and an endpoint with a seed's edge (X works_at C -> Y
        works_at C): how "who works with X" reaches coworkers without a full second hop."""
        hubs: dict[tuple[str, str, bool], None] = {}
        for rel, hop in walked:
            if hop != 1:
                continue
            if rel.source_id in seeds:
                hubs[(rel.destination_id, rel.relation, True)] = None
            if rel.destination_id in seeds:
                hubs[(rel.source_id, rel.relation, False)] = None
        if not hubs:
            return []
        hub_ids = sorted({hub for hub, _, _ in hubs})
        found = []
        # bounded walk: a hub such as a big employer may hold thousands of edges
        for rel, _ in self.store.expand(scope, hub_ids, 1, validity, self.config.sibling_limit):
            if (rel.destination_id, rel.relation, True) in hubs or (
                rel.source_id,
                rel.relation,
                False,
            ) in hubs:
                found.append((rel, 2))
        return found

    def search(self, query: str, scope: Tenant, limit: int, validity: Validity) -> SearchResult:
        qvec = self.embedder.embed([query])[0]
        linked = self.link(query, qvec, scope)
        relations: dict[str, Relation] = {}

        expanded = []
        if linked and self.config.hops > 0:
            walked = self.store.expand(
                scope,
                [h.id for h in linked],
                self.config.hops,
                validity,
                self.config.expansion_limit,
            )
            if self.config.siblings:
                walked += self._siblings(scope, {h.id for h in linked}, walked, validity)
            for rel, hop in walked:
                if rel.id in relations:
                    continue
                relations[rel.id] = rel
                score = float(np.dot(qvec, np.asarray(rel.embedding, dtype=np.float32)))
                expanded.append((rel.id, score / hop))
            expanded.sort(key=lambda item: -item[1])

        nearest = []
        for rel, score in self.store.similar_relations(
            scope, qvec, max(self.config.triple_top_k, limit), validity
        ):
            relations[rel.id] = rel
            nearest.append((rel.id, float(score)))

        recipe = self.config.fusion
        fused = fuse([(expanded, recipe.entity_weight), (nearest, recipe.triple_weight)], recipe)
        ranked = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:limit]
        return SearchResult(
            query=query,
            relations=[RelationHit.from_relation(relations[rid], score) for rid, score in ranked],
            entities=linked,
        )
