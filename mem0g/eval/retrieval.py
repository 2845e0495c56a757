"""Retrieval mode: each question's recall@k for mem0g's search and for the baselines (dense,
BM25 and their RRF over exactly the texts mem0g stored). No LLM."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from mem0g.eval.data import Question, Unit
from mem0g.eval.metrics import found_at_k, recall_at_k
from mem0g.stores.vectors import unit_rows, unit_vector

if TYPE_CHECKING:
    from mem0g.eval.runner import EvalOptions


KS = (5, 10, 20)


class _Baselines:
    """Dense retrieval, BM25 and their plain RRF (k = 60) over the texts mem0g stored (the
    unit's turns, or its observations), with the run's embedding model."""

    def __init__(self, embedder: Any, unit: Unit, stored: list[tuple[str, list[str]]]) -> None:
        import bm25s

        self.unit = unit
        self.turns = stored  # (text, refs) of every stored item
        self.texts = [text for text, _ in stored]
        self.refs = [list(refs) for _, refs in stored]
        self.matrix = unit_rows(np.asarray(embedder.embed(self.texts), dtype=np.float32), None)
        self.embedder = embedder
        self._tokenize: Callable[[list[str]], list[list[str]]] = lambda texts: bm25s.tokenize(
            texts, stopwords="en", show_progress=False, return_ids=False
        )
        self.bm = bm25s.BM25()
        self.bm.index(
            bm25s.tokenize(self.texts, stopwords="en", show_progress=False), show_progress=False
        )

    def _dense(self, query: str, k: int) -> list[int]:
        if not self.turns:
            return []
        q, _ = unit_vector(self.embedder.embed([query])[0])
        return [int(i) for i in np.argsort(-(self.matrix @ q), kind="stable")[:k]]

    def _bm25(self, query: str, k: int) -> list[int]:
        if not self.turns:
            return []
        tokens = self._tokenize([query])
        if not tokens[0]:
            return []
        docs, scores = self.bm.retrieve(tokens, k=min(k, len(self.turns)), show_progress=False)
        return [int(i) for i, s in zip(docs[0], scores[0], strict=True) if s > 0]

    def dense(self, query: str, k: int) -> list[list[str]]:
        return [self.refs[i] for i in self._dense(query, k)]

    def bm25(self, query: str, k: int) -> list[list[str]]:
        return [self.refs[i] for i in self._bm25(query, k)]

    def rrf(self, query: str, k: int, depth: int = 100) -> list[list[str]]:
        """Plain reciprocal-rank fusion of the two above (k = 60, equal weights)."""
        fused: dict[int, float] = {}
        for ranking in (self._dense(query, depth), self._bm25(query, depth)):
            for rank, i in enumerate(ranking, start=1):
                fused[i] = fused.get(i, 0.0) + 1.0 / (60 + rank)
        order = sorted(fused, key=lambda i: (-fused[i], i))[:k]
        return [self.refs[i] for i in order]


class RetrievalMode:
    """`Harness`'s per-question work in retrieval mode."""

    o: EvalOptions

    def _retrieve(
        self,
        memory: Any,
        tenant: str,
        q: Question,
        fact_refs: dict[str, list[str]],
        baselines: _Baselines,
    ) -> dict[str, Any]:
        k = max(KS)
        started = time.perf_counter()
        hits = memory.search(q.text, user_id=tenant, limit=k)
        ms = (time.perf_counter() - started) * 1000
        ranked = {
            "mem0g": [fact_refs.get(f.id, []) for f in hits.facts],
            "dense": baselines.dense(q.text, k),
            "bm25": baselines.bm25(q.text, k),
            "dense+bm25 rrf": baselines.rrf(q.text, k),
        }
        block = memory.context_block(
            q.text, user_id=tenant, limit=self.o.context_limit, max_tokens=self.o.context_tokens
        )  # what an answer prompt would get at k = context_limit (10)
        row: dict[str, Any] = {
            "search_ms": round(ms, 2),
            "context_tokens": block.tokens,
            "systems": {},
        }
        turns = [t for s in baselines.unit.sessions for t in s.turns]
        if self.o.benchmark == "locomo":
            relevant = {"evidence": q.evidence}
        else:  # mem0g's own: every turn marked has_answer, the assistant's too
            evidence = [t.ref for t in turns if t.has_answer]
            relevant = {"session": q.answer_sessions, "turn": evidence}
        # LongMemEval's own (its run_retrieval.py): an index of the user turns only, the user
        # turns marked has_answer as the targets, and their sessions; a question with no
        # such turn is left out of its averages
        user = {t.ref for t in turns if t.role == "user"}
        targets = [t.ref for t in turns if t.has_answer and t.role == "user"]
        if q.abstention:
            row["skipped"] = "abstention (no evidence to retrieve)"
        elif self.o.benchmark == "longmemeval" and not targets:
            row["skipped_longmemeval"] = "no has_answer user turn (LongMemEval leaves it out)"
        for system, refs in ranked.items():
            scores: dict[str, Any] = {"top": refs[:k]}
            for kind, wanted in relevant.items():
                if q.abstention or not wanted:
                    continue
                items = refs if kind != "session" else _distinct_sessions(refs)
                for kk in KS:
                    scores[f"{kind}_recall@{kk}"] = recall_at_k(items, wanted, kk)
            if self.o.benchmark == "longmemeval" and targets and not q.abstention:
                scores.update(_longmemeval_recall(refs, user, targets))
            row["systems"][system] = scores
        return row


def _longmemeval_recall(
    refs: list[list[str]], user: set[str], targets: list[str]
) -> dict[str, float]:
    """recall_all@k and recall_any@k as LongMemEval scores them, at turn and session level,
    over the ranking's user turns (each once, in order: its index holds no assistant turn,
    so an assistant hit is passed over). Only the top max(KS) hits are read: where they hold
    fewer than k user turns (or sessions) this is a lower bound."""
    ranked = [[r] for r in dict.fromkeys(r for hit in refs for r in hit if r in user)]
    sessions = _distinct_sessions(ranked)
    wanted = {"turn": targets, "session": sorted({t.rsplit(":", 1)[0] for t in targets})}
    out: dict[str, float] = {}
    for kind, items in (("session", sessions), ("turn", ranked)):
        for kk in KS:
            for name, every in (("all", True), ("any", False)):
                out[f"{kind}_recall_{name}@{kk}"] = found_at_k(items, wanted[kind], kk, every=every)
    return out


def _distinct_sessions(refs: list[list[str]]) -> list[list[str]]:
    """The ranked hits' sessions, each once, in the order first seen: a session's recall@k is
    over the first k distinct sessions, as LongMemEval's own evaluation widens its cut until k
    sessions are seen (five hits from one session are one session, not five). Only the top
    max(KS) hits are read, so where they hold fewer than k sessions this is a lower bound."""
    seen: set[str] = set()
    out: list[list[str]] = []
    for hit in refs:
        new = [s for s in dict.fromkeys(r.rsplit(":", 1)[0] for r in hit) if s not in seen]
        seen.update(new)
        if new:
            out.append(new)
    return out
