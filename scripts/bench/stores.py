"""The stores under test: fresh embedded directories, or a Neo4j server (external, or a
throwaway one assembled from Maven Central) and what it costs in CPU."""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench.timing import Progress, machine_cpu
from mem0g.stores.base import GraphStore


class BenchStores:
    """Fresh, empty stores of one kind for each size, and whatever server they need.

    embedded: a new directory per size. neo4j: the server named by ``--neo4j-uri`` /
    NEO4J_URI (its database is wiped before each size, so an external server needs
    ``--wipe``), else a throwaway Maven-assembled server (scripts/neo4j via
    mem0g/testing/neo4j.py) in a temporary home on free ports, stopped at the end."""

    def __init__(self, kind: str, args: argparse.Namespace, progress: Progress) -> None:
        if kind not in ("embedded", "neo4j"):
            raise ValueError(f"unknown store {kind!r}; choose embedded or neo4j")
        self.kind = kind
        self.args = args
        self.progress = progress
        self.server: Any = None
        self.pid: int | None = None  # the throwaway server's process: its CPU time is read
        self.info: dict[str, Any] = {"kind": kind}

    def start(self) -> None:
        """Connect to (or start) the server before any model is loaded: fail fast."""
        if self.kind != "neo4j":
            return
        from neo4j import GraphDatabase

        uri = self.args.neo4j_uri or os.environ.get("NEO4J_URI")
        if uri:
            if getattr(self.args, "restart_phases", 0):
                raise SystemExit(
                    "error: --restart-phases restarts the server: it needs the throwaway one "
                    "(leave --neo4j-uri and NEO4J_URI unset)"
                )
            if self.args.server_cpus or self.args.neo4j_setting:
                raise SystemExit(
                    "error: --server-cpus and --neo4j-setting apply to the throwaway server only"
                )
            user = os.environ.get("NEO4J_USERNAME") or "neo4j"
            self.auth = (user, os.environ.get("NEO4J_PASSWORD") or "")
            self.uri = uri
            self.info.update(server="external", uri=uri)
        else:
            from mem0g.testing.neo4j import Neo4jUnavailable, start_maven_server

            os.environ.setdefault("MEM0G_NEO4J_PAGECACHE", self.args.neo4j_pagecache)
            self.progress.line(
                f"starting a throwaway Neo4j (heap {self.args.neo4j_heap}, page cache "
                f"{os.environ['MEM0G_NEO4J_PAGECACHE']}) with scripts/neo4j ..."
            )
            try:
                self.server = start_maven_server(
                    heap=self.args.neo4j_heap,
                    cpus=self.args.server_cpus,
                    settings=self.args.neo4j_setting,
                )
            except Neo4jUnavailable as exc:
                raise SystemExit(f"error: no Neo4j server for the benchmark: {exc}") from exc
            self.uri, self.auth = self.server.uri, (self.server.user, self.server.password)
            self.info.update(
                server="maven (scripts/neo4j, throwaway home)",
                heap=self.args.neo4j_heap,
                pagecache=os.environ["MEM0G_NEO4J_PAGECACHE"],
                cpus=self.args.server_cpus or "all",
                settings=self.args.neo4j_setting,
                java_opts=os.environ.get("MEM0G_NEO4J_JAVA_OPTS", ""),
            )
            self.pid = self._server_pid()
            argv = Path(f"/proc/{self.pid}/cmdline").read_bytes().decode().split("\0")
            self.info["neo4j_toggles"] = [a for a in argv if a.startswith("-Dorg.neo4j.")]
        with GraphDatabase.driver(self.uri, auth=self.auth) as driver:
            try:
                driver.verify_connectivity()
                self.info["version"] = driver.get_server_info().agent
            except Exception as exc:
                self.close()
                raise SystemExit(f"error: cannot reach Neo4j at {self.uri}: {exc}") from exc
        self.progress.line(f"Neo4j {self.info['version']} at {self.uri}")

    def connect(
        self, dims: int, warmup_seconds: float = 0.0, cypher_options: str = ""
    ) -> GraphStore:
        """The Neo4j store on the benchmark's server, its data as it is; `warmup_seconds` > 0
        starts the store's own background warm-up (graph_store.warmup), as `Memory` from a
        config does."""
        from mem0g.stores.neo4j import Neo4jGraphStore

        return Neo4jGraphStore(
            self.uri,
            self.auth,
            database=self.args.neo4j_database,
            dims=dims,
            entity_vectors=self.args.neo4j_entity_vectors,
            warmup_seconds=warmup_seconds,
            # (bench_resolver.py's arguments have no warm-up options: the store's default)
            warmup_parallel=getattr(self.args, "store_warmup_parallel", 2),
            cypher_options=cypher_options,
            packed_reads=getattr(self.args, "packed_reads", "on") == "on",
        )

    def warm_start(self, seconds: float) -> tuple[float, dict[str, Any]]:
        """`mem0g warmup --seconds S` in its own process, as a deploy runs it after the server
        starts and before traffic; returns its wall seconds and the status it printed."""
        import json
        import subprocess

        env = {
            **os.environ,
            "MEM0G_GRAPH_STORE__PROVIDER": "neo4j",
            "MEM0G_GRAPH_STORE__URL": self.uri,
            "MEM0G_GRAPH_STORE__USERNAME": self.auth[0],
            "MEM0G_GRAPH_STORE__PASSWORD": self.auth[1],
        }
        packed = getattr(self.args, "packed_reads", "on") == "on"
        env["MEM0G_GRAPH_STORE__PACKED_READS"] = "true" if packed else "false"
        if self.args.neo4j_database:
            env["MEM0G_GRAPH_STORE__DATABASE"] = self.args.neo4j_database
        begin = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", "from mem0g.cli import app; app()", "warmup",
             "--seconds", str(seconds), "--json"],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        took = time.perf_counter() - begin
        if done.returncode != 0:
            raise SystemExit(f"error: mem0g warmup failed ({done.returncode}): {done.stderr}")
        return took, json.loads(done.stdout)

    def restart(self, java_opts: str | None = None) -> float:
        """A fresh JVM on the same data, as after a deploy, an upgrade or a crash (the
        throwaway server only; `java_opts`: extra JVM flags for this start instead of
        MEM0G_NEO4J_JAVA_OPTS); returns the seconds it took."""
        if self.server is None:
            raise SystemExit(
                "error: --restart-phases restarts the server: it needs the throwaway one "
                "(leave --neo4j-uri and NEO4J_URI unset)"
            )
        begin = time.perf_counter()
        self.server.restart(java_opts)
        self.pid = self._server_pid()
        return time.perf_counter() - begin

    def _server_pid(self) -> int:
        return int((self.server.home / "run" / "neo4j.pid").read_text().split()[0])

    def open(self, path: Path, dims: int) -> GraphStore:
        if self.kind == "embedded":
            from mem0g.stores.embedded import EmbeddedGraphStore

            return EmbeddedGraphStore(path, dims=dims)
        store = self.connect(dims)
        held = store.stats()
        if held.entities or held.relations or held.episodes:
            if self.server is None and not self.args.wipe:
                store.close()
                raise SystemExit(
                    f"error: the Neo4j database at {self.uri} is not empty ({held.entities} "
                    f"entities, {held.relations} relations); the benchmark wipes it before each "
                    "size: pass --wipe to allow that, or leave NEO4J_URI unset to use a "
                    "throwaway server"
                )
            begin = time.perf_counter()
            store.reset()
            self.progress.line(f"wiped the Neo4j database in {time.perf_counter() - begin:.1f}s")
        return store

    def server_cpu(self) -> float | None:
        """CPU seconds the throwaway server has used (None: no server process here)."""
        if self.pid is None:
            return None
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def jit_cpu(self) -> float | None:
        """CPU seconds the throwaway server's JIT compiler threads have used (None: no server
        process here): whether a server is still compiling, i.e. not yet warm."""
        if self.pid is None:
            return None
        try:
            return compiler_ns(self.pid) / 1e9
        except OSError:
            return None

    def others_cpu(self) -> float | None:
        """CPU seconds used so far by every process on this machine except this one and the
        throwaway server (Linux); None when that cannot be told (an external server on this
        machine would count as "others")."""
        machine = machine_cpu()
        if machine is None or (self.kind == "neo4j" and self.server_cpu() is None):
            return None
        return machine - sum(os.times()[:2]) - (self.server_cpu() or 0.0)

    def settle(self) -> dict[str, Any]:
        """Wait out the server's work left from the build (index merges, flushes): until it
        uses under 5% of a core over 3 s with its threads seldom runnable, or a fixed time
        when it cannot be watched. CPU alone is not enough on a loaded machine: a busy server
        starved of cores uses little CPU too, but its threads wait in the run queue (state R),
        where an idle server's sleep."""
        if self.kind != "neo4j":
            return {"waited_s": 0.0}
        begin = time.perf_counter()
        if self.server_cpu() is None:
            wait = 30.0 if self.args.settle is None else self.args.settle
            self.progress.line(f"waiting {wait:.0f}s for the server to settle ...")
            time.sleep(wait)
            return {"waited_s": wait, "watched": False}
        limit = 600.0 if self.args.settle is None else self.args.settle
        self.progress.line("waiting for the server to go idle after the build ...")
        idle = False
        while time.perf_counter() - begin < limit:
            used = self.server_cpu() or 0.0
            samples = [self._runnable() for _ in _ticks(3.0, 0.1)]
            quiet = sum(samples) <= 0.2 * len(samples)
            if (self.server_cpu() or 0.0) - used < 0.15 and quiet:
                idle = True
                break
        waited = round(time.perf_counter() - begin, 1)
        self.progress.line(f"server {'idle' if idle else 'still busy'} after {waited:.0f}s")
        return {"waited_s": waited, "watched": True, "idle": idle}

    def _runnable(self) -> bool:
        """Whether any thread of the server is running or waiting for a core (/proc state R)."""
        try:
            tasks = list(Path(f"/proc/{self.pid}/task").iterdir())
        except OSError:
            return False
        for task in tasks:
            try:
                if (task / "stat").read_text().rsplit(")", 1)[1].split()[0] == "R":
                    return True
            except (OSError, IndexError):
                continue
        return False

    def close(self) -> None:
        if self.server is not None:
            server, self.server = self.server, None
            server.stop()


