"""A/B of a search's entity linking on Neo4j: the held name vectors ranked on the client
(`name_ranker`, the default) against the HNSW entity index (the store told it holds no
names), on one store that `bench_search.py` built on a server you started.

Both arms search the same queries, alternating which goes first, each `Memory` with its own
embedding cache (so both embed every query); both are warmed first. Prints search p50/p95
per arm, the client CPU, the server's CPU per search in blocks of one arm at a time (with
`--server-pid`), and how many searches linked other entities or returned other edges,
with examples; writes JSON.

    scripts/neo4j start --home /tmp/ab-home --bolt-port 7690 --http-port 7477 --no-auth \\
        --heap 2g --pagecache 1g --fresh --cpus 1
    PYTHONPATH=. python scripts/bench_search.py --store neo4j --neo4j-uri bolt://127.0.0.1:7690 \\
        --wipe --sizes 100000 --adds 0 --client-cpus 0 --queries 20 --pool-size 20000
    PYTHONPATH=. python scripts/ab_linking.py --uri bolt://127.0.0.1:7690 --client-cpus 0 \\
        --server-pid "$(cat /tmp/ab-home/run/neo4j.pid)" --out bench-results/ab-linking.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench.data import TARGET_USER, build_graph, make_queries, warm_queries
from bench.stores import parse_cpus

from mem0g import Memory
from mem0g.config import EmbedderConfig
from mem0g.embed import CachedEmbedder, make_embedder
from mem0g.stores.neo4j import Neo4jGraphStore
from mem0g.types import Tenant

ARMS = ("held", "index")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--uri", required=True, help="the server bench_search.py built the store on")
    p.add_argument("--edges", type=int, default=100_000, help="the size bench_search.py built")
    p.add_argument("--seed", type=int, default=7, help="bench_search.py's --seed")
    p.add_argument("--queries", type=int, default=400)
    p.add_argument("--warmup", type=int, default=1000, help="untimed searches per arm first")
    p.add_argument("--block", type=int, default=200, help="searches per server-CPU block")
    p.add_argument("--server-pid", type=int, help="the server's pid, for its CPU per search")
    p.add_argument("--client-cpus", help="run this script on these CPUs only (e.g. 0)")
    p.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    if args.client_cpus:
        os.sched_setaffinity(0, parse_cpus(args.client_cpus))

    provider = "sentence-transformers" if args.embedder == "minilm" else "hashing"
    inner = make_embedder(EmbedderConfig(provider=provider)).inner
    password = os.environ.get("NEO4J_PASSWORD")  # as bench_search.py reads them
    auth = (os.environ.get("NEO4J_USERNAME", "neo4j"), password) if password else None

    def memory(held: bool) -> Memory:
        store = Neo4jGraphStore(args.uri, auth)
        if not held:  # the retriever then links by `similar_entities`: the index
            store.capabilities = dataclasses.replace(store.capabilities, held_names=False)
        return Memory({}, embedder=CachedEmbedder(inner), store=store)

    arms = {"held": memory(True), "index": memory(False)}
    graph = build_graph(args.edges, args.seed)
    timed = make_queries(graph, args.queries, random.Random(args.seed))
    scope = Tenant(user_id=TARGET_USER)

    def search(name: str, query: str) -> Any:
        return arms[name].search(query, user_id=TARGET_USER, limit=10)

    warm = warm_queries(graph, args.warmup, timed, args.seed + 1)
    for i, query in enumerate(warm):
        for name in ARMS if i % 2 == 0 else ARMS[::-1]:
            search(name, query)
        if (i + 1) % 200 == 0:
            print(f"warm-up {i + 1}/{len(warm)} per arm", file=sys.stderr)
    held_store = arms["held"].store
    assert isinstance(held_store, Neo4jGraphStore)
    if held_store.name_ranker(scope, wait=True) is None:
        raise SystemExit("the scope's names are not held: nothing to compare")

    wall: dict[str, list[float]] = {name: [] for name in ARMS}
    cpu: dict[str, list[float]] = {name: [] for name in ARMS}
    linked_apart, edges_apart, examples = 0, 0, []
    for i, query in enumerate(timed):
        out = {}
        for name in ARMS if i % 2 == 0 else ARMS[::-1]:
            start, start_cpu = time.perf_counter(), time.thread_time()
            result = search(name, query)
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.thread_time() - start_cpu)
            out[name] = result
        names = {n: [(e.name, round(e.score, 3)) for e in out[n].entities] for n in ARMS}
        if names["held"] != names["index"]:
            linked_apart += 1
            if len(examples) < 8:
                examples.append({"query": query, **names})
        elif [h.id for h in out["held"].relations] != [h.id for h in out["index"].relations]:
            edges_apart += 1

    server: dict[str, float] = {}
    if args.server_pid:  # one arm at a time, twice each: the server's CPU is not per call
        for name in (*ARMS, *ARMS):
            before = _server_cpu(args.server_pid)
            for query in timed[: args.block]:
                search(name, query + " ")  # another text: embedded again, not cached
            key = name if name not in server else f"{name} again"
            server[key] = (_server_cpu(args.server_pid) - before) / args.block * 1e3

    report = {
        "benchmark": "entity linking on Neo4j: held names against the HNSW index",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": " ".join(sys.argv[1:]),
        "load_avg": os.getloadavg(),
        "queries": len(timed),
        "warmup_per_arm": len(warm),
        "arms": {
            name: {
                "search_p50_ms": _ms(wall[name], 50),
                "search_p95_ms": _ms(wall[name], 95),
                "client_cpu_p50_ms": _ms(cpu[name], 50),
                "client_cpu_p95_ms": _ms(cpu[name], 95),
            }
            for name in ARMS
        },
        "server_cpu_per_search_ms": server,
        "searches_linking_other_entities": linked_apart,
        "searches_with_other_edges_only": edges_apart,
        "examples": examples,
    }
    for name, row in report["arms"].items():
        print(f"{name:6} search p50 {row['search_p50_ms']:.1f} / p95 {row['search_p95_ms']:.1f} ms,"
              f" client CPU p50 {row['client_cpu_p50_ms']:.1f} ms")  # fmt: skip
    for name, value in server.items():
        print(f"server CPU per search, {name}: {value:.1f} ms")
    print(f"linked other entities: {linked_apart} of {len(timed)}; other edges only: {edges_apart}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    print(f"results written to {args.out}")
    for m in arms.values():
        m.close()
    return 0


def _ms(values: list[float], q: int) -> float:
    return round(float(np.percentile(values, q)) * 1e3, 3)


def _server_cpu(pid: int) -> float:
    """User + system seconds of every thread of the process (/proc, Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    sys.exit(main())
