"""Warm-up of a Neo4j server's read paths, in the background, when the store opens.

A freshly started JVM plans and compiles each statement the first times it runs: server CPU
per search was 94 ms over the first 400 searches and about 20 ms later (docs/benchmarks.md).
Whoever searches first after a deploy should not pay that. So the store searches its own data
(read-only, each search scoped to the one tenant a sample came from), round after round, until
the rounds stop getting faster, and reads the statements of the search and add paths that no
such search ran once against a reserved tenant that holds no data (their plans get cached),
all within a time budget (`graph_store.warmup_seconds`). Searches over real rows come first:
plan rounds over the empty tenant on a cold JVM took the whole 30 s bound before any real-shape
round ran (docs/benchmarks.md). Reads only, in READ sessions (the server refuses a write
there), so it cannot change the data; searches keep working meanwhile; a failure ends it and
is reported, never raised.
"""

from __future__ import annotations

import functools
import itertools
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any

import numpy as np

from mem0g.stores.base import WarmupStatus
from mem0g.stores.lexical_query import query_terms
from mem0g.stores.neo4j.rows import _seek
from mem0g.stores.vectors import Hub, hub_centre
from mem0g.stores.walk import WalkRequest
from mem0g.types import Tenant, Validity

log = logging.getLogger(__name__)

WARMUP_USER = "__mem0g_warmup__"
"""The reserved tenant the warm-up reads: no add can reach it (tenant ids are the caller's,
and this one is never written), so every read matches nothing."""

# the statement files whose read-only statements search and add run
WARMUP_FILES = ("read", "retrieval", "facts", "lexical", "walk")
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
        **_seek(Tenant(user_id=WARMUP_USER), True),
        "ids": [], "keys": [], "id": "", "fact_id": "", "entity_id": "", "pairs": [],
        "as_of": None, "include_invalid": False, "since": datetime(2000, 1, 1, tzinfo=timezone.utc),
        "vector": vector, "zero_query": False, "light": False,
        "want": 13, "fetch": 50, "limit": 10, "row_limit": 10, "max_rows": 1, "k": 10,
        "newest_first": True, "held": {},
        "query": "warmup", "terms": "warmup",
        "hubs": 8, "sibling_limit": 10, "top": 10, "rows": [],
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


Search = Callable[[], Any]  # one read-only search of one tenant, its results discarded


SAMPLES = 8  # searches per round over real data (half edges, half facts where both exist)


def shape_searches(store: Any, samples: int = SAMPLES) -> list[Search]:
    """Read-only searches over the store's own data, each scoped to the one tenant it came
    from: the reads a real search sends (dense edges and entities, name lookup, the walk with
    siblings, BM25, the records, the fact reads and the entity-linked facts), with an edge's
    or a fact's stored vector as the query and its words as BM25 words, results thrown away.
    The row-walking, scoring and projection code then runs on real rows, which is what the
    JIT compiles."""
    rows = store._read("warmup_sample", {"limit": samples})
    edges = [r for r in rows if r["kind"] == "edge"]
    facts = [r for r in rows if r["kind"] == "fact"]
    picked = [r for pair in itertools.zip_longest(edges, facts) for r in pair if r is not None]
    return [functools.partial(_search, store, row) for row in picked[:samples]]


def _search(store: Any, row: dict[str, Any]) -> None:
    scope = Tenant(user_id=row["user_id"], agent_id=row["agent_id"], run_id=row["run_id"])
    vector = np.asarray(row["vector"], dtype=np.float32)
    words = query_terms(row["text"] or "")
    now = Validity()
    dense = store.similar_relations(scope, vector, 50, now)
    ranker = store.name_ranker(scope, wait=True)  # as a search links (else the index's)
    names = (ranker.similar(vector, 5) if ranker is not None
             else store.similar_entities(scope, vector, 5, light=True))  # fmt: skip
    linked = [e.id for e, _ in names]
    # a real search looks up every n-gram of its query (dozens of keys, most finding
    # nothing); with one key the lookup's per-key code was compiled only by real searches
    from mem0g.resolve.links import name_ngrams  # the matching rule (a stage's module)

    keys = list(
        dict.fromkeys(([row["key"]] if row["key"] else []) + name_ngrams(row["text"] or ""))
    )
    if keys:
        linked = [e.id for e in store.find_entities(scope, keys)] + linked
    seeds = list(dict.fromkeys(([row["seed"]] if row["seed"] else []) + linked))
    store.walk(scope, WalkRequest(seeds=seeds, validity=now, vector=vector, words=words,
                                  rows=[r.id for r in dense[:10]]))  # fmt: skip
    centre = hub_centre(store.fact_vector_sum(scope))  # as a search: the correction's centre
    hub = None if centre is None else Hub(centre, 0.25)
    facts = store.similar_facts(scope, vector, 50, hub=hub)
    store.common_fact_words(scope, words, 0.5)  # the share is a parameter: any plans it
    store.lexical_facts(scope, words, 50)
    store.linked_facts(scope, seeds, vector, 50)
    store.lexical_entities(scope, words, 10)
    if facts:  # the records a fused top names beyond what the reads brought
        store.get_facts(scope, [facts[0][0].id])
    if dense:
        store.get_relations(scope, [dense[0].id])


