"""The search benchmark: `Memory.search` interleaved with the query embedding alone, and the
later phases (warm server, after reindex, after trickle writes)."""

from __future__ import annotations

import argparse
import math
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.data import TARGET_USER, SyntheticGraph, build_graph, warm_queries
from bench.stores import BenchStores
from bench.timing import Clock, Progress, TimedEmbedder, busy, load_average, summary
from bench.vectors import borrowed_vectors, write_graph
from mem0g import Memory
from mem0g.embed import CachedEmbedder, Embedder
from mem0g.types import Tenant

TRICKLE_BATCH = 5  # edges per write in --trickle: about one add's


STAGES = (
    "find_entities",
    "similar_entities",
    "expand",
    "siblings",
    "walk",  # expand + siblings + BM25 + records in one read (mem0g/stores/walk.py)
    "similar_relations",
    "get_relations",
    "similar_facts",
    "lexical_relations",  # BM25 reads (stores with `capabilities.lexical`)
    "lexical_entities",
    "common_fact_words",
    "lexical_facts",
    "linked_facts",
    "get_facts",
)


def bench_search(
    memory: Memory,
    inner: Embedder,
    queries: Sequence[str],
    warmup: int,
    progress: Progress,
    label: str,
    server_cpu: Callable[[], float | None] = lambda: None,
    others_cpu: Callable[[], float | None] = lambda: None,
) -> dict[str, Any]:
    """Interleave `Memory.search(q)` with `inner.embed([q])`, alternating which goes first so
    load changes hit both alike; queries are distinct, so the search embeds every one."""
    store = memory.store
    stage_names = [name for name in STAGES if hasattr(store, name)]
    clocks = {name: Clock() for name in (*stage_names, "embed")}
    for name in stage_names:  # instance attributes shadow the methods only for this benchmark
        setattr(store, name, clocks[name].wrap(getattr(store, name)))
    cached = memory.embedder
    cached.inner = TimedEmbedder(inner, clocks["embed"])
    search_s: list[float] = []
    embed_s: list[float] = []
    stages: dict[str, list[float]] = {name: [] for name in clocks}
    returned: list[int] = []
    linked: list[int] = []
    without_embed: list[float] = []
    without_embed_cpu: list[float] = []
    # no untimed queries: the counters start before the first (a cold server's dearest) one
    cpu_start = server_cpu() if warmup == 0 else None
    others_start = others_cpu() if warmup == 0 else None
    timed_start = time.perf_counter()
    try:
        with progress.task(f"{label} search", len(queries)) as advance:
            for i, query in enumerate(queries):
                for clock in clocks.values():
                    clock.reset()
                order = (0, 1) if i % 2 == 0 else (1, 0)
                for which in order:
                    start = time.perf_counter()
                    if which == 0:
                        start_cpu = time.thread_time()
                        result = memory.search(query, user_id=TARGET_USER, limit=10)
                        took = time.perf_counter() - start
                        took_cpu = time.thread_time() - start_cpu
                    else:
                        inner.embed([query])
                        took = time.perf_counter() - start
                    if i < warmup:
                        continue
                    (search_s if which == 0 else embed_s).append(took)
                if i == warmup - 1:
                    cpu_start = server_cpu()
                    others_start = others_cpu()
                    timed_start = time.perf_counter()
                if i >= warmup:
                    without_embed.append(search_s[-1] - clocks["embed"].total)
                    without_embed_cpu.append(took_cpu - clocks["embed"].cpu)
                    returned.append(len(result.relations))
                    linked.append(len(result.entities))
                    for name, clock in clocks.items():
                        stages[name].append(clock.total)
                advance(1)
    finally:
        for name in stage_names:
            delattr(store, name)
        cached.inner = inner
    cpu_end = server_cpu()
    others_end = others_cpu()
    timed_s = time.perf_counter() - timed_start
    others = None
    if others_start is not None and others_end is not None and timed_s > 0:
        others = round((others_end - others_start) / timed_s, 3)
    search = summary(search_s)
    embed = summary(embed_s)
    server_ms = None
    if cpu_start is not None and cpu_end is not None and search_s:
        server_ms = round(1000 * (cpu_end - cpu_start) / len(search_s), 2)
    return {
        "search": search,
        "server_cpu_per_search_ms": server_ms,
        "other_processes_cores": others,
        "query_embed": embed,
        "ratio_p95": round(search["p95_ms"] / embed["p95_ms"], 3),
        "ratio_p50": round(search["p50_ms"] / embed["p50_ms"], 3),
        "search_excluding_embed": summary(without_embed),
        "search_excluding_embed_cpu": summary(without_embed_cpu),
        "stages_in_search": {name: summary(values) for name, values in stages.items()},
        "avg_relations_returned": round(float(np.mean(returned)), 2),
        "avg_entities_linked": round(float(np.mean(linked)), 2),
        # from the first search on (a restart phase): which searches make the tail
        **({"search_ms_in_order": [round(1000 * t, 1) for t in search_s]} if warmup == 0 else {}),
    }


