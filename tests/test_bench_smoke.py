"""Smoke test of scripts/bench_search.py: tiny sizes, hashing embedder, no timing thresholds.

It only checks that one run produces a complete report, so the benchmark can't rot unnoticed;
the numbers themselves are measured by hand on a quiet machine.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from script_module import SCRIPTS, load_script

from mem0g.testing.neo4j import free_port

sys.path.insert(0, str(SCRIPTS))  # the scripts/bench package
from bench import cli, data, timing
from bench import report as bench_report
from bench import stores as bench_stores

from mem0g.types import Entity, Tenant, WritePlan

ab_linking = load_script("ab_linking")


def _positive(stats: dict) -> None:
    assert stats["n"] > 0
    for key in ("p50_ms", "p95_ms", "mean_ms"):
        assert stats[key] > 0, key


def test_tiny_run_writes_complete_report(tmp_path: Path) -> None:
    out = tmp_path / "search.json"
    argv = [
        "--sizes",
        "200",
        "--queries",
        "5",
        "--warmup",
        "1",
        "--adds",
        "3",
        "--embedder",
        "hashing",
        "--other-tenants",
        "50",
        "--quiet",
        "--out",
        str(out),
    ]
    assert cli.main(argv) == 0
    report = json.loads(out.read_text(encoding="utf-8"))

    for key in (
        "date",
        "machine",
        "embedder",
        "store",
        "config",
        "sizes",
        "add",
        "targets",
        "notes",
    ):
        assert key in report, key
    assert report["embedder"]["kind"] == "hashing"
    assert report["machine"]["cpu_count"] >= 1
    assert report["machine"]["python"]
    assert report["machine"]["cpu_model"], "the CPU model: ratios compare only on one kind of CPU"

    (size,) = report["sizes"]
    assert size["edges"] == 200
    assert size["other_tenant_edges"] == 50
    _positive(size["search"])
    _positive(size["query_embed"])
    # measured on Linux: the cores other processes used (no server to leave out here)
    assert isinstance(size["other_processes_cores"], float)
    assert size["busy"] == (size["other_processes_cores"] > timing.OTHERS_BUSY)
    assert size["ratio_p95"] > 0
    assert size["avg_relations_returned"] > 0
    assert isinstance(size["busy"], bool)

    add = report["add"]
    assert add["edges_before"] == 200
    for key in ("raw", "llm_roundtrip", "llm_or_model", "empty_call_roundtrip"):
        _positive(add[key])
    assert add["overhead"]["n"] == add["overhead_cpu"]["n"] == 3
    assert add["llm_calls_per_add"]["min"] >= 2
    assert add["llm_calls_per_add"]["by_task"]["extract_entities"] == 1
    assert add["unmatched_llm_requests"] == 0

    assert {t["name"] for t in report["targets"]} == {
        "search_p95 <= 2x query_embed_p95 at 10k edges",
        "add overhead p95 <= 20 ms at 10k edges",
    }
    assert all(t["pass"] is None for t in report["targets"])  # no 10k size in this run
    assert all(t["busy_machine"] is False for t in report["targets"])


def test_graph_has_exactly_n_distinct_edges() -> None:
    graph = data.build_graph(1000, seed=3)
    assert len(graph.triples) == len(set(graph.triples)) == 1000
    assert all(s != d for s, _, d in graph.triples)
    assert len(data.make_queries(graph, 120, random.Random(1))) == 120


def test_busy_means_other_processes_when_they_were_measured() -> None:
    cpus = os.cpu_count()
    assert timing.busy([0.5], others=0.6) is True  # a quiet load average, a busy neighbour
    assert timing.busy([cpus + 1.0], others=0.1) is False  # load from this run and its server
    assert timing.busy([cpus + 1.0]) is True  # not measured: the load average decides
    assert timing.busy([0.5], [0.4]) is False
    before = timing.machine_cpu()
    sum(i * i for i in range(300_000))  # this process's own work counts for the machine
    assert timing.machine_cpu() >= before


def test_warm_up_queries_are_never_timed_ones() -> None:
    graph = data.build_graph(1000, seed=3)
    timed = data.make_queries(graph, 50, random.Random(1))
    warm = data.warm_queries(graph, 300, timed, seed=2)
    assert len(warm) == 300
    assert not set(warm) & set(timed)
    assert len(set(warm)) > 200  # mostly distinct texts, not one query repeated
    assert data.warm_queries(graph, 0, timed, seed=2) == []


def _neo4j_argv(server: Any, out: Path, *extra: str) -> list[str]:
    return [
        "--store",
        "neo4j",
        "--neo4j-uri",
        server.uri,
        "--sizes",
        "150",
        "--queries",
        "4",
        "--warmup",
        "1",
        "--adds",
        "2",
        "--embedder",
        "hashing",
        "--quiet",
        "--out",
        str(out),
        "--settle",
        "0",
        *extra,
    ]


@pytest.fixture
def bench_neo4j(neo4j_server: Any, neo4j_connect: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The test server, its database emptied, its credentials where the benchmark looks."""
    monkeypatch.setenv("NEO4J_USERNAME", neo4j_server.user)
    monkeypatch.setenv("NEO4J_PASSWORD", neo4j_server.password)
    return neo4j_server


