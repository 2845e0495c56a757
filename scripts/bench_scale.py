"""Scale benchmark (issue #14, item 4): costs that must stay linear as a memory grows.

Three measurements, all through the public API on the embedded store (the LLM is the scripted
TEST DOUBLE server, embeddings the offline hashing embedder, so only mem0g's own work is timed):

1. names per add: one `add` whose extract_entities answer names N new people (N = 100, 200,
   400, 1000 by default) and whose establish_relations answer links each to the first; the
   time of that add per N (the names cap, `limits.max_names`, is raised to N for it);
2. tenants per store: one store filled with one-fact tenants (`infer=False`, no LLM) up to
   each checkpoint (10 ... 20,000); at each, random one-fact tenants not searched before get
   their first search (on the embedded store it may read the tenant's rows into memory, and
   the query is embedded once), then as many repeated searches of them, timed apart,
   p50/p95 of wall and CPU time: this process's, and on Neo4j the server's (/proc, per
   search of both kinds); the query's words are in every tenant's fact (`--words shared`,
   the worst case for BM25: every tenant's rows hold them) or only in the one tenant's
   (`--words own`); on the embedded store each repeated search alternates with one of a
   10-tenant reference store (their CPU ratio is robust to the machine's load moving between
   checkpoints); `--fill-workers N` writes the tenants on N threads (Neo4j), `--fill
   import` writes them through `import_archive`, `--fill-batch` per transaction: the same
   records as the adds (see `_fill`), minutes instead of hours for 20k tenants on Neo4j;
3. reopen: the time to open the 20k-tenant store and answer its first search; then, opened
   again, the time of the whole store's `Memory.stats()` (`mem0g stats`, REST /v1/stats).

`--store neo4j` runs 2 and 3 on a throwaway Neo4j server (mem0g.testing.neo4j), `--names ""`
skips 1.

Prints a table and writes JSON (default bench-results/scale.json). A measurement: timings
are never asserted.

    PYTHONPATH=. .venv/bin/python scripts/bench_scale.py --out bench-results/scale.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import repeat
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/: the bench package

from bench.stores import machine_info
from bench.timing import load_average, summary

from mem0g import Memory
from mem0g.archive import Header, TenantArchive, archive_lines, import_archive
from mem0g.memory.facts import verbatim_plan
from mem0g.testing import ScriptedLLMServer
from mem0g.types import Message, Tenant, utcnow


def _config(
    server: ScriptedLLMServer, path: Path, store: dict[str, Any] | None = None, **limits: int
) -> dict[str, Any]:
    return {
        "llm": {"base_url": server.base_url, "api_key": "test", "max_retries": 0},
        "embedder": {"provider": "hashing"},
        "graph_store": store or {"provider": "embedded", "path": str(path)},
        "memory": {"facts": False, "summary": False, "recent_messages": 0},
        "limits": limits,
    }


def names_per_add(sizes: list[int], work: Path) -> list[dict[str, Any]]:
    """One add naming n new people per size, each in a fresh store."""
    rows = []
    for n in sizes:
        names = [f"Person{i:05d} Surname{i:05d}" for i in range(n)]
        rules = [
            {"task": "extract_entities",
             "response": {"entities": [{"name": x, "type": "person"} for x in names]}},
            {"task": "establish_relations",
             "response": {"relations": [{"source": names[0], "relation": "knows",
                                         "destination": x} for x in names[1:]]}},
            {"task": "resolve_updates", "response": {"operations": []}},
        ]  # fmt: skip
        with ScriptedLLMServer(rules) as server:
            config = _config(server, work / f"names-{n}", max_names=n, max_relations=n)
            with Memory(config) as memory:
                started = time.perf_counter()
                result = memory.add("a long conversation", user_id="u", timestamp="2024-01-01")
                seconds = time.perf_counter() - started
        rows.append({"names": n, "add_s": round(seconds, 3), "entities": len(result.entities)})
        print(f"names per add {n:>5}: {seconds:8.3f} s ({len(result.entities)} entities)")
    return rows


REFERENCE_TENANTS = 10
"""The embedded store's repeated searches alternate with searches of a second store of this
many tenants, in the same process: the ratio of their CPU p50s is what the grown store costs
more, whatever the shared machine's load did between checkpoints (on this machine it moved
a sequential 10 -> 20k comparison by 2x; issue #14, docs/benchmarks.md)."""


