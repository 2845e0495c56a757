"""An offline lab for fact fusion on LoCoMo: each question's rankings read once, fusions replayed.

`capture` stores each conversation's observation facts as `scripts/eval_fusion.py` does (every
conversation before any search), then reads, per category 1-4 question, the store's *full*
dense and BM25 fact rankings (every fact of the tenant), the query vector and the query's time,
and the facts' texts, vectors and episodes; it pickles them (bench-results/, never committed:
derived from LoCoMo). `replay` then runs mem0g's own fact half (`FactRetriever`, the same code
`Memory.search` runs) over a stand-in store that serves those rankings cut to `fact_top_k`, so a
recipe costs milliseconds per question and no embedding; `check` says whether the replay of a
recipe equals `Memory.search` question by question (run it after capture). Variants that need
a ranking the store does not compute are written as `extra` rankings (functions of the capture).

    .venv/bin/python scripts/fusion_lab.py capture ../shared/data/locomo/locomo2.json \
        [--store neo4j] --out bench-results/lab-embedded.pkl
    .venv/bin/python scripts/fusion_lab.py check bench-results/lab-embedded.pkl
    .venv/bin/python scripts/fusion_lab.py replay bench-results/lab-embedded.pkl \
        --recipes 'dense,hybrid,mine:{"common_words": 1.0}'
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import tempfile
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from eval_fusion import CATEGORIES, KS, NAMES, REFS, ingest, top_level  # noqa: E402

from mem0g import Memory  # noqa: E402
from mem0g.config import FusionConfig, RetrievalConfig  # noqa: E402
from mem0g.eval.data import load_locomo  # noqa: E402
from mem0g.eval.metrics import recall_at_k  # noqa: E402
from mem0g.retrieve.facts import FactRetriever  # noqa: E402
from mem0g.retrieve.fusion import PRESETS, Ranking  # noqa: E402
from mem0g.retrieve.hubness import corrected  # noqa: E402
from mem0g.retrieve.timewin import QueryTime, query_time  # noqa: E402
from mem0g.stores.lexical_query import query_terms  # noqa: E402
from mem0g.stores.vectors import Hub, unit_rows  # noqa: E402
from mem0g.types import Fact, Tenant, Validity  # noqa: E402


@dataclass
class Question:
    unit: str
    text: str
    category: str
    evidence: list[str]
    qvec: np.ndarray
    dense: list[tuple[str, float]]  # every fact of the tenant, the store's order
    lexical: list[tuple[str, float]]  # every fact BM25 matches, the store's order
    qt: QueryTime
    search: list[str] = field(default_factory=list)  # Memory.search's fact ids (default)
    common: list[str] = field(default_factory=list)  # words over half the scope's facts hold
    rare: list[tuple[str, float]] = field(default_factory=list)  # BM25 without `common`


@dataclass
class Capture:
    store: str
    facts: dict[str, Fact]  # id -> record (embedding, provenance)
    refs: dict[str, list[str]]  # id -> dia_ids
    unit_of: dict[str, str]  # fact id -> conversation
    speakers: dict[str, list[str]]
    questions: list[Question]


def capture(data: Path, store: str, out: Path) -> None:
    graph_store: dict[str, Any] = {"provider": "embedded", "path": tempfile.mkdtemp()}
    if store == "neo4j":
        from mem0g.testing.neo4j import neo4j_for_tests

        uri, user, password = neo4j_for_tests()
        graph_store = {"provider": "neo4j", "url": uri, "username": user, "password": password}
    memory = Memory({"graph_store": graph_store, "memory": {"summary": False}})
    if store == "neo4j":
        memory.store.reset()
    loco = load_locomo(data)
    facts: dict[str, Fact] = {}
    unit_of: dict[str, str] = {}
    questions: list[Question] = []
    try:
        for unit in loco.units:
            ingest(memory, unit, f"fusion-{unit.id}")
        for unit in loco.units:
            scope = Tenant(user_id=f"fusion-{unit.id}")
            stored = memory.store.facts(scope)
            for f in stored:
                facts[f.id] = f
                unit_of[f.id] = unit.id
            n = len(stored)
            for q in unit.questions:
                if q.category not in CATEGORIES or not q.evidence:
                    continue
                qvec = memory.embedder.embed([q.text])[0]
                dense = memory.store.similar_facts(scope, qvec, n)
                words = query_terms(q.text)
                lexical = memory.store.lexical_facts(scope, words, n)
                common = memory.store.common_fact_words(scope, words, COMMON)
                rare = memory.store.lexical_facts(scope, [w for w in words if w not in common], n)
                hits = memory.search(q.text, user_id=f"fusion-{unit.id}", limit=max(KS))
                questions.append(Question(
                    unit=unit.id, text=q.text, category=q.category, evidence=list(q.evidence),
                    qvec=np.asarray(qvec, dtype=np.float32),
                    dense=[(f.id, float(s)) for f, s in dense],
                    lexical=[(f.id, float(s)) for f, s in lexical],
                    qt=query_time(q.text), search=[h.id for h in hits.facts], common=common,
                    rare=[(f.id, float(s)) for f, s in rare],
                ))  # fmt: skip
    finally:
        memory.close()
    speakers = {u.id: list(u.speakers) for u in loco.units}
    cap = Capture(store, facts, dict(REFS), unit_of, speakers, questions)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(pickle.dumps(cap))
    print(f"{len(questions)} questions, {len(facts)} facts -> {out}")


class _Capabilities:
    lexical = True
    fact_vector_sum = True


class LabStore:
    """Serves one question's captured rankings, cut to k, as the store would."""

    capabilities = _Capabilities()

    def __init__(self, cap: Capture) -> None:
        self.cap = cap
        self.q: Question | None = None

    def similar_facts(
        self, scope: Tenant, vector: np.ndarray, k: int, *, hub: Hub | None = None
    ) -> list[tuple[Fact, float]]:
        """The captured dense ranking cut to k; with `hub`, corrected as the stores do."""
        assert self.q is not None
        found = [(self.cap.facts[i], s) for i, s in self.q.dense[:k]]
        if hub is None:
            return found
        vectors = [None if f.embedding is None else np.asarray(f.embedding) for f, _ in found]
        ranking = [(f.id, s) for f, s in found]
        total = hub.centre.astype(np.float64)  # unit already: `corrected` normalises it again
        return [(self.cap.facts[i], s) for i, s in corrected(ranking, vectors, total, hub.penalty)]

    def lexical_facts(self, scope: Tenant, words: list[str], k: int) -> list[tuple[Fact, float]]:
        assert self.q is not None
        full = query_terms(self.q.text)
        if words == full:
            found = self.q.lexical
        elif words == [w for w in full if w not in self.q.common]:
            found = self.q.rare
        else:
            raise ValueError(f"no BM25 ranking captured for {words}")
        return [(self.cap.facts[i], s) for i, s in found[:k]]

    def common_fact_words(self, scope: Tenant, words: list[str], share: float) -> list[str]:
        assert self.q is not None and share == COMMON, "captured at the default share only"
        return list(self.q.common)

    def fact_vector_sum(self, scope: Tenant) -> np.ndarray | None:
        """The sum of the unit vectors of the conversation's facts, as the stores keep it."""
        assert self.q is not None
        mine = [f.embedding for i, f in self.cap.facts.items()
                if self.cap.unit_of[i] == self.q.unit and f.embedding is not None]  # fmt: skip
        if not mine:
            return None
        rows = unit_rows([np.asarray(v, dtype=np.float32) for v in mine], None)
        total: np.ndarray = rows.sum(axis=0, dtype=np.float64)
        return total

    def get_facts(self, scope: Tenant, ids: list[str]) -> list[Fact]:
        return [self.cap.facts[i] for i in ids if i in self.cap.facts]


