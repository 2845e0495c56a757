"""Warm-up of a Neo4j server's read paths, in the background, when the store opens.

A freshly started JVM plans and compiles each statement the first times it runs: server CPU
per search was 94 ms over the first 400 searches and about 20 ms later (docs/benchmarks.md).
Whoever searches first after a deploy should not pay that. So the store runs every read-only
statement of the search and add paths, round after round, against a reserved tenant that holds
no data, until a time budget is spent (`graph_store.warmup_seconds`). Reads only, in READ
sessions (the server refuses a write there), so it cannot change the data; searches keep
working meanwhile; a failure ends it and is reported, never raised.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import numpy as np

from mem0g.stores.base import WarmupStatus
from mem0g.types import Tenant

log = logging.getLogger(__name__)

WARMUP_USER = "__mem0g_warmup__"
"""The reserved tenant the warm-up reads: no add can reach it (tenant ids are the caller's,
and this one is never written), so every read matches nothing."""

# the statement files whose read-only statements search and add run
WARMUP_FILES = ("read", "retrieval", "facts", "lexical")
_WRITES = re.compile(r"\b(CREATE|MERGE|SET|DELETE|REMOVE|DETACH|FOREACH|LOAD\s+CSV)\b|db\.create")
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def warmup_params(dims: int | None) -> dict[str, Any]:
    """One value per parameter name the read statements use, matching nothing."""
    vector = None
    if dims:
        unit = np.zeros(dims, dtype=np.float32)
        unit[0] = 1.0
        vector = unit.tolist()
    return {
        "user_id": WARMUP_USER, "agent_id": None, "run_id": None,
        "tenant_key": Tenant(user_id=WARMUP_USER).key, "exact": True,
        "ids": [], "keys": [], "id": "", "fact_id": "", "entity_id": "", "pairs": [],
        "as_of": None, "include_invalid": False, "since": datetime(2000, 1, 1, tzinfo=timezone.utc),
        "vector": vector, "zero_query": False, "light": False,
        "want": 13, "fetch": 50, "limit": 10, "row_limit": 10, "max_rows": 1, "k": 10,
        "query": "warmup", "terms": "warmup",
    }  # fmt: skip


def warmup_statements(files: dict[str, dict[str, str]], params: dict[str, Any]) -> list[str]:
    """The read-only statements of WARMUP_FILES (`files`: file -> its statements) whose every
    parameter has a warm-up value. Vector statements need the store's dims."""
    chosen = []
    for file in WARMUP_FILES:
        for name, text in files.get(file, {}).items():
            if _WRITES.search(text):
                continue
            needed = set(_PARAM.findall(text))
            if needed <= params.keys() and not ("vector" in needed and params["vector"] is None):
                chosen.append(name)
    return chosen


class Warmup:
    """Runs `read(name, params)` over the statements, round after round, in a daemon thread,
    until `budget` seconds are spent or `stop()`."""

    def __init__(
        self,
        read: Callable[[str, dict[str, Any]], Any],
        plan: Callable[[], tuple[list[str], dict[str, Any]]],
        budget: float,
    ) -> None:
        """`plan()` is called in the thread: it may connect first (the store's dims are known
        only then) and returns the statement names and their parameters."""
        self.status = WarmupStatus()
        self._read, self._plan, self._budget = read, plan, budget
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mem0g-neo4j-warmup", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, wait: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(wait)

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        started = time.monotonic()
        self.status.state = "running"
        rounds: list[float] = []
        try:
            names, params = self._plan()
            self.status.statements = len(names)
            while not self._stop.is_set() and time.monotonic() - started < self._budget:
                began = time.monotonic()
                for name in names:
                    if self._stop.is_set():
                        break
                    self._read(name, params)
                rounds.append(time.monotonic() - began)
                self.status.rounds = len(rounds)
                self.status.seconds = time.monotonic() - started
                if _settled(rounds):
                    break
            self.status.state = "done"
        except Exception as err:  # the store stays usable; the failure is reported, not raised
            self.status.state = "failed"
            self.status.error = " ".join(str(err).split())[:300]
            log.warning("Neo4j warm-up stopped: %s", self.status.error)
        self.status.seconds = time.monotonic() - started


MIN_ROUNDS = 30  # a JIT compiles a path after some hundreds of calls; 30 rounds of ~30
SETTLED = 1.15  # the last rounds within 15% of the fastest so far: warm


def _settled(rounds: list[float]) -> bool:
    """Warm when the recent rounds stopped getting faster (plans cached, paths compiled)."""
    if len(rounds) < MIN_ROUNDS:
        return False
    recent = sorted(rounds[-5:])[2]  # their median: one slow round (GC, load) is not a trend
    return recent <= SETTLED * min(rounds)