WARM_BLOCK = 100  # warm-up searches per reported block


def warm_server(
    memory: Memory,
    queries: Sequence[str],
    progress: Progress,
    label: str,
    server_cpu: Callable[[], float | None],
    jit_cpu: Callable[[], float | None] = lambda: None,
) -> dict[str, Any]:
    """Untimed searches on other query texts. A JVM server compiles its read paths only after
    hundreds of searches: on the 100k-edge store, measured here, the server's CPU per search
    fell from 94 to 21 ms over the first 400-800 searches after a restart; a long-running
    server is warm. Each block of `WARM_BLOCK` searches is reported, so the curve is seen,
    with the share of the server's CPU that its JIT compiler threads used: a block still
    compiling is not yet warm (how many searches that takes differs between machines)."""
    blocks: list[dict[str, Any]] = []
    begin = time.perf_counter()
    with progress.task(f"{label} warm-up", len(queries)) as advance:
        for start in range(0, len(queries), WARM_BLOCK):
            chunk = queries[start : start + WARM_BLOCK]
            before, jit_before = server_cpu(), jit_cpu()
            walls = []
            for query in chunk:
                t = time.perf_counter()
                memory.search(query, user_id=TARGET_USER, limit=10)
                walls.append(time.perf_counter() - t)
                advance(1)
            after, jit_after = server_cpu(), jit_cpu()
            cpu_ms = jit_ms = None
            if before is not None and after is not None:
                cpu_ms = round(1000 * (after - before) / len(chunk), 2)
            if jit_before is not None and jit_after is not None:
                jit_ms = round(1000 * (jit_after - jit_before) / len(chunk), 2)
            blocks.append({
                "searches": len(chunk), "wall": summary(walls),
                "server_cpu_per_search_ms": cpu_ms, "jit_cpu_per_search_ms": jit_ms,
            })  # fmt: skip
    took = time.perf_counter() - begin
    cpu = [b["server_cpu_per_search_ms"] for b in blocks if b["server_cpu_per_search_ms"]]
    jit = [b["jit_cpu_per_search_ms"] for b in blocks if b["jit_cpu_per_search_ms"] is not None]
    curve = f"; server CPU per search {cpu[0]:.1f} -> {cpu[-1]:.1f} ms" if cpu else ""
    if jit:
        curve += f" (JIT compiling {jit[0]:.1f} -> {jit[-1]:.1f} ms)"
    progress.line(
        f"{label}: {len(queries)} warm-up searches in {took:.0f}s (blocks of {WARM_BLOCK}){curve}"
    )
    return {"searches": len(queries), "s": round(took, 1), "blocks": blocks}


def later_phases(
    args: argparse.Namespace,
    stores: BenchStores,
    memory: Memory,
    inner: Embedder,
    queries: Sequence[str],
    built: tuple[SyntheticGraph, dict[str, np.ndarray], list[np.ndarray], dict[str, str]],
    rng: random.Random,
    progress: Progress,
    label: str,
) -> list[dict[str, Any]]:
    """The same queries on a warm server (`--server-warmup`), after `--reindex`, then after
    `--trickle` more edges in small writes (new people linked to the graph's existing
    companies, cities, ...). Each of these phases first runs the warm-up searches, if any."""
    phases: list[dict[str, Any]] = []
    graph, names, edges, ids = built
    warm = warm_queries(graph, args.server_warmup, queries, args.seed + 5)

    def measure(phase: dict[str, Any]) -> None:
        phase["settle"] = stores.settle()
        if warm:
            phase["server_warmup"] = warm_server(
                memory,
                warm,
                progress,
                f"{label} {phase['phase']}",
                stores.server_cpu,
                stores.jit_cpu,
            )
        phases.append(
            timed_phase(phase, memory, inner, queries, args.warmup, stores, progress, label)
        )

    if warm:
        measure({"phase": "warm"})
    if args.reindex:
        begin = time.perf_counter()
        done = memory.rebuild_indexes()
        took = time.perf_counter() - begin
        progress.line(f"{label}: vector indexes rebuilt in {took:.1f}s")
        measure(
            {
                "phase": "after reindex",
                "reindex_s": round(took, 2),
                "reindex": [d.model_dump() for d in done],
            }
        )
    if args.trickle > 0:
        late = build_graph(args.trickle, args.seed + 99, person_prefix="Later")
        late_names, late_edges = borrowed_vectors(late, graph, names, edges, rng)
        write_s = write_graph(
            memory.store,
            Tenant(user_id=TARGET_USER),
            late,
            late_names,
            late_edges,
            TRICKLE_BATCH,
            progress,
            f"{label} trickle",
            ids,
        )
        writes = math.ceil(args.trickle / TRICKLE_BATCH)
        measure(
            {
                "phase": f"+{args.trickle:,} edges in writes of {TRICKLE_BATCH}"
                + (" after reindex" if args.reindex else ""),
                "trickle_edges": args.trickle,
                "trickle_write_s": round(write_s, 2),
                "trickle_writes_per_s": round(writes / write_s, 1),
            }
        )
    return phases