COMMON = FusionConfig().common_words  # the share `capture` reads common words at

Extra = Callable[[Capture, Question, int], Mapping[str, Ranking]]


def _now(future_fn: Callable[..., Any], /, *args: Any) -> Any:
    """The retriever's `submit`: run now, in this thread."""
    f: Future[Any] = Future()
    f.set_result(future_fn(*args))
    return f


def replay(
    cap: Capture,
    recipe: FusionConfig,
    extra: Extra | None = None,
    retrieval: Mapping[str, Any] | None = None,
    limit: int = 20,
) -> list[list[str]]:
    """Fact ids per question (best first) under `recipe`, through mem0g's FactRetriever."""
    store = LabStore(cap)
    config = RetrievalConfig(fusion=recipe, **(retrieval or {}))
    retriever = FactRetriever(store, None, config, _now)  # type: ignore[arg-type]
    out = []
    for q in cap.questions:
        store.q = q
        k = max(config.fact_top_k, limit)
        more = extra(cap, q, k) if extra else None
        scope = Tenant(user_id=f"fusion-{q.unit}")
        hits = retriever.search(q.text, q.qvec, scope, limit, Validity(), more, q.qt)
        out.append([h.id for h in hits])
    return out


def recalls(cap: Capture, ids: list[list[str]]) -> dict[str, dict[str, float]]:
    """recall@5/10/20 per conversation, per category and overall."""
    rows: dict[str, list[tuple[str, dict[int, float]]]] = {}
    for q, got in zip(cap.questions, ids, strict=True):
        refs = [cap.refs.get(i, []) for i in got]
        r = {k: recall_at_k(refs, q.evidence, k) for k in KS}
        for key in (q.unit, "overall", f"c{q.category}"):
            rows.setdefault(key, []).append((q.category, r))
    return {
        key: {f"r@{k}": sum(r[k] for _, r in v) / len(v) for k in KS} for key, v in rows.items()
    }


