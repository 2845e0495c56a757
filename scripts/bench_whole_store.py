"""Whole-store reads of a user of many runs: `get_everything` (`mem0g dump` without a tenant)
and `export` (`mem0g export`), timed at growing numbers of run tenants of one user.

Why: mem0-shaped agents pass a `run_id` per session, so one user may hold thousands of run
tenants. Reading each tenant through its user's filter read the whole user once per run (on
Neo4j, quadratic: docs/benchmarks.md, "Whole-store reads of a user of many runs"). Each
run tenant holds what a session leaves: two entities, an edge between them, a fact and its
episode, written through `import_archive` (no LLM); embeddings are the offline hashing
embedder, so only the store's reads are timed. Prints each read's wall time, its time per
tenant and, for `export`, the p50/p95 of the per-tenant reads; writes JSON.

    python scripts/bench_whole_store.py --runs 1000,4000 --store neo4j
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the scripts/bench package
from bench.stores import machine_info
from bench.timing import load_average

from mem0g import Memory
from mem0g.archive import Header, TenantArchive, archive_lines, export_lines, import_archive
from mem0g.memory.facts import verbatim_plan
from mem0g.types import Entity, Message, Relation, Tenant, utcnow

USER = "u"


def _vector(rng: np.random.Generator, dims: int) -> list[float]:
    v = rng.standard_normal(dims)
    return [float(x) for x in v / np.linalg.norm(v)]


def run_tenant(i: int, memory: Memory, rng: np.random.Generator) -> TenantArchive:
    """Run i of the user: what `add` leaves of one session, without an LLM."""
    tenant, when = Tenant(user_id=USER, run_id=f"run-{i}"), utcnow()
    text = f"Session {i}: I met Person{i} at Place{i}."
    message = Message(role="user", content=text, name=USER, timestamp=when)
    plan, _ = verbatim_plan(tenant, [message], when, memory.embedder)
    assert plan.episode is not None
    dims = memory.embedder.dims
    person = Entity(tenant=tenant, name=f"Person{i}", type="person", keys=[f"person{i}"],
                    embedding=_vector(rng, dims))  # fmt: skip
    place = Entity(tenant=tenant, name=f"Place{i}", type="location", keys=[f"place{i}"],
                   embedding=_vector(rng, dims))  # fmt: skip
    edge = Relation(tenant=tenant, source_id=person.id, source=person.name, relation="met_at",
                    destination_id=place.id, destination=place.name,
                    embedding=_vector(rng, dims))  # fmt: skip
    return TenantArchive(tenant=tenant, episodes=[plan.episode], facts=plan.new_facts,
                         fact_events=plan.fact_events, entities=[person, place],
                         relations=[edge])  # fmt: skip


def fill(config: dict[str, Any], first: int, last: int, seed: int) -> None:
    """Runs first..last-1, written by another process: the measuring process's peak memory
    is then its reads' alone (the writes load every tenant they write)."""
    with Memory(config) as memory:
        rng = np.random.default_rng([seed, first])
        header = Header(embedder=memory.embedder.name, dims=memory.embedder.dims,
                        embeddings=True)  # fmt: skip
        parts: Iterator[TenantArchive] = (run_tenant(i, memory, rng) for i in range(first, last))
        import_archive(memory, archive_lines(header, parts), batch=200)


def fill_elsewhere(config: dict[str, Any], first: int, last: int, seed: int) -> None:
    child = multiprocessing.get_context("spawn").Process(
        target=fill, args=(config, first, last, seed)
    )
    child.start()
    child.join()
    if child.exitcode != 0:
        raise RuntimeError(f"filling runs {first}..{last - 1} failed (exit {child.exitcode})")


