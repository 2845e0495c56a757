"""Loopback load test of the REST service: search and add p50/p95 at 1, 4 and 16 concurrent
clients, and the search p95 ratio served / in-process.

1. Store (`--store`): an embedded store in a temp dir, or Neo4j (`--store neo4j`: the server
   named by NEO4J_URI / NEO4J_USERNAME / NEO4J_PASSWORD, whose tenant "bench" is emptied
   first and left there after, else a throwaway server from mem0g.testing.neo4j, Docker or
   scripts/neo4j, stopped at the end), seeded with `--seed` adds (people working at
   companies in cities: "P12 works at C3 in T5"), entity- and fact-bearing, through `Memory.add`.
   The LLM is the scripted TEST DOUBLE server (mem0g.testing.ScriptedLLMServer) answering every
   task instantly from the message text, so the figures are mem0g's own cost, not a model's.
   Embeddings: the real local MiniLM (`--embedder sentence-transformers`, default) or hashing.
2. `mem0g serve` in a subprocess on 127.0.0.1 (the same store and config). After `--warmup`
   untimed searches on each side, the `--searches` queries run in-process (`Memory.search`)
   and served (`Client.search`) in alternating blocks, for the p95 ratio. Every timed query
   text is used once per side (the embedding cache never answers it).
3. For each concurrency C in `--concurrency`: C threads with their own `mem0g.Client` run
   `--searches` searches in all, then `--adds` adds (sync, inference through the scripted
   LLM); per-request latency from the client's side.

A measurement, never a test: the exit code is 0 whatever the figures. The 1-minute load average
before and after is recorded (the machine is shared; a ratio is only meaningful within a run).

    .venv/bin/python scripts/bench_service.py --out bench-results/service.json
    .venv/bin/python scripts/bench_service.py --store neo4j --out bench-results/service-neo4j.json
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mem0g import Client, Memory  # noqa: E402
from mem0g.testing import ScriptedLLMServer  # noqa: E402

PATTERN = re.compile(r"(P\d+) works at (C\d+) in (T\d+)")


def _triples(payload: dict[str, Any]) -> list[tuple[str, str, str]]:
    text = " ".join(m.get("content", "") for m in payload.get("messages", []))
    return PATTERN.findall(text)


def rules() -> list[dict[str, Any]]:
    """Answers computed from each add's text: the entities and edges it names."""

    def entities(p: dict[str, Any]) -> dict[str, Any]:
        found = {}
        for person, company, town in _triples(p):
            found.update({person: "person", company: "organization", town: "city"})
        return {"entities": [{"name": n, "type": t} for n, t in found.items()]}

    def relations(p: dict[str, Any]) -> dict[str, Any]:
        rels = []
        for person, company, town in _triples(p):
            rels.append({"source": person, "relation": "works_at", "destination": company})
            rels.append({"source": company, "relation": "located_in", "destination": town})
        return {"relations": rels}

    def facts(p: dict[str, Any]) -> dict[str, Any]:
        return {"facts": [f"{a} works at {b} in {c}" for a, b, c in _triples(p)]}

    return [
        {"task": "extract_entities", "response": entities},
        {"task": "establish_relations", "response": relations},
        {"task": "extract_facts", "response": facts},
        {"task": "resolve_updates", "response": {"operations": []}},
        {"task": "update_memory", "response": {"operations": []}},
    ]


def _search(query: str, client: Client) -> None:
    client.search(query, user_id="bench", limit=10)


def _add(n: int, client: Client) -> None:
    client.add(f"P{n} works at C{n % 40} in T{n % 12}", user_id="bench")


