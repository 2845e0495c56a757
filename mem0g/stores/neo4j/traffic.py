"""Real work in flight on a Neo4j store, so its background warm-up stands aside.

The warm-up (warmup.py) runs searches over the store's own data to get the server's read
paths compiled, and on a small server it would compete with the first real searches for the
same cores (measured: first-minute p95 rose from 192.9 to 223.8 ms beside the empty-tenant
warm-up, docs/benchmarks.md). So every read and write of any other thread is counted while it
runs, and the warm-up starts its next read only when none is in flight and none ended in the
last `gap` seconds (a search's reads come in bursts a few ms apart: link, then the walk)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class Traffic:
    def __init__(self, gap: float = 0.01) -> None:
        self.gap = gap
        self._lock = threading.Lock()
        self._busy = 0
        self._last = -float("inf")  # monotonic time the last real call ended
        self._local = threading.local()
        self._names: set[str] = set()  # statements the background threads ran

    @contextmanager
    def call(self, name: str = "") -> Iterator[None]:
        """Around every read and write of the store (`name`: its statement): counted unless
        it is the warm-up's, whose statement names are kept instead (`background_reads`)."""
        if getattr(self._local, "background", False):
            self._names.add(name)  # (set.add is atomic: the warm-up's threads share it)
            yield
            return
        with self._lock:
            self._busy += 1
        try:
            yield
        finally:
            with self._lock:
                self._busy -= 1
                self._last = time.monotonic()

    def mark_background(self) -> None:
        """This thread's calls are the warm-up's own: never counted, never waited for."""
        self._local.background = True

    def background_reads(self) -> set[str]:
        """The statements the background threads have run since the last `forget`."""
        return set(self._names)

    def forget_background_reads(self) -> None:
        self._names = set()

    def quiet(self, gap: float | None = None) -> bool:
        """No real call in flight, and none ended in the last `gap` seconds (default: the
        store's `gap`)."""
        with self._lock:
            since = time.monotonic() - self._last
            return self._busy == 0 and since >= (self.gap if gap is None else gap)

    def wait_quiet(
        self, stop: threading.Event, poll: float = 0.002, gap: float | None = None
    ) -> float:
        """Block until no real call is in flight nor just ended (or `stop`); seconds waited."""
        began = time.monotonic()
        while not self.quiet(gap) and not stop.is_set():
            stop.wait(poll)
        return time.monotonic() - began


IDLE_GAP = 1.0
"""Seconds without any real call after which the warm-up also reads on its extra sessions:
beside searches in progress one warm-up read at a time, on an idle store several."""