class Warmup:
    """In a daemon thread, until `budget` seconds of its own work are spent, or `stop()`, or
    real traffic has done its job (`real_calls()`, the real reads and writes so far, grew by
    REAL_ENOUGH since it started: a server that served that many is as warm as the warm-up
    would make it). With data: rounds of the `searches()` over real data shapes first, until
    they stop getting faster or `SHAPE_SHARE` of the budget is spent; then one round of the
    statements no search ran (`covered()`: the names the searches read), read against the
    empty tenant so that their plans are cached too; then searches again until settled.
    Without data: rounds of `read(name, params)` over the statements until settled. Before
    each read or search it waits for `quiet` (no real call in flight nor for a while: it
    stands aside while real searches keep coming); that wait does not count against the
    budget. While the store is `idle()` the calls of a round run on `parallel` threads (the
    server's planner and JIT, and the client, then overlap)."""

    def __init__(
        self,
        read: Callable[[str, dict[str, Any]], Any],
        plan: Callable[[], tuple[list[str], dict[str, Any]]],
        budget: float,
        *,
        searches: Callable[[], list[Search]] | None = None,
        quiet: Callable[[threading.Event, Callable[[], bool]], float] | None = None,
        idle: Callable[[], bool] | None = None,
        real_calls: Callable[[], int] | None = None,
        background: Callable[[], None] | None = None,
        covered: Callable[[], set[str]] | None = None,
        parallel: int = 1,
    ) -> None:
        """`plan()` and `searches()` are called in the thread: they may connect first (the
        store's dims are known only then), and return what the rounds run."""
        self.status = WarmupStatus()
        self._read, self._plan, self._budget = read, plan, budget
        self._searches = searches
        self._quiet = quiet
        self._idle = idle
        self._real_calls = real_calls
        self._real_base = 0
        self._background = background
        self._covered = covered
        self._parallel = max(1, parallel)
        self._pool: ThreadPoolExecutor | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, wait: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(wait)

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def _go(self, started: float) -> bool:
        """Wait for quiet; False once stopped, out of time, or stood down."""
        if self._quiet is not None and not self._stop.is_set():
            self.status.yielded_s += self._quiet(self._stop, self._stood_down)
        return self._live(started)

    def _stood_down(self) -> bool:
        """Real traffic since the start has warmed the server as much as this would."""
        if self._real_calls is None:
            return False
        self.status.real_calls = self._real_calls() - self._real_base
        self.status.stood_down = self.status.real_calls >= REAL_ENOUGH
        return self.status.stood_down

    def _worked(self, started: float) -> float:
        """Seconds since `started`, less those spent standing aside for real calls."""
        return time.monotonic() - started - self.status.yielded_s

    def _run(self) -> None:
        started = time.monotonic()
        self._real_base = self._real_calls() if self._real_calls is not None else 0
        self.status.state = "running"
        try:
            if self._background is not None:
                self._background()
            if self._parallel > 1:
                self._pool = ThreadPoolExecutor(
                    self._parallel - 1, thread_name_prefix=THREAD_NAME, initializer=self._background
                )
            if not self._go(started):  # its first reads (schema step, samples) stand aside too
                self.status.state = "done"
                return
            names, params = self._plan()
            self.status.statements = len(names)

            def statements(chosen: Sequence[str]) -> list[Search]:
                return [functools.partial(self._read, name, params) for name in chosen]

            searches = self._searches() if self._searches is not None else []
            self.status.shapes = len(searches)
            if searches:  # real data shapes: the row-walking code gets compiled too
                history: list[float] = []
                share = SHAPE_SHARE * self._budget
                settled = self._rounds(
                    started, searches, history, SHAPE_MIN_ROUNDS, until=share, shapes=True
                )
                ran = self._covered() if self._covered is not None else set()
                rest = [name for name in names if name not in ran]
                self.status.planned_apart = len(rest)
                self._rounds(started, statements(rest), [], None, count=1)
                if not settled:
                    settled = self._rounds(
                        started, searches, history, SHAPE_MIN_ROUNDS, shapes=True
                    )
            else:  # an empty store: what there is to warm are the plans
                settled = self._rounds(started, statements(names), [], MIN_ROUNDS)
            self.status.settled = settled
            self.status.state = "done"
        except Exception as err:  # the store stays usable; the failure is reported, not raised
            self.status.state = "failed"
            self.status.error = " ".join(str(err).split())[:300]
            log.warning("Neo4j warm-up stopped: %s", self.status.error)
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
            self.status.seconds = time.monotonic() - started

    def _call(self, started: float, call: Search) -> float | None:
        """One call after the wait for quiet: its seconds, None when stopped or out of time."""
        if not self._go(started):
            return None
        began = time.monotonic()
        call()
        return time.monotonic() - began

    def _live(self, started: float) -> bool:
        return (
            not self._stop.is_set()
            and self._worked(started) < self._budget
            and not self._stood_down()
        )

    def _round(self, started: float, calls: Sequence[Search]) -> list[float | None]:
        """One round: each call's seconds (None: not run, stopped or out of time). This
        thread takes the calls one by one, each after the wait for quiet; the pool's threads
        take from the same calls while the store is idle (no real call for IDLE_GAP)."""
        times: list[float | None] = [None] * len(calls)
        pending = iter(range(len(calls)))
        lock = threading.Lock()
        drained = threading.Event()

        def take() -> int | None:
            with lock:
                index = next(pending, None)
            if index is None:
                drained.set()
            return index

        def extra() -> None:
            while self._live(started) and not drained.is_set():
                if self._idle is not None and not self._idle():
                    self._stop.wait(0.05)
                    continue
                if (index := take()) is None:
                    return
                began = time.monotonic()
                calls[index]()
                times[index] = time.monotonic() - began

        pool = self._pool
        helpers = [pool.submit(extra) for _ in range(self._parallel - 1)] if pool else []
        while (index := take()) is not None:
            times[index] = self._call(started, calls[index])
            if times[index] is None:
                break
        drained.set()
        for helper in helpers:
            helper.result()  # a failure there ends the warm-up as one here does
        return times

    def _rounds(
        self,
        started: float,
        calls: Sequence[Search],
        history: list[float],
        min_rounds: int | None,
        *,
        count: int | None = None,
        until: float | None = None,
        shapes: bool = False,
    ) -> bool:
        """Rounds over `calls`: `count` of them, or until settled (`min_rounds` and
        `history`, each round's time without the waits for quiet), or until `until` seconds
        of work since `started`. True once settled."""
        done = 0
        while count is None or done < count:
            if until is not None and self._worked(started) >= until:
                return False
            times = self._round(started, calls)
            if shapes:  # also those of a round cut short
                self.status.searches += sum(t is not None for t in times)
            self.status.seconds = time.monotonic() - started
            if any(t is None for t in times):
                return False
            history.append(sum(t for t in times if t is not None))
            done += 1
            self.status.rounds += 1
            if min_rounds is not None and _settled(history, min_rounds):
                return True
        return False