def measure(memory: Memory, runs: int) -> dict[str, Any]:
    """One checkpoint: tenants(), one run's get_all, export (a read per exact tenant), then
    get_everything (one read of the user); the process's peak memory after each of the last
    two."""
    row: dict[str, Any] = {"runs": runs, "load": load_average()}
    started = time.perf_counter()
    tenants = memory.tenants()
    row["tenants_s"] = time.perf_counter() - started
    assert len(tenants) == runs
    started = time.perf_counter()
    one = memory.get_all(user_id=USER, run_id="run-0")
    row["get_all_one_run_s"] = time.perf_counter() - started
    assert len(one.relations) == 1
    each: list[float] = []
    last = time.perf_counter()

    def done(_: Tenant) -> None:
        nonlocal last
        now = time.perf_counter()
        each.append(now - last)
        last = now

    started = last = time.perf_counter()
    size = 0  # the archive is counted, not kept: a kept one would be the peak memory measured
    for line in export_lines(memory, progress=done):
        size += len(line) + 1
    row["export_s"] = time.perf_counter() - started
    row["export_mb"] = size / 1e6
    cuts = statistics.quantiles(each, n=20) if len(each) >= 2 else each * 19
    row["export_tenant_ms"] = {"p50": 1000 * statistics.median(each), "p95": 1000 * cuts[18]}
    assert len(each) == runs
    row["peak_rss_mb_after_export"] = _peak_rss_mb()
    started = time.perf_counter()
    everything = memory.get_everything()
    row["get_everything_s"] = time.perf_counter() - started
    assert (len(everything.entities), len(everything.relations), len(everything.facts)) == (
        2 * runs, runs, runs
    )  # fmt: skip
    row["peak_rss_mb_after_get_everything"] = _peak_rss_mb()
    return row


def _peak_rss_mb() -> float:
    """This process's peak resident memory so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="1000,4000", help="checkpoints: run tenants of one user")
    parser.add_argument("--store", choices=("embedded", "neo4j"), default="embedded")
    parser.add_argument("--neo4j-uri", help="a running server (emptied first) instead of a "
                        "throwaway one; password from --neo4j-password")  # fmt: skip
    parser.add_argument("--neo4j-password", default="mem0g-bench")
    parser.add_argument(
        "--max-loaded-tenants",
        default="1000",
        help="embedded: graph_store.max_loaded_tenants (none: no bound)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("bench-results/whole-store.json"))
    args = parser.parse_args(argv)
    checkpoints = sorted(int(x) for x in args.runs.split(",") if x)
    server = None
    graph_store: dict[str, Any] = {"provider": "embedded"}
    if args.store == "neo4j":
        if args.neo4j_uri:
            graph_store = {"provider": "neo4j", "url": args.neo4j_uri, "username": "neo4j",
                           "password": args.neo4j_password}  # fmt: skip
        else:
            from mem0g.testing.neo4j import start_maven_server

            server = start_maven_server()
            graph_store = {"provider": "neo4j", "url": server.uri, "username": server.user,
                           "password": server.password}  # fmt: skip
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="mem0g-whole-") as tmp:
            bound = None if args.max_loaded_tenants == "none" else int(args.max_loaded_tenants)
            if args.store == "embedded":
                graph_store["max_loaded_tenants"] = bound
            config = {"graph_store": {**graph_store, "path": str(Path(tmp) / "store")},
                      "embedder": {"provider": "hashing"}}  # fmt: skip
            with Memory(config) as memory:
                memory.reset()
                made = 0
                for runs in checkpoints:
                    started = time.perf_counter()
                    fill_elsewhere(config, made, runs, args.seed)
                    filled, made = time.perf_counter() - started, runs
                    row = {**measure(memory, runs), "fill_s": filled}
                    rows.append(row)
                    print(
                        f"{runs:>6} runs: get_everything {row['get_everything_s']:.1f} s, "
                        f"export {row['export_s']:.1f} s ({row['export_mb']:.0f} MB; a tenant "
                        f"p50 {row['export_tenant_ms']['p50']:.1f} / p95 "
                        f"{row['export_tenant_ms']['p95']:.1f} ms), one run's get_all "
                        f"{1000 * row['get_all_one_run_s']:.0f} ms, peak RSS after export "
                        f"{row['peak_rss_mb_after_export']:.0f} MB, after get_everything "
                        f"{row['peak_rss_mb_after_get_everything']:.0f} MB, load {row['load']}",
                        flush=True,
                    )
    finally:
        if server is not None:
            server.stop()
    result = {"store": args.store, "embedder": "hashing", "checkpoints": rows,
              "max_loaded_tenants": args.max_loaded_tenants,
              "machine": machine_info()}  # fmt: skip
    _save(args.out, result)
    return 0


def _save(path: Path, result: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=2)
    print(f"wrote {path}")


if __name__ == "__main__":
    raise SystemExit(main())