def _own_word(n: int) -> str:
    """A letters-only word no other tenant's fact holds (BM25 drops digits)."""
    letters = "bcdfghjklmnpqrstvwxz"
    word = ""
    while True:
        n, digit = divmod(n, len(letters))
        word += letters[digit]
        if not n:
            return "qu" + word


def _cpu_of(pid: int | None) -> float | None:
    """CPU seconds process `pid` has used (Linux /proc), None without one."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _text(i: int) -> str:
    """Tenant i's one fact: words every tenant has ("locker code"), and one only it has."""
    return f"tenant {i} keeps locker code {i * 7919 % 10000} {_own_word(i)}"


def _fill(
    memory: Memory, first: int, last: int, workers: int, how: str = "adds", batch: int = 100
) -> None:
    """Tenants first..last-1, one fact each, on `workers` threads (a Neo4j server takes
    writes of different tenants side by side; 1 on the embedded store, which has one writer).

    `how`: "adds" is one `Memory.add(infer=False)` per tenant (no LLM); "import" writes the
    same tenants as an archive through `import_archive`, `batch` tenants per transaction. The
    stored data is the same (tests/test_bench_scale.py compares every stored row, on both
    stores): each tenant's records are made by `verbatim_plan`, the function `add(infer=False)`
    makes its records with, from the message an add makes of the text, and the import writes
    them with the plan rules and fact links of an add. What differs is the number of
    commits: on Neo4j a commit refreshes the full-text and vector indexes it touched, which
    costs more server CPU than a one-fact tenant's rows (docs/benchmarks.md, "Scale")."""
    chunks = [span for k in range(workers) if (span := range(first + k, last, workers))]

    def adds(span: range) -> None:
        for i in span:
            memory.add(_text(i), user_id=f"user-{i}", infer=False)

    def imports(span: range) -> None:
        header = Header(embedder=memory.embedder.name, dims=memory.embedder.dims, embeddings=True)
        import_archive(memory, archive_lines(header, map(_tenant_part, span, repeat(memory))),
                       batch=batch)  # fmt: skip

    work = adds if how == "adds" else imports
    if len(chunks) <= 1:
        for span in chunks:
            work(span)
        return
    with ThreadPoolExecutor(len(chunks)) as pool:
        for _ in pool.map(work, chunks):
            pass


def _tenant_part(i: int, memory: Memory) -> TenantArchive:
    """Tenant i as `add(_text(i), user_id=f"user-{i}", infer=False)` stores it: the message
    `add` makes of the text (its role, its name the user's id, its time the add's) and the
    records `verbatim_plan` makes of it."""
    tenant, when = Tenant(user_id=f"user-{i}"), utcnow()
    message = Message(role="user", content=_text(i), name=tenant.user_id, timestamp=when)
    plan, _ = verbatim_plan(tenant, [message], when, memory.embedder)
    assert plan.episode is not None
    return TenantArchive(tenant=tenant, episodes=[plan.episode], facts=plan.new_facts,
                         fact_events=plan.fact_events)  # fmt: skip


def _timed_search(memory: Memory, query: str, who: int) -> tuple[float, float]:
    """(wall, CPU) seconds of one search; asserts it found the tenant's fact, by BM25 too."""
    started, started_cpu = time.perf_counter(), time.process_time()
    hits = memory.search(query, user_id=f"user-{who}", limit=5)
    wall, cpu = time.perf_counter() - started, time.process_time() - started_cpu
    assert len(hits.facts) == 1  # one tenant's fact, never another's
    assert "bm25_facts" in hits.facts[0].sources  # BM25 found it too
    return wall, cpu


def _loaded(memory: Memory, who: int) -> bool | None:
    """Whether the embedded store holds the tenant's rows in memory already (None: another
    store). A diagnostic: the first search of a tenant not loaded reads its rows then."""
    buckets = getattr(memory.store, "_buckets", None)
    return None if buckets is None else Tenant(user_id=f"user-{who}").key in buckets


