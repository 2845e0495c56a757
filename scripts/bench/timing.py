"""Clocks, spans, percentile summaries, load and CPU accounting, progress lines: the measuring
tools every phase shares."""

from __future__ import annotations

import contextlib
import cProfile
import io
import os
import pstats
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np

from mem0g.embed import Embedder


class Clock:
    """Accumulates time spent inside wrapped callables (reset between measured operations):
    wall time, and the calling thread's CPU time, which a busy machine inflates far less."""

    def __init__(self) -> None:
        self.total = 0.0
        self.cpu = 0.0
        self.count = 0

    def reset(self) -> None:
        self.total, self.cpu, self.count = 0.0, 0.0, 0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start, start_cpu = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.total += time.perf_counter() - start
                self.cpu += time.thread_time() - start_cpu
                self.count += 1

        return timed


class TimedEmbedder:
    """The real embedder with a clock around it, so model time can be told apart from ours."""

    def __init__(self, inner: Embedder, clock: Clock) -> None:
        self.inner = inner
        self.dims = inner.dims
        self.name = inner.name
        self.embed = clock.wrap(inner.embed)


def summary(seconds: Sequence[float]) -> dict[str, float]:
    """p50/p95/mean/min/max in milliseconds (linear-interpolated percentiles)."""
    ms = np.asarray(seconds, dtype=float) * 1000.0
    if ms.size == 0:
        return {"n": 0}
    return {
        "n": int(ms.size),
        "p50_ms": round(float(np.percentile(ms, 50)), 3),
        "p95_ms": round(float(np.percentile(ms, 95)), 3),
        "mean_ms": round(float(ms.mean()), 3),
        "min_ms": round(float(ms.min()), 3),
        "max_ms": round(float(ms.max()), 3),
    }


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


class Progress:
    """A rich bar on a terminal, otherwise a plain line every ~10% (logs stay readable)."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty()

    @contextlib.contextmanager
    def task(self, label: str, total: int) -> Iterator[Callable[[int], None]]:
        if self.quiet or total <= 0:
            yield lambda _n: None
            return
        if self.tty:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress

            columns = (
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
            )
            with RichProgress(*columns, transient=False) as bar:
                task_id = bar.add_task(label, total=total)
                yield lambda n: bar.advance(task_id, n)
            return
        done = 0
        start = time.perf_counter()
        step = max(1, total // 10)
        next_mark = step

        def advance(n: int) -> None:
            nonlocal done, next_mark
            done += n
            if done >= next_mark or done >= total:
                rate = done / max(time.perf_counter() - start, 1e-9)
                print(f"  {label}: {done}/{total} ({rate:,.0f}/s)", file=sys.stderr, flush=True)
                next_mark = done + step

        yield advance

    def line(self, text: str) -> None:
        if not self.quiet:
            print(text, file=sys.stderr, flush=True)


def profiled(work: Callable[[], None], runs: int, path: Path) -> list[dict[str, Any]]:
    """cProfile `work` (a separate batch, so the timings above stay unprofiled); the full
    stats go to `path`, the 15 functions with the most own time are returned."""
    profiler = cProfile.Profile()
    profiler.enable()
    work()
    profiler.disable()
    buffer = io.StringIO()
    stats = pstats.Stats(profiler, stream=buffer)
    stats.sort_stats("cumulative").print_stats(40)
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(r"mem0g[/\\]", 40)  # the library's own share
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(buffer.getvalue(), encoding="utf-8")
    raw: dict[tuple[str, int, str], tuple] = stats.stats  # type: ignore[attr-defined]
    ranked = sorted(raw.items(), key=lambda item: -item[1][2])[:15]
    return [
        {
            "function": f"{Path(file).name}:{line}({func})",
            "calls": calls,
            "tottime_ms_per_run": round(tottime * 1000 / runs, 3),
            "cumtime_ms_per_run": round(cumtime * 1000 / runs, 3),
        }
        for (file, line, func), (_, calls, tottime, cumtime, _) in ranked
    ]


def inline_submit(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
    """An executor's `submit` that runs the call now, in the calling thread (for profiling)."""
    future: Future[Any] = Future()
    try:
        future.set_result(fn(*args, **kwargs))
    except BaseException as exc:
        future.set_exception(exc)
    return future


class Spans:
    """Time spans spent inside wrapped callables, from any thread. The graph and fact paths of
    an add run concurrently, so their waits overlap: the union of the spans, not their sum, is
    the time the add spent waiting on the LLM or the model."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.spans: list[tuple[float, float, str]] = []
        self.cpu = 0.0  # CPU time of the calling threads inside the spans

    def reset(self) -> None:
        with self._lock:
            self.spans, self.cpu = [], 0.0

    def wrap(
        self, kind: str, fn: Callable[..., Any], skip: Callable[..., bool] | None = None
    ) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if skip is not None and skip(*args, **kwargs):
                return fn(*args, **kwargs)
            start, start_cpu = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                end, used = time.perf_counter(), time.thread_time() - start_cpu
                with self._lock:
                    self.spans.append((start, end, kind))
                    self.cpu += used

        return timed

    def union(self, begin: float, end: float, kinds: Sequence[str]) -> float:
        """Seconds of [begin, end] covered by at least one span of these kinds."""
        with self._lock:
            cut = sorted((max(a, begin), min(b, end)) for a, b, k in self.spans if k in kinds)
        covered, reach = 0.0, begin
        for a, b in cut:
            if b > reach:
                covered += b - max(a, reach)
                reach = b
        return covered


OTHERS_BUSY = 0.25  # cores used by other processes that make a measurement "busy"


def machine_cpu() -> float | None:
    """CPU seconds all processes have used since boot (/proc/stat; None elsewhere)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq = (int(f) for f in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def busy(*loads: Sequence[float], others: float | None = None) -> bool:
    """Other processes competing for the cores: they stretch the model's time far more than
    the numpy/Python path (torch's threads wait for cores), so ratios flatter search. Judged by
    the cores other processes used while it ran (`others`, measured), else by the load
    average (which counts this benchmark and its server too)."""
    if others is not None:
        return others > OTHERS_BUSY
    cpus = os.cpu_count() or 1
    return any(load and load[0] > cpus for load in loads)