def search_all(memory: Memory, queries: Sequence[str]) -> None:
    for query in queries:
        memory.search(query, user_id=TARGET_USER, limit=10)


def timed_phase(
    phase: dict[str, Any],
    memory: Memory,
    inner: Embedder,
    queries: Sequence[str],
    warmup: int,
    stores: BenchStores,
    progress: Progress,
    label: str,
) -> dict[str, Any]:
    """One phase's timed searches (`bench_search`) with the load and the busy verdict."""
    memory.embedder.clear()  # the same query texts as other phases: each search embeds again
    phase["load_avg_before"] = load_average()
    name = f"{label} {phase['phase']}"
    phase.update(
        bench_search(
            memory, inner, queries, warmup, progress, name, stores.server_cpu, stores.others_cpu
        )
    )
    phase["load_avg_during"] = load_average()
    phase["busy"] = busy(
        phase["load_avg_before"], phase["load_avg_during"], others=phase["other_processes_cores"]
    )
    cpu = phase["server_cpu_per_search_ms"]
    progress.line(
        f"{name}: search p50 {phase['search']['p50_ms']:.1f} / p95 "
        f"{phase['search']['p95_ms']:.1f} ms, embed p95 {phase['query_embed']['p95_ms']:.1f} ms, "
        f"ratio {phase['ratio_p95']:.2f}"
        + ("" if cpu is None else f", server CPU per search {cpu:.1f} ms")
        + f", load {phase['load_avg_during'][0]:.1f}"
    )
    return phase


RESTART_PHASES = ("cold", "first minute", "after store warm-up", "warm start")
COPY_PHASE = "first minute, local copy"  # --local-copy (memory/copy.py)


def restart_phases(
    args: argparse.Namespace,
    stores: BenchStores,
    memory: Memory,
    inner: Embedder,
    queries: Sequence[str],
    progress: Progress,
    label: str,
) -> tuple[list[dict[str, Any]], Memory]:
    """The first `--restart-phases` searches after a server restart (a fresh JVM on the same
    data, as after every deploy, upgrade or crash), three ways, each after its own restart:

    * cold: a store opened without its warm-up (`graph_store.warmup: false`);
    * first minute: a store opened with its warm-up (the default), searched at once, while
      the warm-up runs in the background;
    * after store warm-up: the same, searched only once the store's warm-up has ended (what
      the warm-up buys, with no client search before);
    * warm start: `mem0g warmup` run in its own process first (a deploy's step before
      traffic, or what /readyz holds traffic for), then a store opened as in "first
      minute" and searched at once.

    `memory` is closed; the returned one (the last phase's) serves the later phases."""
    count = min(args.restart_phases, len(queries))
    if count <= 0 or stores.kind != "neo4j":
        return [], memory
    timed = queries[:count]
    budget = args.store_warmup_seconds
    section = {"graph": memory.config.memory.graph, "facts": memory.config.memory.facts}
    dims = inner.dims
    phases: list[dict[str, Any]] = []
    names = RESTART_PHASES + ((COPY_PHASE,) if getattr(args, "local_copy", False) else ())
    copy_dir = Path(tempfile.mkdtemp(prefix="mem0g-bench-copy-"))
    copied: dict[str, Any] = {"graph_store": {"provider": "neo4j", "local_copy": str(copy_dir)}}
    for name in names:
        if name == COPY_PHASE:  # the copy made on the running server, as a client left it
            began = time.perf_counter()
            with Memory({"memory": section, **copied}, embedder=CachedEmbedder(inner),
                        store=stores.connect(dims, 0.0)) as filler:  # fmt: skip
                assert filler.copy is not None
                filler.copy.refresh(Tenant(user_id=TARGET_USER), wait=True)
            progress.line(f"{label}: local copy made in {time.perf_counter() - began:.1f}s")
        memory.close()
        restart_s = stores.restart()
        progress.line(f"{label}: server restarted in {restart_s:.1f}s ({name})")
        started: dict[str, Any] = {}
        if name == "warm start":
            took, status = stores.warm_start(budget)
            started = {"warm_start_s": round(took, 1), "warm_start": status}
            progress.line(f"{label}: mem0g warmup took {took:.1f}s: {status}")
        begin = time.perf_counter()
        store = stores.connect(dims, 0.0 if name == "cold" else budget)
        config = {"memory": section, **(copied if name == COPY_PHASE else {})}
        memory = Memory(config, embedder=CachedEmbedder(inner), store=store)
        phase: dict[str, Any] = {
            "phase": name,
            "restart_s": round(restart_s, 1),
            "open_s": round(time.perf_counter() - begin, 3),
            **started,
        }
        if name == "after store warm-up":
            waited = time.perf_counter()
            memory.wait_for_warmup()  # what a warm start (`mem0g warmup`, /readyz) waits for
            phase["waited_for_warmup_s"] = round(time.perf_counter() - waited, 1)
        timed_phase(phase, memory, inner, timed, 0, stores, progress, label)
        if memory.copy is not None:  # how many of the phase's searches the copy answered
            phase["copy"] = {"answered": memory.copy.answered, "declined": memory.copy.declined}
        phase["store_warmup"] = store.warmup_status.model_dump(mode="json")
        phase["schema"] = schema_step(store)
        progress.line(
            f"{label} {name}: schema step {phase['schema']}; store warm-up {phase['store_warmup']}"
        )
        phases.append(phase)
    if memory.copy is not None:  # the later phases time Neo4j's own searches, not the copy's
        memory.close()
        memory = Memory({"memory": section}, embedder=CachedEmbedder(inner),
                        store=stores.connect(dims, budget))  # fmt: skip
    return phases, memory


