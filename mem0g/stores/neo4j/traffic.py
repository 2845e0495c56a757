"""Real work in flight on a Neo4j store, so its background warm-up stands aside.

The warm-up (warmup.py) runs searches over the store's own data to get the server's read
paths compiled, and on a small server it competes with the first real searches for the same
cores: beside a stream of searches, yielding only for a 10 ms gap, it raised their server CPU
per search from 137 to 201 ms on an idle machine (docs/benchmarks.md), and a stream of real
searches warms the server anyway. So every read and write of any other thread is counted
while it runs, and the warm-up starts its next read only when none is in flight and none
ended in the last `gap` seconds (IDLE_GAP, a second: longer than the pause between the
searches of a stream, which is a query embedding and the client's own work)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

IDLE_GAP = 1.0
"""Seconds without any real call before the warm-up reads (then on all its sessions)."""


class Traffic:
    def __init__(self, gap: float = IDLE_GAP) -> None:
        self.gap = gap
        self._lock = threading.Lock()
        self._busy = 0
        self.calls = 0  # real calls ended so far (the warm-up stands down after enough)
        # monotonic time the last real call ended; opening counts as one, so a client that
        # searches right after opening never finds the warm-up's first reads beside its own
        self._last = time.monotonic()
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
                self.calls += 1
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
        return self._left(self.gap if gap is None else gap) == 0.0

    def _left(self, gap: float) -> float | None:
        """Seconds until quiet if nothing else comes (None: a call is in flight)."""
        with self._lock:
            if self._busy:
                return None
            return max(0.0, gap - (time.monotonic() - self._last))

    def wait_quiet(
        self,
        stop: threading.Event,
        give_up: Callable[[], bool] | None = None,
        *,
        poll: float = 0.05,
        gap: float | None = None,
    ) -> float:
        """Block until no real call is in flight nor ended in the last `gap` seconds (or
        `stop`, or `give_up()`); seconds waited. It sleeps until the gap would end, at most
        `poll` at a time, so a long wait costs a few wake-ups a second."""
        began = time.monotonic()
        wanted = self.gap if gap is None else gap
        while not stop.is_set() and not (give_up is not None and give_up()):
            left = self._left(wanted)
            if left == 0.0:
                break
            stop.wait(poll if left is None else min(poll, left))
        return time.monotonic() - began
