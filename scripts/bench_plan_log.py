"""What the plan log costs a Neo4j writer, and what it buys a client-held copy (issue #18).

`graph_store.plan_log` makes each plan's transaction also write the plan (zlib-compressed
WritePlan JSON) on the server, so that other clients' local copies catch up by applying the
plans since their version instead of copying the tenant whole (mem0g/memory/copy.py). This
measures, on a real Neo4j:

1. **The writer's cost**: `Memory.add` (the LLM path against the scripted TEST DOUBLE server,
   real MiniLM embeddings) alternated between a writer that keeps the log and one that does
   not, each on its own tenant of the same size: add p50 / p95 each, and the logged plans'
   sizes.
2. **What it buys**: a copy of the logging writer's tenant is made whole (timed), the writer
   adds k more, and the copy catches up by the log (timed); then a writer without the log adds
   k more, and the copy must copy the tenant whole (timed).

    scripts/neo4j start --fresh --password mem0g-bench --heap 1g
    NEO4J_URI=bolt://127.0.0.1:7687 NEO4J_PASSWORD=mem0g-bench HF_HUB_OFFLINE=1 \\
        .venv/bin/python scripts/bench_plan_log.py --prefill 1000 --adds 200 \\
        --out bench-results/plan-log.json

It wipes the database's mem0g data first. Not a unit test: prints p50 / p95 and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench.add import make_turns, scripted_rules  # noqa: E402
from bench.data import BASE_TIME, build_graph  # noqa: E402
from bench.timing import summary  # noqa: E402

from mem0g import Memory  # noqa: E402
from mem0g.embed import make_embedder  # noqa: E402
from mem0g.testing import ScriptedLLMServer  # noqa: E402
from mem0g.types import Tenant  # noqa: E402


def _memory(args: argparse.Namespace, base_url: str, embedder: Any, **graph: Any) -> Memory:
    store = {"provider": "neo4j", "url": args.neo4j_uri, "username": "neo4j",
             "password": args.neo4j_password, "warmup": False, **graph}  # fmt: skip
    llm = {"base_url": base_url, "api_key": "bench", "max_retries": 0}
    config = {"llm": llm, "graph_store": store, "memory": {"summary_every": 100_000}}
    return Memory(config, embedder=embedder)


def _load() -> float:
    return os.getloadavg()[0]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--neo4j-uri", default=os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687"))
    p.add_argument("--neo4j-password", default=os.environ.get("NEO4J_PASSWORD", "mem0g-bench"))
    p.add_argument("--prefill", type=int, default=1000, help="adds per tenant before timing")
    p.add_argument("--adds", type=int, default=200, help="timed adds per writer, alternated")
    p.add_argument("--behind", default="1,10,50", help="plans the copy is behind, comma list")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", type=Path, default=ROOT / "bench-results" / "plan-log.json")
    args = p.parse_args()
    behind = [int(k) for k in args.behind.split(",")]
    rng = random.Random(args.seed)
    graph = build_graph(2000, args.seed)
    total = 2 * args.prefill + 2 * args.adds + 2 * sum(behind) + 10
    turns = make_turns(graph, total, rng)
    embedder = make_embedder()
    logged_user = Tenant(user_id="logged")
    when = iter(BASE_TIME + timedelta(minutes=i) for i in range(total + 10))
    texts = iter(t.text for t in turns)
    report: dict[str, Any] = {"benchmark": "mem0g plan log (issue #18)", "load_before": _load(),
                              "prefill_adds": args.prefill, "timed_adds": args.adds}  # fmt: skip
    with ScriptedLLMServer(scripted_rules(turns)) as server:
        logging = _memory(args, server.base_url, embedder, plan_log=True)
        plain = _memory(args, server.base_url, embedder, plan_log=False)
        try:
            logging.reset()
            started = time.perf_counter()
            for i in range(args.prefill):
                logging.add(next(texts), user_id="logged", timestamp=next(when))
                plain.add(next(texts), user_id="plain", timestamp=next(when))
                if (i + 1) % 100 == 0:
                    print(f"  prefill {i + 1}/{args.prefill} adds each, "
                          f"{time.perf_counter() - started:.0f} s", file=sys.stderr)  # fmt: skip
            took: dict[str, list[float]] = {"with the log": [], "without": []}
            pair = [("with the log", logging, "logged"), ("without", plain, "plain")]
            for i in range(args.adds):
                for name, m, user in pair if i % 2 == 0 else pair[::-1]:  # ABBA: no order bias
                    t0 = time.perf_counter()
                    m.add(next(texts), user_id=user, timestamp=next(when))
                    took[name].append(time.perf_counter() - t0)
            report["add_ms"] = {name: summary(values) for name, values in took.items()}
            with logging.store._driver.session() as session:  # type: ignore[attr-defined]
                rows = session.run(
                    "MATCH (p:PlanLog) WHERE p.tenant_key = $k RETURN size(p.plan) AS n",
                    k=logged_user.key,
                ).data()
            sizes = sorted(r["n"] for r in rows)
            report["logged_plans"] = {
                "kept": len(sizes),
                "bytes_p50": statistics.median(sizes) if sizes else None,
                "bytes_p95": sizes[int(0.95 * (len(sizes) - 1))] if sizes else None,
            }
            stats = logging.stats(user_id="logged")
            report["tenant"] = {"entities": stats.entities, "relations": stats.relations,
                                "facts": stats.facts}  # fmt: skip
            report["catch_up"] = []
            with tempfile.TemporaryDirectory() as where:
                reader = _memory(args, server.base_url, embedder, local_copy=where)
                try:
                    assert reader.copy is not None
                    t0 = time.perf_counter()
                    reader.copy.refresh(logged_user, wait=True)
                    report["whole_copy_first_s"] = round(time.perf_counter() - t0, 3)
                    for k in behind:
                        for name, writer in (("by the log", logging), ("whole", plain)):
                            for _ in range(k):  # the plain writer writes the logged tenant too
                                writer.add(next(texts), user_id="logged", timestamp=next(when))
                            before = reader.copy.status()
                            t0 = time.perf_counter()
                            reader.copy.refresh(logged_user, wait=True)
                            seconds = time.perf_counter() - t0
                            after = reader.copy.status()
                            how = ("by the log" if after.caught_up > before.caught_up
                                   else "whole")  # fmt: skip
                            assert reader.copy.held(logged_user) == \
                                reader.store.scope_versions(logged_user)  # fmt: skip
                            row = {"behind": k, "writer": name, "caught_up": how,
                                   "seconds": round(seconds, 3)}  # fmt: skip
                            report["catch_up"].append(row)
                            print(f"  {k} plans behind, {how}: {seconds * 1000:.0f} ms",
                                  file=sys.stderr)  # fmt: skip
                finally:
                    reader.close()
        finally:
            logging.close()
            plain.close()
    report["load_after"] = _load()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    for name, s in report["add_ms"].items():
        print(f"add {name:13s} p50 {s['p50_ms']:.1f} ms  p95 {s['p95_ms']:.1f} ms")
    lp = report["logged_plans"]
    print(f"logged plans kept: {lp['kept']}, size p50 {lp['bytes_p50']} B, p95 {lp['bytes_p95']} B")
    print(f"tenant: {report['tenant']}; whole copy at first: {report['whole_copy_first_s']} s")
    for row in report["catch_up"]:
        print(f"  {row['behind']:3d} plans behind, {row['caught_up']:10s}: {row['seconds']} s")
    print(f"load {report['load_before']:.2f} before, {report['load_after']:.2f} after; "
          f"JSON {args.out}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