@pytest.mark.neo4j
def test_neo4j_run_writes_complete_report(
    tmp_path: Path, bench_neo4j: Any, neo4j_connect: Any
) -> None:
    neo4j_server = bench_neo4j
    out = tmp_path / "neo4j.json"
    argv = _neo4j_argv(
        neo4j_server,
        out,
        "--other-tenants",
        "40",
        "--server-warmup",
        "6",
        "--reindex",
        "--trickle",
        "20",
        "--neo4j-entity-vectors",  # fewer than the tenant's entities: resolved by the index
        "7",
    )
    assert cli.main(argv) == 0
    report = json.loads(out.read_text(encoding="utf-8"))

    assert report["store"] == "neo4j"
    assert report["store_info"]["server"] == "external"
    assert report["store_info"]["version"].startswith("Neo4j/5.")
    (size,) = report["sizes"]
    assert size["edges"] == 150 and size["other_tenant_edges"] == 40
    assert size["build"]["settle"] == {"waited_s": 0.0, "watched": False}
    assert size["server_cpu_per_search_ms"] is None  # an external server: no process to read
    assert size["other_processes_cores"] is None  # ... nor its CPU to tell from others'
    _positive(size["search"])
    assert size["avg_relations_returned"] > 0
    # the same queries again after warm-up searches, after the reindex, then after 20 edges
    # in writes of 5; each of these after the warm-up searches, none of them a timed query
    warm, reindexed, trickled = size["phases"]
    assert warm["phase"] == "warm"
    for phase in (warm, reindexed, trickled):
        warmup = phase["server_warmup"]
        assert warmup["searches"] == 6
        assert [b["searches"] for b in warmup["blocks"]] == [6]
        _positive(warmup["blocks"][0]["wall"])
        # an external server: no process whose CPU or JIT threads could be read
        assert warmup["blocks"][0]["server_cpu_per_search_ms"] is None
        assert warmup["blocks"][0]["jit_cpu_per_search_ms"] is None
    assert report["config"]["server_warmup"] == 6
    assert report["config"]["neo4j_entity_vectors"] == 7
    assert reindexed["phase"] == "after reindex"
    assert [r["kind"] for r in reindexed["reindex"]] == ["entities", "relations", "facts"]
    assert trickled["phase"] == "+20 edges in writes of 5 after reindex"
    assert trickled["trickle_edges"] == 20 and trickled["trickle_writes_per_s"] > 0
    for phase in (warm, reindexed, trickled):
        _positive(phase["search"])
        assert phase["search"]["n"] == size["search"]["n"]
        assert phase["avg_relations_returned"] > 0
    add = report["add"]
    assert add["throughput_adds_per_s"] > 0
    assert add["unmatched_llm_requests"] == 0
    names = [t["name"] for t in report["targets"]]
    assert names == [
        "search_p95 <= 4x query_embed_p95 at 100k edges",
        "first minute search_p95 <= 4x query_embed_p95 at 10k edges",
        "warm start search_p95 <= 4x query_embed_p95 at 10k edges",
        "first minute search_p95 <= 6x query_embed_p95 at 100k edges",
        "warm start search_p95 <= 6x query_embed_p95 at 100k edges",
        "warm search_p95 <= 3x query_embed_p95 at 100k edges",
        "first minute, local copy search_p95 <= 4x query_embed_p95 at 10k edges",
        "first minute, local copy search_p95 <= 6x query_embed_p95 at 100k edges",
    ]
    assert all(t["pass"] is None for t in report["targets"])  # no 10k/100k size in this run

    # what the run wrote is in the server: the target tenant's edges, plus the adds'
    stats = neo4j_connect().stats()
    assert stats.relations >= 150 + 40 + 20


