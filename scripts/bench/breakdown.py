"""Where a freshly restarted Neo4j server's CPU goes, statement by statement (issue #18).

The reads of real searches are recorded on the built store (name and parameters, as the store
sent them), then replayed against a fresh JVM on the same data, one read at a time, with the
server's CPU read from /proc around each (every thread's run time in ns, `schedstat`, so one
read's few ms are seen; the process total in clock ticks is kept as a check):

* alone: for each statement, a restart, the schema step, then only that statement's recorded
  reads, N of them (cycling over the recorded parameters): its cold cost with no other
  statement compiled before it;
* mixed: one restart, then the recorded searches' reads in their order, one at a time, for
  N searches: where a cold search's CPU goes when the statements warm each other;
* warmed: one restart, the store's own warm-up run to its end (its reads counted by
  statement), then N searches' reads in order, then `--server-warmup` searches' reads untimed,
  then the N again: which statement the warm-up leaves slower than warm, and whether it ran
  that statement at all.

No timing here is a search latency (reads run one at a time, not beside each other)."""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.stores import BenchStores, compiler_ns, thread_ns
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


def _idle_until_quiet(
    pid: int, progress: Progress, label: str, limit_s: float = 120.0, step_s: float = 5.0
) -> list[dict[str, float]]:
    """With no client read, the server's CPU share by `step_s` until it is below 5% (the
    JIT's queued compiles done) or `limit_s`: what a warm-up that ended leaves running."""
    steps: list[dict[str, float]] = []
    begin = time.perf_counter()
    while time.perf_counter() - begin < limit_s:
        cpu, comp = thread_ns(pid), compiler_ns(pid)
        time.sleep(step_s)
        share = (thread_ns(pid) - cpu) / 1e9 / step_s
        steps.append(
            {
                "cpu_share": round(share, 3),
                "compiler_share": round((compiler_ns(pid) - comp) / 1e9 / step_s, 3),
            }
        )
        if share < 0.05:
            break
    progress.line(
        f"{label} warmed: server idle after the warm-up, CPU share by {step_s:.0f}s: "
        + ", ".join(f"{s['cpu_share']:.2f} ({s['compiler_share']:.2f} JIT)" for s in steps)
    )
    return steps


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
        self.compiler_ms = 0.0  # of the reads' server CPU, the JIT compiler threads'

    def run(self, read: Callable[[str, dict[str, Any]], Any], name: str, params: dict) -> None:
        before, comp = thread_ns(self.pid), compiler_ns(self.pid)
        began = time.perf_counter()
        read(name, params)
        self.wall[name].append(1000 * (time.perf_counter() - began))
        self.cpu[name].append((thread_ns(self.pid) - before) / 1e6)
        self.compiler_ms += (compiler_ns(self.pid) - comp) / 1e6

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

    passes = {p.strip() for p in getattr(args, "breakdown_passes", "alone,mixed").split(",")}
    if "warmed" in passes:
        out["warmed"] = _warmed(args, stores, dims, recorded, count, progress, label, passes)
    alone: dict[str, Any] = {}
    for name, params in sorted(by_name.items(), key=lambda item: -len(item[1])):
        if "alone" not in passes:
            break
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
    if "mixed" not in passes:
        return out

    store, meter, schema = fresh()
    try:
        ticks = _ticks_s(meter.pid)
        _replay(meter, store._read, recorded, count)
        ticks = _ticks_s(meter.pid) - ticks
    finally:
        store.close()
    mixed = meter.report()
    total = sum(m["cpu_ms_total"] for m in mixed.values())
    out["mixed"] = {"searches": count, **schema, "statements": mixed,
                    "cpu_ms_per_search": round(total / count, 1),
                    "compiler_ms_per_search": round(meter.compiler_ms / count, 1),
                    "cpu_ms_per_search_ticks": round(1000 * ticks / count, 1)}  # fmt: skip
    progress.line(
        f"{label} mixed: {count} searches' reads one at a time after a restart, server CPU per "
        f"search {total / count:.1f} ms ({meter.compiler_ms / count:.1f} of it JIT compiling; "
        f"{1000 * ticks / count:.1f} by clock ticks)"
    )
    for name, m in sorted(mixed.items(), key=lambda item: -item[1]["cpu_ms_total"]):
        progress.line(
            f"{label} mixed {name}: {m['cpu_ms_total'] / count:.1f} ms a search "
            f"({100 * m['cpu_ms_total'] / total:.0f}%), {m['calls']} reads, p50 "
            f"{m['cpu_ms']['p50_ms']:.2f} / p95 {m['cpu_ms']['p95_ms']:.2f} ms a read"
        )
    return out


