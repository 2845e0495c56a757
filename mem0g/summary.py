"""The conversation summary S, refreshed in the background so `add` never waits for it.

After an add, if the exact tenant has at least `summary_every` messages the summary does not
cover yet, one refresh is queued on a single worker thread (`summarize` task). Extraction reads
whatever summary exists at that moment (None before the first one). `close()` waits for a
refresh in flight and drops queued ones.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager

from mem0g.config import MemorySection
from mem0g.extract import payload_messages
from mem0g.llm.client import LLMClient
from mem0g.llm.protocol import SUMMARIZE, SummarizePayload
from mem0g.stores.base import GraphStore, StoreError
from mem0g.types import Summary, Tenant, Usage, utcnow

log = logging.getLogger(__name__)

MAX_MESSAGES_PER_REFRESH = 200  # bounds one summarize prompt; older ones are already in S


class SummaryWorker:
    def __init__(
        self, llm: Callable[[], LLMClient], store: GraphStore, config: MemorySection
    ) -> None:
        self._llm = llm
        self._store = store
        self._config = config
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mem0g-summary")
        self._pending: dict[str, Future[Summary | None]] = {}
        self._lock = threading.Lock()
        self._closed = False
        # deletes so far; a refresh that began before one writes nothing (`refresh`, `deleting`)
        self._deletes = 0
        self._writes = threading.Lock()  # a refresh's check and write vs. a delete
        self.usage = Usage()  # calls made by refreshes, for callers who count them

    def due(self, tenant: Tenant) -> bool:
        summary = self._store.get_summary(tenant)
        covered = summary.messages_covered if summary else 0
        return self._store.message_count(tenant) - covered >= self._config.summary_every

    def maybe_refresh(self, tenant: Tenant) -> Future[Summary | None] | None:
        """Queue a refresh when one is due and none is queued for this tenant."""
        if not self._config.summary or not self.due(tenant):
            return None
        return self.submit(tenant)

    def submit(self, tenant: Tenant) -> Future[Summary | None]:
        with self._lock:
            pending = self._pending.get(tenant.key)
            if pending is not None and not pending.done():
                return pending
            if self._closed:  # as every other call after close says it
                raise StoreError("the store is closed")
            future = self._executor.submit(self._run, tenant)
            self._pending[tenant.key] = future
        key = tenant.key
        future.add_done_callback(lambda done: self._settle(key, done))
        return future

    def _settle(self, key: str, done: Future[Summary | None]) -> None:
        """A finished refresh leaves no entry (no map that grows with every tenant seen)."""
        with self._lock:
            if self._pending.get(key) is done:
                del self._pending[key]

    def forget(self, scope: Tenant) -> None:
        """Drop finished entries of tenants inside `scope` (after a delete)."""
        with self._lock:
            for key in [k for k, f in self._pending.items() if f.done()]:
                if scope.matches(Tenant.from_key(key)):
                    del self._pending[key]

    def pending(self) -> int:
        """Refreshes queued or running."""
        with self._lock:
            return len(self._pending)

    def _run(self, tenant: Tenant) -> Summary | None:
        try:
            return self.refresh(tenant)
        except Exception as err:  # a background refresh must never take the process down
            log.warning("summary refresh for %s failed: %s", tenant.key, err)
            raise

    def refresh(self, tenant: Tenant) -> Summary | None:
        """Summarise the messages the current summary does not cover (synchronously)."""
        with self._writes:
            deletes = self._deletes
        previous = self._store.get_summary(tenant)
        covered = previous.messages_covered if previous else 0
        messages = self._store.messages_since(tenant, covered)
        if not messages:
            return previous
        total = covered + len(messages)
        messages = messages[-MAX_MESSAGES_PER_REFRESH:]
        reference = messages[-1].timestamp or utcnow()
        payload = SummarizePayload(
            summary=previous.text if previous else None,
            messages=payload_messages(messages, reference),
        )
        answer = self._llm().call(SUMMARIZE, payload, self.usage)
        summary = Summary(tenant=tenant, text=answer.summary.strip(), messages_covered=total)
        with self._writes:  # deleted while we were summarising: the messages are gone, even
            # if as many new ones came since (the count alone would not tell)
            if self._deletes != deletes or self._store.message_count(tenant) < total:
                return None
            self._store.set_summary(summary)
        return summary

    @contextmanager
    def deleting(self) -> Iterator[None]:
        """Hold around a delete: a refresh that began before it, even one queued after
        `wait_idle` by another thread's add, then writes no summary of deleted messages."""
        with self._writes:
            self._deletes += 1
            yield

    def wait_idle(self) -> None:
        """Let queued and running refreshes finish (before a delete, so none writes after)."""
        with self._lock:
            pending = list(self._pending.items())
        wait([future for _, future in pending])  # a failed refresh was already logged by _run
        # a Future wakes its waiters before it runs its done callbacks, so `_settle` may not
        # have run yet: settle here too, or `pending()` could still count a finished refresh
        for key, future in pending:
            self._settle(key, future)

    def close(self) -> None:
        """Wait for a refresh in flight; cancel the queued ones."""
        with self._lock:
            self._closed = True
        self._executor.shutdown(wait=True, cancel_futures=True)