THREAD_NAME = "mem0g-neo4j-warmup"  # its pool's threads: this, then _0, _1, ...
SHAPE_SHARE = 0.7  # of the budget for the first searches, then the statements no search ran
# floors of the round counts (a JIT compiles a path after some hundreds of calls); with the
# trend's TREND_ROUNDS above them, they bind only where a caller lowers that
MIN_ROUNDS = 30  # rounds of the ~30 statements over the empty tenant
SHAPE_MIN_ROUNDS = 25  # rounds of SAMPLES searches over real rows
TREND_ROUNDS = 60  # the last rounds the trend is read from (480 searches of SAMPLES)
TREND_SPAN = 40  # the trend's gain is the one it promises over this many more rounds
TREND_GAIN = 0.05  # warm once that gain is below 5%: more rounds would buy next to nothing
# real calls that warm a server as the warm-up's own rounds do: ~1,500 searches of 7-8 reads
# (after 300 real searches a restarted server still spent 17 of 32 ms a search compiling,
# after 1,000 more 4 of 14 ms; docs/benchmarks.md, 2026-12-06)
REAL_ENOUGH = 12_000


def _settled(rounds: list[float], min_rounds: int = MIN_ROUNDS) -> bool:
    """Warm when the rounds stopped getting faster: the trend of the last TREND_ROUNDS
    rounds' log times (Theil-Sen: the median of the pairwise slopes, so a slow or lucky round,
    GC or load, moves it little) promises less than TREND_GAIN over TREND_SPAN more rounds.
    Why a trend and not the best recent rounds against the best before them: a JIT on one
    core keeps making the rounds faster by ~1% a round for hundreds of rounds, in steps as its
    C2 compiles land, and a rule that wanted 15% within ten rounds called that warm after 26
    rounds, when real searches still cost four times a warm one's server CPU, most of it the
    compiles they set off (docs/benchmarks.md, 2026-12-06). A slowdown is no sign that more
    compiles are coming, so it does not hold the warm-up back."""
    if len(rounds) < max(min_rounds, TREND_ROUNDS):
        return False
    y = np.log(np.maximum(np.asarray(rounds[-TREND_ROUNDS:], dtype=np.float64), 1e-9))
    i, j = np.triu_indices(len(y), 1)
    slope = float(np.median((y[j] - y[i]) / (j - i)))
    return bool(slope * TREND_SPAN > np.log1p(-TREND_GAIN))
