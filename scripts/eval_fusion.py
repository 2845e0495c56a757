"""Evidence recall of fusion recipes on LoCoMo, per conversation and category, with no LLM.

Ingests each conversation's observation facts once (`add(infer=False)`, grouped per session
and speaker with the session's date, as `mem0g eval locomo --mode retrieval --facts
observation` does), then searches every question with each recipe (presets by name, or
`name:json` for a recipe of one's own) through `Memory.search`, beside the harness's own
baselines over the same facts (dense, BM25, plain dense+BM25 RRF). Recipes are compared on
one conversation (`--tune`) and reported on the others as held out. Prints tables, writes
JSON (bench-results/ by default). Never tuned on in CI: it is a measurement.

    .venv/bin/python scripts/eval_fusion.py ../shared/data/locomo/locomo2.json \
        --recipes dense,dense_bm25,hybrid --tune conv-26 --out bench-results/fusion.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mem0g import Memory  # noqa: E402
from mem0g.eval.data import load_locomo  # noqa: E402
from mem0g.eval.metrics import percentile, recall_at_k  # noqa: E402
from mem0g.eval.runner import _Baselines  # noqa: E402
from mem0g.retrieve.fusion import PRESETS  # noqa: E402

KS = (5, 10, 20)
CATEGORIES = ("1", "2", "3", "4")
NAMES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop"}


def recipe(spec: str) -> tuple[str, Any]:
    if ":" in spec:
        name, body = spec.split(":", 1)
        return name, json.loads(body)
    if spec not in PRESETS:
        raise SystemExit(f"unknown preset {spec!r}; presets: {sorted(PRESETS)}")
    return spec, spec


def ingest(memory: Memory, unit: Any, tenant: str) -> list[tuple[str, list[str]]]:
    """Observation facts per (session, speaker), dated; returns (text, refs) per fact and
    fills memory with them. The fact ids map back to dia_ids in `refs_of`."""
    times = {s.id: s.time for s in unit.sessions}
    groups: dict[tuple[str, str], list[Any]] = {}
    for ob in unit.observations:
        groups.setdefault((ob.session, ob.speaker), []).append(ob)
    stored = []
    for (sid, speaker), obs in groups.items():
        if sid not in times:
            continue
        messages = [{"role": "user", "name": speaker, "content": ob.text} for ob in obs]
        result = memory.add(messages, user_id=tenant, timestamp=times[sid], infer=False)
        for f, ob in zip(result.facts, obs, strict=True):
            REFS[f.id] = ob.refs
            stored.append((ob.text, ob.refs))
    return stored


REFS: dict[str, list[str]] = {}


def row(q: Any, refs: list[list[str]]) -> dict[str, Any]:
    return {"category": q.category, **{f"r@{k}": recall_at_k(refs, q.evidence, k) for k in KS}}


def scores(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for cat in (*CATEGORIES, "overall"):
        chosen = [r for r in rows if cat == "overall" or r["category"] == cat]
        out[cat] = {
            f"r@{k}": round(sum(r[f"r@{k}"] for r in chosen) / len(chosen), 4) if chosen else 0.0
            for k in KS
        }
        out[cat]["n"] = len(chosen)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data", type=Path)
    p.add_argument("--recipes", default="dense,dense_bm25,hybrid")
    p.add_argument("--tune", default=None, help="the conversation recipes are chosen on")
    p.add_argument("--store", choices=("embedded", "neo4j"), default="embedded")
    p.add_argument("--out", type=Path, default=ROOT / "bench-results" / "fusion.json")
    args = p.parse_args()
    data = load_locomo(args.data)
    recipes = [recipe(s) for s in args.recipes.split(",") if s]
    graph_store: dict[str, Any] = {"provider": "embedded", "path": tempfile.mkdtemp()}
    if args.store == "neo4j":
        graph_store = {"provider": "neo4j", "url": os.environ["NEO4J_URI"],
                       "password": os.environ.get("NEO4J_PASSWORD")}  # fmt: skip
    memory = Memory({"graph_store": graph_store, "memory": {"summary": False}})
    if args.store == "neo4j":
        memory.store.reset()
    results: dict[str, Any] = {"load_before": os.getloadavg(), "store": args.store, "units": {}}
    try:
        for unit in data.units:
            tenant = f"fusion-{unit.id}"
            stored = ingest(memory, unit, tenant)
            baselines = _Baselines(memory.embedder, unit, stored)
            questions = [q for q in unit.questions if q.category in CATEGORIES and q.evidence]
            systems: dict[str, list[dict[str, Any]]] = {}
            timings: dict[str, list[float]] = {}
            tokens: list[int] = []
            for name, value in recipes:
                memory.config.retrieval.fusion = type(memory.config.retrieval)(
                    fusion=value
                ).fusion  # the retrievers read the same config object
                rows, ms = [], []
                for q in questions:
                    started = time.perf_counter()
                    hits = memory.search(q.text, user_id=tenant, limit=max(KS))
                    ms.append((time.perf_counter() - started) * 1000)
                    refs = [REFS.get(f.id, []) for f in hits.facts]
                    rows.append(row(q, refs))
                    if name == recipes[-1][0]:
                        block = memory.context_block(q.text, user_id=tenant, limit=10)
                        tokens.append(block.tokens)
                systems[f"mem0g {name}"] = rows
                timings[name] = ms
            for base in ("dense", "bm25", "rrf"):
                rows = []
                for q in questions:
                    refs = getattr(baselines, base)(q.text, max(KS))
                    rows.append(row(q, refs))
                systems[f"baseline {base}"] = rows
            results["units"][unit.id] = {
                "facts": len(stored),
                "questions": len(questions),
                "held_out": args.tune is not None and unit.id != args.tune,
                "systems": {s: scores(r) for s, r in systems.items()},
                "search_ms": {
                    n: {"p50": round(percentile(v, 50), 1), "p95": round(percentile(v, 95), 1)}
                    for n, v in timings.items()
                },
                "context_tokens_k10": {
                    "mean": round(sum(tokens) / max(len(tokens), 1), 1),
                    "max": max(tokens, default=0),
                },
            }
    finally:
        memory.close()
    results["load_after"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    for uid, u in results["units"].items():
        role = "held out" if u["held_out"] else ("tuned on" if args.tune else "")
        print(f"\n{uid} ({u['facts']} facts, {u['questions']} questions) {role}")
        print("system | " + " | ".join(f"{c} {NAMES.get(c, '')}" for c in (*CATEGORIES,
                                                                          "overall")))  # fmt: skip
        for system, by in u["systems"].items():
            cells = [f"{by[c]['r@5']:.3f}/{by[c]['r@10']:.3f}/{by[c]['r@20']:.3f}"
                     for c in (*CATEGORIES, "overall")]  # fmt: skip
            print(f"{system} | " + " | ".join(cells))
        print("search ms", u["search_ms"], "context tokens", u["context_tokens_k10"])
    print("load", results["load_before"], "->", results["load_after"], "json", args.out)


if __name__ == "__main__":
    main()