def line(name: str, res: Mapping[str, Mapping[str, float]]) -> str:
    units = sorted(k for k in res if k.startswith("conv"))
    cells = [f"{u} {res[u]['r@10']:.3f}" for u in units]
    cats = " ".join(f"{NAMES[c][:5]} {res['c' + c]['r@10']:.3f}" for c in CATEGORIES)
    o = res["overall"]
    return (f"{name:40s} " + " ".join(cells) + f" | all {o['r@5']:.3f}/{o['r@10']:.3f}/"
            f"{o['r@20']:.3f} | {cats}")  # fmt: skip


def load(path: Path) -> Capture:
    cap = pickle.loads(path.read_bytes())
    assert isinstance(cap, Capture)
    REFS.update(cap.refs)
    return cap


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("capture")
    c.add_argument("data", type=Path)
    c.add_argument("--store", choices=("embedded", "neo4j"), default="embedded")
    c.add_argument("--out", type=Path, default=ROOT / "bench-results" / "lab.pkl")
    r = sub.add_parser("replay")
    r.add_argument("capture", type=Path)
    r.add_argument("--recipes", default="dense,hybrid")
    k = sub.add_parser("check", help="the replay of the default against Memory.search")
    k.add_argument("capture", type=Path)
    args = p.parse_args()
    if args.cmd == "capture":
        capture(args.data, args.store, args.out)
        return
    cap = load(args.capture)
    if args.cmd == "check":
        got = replay(cap, FusionConfig())
        same = sum(g == q.search for g, q in zip(got, cap.questions, strict=True))
        print(f"replay == Memory.search on {same} of {len(cap.questions)} questions")
        return
    for spec in top_level(args.recipes):  # a preset, or name:json as in eval_fusion.py
        name, _, body = spec.partition(":")
        recipe = PRESETS[name] if not body else FusionConfig.model_validate(json.loads(body))
        print(line(name, recalls(cap, replay(cap, recipe))))


if __name__ == "__main__":
    main()
