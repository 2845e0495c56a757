"""What the dense fact ranking's hubness correction costs over a large fact scope (issue #17).

One user of `--facts` facts stored with `add(infer=False)`, `--per-add` to an add (varied
sentences: an activity, a person, a place, a month), on the embedded store or a Neo4j server
(`--neo4j-uri`, else the test server of mem0g.testing). Then, per size:

- **searches**: `--searches` questions (a person and a place, or an activity), each asked with
  the default recipe (`hybrid`, the correction on) and with `hybrid_uncentred` (off),
  alternated so that load hits both alike; p50 / p95 wall of each, and of the store's
  `fact_vector_sum` read alone;
- **a write, then a search**: `--write-rounds` times one new fact, then one search (the
  embedded store keeps its sum in step with the write; Neo4j reads the sum a plan kept);
- **adds**: p50 / p95 of the one-fact adds above, and on Neo4j the share of the kept sum's
  own statement (`add_fact_vectors`) in them.

The hashing embedder by default, so what is timed is the store and the retriever, not the
model (`--embedder minilm` for the real one). Prints p50/p95, writes JSON.

    PYTHONPATH=. .venv/bin/python scripts/bench_fact_scope.py --facts 2000,20000 [--store neo4j]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/: the bench package

from bench.data import question, sentence
from bench.timing import load_average, summary

from mem0g import Memory
from mem0g.retrieve.fusion import PRESETS
from mem0g.types import Tenant


def _memory(store: str, uri: str | None, embedder: str, work: Path) -> Memory:
    graph: dict[str, Any] = {"provider": "embedded", "path": str(work)}
    if store == "neo4j":
        if uri is None:
            from mem0g.testing.neo4j import neo4j_for_tests

            uri, user, password = neo4j_for_tests()
        else:
            user, password = "neo4j", "mem0g-bench"
        graph = {"provider": "neo4j", "url": uri, "username": user, "password": password}
    provider = "hashing" if embedder == "hashing" else "sentence-transformers"
    config = {"graph_store": graph, "memory": {"summary": False},
              "embedder": {"provider": provider}}  # fmt: skip
    memory = Memory(config)
    if store == "neo4j":
        memory.store.reset()
    return memory


def _statement_clock(memory: Memory) -> dict[str, list[float]]:
    """Wall time of each write statement by name (Neo4j; {} stays empty on the embedded)."""
    spent: dict[str, list[float]] = defaultdict(list)
    store: Any = memory.store
    real = getattr(store, "_run", None)
    if real is None:
        return spent

    def timed(tx: Any, name: str, params: dict[str, Any]) -> Any:
        began = time.perf_counter()
        try:
            return real(tx, name, params)
        finally:
            spent[name].append(time.perf_counter() - began)

    store._run = timed
    return spent


def run(args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="mem0g-fact-scope-"))
    memory = _memory(args.store, args.neo4j_uri, args.embedder, work)
    user, scope = "scope-user", Tenant(user_id="scope-user")
    out: dict[str, Any] = {"store": args.store, "embedder": args.embedder, "sizes": [],
                           "load_before": load_average()}  # fmt: skip
    held = 0
    try:
        for size in sorted(args.facts):
            began = time.perf_counter()
            while held < size:
                n = min(args.per_add, size - held)
                messages = [{"role": "user", "content": sentence(rng)} for _ in range(n)]
                memory.add(messages, user_id=user, infer=False)
                held += n
            print(f"[fact-scope] {size} facts stored in {time.perf_counter() - began:.1f} s",
                  flush=True)  # fmt: skip
            for _ in range(args.warm):  # untimed: caches, plans, JIT
                memory.search(question(rng), user_id=user, limit=10)
            timed: dict[str, list[float]] = {"hybrid": [], "hybrid_uncentred": []}
            reads: list[float] = []
            for i in range(args.searches):
                q = question(rng)
                for name in (("hybrid", "hybrid_uncentred") if i % 2 else
                             ("hybrid_uncentred", "hybrid")):  # fmt: skip
                    memory.config.retrieval.fusion = PRESETS[name]
                    t = time.perf_counter()
                    memory.search(q, user_id=user, limit=10)
                    timed[name].append(time.perf_counter() - t)
                t = time.perf_counter()
                memory.store.fact_vector_sum(scope)
                reads.append(time.perf_counter() - t)
            memory.config.retrieval.fusion = PRESETS["hybrid"]
            spent = _statement_clock(memory)
            adds, after = [], []
            for _ in range(args.write_rounds):
                t = time.perf_counter()
                memory.add(sentence(rng), user_id=user, infer=False)
                adds.append(time.perf_counter() - t)
                held += 1
                t = time.perf_counter()
                memory.search(question(rng), user_id=user, limit=10)
                after.append(time.perf_counter() - t)
            if hasattr(memory.store, "_run"):
                del memory.store._run  # type: ignore[attr-defined]
            row = {
                "facts": size,
                "search_hybrid": summary(timed["hybrid"]),
                "search_hybrid_uncentred": summary(timed["hybrid_uncentred"]),
                "fact_vector_sum_read": summary(reads),
                "search_after_a_write": summary(after),
                "add_one_fact": summary(adds),
                "add_fact_vectors_statement": summary(spent["add_fact_vectors"])
                if spent.get("add_fact_vectors") else None,
                "load": load_average(),
            }  # fmt: skip
            out["sizes"].append(row)
            line = " | ".join(
                f"{k} {v['p50_ms']:.2f}/{v['p95_ms']:.2f}"
                for k, v in row.items()
                if isinstance(v, dict) and "p50_ms" in v
            )
            print(f"[fact-scope] {size} facts, ms p50/p95: {line}", flush=True)
    finally:
        memory.close()
    out["load_after"] = load_average()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--facts", type=lambda s: [int(x) for x in s.split(",")], default=[2000, 20000])
    p.add_argument("--store", choices=("embedded", "neo4j"), default="embedded")
    p.add_argument("--neo4j-uri", default=None, help="a server of scripts/neo4j (else the tests')")
    p.add_argument("--embedder", choices=("hashing", "minilm"), default="hashing")
    p.add_argument("--per-add", type=int, default=100)
    p.add_argument("--searches", type=int, default=300, help="questions, each with both recipes")
    p.add_argument("--warm", type=int, default=100, help="untimed searches first")
    p.add_argument("--write-rounds", type=int, default=100)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", type=Path, default=Path("bench-results/fact-scope.json"))
    args = p.parse_args()
    result = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"[fact-scope] JSON: {args.out}")


if __name__ == "__main__":
    main()