@pytest.mark.neo4j
def test_neo4j_run_refuses_to_wipe_a_database_without_wipe(
    tmp_path: Path, bench_neo4j: Any, neo4j_connect: Any
) -> None:
    neo4j_server = bench_neo4j
    store = neo4j_connect(dims=8)
    tenant = Tenant(user_id="precious")
    now = datetime.now(timezone.utc)
    store.apply(
        WritePlan(
            tenant=tenant,
            new_entities=[
                Entity(
                    tenant=tenant, name="Keep Me", keys=["keep me"], created_at=now, updated_at=now
                )
            ],
            updated_at=now,
        )
    )
    out = tmp_path / "refused.json"
    with pytest.raises(SystemExit, match=r"not empty.*--wipe"):
        cli.main(_neo4j_argv(neo4j_server, out))
    assert not out.exists()
    assert [e.name for e in store.find_entities(tenant, ["keep me"])] == ["Keep Me"]

    assert cli.main(_neo4j_argv(neo4j_server, out, "--wipe", "--adds", "0")) == 0
    assert store.find_entities(tenant, ["keep me"]) == []


def test_unreachable_neo4j_fails_fast_with_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEO4J_PASSWORD", "x")
    port = free_port()  # nothing listens there
    argv = ["--store", "neo4j", "--neo4j-uri", f"bolt://127.0.0.1:{port}", "--quiet"]
    with pytest.raises(SystemExit, match="cannot reach Neo4j"):
        cli.main([*argv, "--out", str(tmp_path / "x.json")])


def test_settle_waits_for_a_busy_server_process_to_go_idle(tmp_path: Path) -> None:
    """The throwaway server's CPU time is read from /proc: a process busy for 3 s of its own
    CPU time (however loaded the machine), then idle, is waited for (and its CPU counted), and
    `--settle` bounds the wait."""
    busy = subprocess.Popen(
        [sys.executable, "-c", "import time\nwhile time.process_time() < 3: pass\n"
         "time.sleep(60)"]
    )  # fmt: skip
    try:
        args = cli.parse_args(["--store", "neo4j", "--settle", "300"])  # a loaded machine
        stores = bench_stores.BenchStores("neo4j", args, timing.Progress(quiet=True))
        stores.pid = busy.pid
        before = stores.server_cpu()
        settled = stores.settle()
        assert settled["watched"] and settled["idle"]
        assert 3.0 <= settled["waited_s"] < 300
        assert stores.server_cpu() - before >= 2.0  # most of the 3 busy CPU seconds
        stores.args = cli.parse_args(["--store", "neo4j", "--settle", "0"])
        assert stores.settle() == {"waited_s": 0.0, "watched": True, "idle": False}
    finally:
        busy.kill()
        busy.wait()
    stores.pid = busy.pid  # gone: nothing to watch, so the fixed wait (here 0 s)
    assert stores.server_cpu() is None
    assert stores.settle() == {"waited_s": 0.0, "watched": False}


_NAMED_THREADS = """
import ctypes, threading, time
spun = threading.Barrier(3)
def spin(name):
    ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME: this thread's comm
    while time.thread_time() < 1.0:
        pass
    spun.wait()
    time.sleep(60)  # alive: an ended thread leaves /proc/PID/task
for n in ("C2 CompilerThre", "bolt-worker"):
    threading.Thread(target=spin, args=(n,), daemon=True).start()
spun.wait()
print("done", flush=True)
time.sleep(60)
"""


