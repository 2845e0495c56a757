"""Async ingestion: one in-order queue per exact tenant, run on a small thread pool.

Adds of one tenant are applied strictly in arrival order, one at a time (Graphiti's MCP
lesson: interleaved adds of one tenant resolve against each other's half-written state);
different tenants proceed in parallel, up to `workers` at once.

Durability, stated plainly: the queue lives in this process's memory. It is bounded
(`max_pending` queued + running jobs; a full queue answers 429 and accepts nothing; with a keys
file, one key holds at most `max_pending_per_key` of them, so one client's backlog cannot
shut every other key out), a
graceful shutdown stops accepting and finishes what is queued (up to `drain_seconds`), and a
crash or kill loses the jobs still queued and every job record: after a restart a job id is
unknown (404). A job that was applied is in the store either way (each add is one
transaction), so a client that lost track of a job can search for its content.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from mem0g.types import AddResult, Tenant, new_id, utcnow

JobState = Literal["queued", "running", "succeeded", "failed"]


class JobError(BaseModel):
    status: int
    title: str
    detail: str


class Job(BaseModel):
    id: str = Field(default_factory=new_id)
    state: JobState = "queued"
    tenant: Tenant
    created_at: datetime = Field(default_factory=utcnow)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    result: AddResult | None = None
    error: JobError | None = None


class QueueFull(RuntimeError):
    """More jobs pending than the queue holds: retry later."""


class ShuttingDown(RuntimeError):
    """The service is stopping and accepts no new jobs."""


Work = Callable[[], AddResult]
Classify = Callable[[BaseException], JobError]


class JobQueue:
    def __init__(
        self,
        *,
        max_pending: int,
        workers: int,
        keep_finished: int,
        classify: Classify,
        max_pending_per_key: int | None = None,
    ) -> None:
        self._max_pending = max_pending
        self._per_owner = max_pending_per_key
        self._owned: dict[str, int] = {}  # pending jobs of each owner (API key) having any
        self._keep = keep_finished
        self._classify = classify
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mem0g-job")
        self._guard = threading.Condition()
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._queues: dict[str, deque[tuple[Job, Work, str | None]]] = {}
        self._pending = 0
        self._closed = False

    def submit(self, tenant: Tenant, work: Work, owner: str | None = None) -> Job:
        """Queue `work` behind the tenant's earlier jobs; raises QueueFull / ShuttingDown.
        `owner`: the API key submitting it, held to `max_pending_per_key`."""
        with self._guard:
            if self._closed:
                raise ShuttingDown("the service is shutting down")
            if self._pending >= self._max_pending:
                raise QueueFull(f"{self._pending} jobs pending (the limit): retry later")
            owned = self._owned.get(owner, 0) if owner is not None else 0
            if owner is not None and self._per_owner is not None and owned >= self._per_owner:
                raise QueueFull(f"key {owner!r} has {owned} jobs pending (its limit): retry later")
            job = Job(tenant=tenant)
            self._jobs[job.id] = job
            self._pending += 1
            if owner is not None:
                self._owned[owner] = owned + 1
            queue = self._queues.get(tenant.key)
            if queue is None:  # no drain running for this tenant: start one
                self._queues[tenant.key] = deque([(job, work, owner)])
                self._pool.submit(self._drain, tenant.key)
            else:
                queue.append((job, work, owner))
            return job.model_copy()

    def get(self, job_id: str) -> Job | None:
        with self._guard:
            job = self._jobs.get(job_id)
            return None if job is None else job.model_copy()

    @property
    def pending(self) -> int:
        with self._guard:
            return self._pending

    def _drain(self, key: str) -> None:
        """Run one tenant's jobs in order until its queue is empty."""
        while True:
            with self._guard:
                queue = self._queues[key]
                if not queue:
                    del self._queues[key]
                    self._guard.notify_all()
                    return
                job, work, owner = queue[0]
                job.state, job.started_at = "running", utcnow()
            result: AddResult | None = None
            error: JobError | None = None
            try:
                result = work()
            except Exception as err:  # reported on the job, never lost
                error = self._classify(err)
            with self._guard:
                queue.popleft()
                job.result, job.error = result, error
                job.state = "succeeded" if error is None else "failed"
                job.finished_at = utcnow()
                self._pending -= 1
                if owner is not None:
                    left = self._owned.pop(owner) - 1
                    if left:
                        self._owned[owner] = left
                self._forget_old()
                self._guard.notify_all()

    def _forget_old(self) -> None:
        finished = [j for j in self._jobs.values() if j.finished_at is not None]
        for job in finished[: max(0, len(finished) - self._keep)]:
            del self._jobs[job.id]

    def close(self, drain_seconds: float) -> int:
        """Stop accepting, wait up to `drain_seconds` for the queued jobs; returns how many
        were still pending (lost) when the wait ended."""
        deadline = time.monotonic() + drain_seconds
        with self._guard:
            self._closed = True
            while self._pending and time.monotonic() < deadline:
                self._guard.wait(timeout=max(0.0, deadline - time.monotonic()))
            left = self._pending
            for queue in self._queues.values():  # drop what did not start
                while len(queue) > 1:
                    queue.pop()
        self._pool.shutdown(wait=left == 0, cancel_futures=True)
        return left

    def stats(self) -> dict[str, Any]:
        with self._guard:
            return {"pending": self._pending, "tenants": len(self._queues)}
