"""Shared fixtures. The LLM is always the scripted TEST DOUBLE server (no LLM is reachable
here, and tests must be deterministic); embeddings are the real MiniLM where behaviour
depends on meaning, and the hashing embedder where only plumbing is tested.

Store-level and pipeline tests run on both stores (`store_kind`): the embedded one in a temp
directory, and Neo4j on one real server per session (mem0g/testing/neo4j.py: NEO4J_URI, Docker
or scripts/neo4j). No server is an error, never a skip.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import cpu_profile
import numpy as np
import pytest
from builders import DIMS, Store

from mem0g import Memory
from mem0g.config import EmbedderConfig
from mem0g.embed import CachedEmbedder, make_embedder
from mem0g.stores import EmbeddedGraphStore
from mem0g.stores.neo4j import Neo4jGraphStore
from mem0g.testing import ScriptedLLMServer

STORE_KINDS = ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)]
_RAM_TMP = pytest.StashKey[Path]()


def pytest_configure(config: pytest.Config) -> None:
    # Test servers keep tiered compilation, with C2 inlining less (TEST_SERVER_JAVA_OPTS, below: a
    # quarter less server CPU on 124 Neo4j tests). C1 alone (-XX:TieredStopAtLevel=1) made one
    # open-empty-write fixture cheaper (0.28 s of server CPU instead of 0.67 s), but the whole
    # serial Neo4j phase slower: 764 s with it, 540 s without, on the quiet 2-core machine
    # (2026-12-01). In CPU seconds it is cheaper: the 58 Neo4j tests of test_store_contract.py took
    # 211 s of server CPU with it, 287 s without (load 17-22, 2026-12-02; the JIT's C2 threads were
    # about 40% of a young server's CPU). The whole suite on two workers with it
    # (MEM0G_NEO4J_JAVA_OPTS=-XX:TieredStopAtLevel=1 make test, idle machine, 2026-12-03 16:00-16:14
    # UTC): 13.4 minutes, the two session JVMs 474 + 442 CPU s, against 10-12 minutes and about
    # 630-660 CPU s with the default JIT: not adopted. Fewer C2 compiles
    # (-XX:CompileThresholdScaling=4 or 10; C2 threads were ~40% of a session server's CPU) saved
    # 8-12% of server CPU over 299 of the Neo4j tests but made the warm-up test, which runs until
    # the server's statements settle, 4x dearer: about even in total (load 8-13, 2026-12-02,
    # docs/benchmarks.md), so not adopted either.
    _temp_in_ram(config)
    _one_inference_thread_per_worker(config)
    cpu_profile.register(config)  # MEM0G_TEST_CPU=out.json: CPU seconds per test, servers too
    _no_background_warmup()
    if config.getoption("dist", "no") == "load":  # -n alone: keep the fixture groups together
        config.option.dist = "loadgroup"
        # a worker parses the command line again and decides on loadgroup before its
        # plugins run, so it never sees this switch: it reads it from the environment
        os.environ[_LOADGROUP_ENV] = "1"


def _no_background_warmup() -> None:
    """A Neo4j store opened from a config warms the server's read paths in the background
    (graph_store.warmup, on by default), for up to 120 s on two sessions: in a test, that is
    server CPU taken from the test itself. The suite's stores, in this process and in the CLI
    and service processes it starts, open without it (MEM0G_GRAPH_STORE__WARMUP=false, which
    a config's own `warmup` overrides); tests/test_neo4j_warmup.py and the doctor test turn it
    on and test it. A caller's MEM0G_GRAPH_STORE__WARMUP wins."""
    os.environ.setdefault("MEM0G_GRAPH_STORE__WARMUP", "false")


def _one_inference_thread_per_worker(config: pytest.Config) -> None:
    """With pytest-xdist workers (`make test`), each worker and the CLI processes its tests
    start run MiniLM on one OpenMP thread: the workers already keep the cores busy, and a
    team of threads per worker would only contend for them. Set before the workers start
    (they inherit it) and before torch is loaded; an OMP_NUM_THREADS of the caller wins."""
    if int(config.getoption("numprocesses", 0) or 0) > 1 or _worker(config) is not None:
        os.environ.setdefault("OMP_NUM_THREADS", "1")


def _temp_in_ram(config: pytest.Config) -> None:
    """The suite's temporary files (tmp_path, the test Neo4j's home, child processes' TMPDIR)
    go to a fresh directory on /dev/shm when it is a tmpfs: SQLite's synchronous=FULL commits
    and Neo4j's transaction-log and index flushes then wait for no disk (an fsync costs about
    5 ms on our machines' disk, and the suite makes thousands). A commit is still a commit;
    only a power cut, which no test simulates, could tell. MEM0G_TEST_TMP=disk opts out."""
    shm = Path("/dev/shm")
    if os.environ.get("MEM0G_TEST_TMP") == "disk" or not _is_tmpfs(shm):
        return
    ram = Path(tempfile.mkdtemp(prefix="mem0g-tests-", dir=shm))
    os.environ["TMPDIR"] = str(ram)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    config.stash[_RAM_TMP] = ram


def pytest_unconfigure(config: pytest.Config) -> None:
    ram = config.stash.get(_RAM_TMP, None)
    if ram is not None:
        shutil.rmtree(ram, ignore_errors=True)


def _is_tmpfs(path: Path) -> bool:
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return False
    writable = os.access(path, os.W_OK)
    return writable and any(line.split()[1:3] == [str(path), "tmpfs"] for line in mounts)


@pytest.fixture(scope="session")
def minilm() -> CachedEmbedder:
    return make_embedder(EmbedderConfig())


@pytest.fixture(scope="session")
def hashing() -> CachedEmbedder:
    return make_embedder(EmbedderConfig(provider="hashing"))


@pytest.fixture
def llm_server() -> Iterator[ScriptedLLMServer]:
    with ScriptedLLMServer() as server:
        yield server


def _worker(config: pytest.Config) -> str | None:
    """This process's pytest-xdist worker id ("gw0"), or None when it runs the tests itself."""
    workerinput = getattr(config, "workerinput", None)
    return None if workerinput is None else str(workerinput["workerid"])


def _say(config: pytest.Config, line: str) -> None:
    """A progress line on the terminal, between the dots (not captured, not buffered). A
    pytest-xdist worker's terminal output goes nowhere, but its stderr is the terminal's: the
    line goes there, tagged with the worker's id."""
    capture = config.pluginmanager.get_plugin("capturemanager")
    worker = _worker(config)
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        if worker is not None:
            tagged = line.replace("[mem0g tests]", f"[mem0g tests {worker}]", 1)
            sys.stderr.write(f"\n{tagged}\n")
            sys.stderr.flush()
            return
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        if getattr(reporter._tw, "width_of_current_line", 0):  # after a row of dots
            reporter.write("\n")
        reporter.write_line(line, bold=True)


# Fixtures of the store-level tests, whose vectors are builders.DIMS wide; the other Neo4j
# tests embed with MiniLM or hashing (384). Neo4j replaces its vector indexes whenever the
# width changes (a second of server CPU each), so the Neo4j phase runs each width together.
_SMALL_VECTORS = frozenset({"store", "open_store"})


def _phase_order(item: pytest.Item) -> tuple[bool, bool, bool]:
    neo4j = item.get_closest_marker("neo4j") is not None
    fixtures = getattr(item, "fixturenames", ())
    later = item.get_closest_marker("long") is None
    return neo4j, later, neo4j and not _SMALL_VECTORS.intersection(fixtures)


def pytest_itemcollected(item: pytest.Item) -> None:
    """Under pytest-xdist (`--dist loadgroup`, as `make test` runs it), the tests that share a
    module- or class-scoped fixture run on one worker, one after the other: the fixture is
    built once, and a fixture that holds a Neo4j graph for its module (test_browser_queries)
    is not emptied by another test between two of its own. Items that share one node id
    (schemathesis gives each API operation's test its function's id) get their own, the name
    they are shown with: pytest-xdist keys its work by node id, and ran 1 of 24 such items."""
    if item.nodeid.rsplit("::", 1)[-1] != item.name and item.parent is not None:
        _rename(item, f"{item.parent.nodeid}::{item.name}")  # schemathesis: one id, many items
    info = getattr(item, "_fixtureinfo", None)
    shared = sorted(
        f"{item.path.name}::{name}"
        for name, defs in (info.name2fixturedefs.items() if info else ())
        if defs and defs[-1].scope in ("module", "class", "package")
    )
    if shared and item.get_closest_marker("xdist_group") is None:  # a test's own group wins
        item.add_marker(pytest.mark.xdist_group(shared[0]))


def _rename(item: pytest.Item, nodeid: str) -> None:
    """Give an item another node id. pytest 9 keeps it in `_id` (pytest-xdist 3.8, which sets
    `_nodeid` for its groups, predates that: its loadgroup suffix is set again below)."""
    if hasattr(item, "_id"):
        from _pytest.nodeid import coerce_node_id

        item._id = coerce_node_id(nodeid)
    else:
        item._nodeid = nodeid


_LOADGROUP_ENV = "MEM0G_TESTS_LOADGROUP"


def _group_suffixes(config: pytest.Config, items: list[pytest.Item]) -> None:
    """pytest-xdist's `--dist loadgroup` schedules by the "@group" suffix of node ids (which
    the workers send the controller). Without `--dist loadgroup` on the command line a worker
    adds none itself (its loadgroup option is decided from its own parse, before conftest's
    switch above): seen 2026-12-02, module fixtures were built on both workers."""
    worker_in_group = _worker(config) is not None and os.environ.get(_LOADGROUP_ENV) == "1"
    if not (config.getoption("loadgroup", False) or worker_in_group):
        return
    for item in items:
        marker = item.get_closest_marker("xdist_group")
        if marker is not None and "@" not in item.nodeid.rsplit("]", 1)[-1]:
            _rename(item, f"{item.nodeid}@{marker.args[0]}")


@pytest.hookimpl(trylast=True)  # after -k/-m deselection: count what will run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests without Neo4j run first (a quick failure shows early), then the Neo4j ones;
    within each phase the `long` ones first (so parallel workers finish together), and in the
    Neo4j phase the store-level ones (8-dim vectors) before the rest; otherwise the order is
    the files' own. Each test carries its phase and the phases' sizes to the pytest-xdist
    controller, which announces the phases (a worker sees only its own share)."""
    items.sort(key=_phase_order)
    _group_suffixes(config, items)
    phases = {
        "local": sum(1 for i in items if i.get_closest_marker("neo4j") is None),
        "neo4j": sum(1 for i in items if i.get_closest_marker("neo4j") is not None),
    }
    config.stash[_PHASES] = phases
    for item in items:
        phase = "neo4j" if item.get_closest_marker("neo4j") is not None else "local"
        item.user_properties.append((_PHASE_PROPERTY, (phase, phases["local"], phases["neo4j"])))


_PHASES = pytest.StashKey[dict[str, int]]()
_STARTED = pytest.StashKey[tuple[str, float]]()
_PHASE_PROPERTY = "mem0g_phase"
_WHAT = {
    "local": "tests without Neo4j (embedded store, CLI, eval, ...)",
    "neo4j": "tests on a real Neo4j 5.26 server (the server starts first)",
}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    config = item.config
    if _worker(config) is not None:  # the controller announces the phases (_Phases)
        return
    phase = "neo4j" if item.get_closest_marker("neo4j") is not None else "local"
    previous = config.stash.get(_STARTED, None)
    if previous is not None and previous[0] == phase:
        return
    now = time.monotonic()
    if previous is not None:
        _say(config, f"[mem0g tests] {previous[0]} phase done in {now - previous[1]:.0f} s")
    count = config.stash.get(_PHASES, {}).get(phase, 0)
    _say(config, f"[mem0g tests] phase {phase}: {count} {_WHAT[phase]}")
    config.stash[_STARTED] = (phase, now)


class _Phases:
    """The phases of a pytest-xdist run, told by its controller from the workers' reports:
    the workers share the tests out in the sorted order, so the local tests end (mostly)
    before the Neo4j ones begin, but the two overlap while the last local tests finish."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.workers = int(config.getoption("numprocesses") or 0)
        self.total: dict[str, int] = {}
        self.begun: dict[str, float] = {}
        self.done: dict[str, int] = {"local": 0, "neo4j": 0}
        self.ended: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        found = dict(report.user_properties).get(_PHASE_PROPERTY)
        if found is None:
            return
        phase, local, neo4j = found
        now = time.monotonic()
        if not self.total:
            self.total = {"local": local, "neo4j": neo4j}
            self.say(
                f"[mem0g tests] {local + neo4j} tests on {self.workers} workers: {local} "
                f"without Neo4j first, then {neo4j} on Neo4j (each worker starts a Neo4j "
                "server of its own when it gets its first Neo4j test)"
            )
        if report.when == "setup" and phase not in self.begun:
            self.begun[phase] = now - report.duration
            self.say(f"[mem0g tests] phase {phase}: {self.total[phase]} {_WHAT[phase]}")
        if report.when == "teardown":
            self.done[phase] += 1
            if self.done[phase] == self.total[phase]:
                self.ended[phase] = now
                self.say(self.summary(phase))

    def summary(self, phase: str) -> str:
        took = self.ended.get(phase, time.monotonic()) - self.begun[phase]
        count = f"{self.done[phase]} of {self.total[phase]}"
        return f"[mem0g tests] {phase} phase done: {count} tests in {took:.0f} s"

    def say(self, line: str) -> None:
        _say(self.config, line)


_CONTROLLER = pytest.StashKey[_Phases]()


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if config.pluginmanager.hasplugin("dsession"):  # a pytest-xdist controller
        phases = _Phases(config)
        config.stash[_CONTROLLER] = phases
        config.pluginmanager.register(phases, "mem0g-phases")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    phases = config.stash.get(_CONTROLLER, None)
    if phases is not None:
        for phase in phases.begun:
            terminalreporter.write_line(phases.summary(phase))
        return
    started = config.stash.get(_STARTED, None)
    if started is not None:
        took = time.monotonic() - started[1]
        terminalreporter.write_line(f"[mem0g tests] {started[0]} phase done in {took:.0f} s")


# The test server's own JVM flags and neo4j.conf lines, beside scripts/neo4j's (users' servers
# are not affected). JVM flags: C2 inlines less (see pytest_configure for the JIT flags
# tried before). A test server's C2 threads were 40% of its CPU, and a test is gone before
# most compiles pay back. With these three flags, 124 Neo4j tests cost their server (one
# worker, idle machine, 2026-12-03 21:20-21:35 UTC, per-thread CPU from /proc):
#   173.7 CPU s instead of 227.3 (C2 37.0 instead of 92.8; the Bolt workers that run the
#   statements 101.5 instead of 96.8).
# Inlining less still (35 / 3 / 300) made the statements slower than it saved (185.6).
# Settings: Cypher plans each statement once per server. By default a plan older than 10 s is
# planned again when the database's statistics moved by more than 75% since, which the tests'
# fill-and-empty cycles do before nearly every statement: planning is speed on a long-lived
# database, never what a statement returns. Without the replanning, the 63 Neo4j tests of
# test_store_contract.py cost their server 322 CPU seconds instead of 376 (its start included; side
# by side, load 18-26, 2026-12-02; docs/benchmarks.md). Compiling no expressions to bytecode as well
# (internal.cypher.expression_engine=INTERPRETED) made no difference there (326), so is left out; so
# are the serial GC (-XX:+UseSerialGC: 198 CPU s against 196) and no background index sampling (209
# against 215, within the spread), side by side on 110 and 89 Neo4j tests (2026-12-03,
# docs/benchmarks.md). MEM0G_TEST_NEO4J_SETTINGS adds neo4j.conf lines ("key=value;key=value"; a key
# given there replaces the one here) and MEM0G_NEO4J_JAVA_OPTS reaches the test servers, for trials.
TEST_SERVER_JAVA_OPTS = "-XX:FreqInlineSize=50 -XX:MaxInlineLevel=4 -XX:InlineSmallCode=500"
_SETTINGS = dict(
    line.split("=", 1)
    for line in [
        "dbms.cypher.min_replan_interval=1000h",
        "internal.cypher.replan_algorithm=NONE",
        *os.environ.get("MEM0G_TEST_NEO4J_SETTINGS", "").split(";"),
    ]
    if "=" in line
)
TEST_SERVER_SETTINGS = [f"{key}={value}" for key, value in _SETTINGS.items()]


@pytest.fixture(scope="session")
def neo4j_server(pytestconfig: pytest.Config) -> Iterator[Any]:
    """One real Neo4j per test session, held here rather than in neo4j_server's module
    global (which a test of that module stops); its failure fails every neo4j test."""
    from mem0g.testing.neo4j import start_neo4j

    _say(pytestconfig, "[mem0g tests] starting Neo4j for the tests (NEO4J_URI, Docker, or "
         "scripts/neo4j: assembled from Maven Central on first use, then cached)")  # fmt: skip
    started = time.monotonic()
    server = start_neo4j(settings=TEST_SERVER_SETTINGS, java_opts=TEST_SERVER_JAVA_OPTS)
    took = time.monotonic() - started
    _say(pytestconfig, f"[mem0g tests] Neo4j ready at {server.uri} ({server.kind}) in {took:.0f} s")
    yield server
    used = server.cpu_seconds()
    server.stop()
    if used is not None:  # the suite's other big CPU consumer, which pytest's timings miss
        _say(pytestconfig, f"[mem0g tests] Neo4j stopped; its JVM used {used:.0f} CPU seconds")


Neo4jConnect = Callable[..., Neo4jGraphStore]


@pytest.fixture(scope="session")
def neo4j_resetter(neo4j_server: Any) -> Iterator[Neo4jGraphStore]:
    """The store that empties the server before each test: it applies the schema (57
    statements) once per session, not once per test. `reset` deletes nodes only, so a test
    that changes indexes leaves nothing this store relies on; each test's own stores apply
    the schema again on first use, as every new store does."""
    store = Neo4jGraphStore(neo4j_server.uri, (neo4j_server.user, neo4j_server.password))
    yield store
    store.close()


@pytest.fixture
def neo4j_connect(neo4j_server: Any, neo4j_resetter: Neo4jGraphStore) -> Iterator[Neo4jConnect]:
    """Opens stores on the test server, emptied first: Community has a single database, so
    tests are isolated by resetting mem0g's data. Calling it again is "reopening" (a new
    store on its own driver)."""
    opened: list[Neo4jGraphStore] = []

    def connect(**kwargs: Any) -> Neo4jGraphStore:
        store = Neo4jGraphStore(
            neo4j_server.uri, (neo4j_server.user, neo4j_server.password), **kwargs
        )
        opened.append(store)
        return store

    neo4j_resetter.reset()
    yield connect
    for store in opened:
        store.close()


@pytest.fixture(params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def rng() -> np.random.Generator:
    """The random vectors of store-level tests (tests/builders.py), the same in every run."""
    return np.random.default_rng(1234)


@pytest.fixture
def open_store(
    store_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Callable[..., Store]:
    """Opens a store of the kind under test on this test's data; calling it again reopens
    (Neo4j: another driver on the same server, which neo4j_connect emptied first)."""
    if store_kind == "neo4j":
        return request.getfixturevalue("neo4j_connect")
    return lambda **kwargs: EmbeddedGraphStore(tmp_path / "store", **kwargs)


@pytest.fixture
def reopen(open_store: Callable[..., Store]) -> Callable[[Store], Store]:
    """Another store on the same data as the one under test (its dims read from the data)."""
    return lambda store: open_store()


@pytest.fixture
def store(open_store: Callable[..., Store]) -> Iterator[Store]:
    """A fresh store of the kind under test, for builders.DIMS-sized vectors."""
    s = open_store(dims=DIMS)
    yield s
    s.close()


@pytest.fixture
def embedded_store(tmp_path: Path) -> Iterator[EmbeddedGraphStore]:
    s = EmbeddedGraphStore(tmp_path / "store", dims=DIMS)
    yield s
    s.close()


MemoryFactory = Callable[..., Memory]


@pytest.fixture
def make_memory(
    tmp_path: Path,
    llm_server: ScriptedLLMServer,
    minilm: CachedEmbedder,
    store_kind: str,
    request: pytest.FixtureRequest,
) -> Iterator[MemoryFactory]:
    """Memory on a fresh store of `store_kind`, its LLM the scripted server, MiniLM
    embeddings. The neo4j store ignores `path`: a second Memory sees the same data."""
    made: list[Memory] = []
    graph_store: dict[str, Any] = {"provider": "embedded"}
    if store_kind == "neo4j":
        server = request.getfixturevalue("neo4j_server")
        request.getfixturevalue("neo4j_connect")  # empties the database
        graph_store = {
            "provider": "neo4j",
            "url": server.uri,
            "username": server.user,
            "password": server.password,
        }

    def factory(
        rules: list[dict[str, Any]] | None = None,
        *,
        path: Path | None = None,
        embedder: CachedEmbedder | None = None,
        **overrides: Any,
    ) -> Memory:
        for rule in rules or []:
            llm_server.add_rule(rule)
        config: dict[str, Any] = {
            "llm": {"base_url": llm_server.base_url, "api_key": "test", "max_retries": 1},
            "graph_store": {**graph_store, "path": str(path or tmp_path / "graph")},
            # graph-path tests script only the graph tasks; fact tests switch facts on
            "memory": {"facts": False, "summary": False},
        }
        for key, value in overrides.items():
            config.setdefault(key, {}).update(value)
        memory = Memory(config, embedder=embedder or minilm)
        made.append(memory)
        return memory

    yield factory
    for memory in made:
        memory.close()


# The tests that read the one crowd run on Neo4j (neo4j_crowd_run) carry its xdist group,
# `pytest.mark.xdist_group("neo4j_crowd_run")`: one worker runs them, so the run is made once.


@dataclasses.dataclass(frozen=True)
class CrowdRun:
    """One scripts/bench_resolver.py run on the test server: its exit code, its report, and
    the entities the server held right after it (before any other test emptied it)."""

    exit_code: int
    report: dict[str, Any]
    entities_on_server: int


@pytest.fixture(scope="session")
def neo4j_crowd_run(
    neo4j_server: Any, neo4j_resetter: Neo4jGraphStore, tmp_path_factory: pytest.TempPathFactory
) -> CrowdRun:
    """scripts/bench_resolver.py's crowded world at 100 people on the test server (emptied
    first), through the public API: the suite's largest Neo4j workload, made once for the
    tests that read its report (the resolver's targets in test_resolve_crowd.py, the report's
    completeness in test_bench_resolver.py) instead of once each."""
    from script_module import load_script

    bench = load_script("bench_resolver")
    out = tmp_path_factory.mktemp("neo4j-crowd") / "crowd.json"
    argv = ["--store", "neo4j", "--neo4j-uri", neo4j_server.uri, "--quiet", "--out", str(out),
            "--people", "100", "--queries", "100"]  # fmt: skip
    neo4j_resetter.reset()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("NEO4J_USERNAME", neo4j_server.user)
        env.setenv("NEO4J_PASSWORD", neo4j_server.password)
        code = bench.main(argv)
    report = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    return CrowdRun(code, report, neo4j_resetter.stats().entities)