def tenants_per_store(
    checkpoints: list[int],
    searches: int,
    work: Path,
    seed: int,
    store: dict[str, Any] | None = None,
    words: str = "shared",
    server_pid: int | None = None,
    fill_workers: int = 1,
    fill: str = "adds",
    fill_batch: int = 100,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Grow one store tenant by tenant; at each checkpoint, up to `searches` tenants never
    searched before get their first search (which may read the tenant's rows, and embeds the
    query once), then `searches` repeated searches of those tenants (nothing left to load),
    timed apart. Then close the store and time the reopen (open + first search)."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    path = work / "tenants"
    searched: set[int] = set()
    with ScriptedLLMServer() as server:
        config = _config(server, path, store)
        config["memory"]["facts"] = True
        memory = Memory(config)
        reference = None
        if store is None:  # the embedded store: a 10-tenant store searched beside it
            small = _config(server, work / "reference")
            small["memory"]["facts"] = True
            reference = Memory(small)
            _fill(reference, 0, REFERENCE_TENANTS, 1, fill, fill_batch)
            for who in range(REFERENCE_TENANTS):
                _timed_search(
                    reference, "locker code" if words == "shared" else _own_word(who), who
                )
        pick = random.Random(seed + 1)
        made = 0
        fill_started = time.perf_counter()
        for checkpoint in checkpoints:
            filling = time.perf_counter()
            server_filling = _cpu_of(server_pid)
            _fill(memory, made, checkpoint, fill_workers, fill, fill_batch)
            fill_s = time.perf_counter() - filling
            server_filled = _cpu_of(server_pid)
            fill_server_cpu = (
                None
                if server_filling is None or server_filled is None
                else round(server_filled - server_filling, 2)
            )
            added = checkpoint - made
            made = checkpoint
            fresh = [i for i in range(made) if i not in searched]
            chosen = rng.sample(fresh, min(searches, len(fresh)))
            searched.update(chosen)
            timed: dict[str, list[float]] = {"first": [], "first_cpu": [], "repeat": [],
                                             "repeat_cpu": []}  # fmt: skip
            loaded_before = 0
            server_before = _cpu_of(server_pid)
            plan = [("first", who) for who in chosen]
            plan += [("repeat", rng.choice(chosen)) for _ in range(searches)]
            for kind, who in plan:
                query = "locker code" if words == "shared" else _own_word(who)
                if kind == "first":
                    loaded_before += bool(_loaded(memory, who))
                wall, cpu = _timed_search(memory, query, who)
                timed[kind].append(wall)
                timed[f"{kind}_cpu"].append(cpu)
                if kind == "repeat" and reference is not None:
                    other = pick.randrange(REFERENCE_TENANTS)
                    query = "locker code" if words == "shared" else _own_word(other)
                    wall, cpu = _timed_search(reference, query, other)
                    timed.setdefault("reference", []).append(wall)
                    timed.setdefault("reference_cpu", []).append(cpu)
            server_after = _cpu_of(server_pid)
            row = {
                "tenants": made,
                "searched_tenants": len(chosen),
                "loaded_before_first_search": loaded_before
                if _loaded(memory, 0) is not None
                else None,
                **{kind: summary(times) for kind, times in timed.items()},
                "server_cpu_per_search_ms": None
                if server_before is None or server_after is None
                else round((server_after - server_before) * 1000 / len(plan), 3),
                "repeat_cpu_vs_reference": round(
                    summary(timed["repeat_cpu"])["p50_ms"]
                    / summary(timed["reference_cpu"])["p50_ms"],
                    3,
                )
                if "reference_cpu" in timed
                else None,
                "fill": {"tenants": added, "s": round(fill_s, 2), "server_cpu_s": fill_server_cpu},
                "load": load_average(),
            }
            rows.append(row)
            server_cpu = row["server_cpu_per_search_ms"]
            print(
                f"tenants {made:>6}: first search p50 {row['first']['p50_ms']:7.3f} ms "
                f"(CPU {row['first_cpu']['p50_ms']:7.3f}), repeated p50 "
                f"{row['repeat']['p50_ms']:7.3f} ms (CPU {row['repeat_cpu']['p50_ms']:7.3f}, "
                f"p95 {row['repeat_cpu']['p95_ms']:7.3f})"
                + ("" if server_cpu is None else f", server CPU {server_cpu:7.3f} ms/search")
                + ("" if row["repeat_cpu_vs_reference"] is None else
                   f", {row['repeat_cpu_vs_reference']:.2f}x the 10-tenant reference's CPU")
                + ("" if row["loaded_before_first_search"] is None
                   else f"; {row['loaded_before_first_search']} of {len(chosen)} loaded before")
                + f" (filled in {time.perf_counter() - fill_started:.1f} s, load {row['load']})"
            )  # fmt: skip
        memory.close()
        if reference is not None:
            reference.close()
        started, cpu = time.perf_counter(), time.process_time()
        reopened = Memory(config)
        opened, opened_cpu = time.perf_counter() - started, time.process_time() - cpu
        reopened.search("locker code", user_id="user-0", limit=5)
        first, first_cpu = time.perf_counter() - started, time.process_time() - cpu
        # another tenant's first search: the embedded store reads each tenant on first use
        again = time.perf_counter()
        reopened.search("locker code", user_id=f"user-{made - 1}", limit=5)
        other = time.perf_counter() - again
        reopened.close()
        stats = _timed_stats(config)
    reopen = {
        "tenants": made,
        "open_s": round(opened, 3),
        "open_cpu_s": round(opened_cpu, 3),
        "open_and_first_search_s": round(first, 3),
        "open_and_first_search_cpu_s": round(first_cpu, 3),
        "another_tenants_first_search_ms": round(other * 1000, 2),
        "stats": stats,
    }
    print(f"reopen at {made} tenants: open {opened:.3f} s ({opened_cpu:.3f} s CPU), open + "
          f"first search {first:.3f} s ({first_cpu:.3f} s CPU); another tenant's first search "
          f"{other * 1000:.2f} ms; whole-store stats() on a fresh open {stats['first_s']:.3f} s "
          f"({stats['first_cpu_s']:.3f} s CPU), again {stats['again_s']:.3f} s")  # fmt: skip
    return rows, reopen


def _timed_stats(config: dict[str, Any]) -> dict[str, Any]:
    """`Memory.stats()` of the whole store (what `mem0g stats` and REST /v1/stats answer) on a
    store just opened, then once more: wall and CPU seconds, and the counts it gave."""
    memory = Memory(config)
    try:
        started, cpu = time.perf_counter(), time.process_time()
        counts = memory.stats()
        first, first_cpu = time.perf_counter() - started, time.process_time() - cpu
        started = time.perf_counter()
        memory.stats()
        again = time.perf_counter() - started
    finally:
        memory.close()
    return {
        "first_s": round(first, 4),
        "first_cpu_s": round(first_cpu, 4),
        "again_s": round(again, 4),
        "facts": counts.facts,
        "tenants": counts.tenants,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", default="100,200,400,1000", help="names per add")
    parser.add_argument("--tenants", default="10,100,1000,5000,20000", help="checkpoints")
    parser.add_argument("--searches", type=int, default=200, help="searches per checkpoint")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--store",
        choices=("embedded", "neo4j"),
        default="embedded",
        help="store of the tenants measurement (neo4j: a throwaway server via "
        "mem0g.testing.neo4j; names per add always runs embedded)",
    )
    parser.add_argument(
        "--words",
        choices=("shared", "own"),
        default="shared",
        help="the searched words: in every tenant's fact (the worst case) or one tenant's",
    )
    parser.add_argument(
        "--fill-workers",
        type=int,
        default=1,
        help="threads adding the tenants (Neo4j: writes of different tenants side by side)",
    )
    parser.add_argument(
        "--fill",
        choices=("adds", "import"),
        default="adds",
        help="how the tenants are written: one add(infer=False) each, or the same records "
        "through import_archive, --fill-batch tenants per transaction (see _fill)",
    )
    parser.add_argument("--fill-batch", type=int, default=100, help="tenants per transaction")
    parser.add_argument("--out", type=Path, default=Path("bench-results/scale.json"))
    args = parser.parse_args(argv)
    load_before = load_average()
    server = None
    store = None
    server_pid = None
    if args.store == "neo4j":
        from mem0g.testing.neo4j import start_maven_server

        server = start_maven_server()
        store = {"provider": "neo4j", "url": server.uri, "username": server.user,
                 "password": server.password}  # fmt: skip
        pid_file = server.home / "run" / "neo4j.pid" if server.home is not None else None
        if pid_file is not None and pid_file.exists():  # the server's CPU time is read
            server_pid = int(pid_file.read_text().split()[0])
    try:
        with tempfile.TemporaryDirectory(prefix="mem0g-scale-") as tmp:
            work = Path(tmp)
            names = names_per_add([int(x) for x in args.names.split(",") if x], work)
            tenants, reopen = tenants_per_store(
                [int(x) for x in args.tenants.split(",") if x], args.searches, work,
                args.seed, store, args.words, server_pid, args.fill_workers, args.fill,
                args.fill_batch,
            )  # fmt: skip
    finally:
        if server is not None:
            server.stop()
    result = {
        "store": args.store,
        "words": args.words,
        "fill_workers": args.fill_workers,
        "fill": args.fill,
        "fill_batch": args.fill_batch if args.fill == "import" else None,
        "embedder": "hashing",
        "names_per_add": names,
        "tenants_per_store": tenants,
        "reopen": reopen,
        "load_before": load_before,
        "load_after": load_average(),
        "machine": machine_info(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"load average before {load_before}, after {result['load_after']}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
