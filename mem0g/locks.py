"""Per-tenant locks that exist only while someone holds or waits for them: a process that
serves millions of tenants over its life keeps no entry per tenant it ever saw."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class TenantLocks:
    """`with locks.hold(key):` serialises the holders of one key; entries are reference
    counted and dropped when the last holder or waiter leaves."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._entries: dict[str, tuple[threading.Lock, list[int]]] = {}

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        with self._guard:
            lock, users = self._entries.setdefault(key, (threading.Lock(), [0]))
            users[0] += 1
        try:
            with lock:
                yield
        finally:
            with self._guard:
                users[0] -= 1
                if users[0] == 0:
                    del self._entries[key]

    def __len__(self) -> int:
        """Keys held or waited for right now."""
        with self._guard:
            return len(self._entries)