def schema_step(store: Any) -> dict[str, Any]:
    """The store's schema step at its first use (Neo4j): its seconds, and why it ran the DDL
    (no gaps: two reads found the schema complete)."""
    return {"s": store.schema_seconds, "gaps": list(store.schema_gaps)}


def restart_variants(
    args: argparse.Namespace,
    stores: BenchStores,
    inner: Embedder,
    queries: Sequence[str],
    warm: Sequence[str],
    progress: Progress,
    label: str,
) -> list[dict[str, Any]]:
    """Server and query settings compared on one built store (`--restart-variant
    "NAME|JVM FLAGS|CYPHER OPTIONS[|separate]"`): for each, a restart with those JVM flags
    (instead of MEM0G_NEO4J_JAVA_OPTS), a store with those Cypher query options and no
    warm-up (`separate`: the graph half as separate reads, retrieval.walk_statement off),
    the first `--restart-phases` searches timed ('cold NAME'), then `warm` untimed searches and the
    same searches again ('warm NAME'). What a setting costs warm is measured beside what it
    buys cold."""
    count = min(args.restart_phases, len(queries))
    if count <= 0 or stores.kind != "neo4j" or not args.restart_variant:
        return []
    section = {"graph": True, "facts": args.paths == "both"}
    phases: list[dict[str, Any]] = []
    for spec in args.restart_variant:
        name, java_opts, cypher_options, reads = [*spec.split("|"), "", "", ""][:4]
        restart_s = stores.restart(java_opts.strip())
        progress.line(f"{label}: server restarted in {restart_s:.1f}s (variant {name})")
        store = stores.connect(inner.dims, 0.0, cypher_options.strip())
        walk = {"walk_statement": False} if reads.strip() == "separate" else {}
        config = {"memory": section, "retrieval": walk}
        memory = Memory(config, embedder=CachedEmbedder(inner), store=store)
        settings = {
            "variant": name,
            "java_opts": java_opts.strip(),
            "cypher_options": cypher_options.strip(),
            "separate_reads": bool(walk),
        }
        try:
            cold = {"phase": f"cold {name}", **settings, "restart_s": round(restart_s, 1)}
            phases.append(timed_phase(cold, memory, inner, queries[:count], 0, stores,
                                      progress, label))  # fmt: skip
            cold["schema"] = schema_step(store)
            after = {"phase": f"warm {name}", **settings}
            if warm:
                after["server_warmup"] = warm_server(
                    memory,
                    warm,
                    progress,
                    f"{label} variant {name}",
                    stores.server_cpu,
                    stores.jit_cpu,
                )
            phases.append(timed_phase(after, memory, inner, queries[:count], 0, stores,
                                      progress, label))  # fmt: skip
        finally:
            memory.close()
    return phases
