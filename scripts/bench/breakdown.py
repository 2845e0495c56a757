"""Where a freshly restarted Neo4j server's CPU goes, statement by statement (issue #18).

The reads of real searches are recorded on the built store (name and parameters, as the store
sent them), then replayed against a fresh JVM on the same data, one read at a time, with the
server's CPU read from /proc around each (every thread's run time in ns, `schedstat`, so one
read's few ms are seen; the process total in clock ticks is kept as a check):

* alone: for each statement, a restart, the schema step, then only that statement's recorded
  reads, N of them (cycling over the recorded parameters): its cold cost with no other
  statement compiled before it;
* mixed: one restart, then the recorded searches' reads in their order, one at a time, for
  N searches: where a cold search's CPU goes when the statements warm each other.

No timing here is a search latency (reads run one at a time, not beside each other)."""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.stores import BenchStores
from bench.timing import Progress, load_average, summary
from mem0g import Memory

Read = tuple[str, dict[str, Any]]


def record_reads(memory: Memory, queries: Sequence[str], user: str) -> list[list[Read]]:
    """Each search's reads (statement name, parameters), in the order they were sent."""
    store: Any = memory.store
    real = store._read
    lock = threading.Lock()
    current: list[Read] = []

    def spy(name: str, params: dict[str, Any]) -> Any:
        with lock:
            current.append((name, params))
        return real(name, params)

    searches: list[list[Read]] = []
    store._read = spy
    try:
        for query in queries:
            memory.search(query, user_id=user, limit=10)
            with lock:
                searches.append(list(current))
                current.clear()
    finally:
        del store._read  # the class's method again
    return searches


def thread_ns(pid: int) -> int:
    """Run time of every live thread of `pid`, in ns (/proc/PID/task/*/schedstat)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total


def _ticks_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Meter:
    """Per-read server CPU (ms) and wall (ms), by statement."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.cpu: dict[str, list[float]] = defaultdict(list)
        self.wall: dict[str, list[float]] = defaultdict(list)
        self.started_ticks = _ticks_s(pid)

    def run(self, read: Callable[[str, dict[str, Any]], Any], name: str, params: dict) -> None:
        before = thread_ns(self.pid)
        began = time.perf_counter()
        read(name, params)
        self.wall[name].append(1000 * (time.perf_counter() - began))
        self.cpu[name].append((thread_ns(self.pid) - before) / 1e6)

    def report(self) -> dict[str, Any]:
        return {
            name: {
                "calls": len(values),
                "cpu_ms_total": round(sum(values), 1),
                "cpu_ms_first": round(values[0], 2),
                "cpu_ms": summary([v / 1000 for v in values]),
                "cpu_ms_after_first_10": summary([v / 1000 for v in values[10:]] or [0.0]),
                "wall_ms": summary([v / 1000 for v in self.wall[name]]),
            }
            for name, values in self.cpu.items()
        }


def statement_breakdown(
    args: Any,
    stores: BenchStores,
    memory: Memory,
    dims: int,
    queries: Sequence[str],
    user: str,
    progress: Progress,
    label: str,
) -> dict[str, Any]:
    """`--statement-breakdown N`: the alone and mixed passes above, N reads / N searches."""
    count = args.statement_breakdown
    recorded = record_reads(memory, queries[: max(count, 50)], user)
    by_name: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for search in recorded:
        for name, params in search:
            by_name[name].append(params)
    per_search = {n: round(len(p) / len(recorded), 3) for n, p in sorted(by_name.items())}
    progress.line(f"{label}: reads per search recorded: {per_search}")
    out: dict[str, Any] = {"reads_per_search": per_search, "searches_recorded": len(recorded)}

    def fresh() -> tuple[Any, _Meter, dict[str, Any]]:
        restart_s = stores.restart()
        store: Any = stores.connect(dims, 0.0)
        assert stores.pid is not None
        before = thread_ns(stores.pid)
        store._ready()  # the schema step: not a search statement
        schema = {"restart_s": round(restart_s, 1),
                  "schema_cpu_ms": round((thread_ns(stores.pid) - before) / 1e6, 1),
                  "load_avg": load_average()}  # fmt: skip
        return store, _Meter(stores.pid), schema

    alone: dict[str, Any] = {}
    for name, params in sorted(by_name.items(), key=lambda item: -len(item[1])):
        store, meter, schema = fresh()
        try:
            for i in range(count):
                meter.run(store._read, name, params[i % len(params)])
        finally:
            store.close()
        alone[name] = {**meter.report()[name], **schema}
        cpu = alone[name]["cpu_ms"]
        progress.line(
            f"{label} alone {name}: first {alone[name]['cpu_ms_first']:.1f} ms, p50 "
            f"{cpu['p50_ms']:.2f} / p95 {cpu['p95_ms']:.2f} ms server CPU per read over {count}"
            f" (total {alone[name]['cpu_ms_total']:.0f} ms; restart {schema['restart_s']} s)"
        )
    out["alone"] = alone

    store, meter, schema = fresh()
    try:
        ticks = _ticks_s(meter.pid)
        for search in (recorded * (count // len(recorded) + 1))[:count]:
            for name, params in search:
                meter.run(store._read, name, params)
        ticks = _ticks_s(meter.pid) - ticks
    finally:
        store.close()
    mixed = meter.report()
    total = sum(m["cpu_ms_total"] for m in mixed.values())
    out["mixed"] = {"searches": count, **schema, "statements": mixed,
                    "cpu_ms_per_search": round(total / count, 1),
                    "cpu_ms_per_search_ticks": round(1000 * ticks / count, 1)}  # fmt: skip
    progress.line(
        f"{label} mixed: {count} searches' reads one at a time after a restart, server CPU per "
        f"search {total / count:.1f} ms ({1000 * ticks / count:.1f} by clock ticks)"
    )
    for name, m in sorted(mixed.items(), key=lambda item: -item[1]["cpu_ms_total"]):
        progress.line(
            f"{label} mixed {name}: {m['cpu_ms_total'] / count:.1f} ms a search "
            f"({100 * m['cpu_ms_total'] / total:.0f}%), {m['calls']} reads, p50 "
            f"{m['cpu_ms']['p50_ms']:.2f} / p95 {m['cpu_ms']['p95_ms']:.2f} ms a read"
        )
    return out
