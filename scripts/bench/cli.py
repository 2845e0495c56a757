"""The command line of scripts/bench_search.py and the run over sizes that writes the JSON."""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import bench
from bench.add import bench_add
from bench.breakdown import statement_breakdown
from bench.cypher_profile import profile_searches
from bench.data import (
    TARGET_USER,
    UTC,
    build_graph,
    make_queries,
    sentence,
    warm_queries,
)
from bench.report import TARGET_EDGES, print_report, targets
from bench.search import (
    bench_search,
    later_phases,
    restart_phases,
    restart_variants,
    search_all,
)
from bench.stores import BenchStores, machine_info, parse_cpus
from bench.timing import Progress, busy, load_average, profiled
from bench.vectors import VectorSource, borrowed_vectors, graph_vectors, write_graph
from mem0g import Memory
from mem0g.config import EmbedderConfig, GraphStoreConfig, MemoryConfig
from mem0g.embed import CachedEmbedder, make_embedder
from mem0g.types import Tenant

FACT_BATCH = 200  # facts per add(infer=False) of --facts


def add_facts(memory: Memory, count: int, seed: int, progress: Progress, label: str) -> float:
    """`count` facts for the searched user, through the public `add(infer=False)` (embedded
    for real, batches of 200); returns the seconds taken."""
    if count <= 0:
        return 0.0
    rng = random.Random(seed + 11)
    begin = time.perf_counter()
    with progress.task(f"{label} facts", count) as advance:
        for start in range(0, count, FACT_BATCH):
            batch = min(FACT_BATCH, count - start)
            messages = [{"role": "user", "content": sentence(rng)} for _ in range(batch)]
            memory.add(messages, user_id=TARGET_USER, infer=False)
            advance(batch)
    return round(time.perf_counter() - begin, 2)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(bench.__doc__ or "").split("\n\n")[0])
    p.add_argument("--sizes", default="1000,10000", help="comma-separated edge counts")
    p.add_argument("--out", type=Path, default=Path("bench-results/search.json"))
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--warmup", type=int, default=10, help="untimed queries (and adds) first")
    p.add_argument("--adds", type=int, default=100)
    p.add_argument(
        "--facts",
        type=int,
        default=0,
        metavar="N",
        help="add N facts to the searched user (add(infer=False), batches of 200, the "
        "sentences of bench_fact_scope.py) before the timed searches, so the fact half of a "
        "search has a scope to read (default 0: edges only)",
    )
    p.add_argument(
        "--add-size",
        type=int,
        default=TARGET_EDGES,
        help="store size for the add benchmark (nearest size run if absent)",
    )
    p.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    p.add_argument(
        "--paths",
        choices=("both", "graph"),
        default="both",
        help="add/search paths: graph + facts (the library default) or the graph alone",
    )
    p.add_argument("--store", choices=("embedded", "neo4j"), default="embedded")
    p.add_argument(
        "--neo4j-uri",
        default=None,
        help="an existing Neo4j server (default: NEO4J_URI; NEO4J_USERNAME/NEO4J_PASSWORD for "
        "credentials); unset = start a throwaway one with scripts/neo4j",
    )
    p.add_argument("--neo4j-database", default=None, help="database name (default: server's)")
    p.add_argument(
        "--wipe",
        action="store_true",
        help="allow wiping a non-empty external Neo4j database before each size",
    )
    p.add_argument(
        "--server-cpus",
        default=None,
        metavar="LIST",
        help="run the throwaway Neo4j on these CPUs only (e.g. 1): with --client-cpus, the "
        "server gets cores of its own, as on a separate machine",
    )
    p.add_argument(
        "--client-cpus",
        default=None,
        metavar="LIST",
        help="run this benchmark (client, model) on these CPUs only (e.g. 0; Linux)",
    )
    p.add_argument(
        "--settle",
        type=float,
        default=None,
        metavar="S",
        help="after building each store, wait until the server is idle (throwaway server: its "
        "CPU time is watched, up to S seconds, default 600) or S seconds (an external server, "
        "default 30): a bulk load leaves index merges running that would be timed as search",
    )
    p.add_argument(
        "--neo4j-setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a neo4j.conf setting for the throwaway server (repeatable)",
    )
    p.add_argument("--neo4j-heap", default="2g", help="heap of the throwaway server")
    p.add_argument(
        "--neo4j-entity-vectors",
        type=int,
        default=GraphStoreConfig().entity_vectors,
        metavar="N",
        help="entity name vectors the store holds for exact resolution (0: the index only)",
    )
    p.add_argument("--neo4j-pagecache", default="1g", help="page cache of the throwaway server")
    p.add_argument(
        "--other-tenants",
        type=int,
        default=0,
        metavar="M",
        help="extra edges spread over 10 other tenants (vectors borrowed)",
    )
    p.add_argument(
        "--pool-size",
        type=int,
        default=0,
        help="embed at most this many distinct texts per kind (names, triples) per "
        "size and reuse perturbed vectors for the rest; 0 = embed everything",
    )
    p.add_argument("--write-batch", type=int, default=1000, help="edges per WritePlan")
    p.add_argument(
        "--reindex",
        action="store_true",
        help="after the search run on each built store, rebuild its vector indexes "
        "(Memory.rebuild_indexes, `mem0g reindex`) and run the same queries again",
    )
    p.add_argument(
        "--trickle",
        type=int,
        default=0,
        metavar="N",
        help="then write N more edges to the tenant in writes of 5 (an add's size), as a "
        "live memory grows after a reindex, and run the same queries again",
    )
    p.add_argument(
        "--server-warmup",
        type=int,
        default=0,
        metavar="N",
        help="then run N untimed searches on other query texts and the same queries again "
        "(phase 'warm'); later phases are also preceded by them: a JVM server compiles its "
        "read paths only after hundreds of searches, and a long-running server is warm",
    )
    p.add_argument(
        "--restart-phases",
        type=int,
        default=0,
        metavar="N",
        help="neo4j (throwaway server): after the first run, restart the server four times "
        "and time the first N searches each time: 'cold' (a store opened without its warm-up), "
        "'first minute' (with it, searched at once), 'after store warm-up' (searched once it "
        "ended) and 'warm start' (`mem0g warmup` in its own process first, as a deploy runs "
        "it, then searched at once); servers restart on every deploy, upgrade and crash",
    )
    p.add_argument(
        "--local-copy",
        action="store_true",
        help="with --restart-phases: one more restart phase, 'first minute, local copy': the "
        "searched user copied to a client-held copy (graph_store.local_copy) before the "
        "restart, then a store opened with it and searched at once",
    )
    p.add_argument(
        "--store-warmup-seconds",
        type=float,
        default=GraphStoreConfig().warmup_seconds,
        metavar="S",
        help="the store's warm-up bound in the restart phases (graph_store.warmup_seconds)",
    )
    p.add_argument(
        "--store-warmup-parallel",
        type=int,
        default=2,
        metavar="N",
        help="sessions the store's warm-up reads on at once in the restart phases",
    )
    p.add_argument(
        "--packed-reads",
        choices=("on", "off"),
        default="on",
        help="neo4j: graph_store.packed_reads, each read's parameters in one map parameter so "
        "a statement is planned once whatever its strings' and lists' lengths (off: sent "
        "apart, as before)",
    )
    p.add_argument(
        "--restart-variant",
        action="append",
        default=[],
        metavar="NAME|JVM FLAGS|CYPHER OPTIONS[|separate]",
        help="neo4j, with --restart-phases N: after the other phases, restart the server with "
        "these JVM flags and search with these Cypher query options (e.g. "
        "'interpreted||expressionEngine=interpreted', 'c1|-XX:TieredStopAtLevel=1|'; a 4th "
        "field 'separate': the graph half as separate reads, not the walk statement), no "
        "store warm-up: phases 'cold NAME' (the first N searches) and 'warm NAME' (after "
        "--server-warmup untimed ones); repeatable",
    )
    p.add_argument(
        "--statement-breakdown",
        type=int,
        default=0,
        metavar="N",
        help="neo4j (throwaway server): after the first run, record its searches' reads and "
        "replay them after restarts, one read at a time, with the server's CPU per read from "
        "/proc: each statement alone after its own restart (N reads), then N searches' reads "
        "in order after one restart (scripts/bench/breakdown.py)",
    )
    p.add_argument(
        "--breakdown-passes",
        default="alone,mixed",
        metavar="PASSES",
        help="with --statement-breakdown: which passes, comma-separated: 'alone', 'mixed', "
        "'warmed' (after one restart, the store's own warm-up run to its end and its reads "
        "counted, then N searches' reads one at a time, then --server-warmup untimed searches' "
        "reads, then the N again: each statement after the warm-up against warm), 'idle' "
        "(with 'warmed': the server's CPU share, the JIT's apart, while nobody reads after "
        "the warm-up, until it is quiet)",
    )
    p.add_argument(
        "--variants-only",
        action="store_true",
        help="with --restart-variant: only the variants' phases (no cold / first minute / "
        "after store warm-up / warm phases before them), for comparing them on a busy machine",
    )
    p.add_argument("--embed-batch", type=int, default=256)
    p.add_argument(
        "--vector-cache",
        type=Path,
        default=None,
        help="an .npz of text embeddings reused across runs (same embedder only); reruns then "
        "skip the slow build-time embedding",
    )
    p.add_argument(
        "--profile-dir",
        type=Path,
        default=None,
        help="also cProfile 50 extra queries per size and write the stats here",
    )
    p.add_argument(
        "--cypher-profile",
        type=int,
        default=0,
        metavar="N",
        help="neo4j: PROFILE the statements of N extra searches per size (db hits, rows)",
    )
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--quiet", action="store_true")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    args.command = " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])])
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    if not sizes or min(sizes) < 10:
        raise SystemExit("--sizes needs edge counts >= 10")
    if args.facts < 0 or (args.facts and args.paths != "both"):
        raise SystemExit("--facts needs a count >= 0 and --paths both (facts are the fact path's)")
    client_cpus = parse_cpus(args.client_cpus) if args.client_cpus else None
    progress = Progress(args.quiet)
    started = datetime.now(UTC)
    load_start = load_average()
    stores = BenchStores(args.store, args, progress)
    stores.start()  # fail fast on an unavailable server, before loading a model
    try:
        if client_cpus:  # after the server started (it may use other CPUs), before the model
            os.sched_setaffinity(0, client_cpus)
        return run(args, stores, progress, started, load_start)
    finally:
        stores.close()


