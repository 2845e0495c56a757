"""The harness's progress bars (rich, on stderr): one for the run and one per unit, shared by
the worker threads behind a lock; nothing at all when progress is off."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class _Bar:
    def __init__(self, progress: Any) -> None:
        self.p = progress
        self._lock = threading.Lock()

    def add(self, name: str, total: int) -> Any:
        if self.p is None:
            return None
        with self._lock:
            return self.p.add_task(name, total=total)

    def advance(self, *tasks: Any) -> None:
        if self.p is None:
            return
        with self._lock:
            for t in tasks:
                self.p.advance(t)

    def remove(self, task: Any) -> None:
        if self.p is None or task is None:
            return
        with self._lock:
            self.p.remove_task(task)


@contextmanager
def _progress(enabled: bool) -> Iterator[_Bar]:
    if not enabled:
        yield _Bar(None)
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("{task.description:>16}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True)) as progress:
        yield _Bar(progress)
