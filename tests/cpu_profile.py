"""Where the suite's CPU goes, per test: `MEM0G_TEST_CPU=out.json pytest ...` (with
pytest-xdist, one file per worker: out.gw0.json, ...). On 2 cores the suite's wall time is
bounded by CPU seconds, and most of them are spent outside pytest, in the Neo4j servers, which
no pytest timing sees. For each test: when it began (seconds after the run did, one clock for
all workers: which worker ends last, and on what), its wall time, the CPU of pytest itself, of
the child processes it waited for (CLI runs, writers), and of every Neo4j server this run started
(java processes carrying this run's marker in their environment, sampled from /proc: the
session server and the servers tests start themselves). The JSON holds the tests, the totals
per file, and the run's totals; the slowest files by server CPU are printed at the end.
"""

from __future__ import annotations

import json
import os
import resource
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

MARKER = "MEM0G_TEST_CPU_RUN"
EPOCH = "MEM0G_TEST_CPU_EPOCH"  # one clock for all of a run's workers (their rows' "start")
_TICK = os.sysconf("SC_CLK_TCK")


class ServerCPU:
    """CPU seconds of this run's java processes, last seen per pid (a thread samples /proc
    every `every` seconds, so a server that stops keeps what it had used up to then)."""

    def __init__(self, marker: str, every: float = 0.5) -> None:
        self.needle = f"{MARKER}={marker}".encode()
        self.seen: dict[int, float] = {}
        self.skip: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(every,), daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _loop(self, every: float) -> None:
        while not self._stop.wait(every):
            self.total()

    def total(self) -> float:
        """Sample now; the CPU seconds of every server seen so far."""
        found: dict[int, float] = {}
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) in self.skip:
                continue
            pid = int(name)
            try:
                with open(f"/proc/{pid}/environ", "rb") as env:
                    if self.needle not in env.read():  # (a child of ours carries it at once)
                        self.skip.add(pid)
                        continue
                with open(f"/proc/{pid}/cmdline", "rb") as cmd:
                    if b"java" not in cmd.read().split(b"\0", 1)[0]:
                        continue  # python now, maybe java after its exec
                with open(f"/proc/{pid}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            found[pid] = (int(fields[11]) + int(fields[12])) / _TICK
        with self._lock:
            self.seen.update(found)
            return sum(self.seen.values())


def _own() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


class CPUProfile:
    """The plugin: a row per test (setup, call and teardown together)."""

    def __init__(self, out: Path) -> None:
        self.out = out
        marker = uuid.uuid4().hex
        os.environ[MARKER] = marker  # the servers and every other child inherit it
        self.servers = ServerCPU(marker)
        self.rows: list[dict[str, Any]] = []
        self.began = (time.monotonic(), *_own(), 0.0)
        self.epoch = float(os.environ.setdefault(EPOCH, str(time.time())))  # the run's start

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Any:
        wall, me, kids = time.monotonic(), *_own()
        server = self.servers.total()
        yield
        wall2, me2, kids2 = time.monotonic(), *_own()
        row = {
            "test": item.nodeid,
            "neo4j": item.get_closest_marker("neo4j") is not None,
            "start": round(time.time() - self.epoch, 3),  # where the tail is, across workers
            "wall": round(wall2 - wall, 3),
            "pytest_cpu": round(me2 - me, 3),
            "children_cpu": round(kids2 - kids, 3),
            "server_cpu": round(self.servers.total() - server, 3),
        }
        self.rows.append(row)
        with self.out.with_suffix(".jsonl").open("a") as partial:  # kept if the run is cut
            partial.write(json.dumps(row) + "\n")

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.servers.start()

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.servers.stop()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """After the session fixtures' teardown (the session server's stop is counted)."""
        wall, me, kids = time.monotonic(), *_own()
        totals = {
            "wall": round(wall - self.began[0], 1),
            "pytest_cpu": round(me - self.began[1], 1),
            "children_cpu": round(kids - self.began[2], 1),
            "server_cpu": round(self.servers.total(), 1),
            "servers": len(self.servers.seen),
            "load": os.getloadavg(),
        }
        files: dict[str, dict[str, float]] = {}
        for row in self.rows:
            name = row["test"].split("::", 1)[0]
            into = files.setdefault(name, {"tests": 0})
            into["tests"] += 1
            for key in ("wall", "pytest_cpu", "children_cpu", "server_cpu"):
                into[key] = round(into.get(key, 0.0) + row[key], 3)
        self.out.write_text(
            json.dumps({"totals": totals, "files": files, "tests": self.rows}, indent=1) + "\n"
        )
        lines = [f"[mem0g tests] CPU seconds: {totals} (per test: {self.out})"]
        by_server = sorted(files.items(), key=lambda kv: -kv[1].get("server_cpu", 0.0))
        for name, row in by_server[:12]:
            lines.append(f"  {name}: {row}")
        print("\n".join(lines))


def register(config: pytest.Config) -> None:
    """Register the plugin when MEM0G_TEST_CPU names its output, in each process that runs
    tests: the one process, or each pytest-xdist worker (out.gw0.json, ...; its servers carry
    its own marker, so its tests' server CPU is its own server's)."""
    out = os.environ.get("MEM0G_TEST_CPU")
    worker = getattr(config, "workerinput", {}).get("workerid")
    if out:
        os.environ.setdefault(EPOCH, str(time.time()))  # the controller's, its workers inherit it
    if not out or (worker is None and config.getoption("numprocesses", None)):
        return  # (the xdist controller runs no tests)
    path = Path(out) if worker is None else Path(out).with_suffix(f".{worker}.json")
    config.pluginmanager.register(CPUProfile(path), "mem0g-cpu-profile")