def run(
    args: argparse.Namespace,
    stores: BenchStores,
    progress: Progress,
    started: datetime,
    load_start: list[float],
) -> int:
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    provider = "sentence-transformers" if args.embedder == "minilm" else "hashing"
    t0 = time.perf_counter()
    cached = make_embedder(EmbedderConfig(provider=provider))
    inner = cached.inner
    progress.line(
        f"embedder {inner.name} ({inner.dims} dims) ready in "
        f"{time.perf_counter() - t0:.1f}s; load avg {load_start}"
    )
    source = VectorSource(inner, args.pool_size, args.embed_batch, progress)
    if args.vector_cache is not None:
        loaded = source.load(args.vector_cache)
        progress.line(f"vector cache {args.vector_cache}: {loaded} vectors loaded")
    add_size = min(sizes, key=lambda n: (abs(n - args.add_size), n))
    memory_section = {"graph": True, "facts": args.paths == "both"}
    rng = random.Random(args.seed)
    results: list[dict[str, Any]] = []
    add_result: dict[str, Any] | None = None
    notes: list[str] = [
        "search and query-embedding timings are interleaved per query (alternating order); "
        "query texts are distinct, so Memory.search embeds each one (no cache hit)",
        "query_embed = embedder.inner.embed([q]) on the same strings, bypassing the cache",
        "add overhead = add wall time - the part of it spent waiting on an LLM round trip "
        "(LLMClient._complete: openai SDK + HTTP + the scripted TEST DOUBLE server, an "
        "in-process thread) or on the embedding model; the graph and fact paths run "
        "concurrently, so the union of those spans is subtracted, not their sum; background "
        "summarize calls are not subtracted",
        "overhead_cpu = CPU time of the calling thread and the path threads during the add "
        "minus their CPU time inside those spans: mem0g's own CPU work per add, load-robust; it "
        "can exceed the wall overhead, because one path's work overlaps the other path's LLM "
        "wait (and it leaves out fsync waits and descheduling)",
        "profiles (--profile-dir) run on extra queries/adds after the timed ones; the add "
        "profile runs the graph and fact paths inline (cProfile sees one thread)",
        "the synthetic store holds graph edges only (no facts) unless --facts N adds N facts "
        "to the searched user (add(infer=False), real embeddings; without them the fact half "
        "of Memory.search scans nothing); the add benchmark's facts are the ones its adds create",
        "search_excluding_embed = search wall time - time in the embedding model inside it "
        "(retrieval + store work only); _cpu: the same on the calling thread's CPU time",
        "neo4j: after each build the benchmark waits for the server to go idle (build.settle): "
        "a bulk load leaves Lucene index merges and flushes running, which would otherwise be "
        "timed as search; server_cpu_per_search_ms = the throwaway server's CPU time (all its "
        "threads, /proc) over the timed queries / their count (null for an external server)",
        "busy: other processes used more than 0.25 of a core during the timed searches "
        "(other_processes_cores = all CPU time on the machine, /proc/stat, minus this process's "
        "and the throwaway server's, over the wall time); without that figure (an external "
        "server, not Linux): load average above the CPU count",
        "phases: the first row of a size is measured right after its build (for a Neo4j server "
        "started for the run: its read paths not yet JIT-compiled); with --server-warmup N, "
        "the 'warm' phase runs the same queries after N untimed searches on other query texts, "
        "and every later phase is preceded by N such searches too (server_warmup: CPU per "
        "search in blocks of 100, the warm-up curve)",
        "restart phases (--restart-phases N, neo4j): the server is restarted (a fresh JVM, "
        "its data and OS file cache kept) before each of 'cold' (store opened with "
        "graph_store.warmup off), 'first minute' (warm-up on, the first N searches at once, "
        "concurrent with it), 'after store warm-up' (searched once the warm-up ended) and "
        "'warm start' (`mem0g warmup --seconds S` run first in its own process, S the store's "
        "warm-up bound, then searched at once); each times the first N searches, none untimed",
    ]

    def write_report(complete: bool) -> dict[str, Any]:
        """Written after every size too, so a long run that dies still leaves its numbers."""
        report: dict[str, Any] = {
            "benchmark": "mem0g search/add latency",
            "date": started.isoformat(timespec="seconds"),
            "duration_s": round((datetime.now(UTC) - started).total_seconds(), 1),
            "command": args.command,
            "machine": {
                **machine_info(),
                "load_avg_start": load_start,
                "load_avg_end": load_average(),
            },
            "embedder": {
                "kind": args.embedder,
                "name": inner.name,
                "dims": inner.dims,
                "provider": provider,
            },
            "store": args.store,
            "store_info": stores.info,
            "config": {
                "queries": args.queries,
                "warmup": args.warmup,
                "adds": args.adds,
                "facts": args.facts,
                "seed": args.seed,
                "pool_size": args.pool_size,
                "vector_cache": None if args.vector_cache is None else str(args.vector_cache),
                "memory": memory_section,
                "other_tenants": args.other_tenants,
                "client_cpus": sorted(os.sched_getaffinity(0))
                if hasattr(os, "sched_getaffinity")
                else None,
                "server_cpus": args.server_cpus,
                "settle": args.settle,
                "server_warmup": args.server_warmup,
                "restart_phases": args.restart_phases,
                "store_warmup_seconds": args.store_warmup_seconds,
                "store_warmup_parallel": args.store_warmup_parallel,
                "packed_reads": args.packed_reads,
                "restart_variants": args.restart_variant,
                "variants_only": args.variants_only,
                "neo4j_entity_vectors": (
                    args.neo4j_entity_vectors if args.store == "neo4j" else None
                ),
                "write_batch": args.write_batch,
                "search_limit": 10,
                "retrieval": MemoryConfig().retrieval.model_dump(),
            },
            "sizes": results,
            "add": add_result,
            "notes": notes,
        }
        report["targets"] = targets(args.store, results, add_result)
        report["complete"] = complete
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")
        return report

    for n in sizes:
        label = f"{n:,} edges"
        size_rng = random.Random(rng.randrange(2**32))
        load_before = load_average()
        begin = time.perf_counter()
        graph = build_graph(n, args.seed)
        with tempfile.TemporaryDirectory(prefix=f"mem0g-bench-{n}-") as tmp:
            store = stores.open(Path(tmp) / "graph", inner.dims)
            names, edges, vec_info = graph_vectors(graph, source, size_rng, label)
            if vec_info["names"]["reused"] or vec_info["triples"]["reused"]:
                notes.append(
                    f"{n} edges: vector reuse: {vec_info['triples']['pooled']} triple texts and "
                    f"{vec_info['names']['pooled']} names embedded for real; the other "
                    f"{vec_info['triples']['reused']} triples / {vec_info['names']['reused']} "
                    "names borrow a pooled vector of the same relation+destination (else "
                    "relation; names: same type) plus Gaussian noise of norm 0.2, re-normalised"
                )
            target_ids: dict[str, str] = {}
            write_s = write_graph(
                store,
                Tenant(user_id=TARGET_USER),
                graph,
                names,
                edges,
                args.write_batch,
                progress,
                f"{label} write",
                target_ids,
            )
            other_edges = 0
            if args.other_tenants > 0:
                per = max(10, args.other_tenants // 10)
                for t in range(10):
                    if other_edges >= args.other_tenants:
                        break
                    count = min(per, args.other_tenants - other_edges)
                    other = build_graph(count, args.seed + 1 + t, person_prefix=f"Member{t}")
                    o_names, o_edges = borrowed_vectors(other, graph, names, edges, size_rng)
                    write_s += write_graph(
                        store,
                        Tenant(user_id=f"other-{t}"),
                        other,
                        o_names,
                        o_edges,
                        args.write_batch,
                        progress,
                        f"{label} other tenant {t}",
                    )
                    other_edges += count
            build_s = time.perf_counter() - begin
            settled = stores.settle()
            queries = make_queries(graph, args.queries + args.warmup + 50, size_rng)
            memory = Memory({"memory": memory_section}, embedder=CachedEmbedder(inner), store=store)
            facts_s = add_facts(memory, args.facts, args.seed, progress, label)
            if facts_s:  # the facts' index work, as the build's, is not timed as search
                settled = {"build": settled, "facts": stores.settle()}
            search_load = load_average()
            timing = bench_search(
                memory,
                inner,
                queries[: args.queries + args.warmup],
                args.warmup,
                progress,
                label,
                stores.server_cpu,
                stores.others_cpu,
            )
            timing_load = load_average()
            entry: dict[str, Any] = {
                "edges": n,
                "entities": len(graph.entity_types),
                "other_tenant_edges": other_edges,
                "build": {
                    "total_s": round(build_s, 2),
                    "write_s": round(write_s, 2),
                    "vectors": vec_info,
                    "settle": settled,
                    "facts": args.facts,
                    "facts_s": facts_s,
                },
                **timing,
                "load_avg_before_build": load_before,
                "load_avg_before": search_load,
                "load_avg_during": timing_load,
                "busy": busy(search_load, timing_load, others=timing["other_processes_cores"]),
            }
            entry["phases"] = []
            if args.statement_breakdown > 0 and stores.kind == "neo4j":
                entry["statement_breakdown"] = statement_breakdown(
                    args, stores, memory, inner.dims, queries[: args.queries + args.warmup],
                    TARGET_USER, progress, label,
                )  # fmt: skip
                write_report(complete=False)
            if not (args.variants_only and args.restart_variant):
                entry["phases"], memory = restart_phases(
                    args,
                    stores,
                    memory,
                    inner,
                    queries[: args.queries + args.warmup],
                    progress,
                    label,
                )
                store = memory.store  # the restart phases open a new one on the same data
                entry["phases"] += later_phases(
                    args,
                    stores,
                    memory,
                    inner,
                    queries[: args.queries + args.warmup],
                    (graph, names, edges, target_ids),
                    size_rng,
                    progress,
                    label,
                )
            if args.profile_dir is not None:
                path = args.profile_dir / f"search_{n}.txt"
                work = functools.partial(search_all, memory, queries[-50:])
                entry["profile"] = {"file": str(path), "top_tottime": profiled(work, 50, path)}
            if args.cypher_profile > 0 and stores.kind == "neo4j":
                extra = queries[-args.cypher_profile :]
                entry["cypher_profile"] = profile_searches(memory, extra)
                for name, prof in entry["cypher_profile"].items():
                    progress.line(f"{label}: PROFILE {name}: {prof}")
            if n == add_size and args.adds > 0:
                add_profile = args.profile_dir / f"add_{n}.txt" if args.profile_dir else None
                add_result = bench_add(
                    store,
                    inner,
                    graph,
                    args.adds,
                    min(args.warmup, 3),
                    size_rng,
                    progress,
                    memory_section,
                    add_profile,
                )
                add_result["load_avg_during"] = load_average()
                add_result["busy"] = busy(timing_load, add_result["load_avg_during"])
            memory.close()
            entry["phases"] += restart_variants(
                args,
                stores,
                inner,
                queries[: args.queries + args.warmup],
                warm_queries(graph, args.server_warmup, queries, args.seed + 5),
                progress,
                label,
            )
            results.append(entry)
            line = (
                f"{label}: search p95 {timing['search']['p95_ms']:.1f} ms, embed p95 "
                f"{timing['query_embed']['p95_ms']:.1f} ms, ratio {timing['ratio_p95']:.2f}"
            )
            progress.line(line)
            write_report(complete=False)
            if args.vector_cache is not None:
                source.save(args.vector_cache)
    report = write_report(complete=True)
    if not args.quiet:
        print_report(report)
        print(f"results written to {args.out}")
    return 0