def stats(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds)
    pick = lambda q: ms[min(len(ms) - 1, max(0, round(q * (len(ms) - 1))))]  # noqa: E731
    return {"n": len(ms), "p50_ms": round(pick(0.5), 2), "p95_ms": round(pick(0.95), 2),
            "mean_ms": round(statistics.fmean(ms), 2)}  # fmt: skip


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run_load(base: str, concurrency: int, jobs: list[Any]) -> tuple[list[float], float]:
    """`jobs` (callables taking a Client) spread over `concurrency` threads, one Client each."""
    local = threading.local()
    clients: list[Client] = []
    lock = threading.Lock()

    def client() -> Client:
        if not hasattr(local, "client"):
            local.client = Client(base, timeout=120)
            with lock:
                clients.append(local.client)
        return local.client

    def timed(job: Any) -> float:
        c = client()
        start = time.perf_counter()
        job(c)
        return time.perf_counter() - start

    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        latencies = list(pool.map(timed, jobs))
    wall = time.perf_counter() - start
    for c in clients:
        c.close()
    return latencies, wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=300, help="adds before measuring")
    parser.add_argument("--searches", type=int, default=160, help="searches per level")
    parser.add_argument("--adds", type=int, default=48, help="adds per level")
    parser.add_argument("--warmup", type=int, default=20, help="untimed searches per side")
    parser.add_argument("--concurrency", default="1,4,16")
    parser.add_argument("--embedder", default="sentence-transformers",
                        choices=["sentence-transformers", "hashing"])  # fmt: skip
    parser.add_argument("--store", default="embedded", choices=["embedded", "neo4j"])
    parser.add_argument("--out", type=Path, default=ROOT / "bench-results" / "service.json")
    args = parser.parse_args(argv)
    levels = [int(x) for x in args.concurrency.split(",")]
    report: dict[str, Any] = {
        "benchmark": "service", "embedder": args.embedder, "store": args.store,
        "llm": "scripted TEST DOUBLE (instant answers)", "seed_adds": args.seed,
        "cpus": os.cpu_count(), "python": platform.python_version(), "load_start": _load(),
    }  # fmt: skip
    queries = [f"where does P{i} work?" for i in range(args.searches)]
    with (
        ScriptedLLMServer(rules()) as llm,
        tempfile.TemporaryDirectory() as home,
        _graph_store(args.store, Path(home), report) as (graph_store, secret_env),
    ):
        config = {
            "llm": {"base_url": llm.base_url, "api_key": "test"},
            "embedder": {"provider": args.embedder},
            "graph_store": graph_store,
            "memory": {"summary": False},
        }
        config_file = Path(home) / "config.json"
        config_file.write_text(json.dumps(config))  # no password in it: the server gets env
        memory = Memory(_with_secret(config, secret_env))
        if args.store == "neo4j":
            memory.delete_all(user_id="bench")  # an external server: start from an empty tenant
        for i in range(args.seed):
            memory.add(f"P{i} works at C{i % 40} in T{i % 12}", user_id="bench")
        port = _free_port()
        env = {**os.environ, **secret_env, "PYTHONPATH": str(ROOT)}
        server = subprocess.Popen(
            [sys.executable, "-c", "from mem0g.cli import app; app()", "--config",
             str(config_file), "serve", "--port", str(port)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(base, server)
            warm = [f"who works in T{i}?" for i in range(args.warmup)]
            with Client(base) as client:
                for q in warm:  # both sides warm (model, caches) before anything is timed
                    memory.search(q, user_id="bench")
                    client.search(q, user_id="bench")
                # the ratio: the same queries on both sides, in alternating blocks (after a
                # pause, so one side's idle BLAS threads have stopped spinning), so both see
                # the same trend of machine load; every query text is new to both caches
                inproc, served = [], []
                block = max(1, args.searches // 8)
                for at in range(0, len(queries), block):
                    for side, out in ((memory.search, inproc), (client.search, served)):
                        time.sleep(0.3)
                        for q in queries[at : at + block]:
                            start = time.perf_counter()
                            side(q, user_id="bench", limit=10)
                            out.append(time.perf_counter() - start)
            memory.close()
            report["in_process_search"] = stats(inproc)
            report["served_search_interleaved"] = stats(served)
            report["served_over_in_process_search_p95"] = round(
                report["served_search_interleaved"]["p95_ms"]
                / report["in_process_search"]["p95_ms"], 2
            )  # fmt: skip
            print(f"in-process search {report['in_process_search']}, served (interleaved) "
                  f"{report['served_search_interleaved']}: p95 ratio "
                  f"{report['served_over_in_process_search_p95']}", flush=True)  # fmt: skip
            report["levels"] = []
            counter = iter(range(10**9))
            for level in levels:
                fresh = [f"who employs P{i}? ({level})" for i in range(args.searches)]
                searches = [functools.partial(_search, q) for q in fresh]
                s_lat, s_wall = run_load(base, level, searches)
                adds = [functools.partial(_add, 10_000 + next(counter)) for _ in range(args.adds)]
                a_lat, a_wall = run_load(base, level, adds)
                row = {
                    "concurrency": level,
                    "search": {**stats(s_lat), "per_s": round(len(s_lat) / s_wall, 1)},
                    "add": {**stats(a_lat), "per_s": round(len(a_lat) / a_wall, 1)},
                    "load": _load(),
                }
                report["levels"].append(row)
                print(f"c={level:>2}: search {row['search']}  add {row['add']}", flush=True)
        finally:
            memory.close()
            server.terminate()
            server.wait(60)
    report["load_end"] = _load()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.out} (load {report['load_start']} -> {report['load_end']})")
    return 0


@contextlib.contextmanager
def _graph_store(
    kind: str, home: Path, report: dict[str, Any]
) -> Iterator[tuple[dict[str, Any], dict[str, str]]]:
    """The store's config (without its password) and the env that carries the password."""
    if kind == "embedded":
        yield {"provider": "embedded", "path": str(home / "store")}, {}
        return
    from mem0g.testing.neo4j import describe, start_neo4j

    print("Neo4j: NEO4J_URI, else a throwaway server (Docker or scripts/neo4j) ...", flush=True)
    server = start_neo4j()
    try:
        report["neo4j"] = describe(server)
        yield (
            {"provider": "neo4j", "url": server.uri, "username": server.user},
            {"NEO4J_PASSWORD": server.password},
        )
    finally:
        server.stop()  # a NEO4J_URI server is left running (kind "env": stop does nothing)


def _with_secret(config: dict[str, Any], secret_env: dict[str, str]) -> dict[str, Any]:
    if "NEO4J_PASSWORD" not in secret_env:
        return config
    store = {**config["graph_store"], "password": secret_env["NEO4J_PASSWORD"]}
    return {**config, "graph_store": store}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(base: str, server: subprocess.Popen[bytes], timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError("mem0g serve exited")
        try:
            if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise TimeoutError("mem0g serve did not become ready")


if __name__ == "__main__":
    raise SystemExit(main())