def _replay(
    meter: _Meter,
    read: Callable[[str, dict[str, Any]], Any],
    recorded: Sequence[Sequence[Read]],
    count: int,
) -> None:
    """`count` searches' reads, cycling over the recorded ones, one read at a time."""
    for search in (list(recorded) * (count // len(recorded) + 1))[:count]:
        for name, params in search:
            meter.run(read, name, params)


def _warmed(
    args: Any,
    stores: BenchStores,
    dims: int,
    recorded: Sequence[Sequence[Read]],
    count: int,
    progress: Progress,
    label: str,
    passes: set[str],
) -> dict[str, Any]:
    """The 'warmed' pass (module docstring): per statement, server CPU per read after the
    store's warm-up and after `--server-warmup` more searches, and the warm-up's own reads."""
    restart_s = stores.restart()
    store: Any = stores.connect(dims, 0.0)
    assert stores.pid is not None
    real = store._read
    ran: dict[str, int] = defaultdict(int)

    def counted(name: str, params: dict[str, Any]) -> Any:
        ran[name] += 1
        return real(name, params)

    store._read = counted  # the warm-up takes the store's read when it starts
    try:
        begin, cpu = time.perf_counter(), thread_ns(stores.pid)
        warmup = store.start_warmup(args.store_warmup_seconds)
        warmup.join()
        warm_s, warm_cpu = time.perf_counter() - begin, (thread_ns(stores.pid) - cpu) / 1e6
        status = store.warmup_status.model_dump(mode="json")
        del store._read
        idle = _idle_until_quiet(stores.pid, progress, label) if "idle" in passes else []
        progress.line(
            f"{label} warmed: store warm-up {warm_s:.1f}s, server CPU {warm_cpu / 1000:.1f}s, "
            f"{sum(ran.values())} reads {dict(sorted(ran.items()))}; {status}"
        )
        after = _Meter(stores.pid)
        _replay(after, store._read, recorded, count)
        more = max(0, int(getattr(args, "server_warmup", 0)))
        begin = time.perf_counter()
        _replay(_Meter(stores.pid), store._read, recorded, more)
        progress.line(f"{label} warmed: {more} searches' reads untimed in "
                      f"{time.perf_counter() - begin:.1f}s")  # fmt: skip
        warm = _Meter(stores.pid)
        _replay(warm, store._read, recorded, count)
    finally:
        store.close()
    first, last = after.report(), warm.report()
    rows: dict[str, Any] = {}
    for name in sorted(first, key=lambda n: -first[n]["cpu_ms_total"]):
        a, w = first[name], last.get(name)
        rows[name] = {"warmup_reads": ran.get(name, 0), "after_warmup": a, "warm": w}
        w_total = w["cpu_ms_total"] if w else 0.0
        progress.line(
            f"{label} warmed {name}: warm-up ran it {ran.get(name, 0)}x; server CPU a search "
            f"after the warm-up {a['cpu_ms_total'] / count:.2f} ms (p50 a read "
            f"{a['cpu_ms']['p50_ms']:.2f}), warm {w_total / count:.2f} ms"
        )
    total_a = sum(m["cpu_ms_total"] for m in first.values()) / count
    total_w = sum(m["cpu_ms_total"] for m in last.values()) / count
    progress.line(f"{label} warmed: server CPU per search after the warm-up {total_a:.1f} ms "
                  f"({after.compiler_ms / count:.1f} of it JIT compiling), warm {total_w:.1f} ms "
                  f"({warm.compiler_ms / count:.1f})")  # fmt: skip
    return {"restart_s": round(restart_s, 1), "warmup_s": round(warm_s, 1),
            "warmup_server_cpu_ms": round(warm_cpu, 1), "warmup_status": status,
            "searches": count, "untimed_between": more, "statements": rows, "idle": idle,
            "compiler_ms_per_search_after_warmup": round(after.compiler_ms / count, 1),
            "compiler_ms_per_search_warm": round(warm.compiler_ms / count, 1),
            "cpu_ms_per_search_after_warmup": round(total_a, 1),
            "cpu_ms_per_search_warm": round(total_w, 1), "load_avg": load_average()}  # fmt: skip
