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

    @contextmanager
    def call(self) -> Iterator[None]:
        """Around every read and write of the store: counted unless it is the warm-up's."""
        if getattr(self._local, "background", False):
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

    def quiet(self) -> bool:
        with self._lock:
            return self._busy == 0 and time.monotonic() - self._last >= self.gap

    def wait_quiet(self, stop: threading.Event, poll: float = 0.002) -> float:
        """Block until no real call is in flight nor just ended (or `stop`); seconds waited."""
        began = time.monotonic()
        while not self.quiet() and not stop.is_set():
            stop.wait(poll)
        return time.monotonic() - began