def _ticks(span: float, every: float) -> Iterator[None]:
    """Yields every `every` seconds for `span` seconds (sampling points)."""
    end = time.perf_counter() + span
    while time.perf_counter() < end:
        yield
        time.sleep(every)


def parse_cpus(text: str) -> set[int]:
    """'0', '0-1', '0,2' -> a CPU set this process may use (else a clear error)."""
    cpus: set[int] = set()
    try:
        for part in text.split(","):
            first, dash, last = part.strip().partition("-")
            cpus.update(range(int(first), int(last if dash else first) + 1))
    except ValueError:
        raise SystemExit(f"error: not a CPU list: {text!r} (e.g. 0, 0-1, 0,2)") from None
    if not hasattr(os, "sched_getaffinity"):
        raise SystemExit("error: --client-cpus needs Linux (os.sched_setaffinity)")
    have = os.sched_getaffinity(0)
    if not cpus or not cpus <= have:
        raise SystemExit(f"error: CPUs {text!r} are not all available here (have {sorted(have)})")
    return cpus


def thread_ns(pid: int) -> int:
    """Run time of every live thread of `pid`, in ns (/proc/PID/task/*/schedstat)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total


def compiler_ns(pid: int) -> int:
    """Run time of the JVM's JIT compiler threads of `pid` (named "C1/C2 CompilerThre..."),
    in ns: what of the server's CPU is compiling rather than serving."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            if "Compiler" in (task / "comm").read_text():
                total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total


def cpu_model() -> str | None:
    """The CPU's model name (Linux: /proc/cpuinfo). The machines these runs land on change
    from day to day (an Intel host one day, an AMD EPYC the next), and a ratio is only
    comparable between runs on the same kind of CPU."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or None


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        "numpy": np.__version__,
    }
    if hasattr(os, "sched_getaffinity"):
        info["usable_cpus"] = len(os.sched_getaffinity(0))
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        info["torch"] = torch.__version__
        info["torch_threads"] = torch.get_num_threads()
    return info