def test_jit_cpu_counts_only_the_compiler_threads() -> None:
    """`jit_cpu` reads the CPU of the threads the JVM names "C1/C2 CompilerThread..." from
    /proc: a process with one such thread and one other, each busy for 1 s of its own CPU."""
    proc = subprocess.Popen([sys.executable, "-c", _NAMED_THREADS], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"done"
        args = cli.parse_args(["--store", "neo4j"])
        stores = bench_stores.BenchStores("neo4j", args, timing.Progress(quiet=True))
        assert stores.jit_cpu() is None  # no server process
        stores.pid = proc.pid
        jit, total = stores.jit_cpu(), stores.server_cpu()
        assert jit is not None and total is not None
        assert 0.9 <= jit < 1.5  # the compiler thread's second, not the other's
        assert total >= 1.9
    finally:
        proc.kill()
        proc.wait()


def test_client_cpus_are_checked() -> None:
    have = sorted(os.sched_getaffinity(0))
    assert bench_stores.parse_cpus(str(have[0])) == {have[0]}
    assert bench_stores.parse_cpus(f"{have[0]}-{have[-1]}") == set(range(have[0], have[-1] + 1))
    for bad in ("x", "1-", "4096", ""):
        with pytest.raises(SystemExit, match="CPU"):
            bench_stores.parse_cpus(bad)


class _Restarts:
    """BenchStores for the restart phases' logic on the test server: a restart is counted
    instead of done (Neo4jServer.restart is tested in test_neo4j_server.py), with the JVM
    flags it was asked for; stores open on the test server with what they were asked."""

    kind = "neo4j"

    def __init__(self, connect: Any, server: Any = None, args: Any = None) -> None:
        self._connect = connect
        if server is not None:  # the warm start's `mem0g warmup` runs for real, on it
            self.uri, self.auth, self.args = server.uri, (server.user, server.password), args
        self.restarts = 0
        self.java_opts: list[str | None] = []
        self.budgets: list[float] = []
        self.stores: list[Any] = []

    def restart(self, java_opts: str | None = None) -> float:
        self.restarts += 1
        self.java_opts.append(java_opts)
        return 0.0

    def warm_start(self, seconds: float) -> tuple[float, dict[str, Any]]:
        from bench.stores import BenchStores

        return BenchStores.warm_start(self, seconds)  # type: ignore[arg-type]

    def connect(self, dims: int, warmup_seconds: float = 0.0, cypher_options: str = "") -> Any:
        self.budgets.append(warmup_seconds)
        store = self._connect(
            dims=dims, warmup_seconds=warmup_seconds, cypher_options=cypher_options
        )
        self.stores.append(store)
        return store

    def server_cpu(self) -> None:
        return None

    def jit_cpu(self) -> None:
        return None

    def others_cpu(self) -> None:
        return None


@pytest.mark.neo4j
def test_restart_phases_open_cold_then_warming_then_warmed_stores(
    neo4j_server: Any, neo4j_connect: Any
) -> None:
    """The restart phases' logic on the test server, the restart itself counted instead of
    done (Neo4jServer.restart is tested in test_neo4j_server.py): four restarts; the cold
    store has no warm-up, the other three have the given budget; the third phase searches
    only once the warm-up ended; the warm start runs `mem0g warmup` in its own process on
    the server first; each phase times exactly its first N searches; the returned memory is
    the last phase's, still open."""
    from bench import search

    from mem0g import Memory
    from mem0g.config import EmbedderConfig
    from mem0g.embed import CachedEmbedder, make_embedder

    inner = make_embedder(EmbedderConfig(provider="hashing")).inner
    first = Memory(
        {"memory": {"facts": False}},
        embedder=CachedEmbedder(inner),
        store=neo4j_connect(dims=inner.dims),
    )
    # 5 s of warm-up work: enough for the rounds asserted below (an empty store settles
    # in about 5 s on a warm test server), and not 20 s each of the suite's CPU
    args = cli.parse_args(
        ["--store", "neo4j", "--restart-phases", "4", "--store-warmup-seconds", "5"]
    )
    queries = data.make_queries(data.build_graph(100, seed=3), 6, random.Random(2))
    fake = _Restarts(neo4j_connect, neo4j_server, args)
    phases, memory = search.restart_phases(
        args, fake, first, inner, queries, timing.Progress(quiet=True), "t"
    )
    assert [p["phase"] for p in phases] == list(search.RESTART_PHASES)
    assert search.RESTART_PHASES[-1] == "warm start"
    assert fake.restarts == 4 and fake.budgets == [0.0, 5.0, 5.0, 5.0]
    assert [p["search"]["n"] for p in phases] == [4, 4, 4, 4]
    for p in phases:  # each search's time, in order, for the tail's analysis
        series = p["search_ms_in_order"]
        assert len(series) == 4 and max(series) == pytest.approx(p["search"]["max_ms"], abs=0.1)
    assert phases[0]["store_warmup"]["state"] == "off"
    assert phases[2]["store_warmup"]["state"] == "done", phases[2]["store_warmup"]
    assert phases[2]["waited_for_warmup_s"] >= 0
    warm = phases[3]["warm_start"]  # what `mem0g warmup --json` printed
    assert warm["state"] == "done" and warm["rounds"] > 0, warm  # (an empty store: plans)
    assert phases[3]["warm_start_s"] > 0 and "warm_start" not in phases[2]
    # the schema step of each phase's store: after the first, the database holds the schema
    assert phases[1]["schema"]["gaps"] == [] and phases[1]["schema"]["s"] > 0
    assert memory.store is fake.stores[-1] and memory.config.memory.facts is False
    memory.search("who lives in Paris?", user_id=data.TARGET_USER)  # still open
    memory.close()


@pytest.mark.neo4j
def test_the_local_copy_phase_copies_the_user_then_restarts_and_searches_the_copy(
    neo4j_server: Any, neo4j_connect: Any
) -> None:
    """--local-copy: a fifth restart phase, whose store was copied for the searched user on
    the running server first, and which answers its searches from that copy."""
    from bench import search

    from mem0g import Memory
    from mem0g.config import EmbedderConfig
    from mem0g.embed import CachedEmbedder, make_embedder

    inner = make_embedder(EmbedderConfig(provider="hashing")).inner
    first = Memory({}, embedder=CachedEmbedder(inner), store=neo4j_connect(dims=inner.dims))
    first.add("Ana lives in Paris", user_id=data.TARGET_USER, infer=False)
    args = cli.parse_args(["--store", "neo4j", "--restart-phases", "3",
                           "--store-warmup-seconds", "1", "--local-copy"])  # fmt: skip
    queries = data.make_queries(data.build_graph(100, seed=3), 6, random.Random(2))
    fake = _Restarts(neo4j_connect, neo4j_server, args)
    phases, memory = search.restart_phases(
        args, fake, first, inner, queries, timing.Progress(quiet=True), "t"
    )
    assert [p["phase"] for p in phases] == [*search.RESTART_PHASES, search.COPY_PHASE]
    assert fake.restarts == 5 and phases[-1]["search"]["n"] == 3
    assert phases[-1]["copy"] == {"answered": 3, "declined": 0}  # the copy answered them all
    assert "copy" not in phases[-2]
    # the later phases time Neo4j itself: the returned memory has no copy
    assert memory.copy is None and memory.store is fake.stores[-1]
    assert [f.text for f in memory.search("Paris", user_id=data.TARGET_USER).facts] == [
        "Ana lives in Paris"
    ]
    memory.close()


@pytest.mark.neo4j
def test_restart_variants_restart_with_their_jvm_flags_and_search_with_their_options(
    neo4j_connect: Any,
) -> None:
    """Each --restart-variant restarts the server with its JVM flags (the restart counted,
    not done), opens a store with its Cypher options and no warm-up, and times the first N
    searches cold, then again after the untimed warm searches."""
    from bench import search

    from mem0g.config import EmbedderConfig
    from mem0g.embed import make_embedder

    inner = make_embedder(EmbedderConfig(provider="hashing")).inner
    args = cli.parse_args(
        ["--store", "neo4j", "--restart-phases", "3", "--paths", "graph",
         "--restart-variant", "interp||expressionEngine=interpreted",
         "--restart-variant", "c1|-XX:TieredStopAtLevel=1|"]
    )  # fmt: skip
    graph = data.build_graph(100, seed=3)
    queries = data.make_queries(graph, 5, random.Random(2))
    warm = data.warm_queries(graph, 2, queries, 4)
    fake = _Restarts(neo4j_connect)
    phases = search.restart_variants(
        args, fake, inner, queries, warm, timing.Progress(quiet=True), "t"
    )
    assert [p["phase"] for p in phases] == ["cold interp", "warm interp", "cold c1", "warm c1"]
    assert fake.java_opts == ["", "-XX:TieredStopAtLevel=1"] and fake.budgets == [0.0, 0.0]
    assert [s._read_texts["walk"].startswith("CYPHER ") for s in fake.stores] == [True, False]
    assert [p["search"]["n"] for p in phases] == [3, 3, 3, 3]
    assert phases[1]["server_warmup"]["searches"] == 2 and "server_warmup" not in phases[0]
    assert phases[2]["java_opts"] == "-XX:TieredStopAtLevel=1"
    assert phases[0]["cypher_options"] == "expressionEngine=interpreted"


def test_phase_targets_judge_the_named_phase_at_its_size() -> None:
    def run(ratio: float, phase: str | None = None) -> dict[str, Any]:
        return {"ratio_p95": ratio, "busy": False, **({"phase": phase} if phase else {})}

    sizes = [
        {
            "edges": 10_000,
            **run(9.0),
            "phases": [run(3.9, "first minute"), run(9.0, "cold"), run(4.2, "warm start")],
        },
        {"edges": 100_000, **run(3.5), "phases": [run(6.1, "first minute"), run(2.9, "warm")]},
    ]
    verdicts = {
        t["name"]: (t["value"], t["pass"]) for t in bench_report.targets("neo4j", sizes, None)
    }
    assert verdicts["first minute search_p95 <= 4x query_embed_p95 at 10k edges"] == (3.9, True)
    assert verdicts["warm start search_p95 <= 4x query_embed_p95 at 10k edges"] == (4.2, False)
    assert verdicts["first minute search_p95 <= 6x query_embed_p95 at 100k edges"] == (6.1, False)
    assert verdicts["warm start search_p95 <= 6x query_embed_p95 at 100k edges"] == (None, None)
    assert verdicts["warm search_p95 <= 3x query_embed_p95 at 100k edges"] == (2.9, True)
    assert verdicts["search_p95 <= 4x query_embed_p95 at 100k edges"] == (3.5, True)


@pytest.mark.neo4j
def test_the_linking_a_b_runs_on_a_store_the_benchmark_built(
    tmp_path: Path, bench_neo4j: Any, neo4j_connect: Any
) -> None:
    """scripts/ab_linking.py on the store bench_search.py left on the server: both arms
    searched every query, with their figures, and the comparison counted."""
    assert cli.main(_neo4j_argv(bench_neo4j, tmp_path / "build.json", "--adds", "0")) == 0
    out = tmp_path / "ab.json"
    argv = ["--uri", bench_neo4j.uri, "--edges", "150", "--queries", "6", "--warmup", "2",
            "--block", "3", "--embedder", "hashing", "--out", str(out)]  # fmt: skip
    assert ab_linking.main(argv) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["queries"] == 6 and report["warmup_per_arm"] == 2
    for arm in ("held", "index"):
        assert 0 < report["arms"][arm]["search_p50_ms"] <= report["arms"][arm]["search_p95_ms"]
    apart = report["searches_linking_other_entities"] + report["searches_with_other_edges_only"]
    assert 0 <= apart <= 6 and len(report["examples"]) <= 6
    assert report["server_cpu_per_search_ms"] == {}  # no --server-pid


def test_whole_store_bench_reports_every_checkpoint(tmp_path: Path) -> None:
    """scripts/bench_whole_store.py on tiny sizes (embedded): one row per checkpoint, each
    read timed, every run tenant exported (its own assertions check the records' counts)."""
    bench = load_script("bench_whole_store")
    out = tmp_path / "whole.json"
    assert bench.main(["--runs", "3,7", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    rows = report["checkpoints"]
    assert [row["runs"] for row in rows] == [3, 7]
    for row in rows:
        for key in ("fill_s", "tenants_s", "get_all_one_run_s", "get_everything_s", "export_s"):
            assert row[key] > 0, key
        assert 0 < row["export_tenant_ms"]["p50"] <= row["export_tenant_ms"]["p95"]
    assert report["store"] == "embedded" and report["machine"]
