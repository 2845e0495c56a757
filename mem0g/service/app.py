"""The FastAPI application: `create_app(memory, settings)` wires routes, auth, limits, the job
queue and error handling around one `Memory`; `serve` runs it with uvicorn."""

from __future__ import annotations

import gc
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from pydantic import BaseModel

from mem0g import __version__
from mem0g.memory import Memory
from mem0g.retrieve import load_in_background
from mem0g.service import errors
from mem0g.service.auth import Keyring
from mem0g.service.jobs import JobQueue
from mem0g.service.routes import build_router
from mem0g.service.settings import ServiceSettings, check_bind
from mem0g.types import Tenant

_PROBE = Tenant(user_id="mem0g-readyz-probe")


class Health(BaseModel):
    status: str
    version: str = __version__
    checks: dict[str, str] = {}


def create_app(
    memory: Memory,
    settings: ServiceSettings | None = None,
    *,
    keys: Keyring | None = None,
    close_memory: bool = False,
) -> FastAPI:
    """The service for `memory`. `keys` defaults to the settings' keys file (none: open, for
    loopback only). `close_memory`: the app owns `memory` and closes it at shutdown."""
    settings = settings or ServiceSettings()
    keys = keys if keys is not None else Keyring.load(settings.keys_file)
    jobs = JobQueue(
        max_pending=settings.queue.max_pending,
        workers=settings.queue.workers,
        keep_finished=settings.queue.keep_finished,
        classify=errors.classify,
        # the open service has one caller; with keys, no key may fill the queue for the others
        max_pending_per_key=settings.queue.max_pending_per_key if keys.configured else None,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.gc_freeze:
            freeze_startup_heap()
        yield
        if settings.gc_freeze:
            release_startup_heap()
        left = jobs.close(settings.queue.drain_seconds)
        if left:
            errors.log.warning("shutdown: %d queued jobs were not applied (lost)", left)
        if close_memory:
            memory.close()

    app = FastAPI(
        title="mem0g",
        version=__version__,
        description="Graph-native long-term memory for AI agents. Endpoints mirror `Memory`.",
        lifespan=lifespan,
        # no trailing-slash redirects: `DELETE /v1/memories/` (an id left empty) redirected
        # to `/v1/memories` would be a delete_all for a client that follows redirects
        redirect_slashes=False,
    )
    app.state.memory, app.state.jobs, app.state.keys = memory, jobs, keys
    errors.install(app)
    if not keys.configured:  # open: every request an admin, so none a web page makes
        app.add_middleware(errors.LoopbackOnly)  # inside RequestContext (the request id)
    app.add_middleware(errors.RequestContext, max_body_bytes=settings.limits.max_body_bytes)
    app.include_router(build_router(memory, keys, jobs, settings.limits))

    @app.get("/healthz", response_model=Health, tags=["health"])
    def healthz() -> Health:
        """The process answers."""
        return Health(status="ok")

    @app.get("/readyz", response_model=Health, tags=["health"], responses={503: {"model": Health}})
    def readyz() -> Any:
        """The store answers a read and the embedder embeds: ready for traffic. While the
        store warms a freshly started server (`ready_after_warmup`), not yet: the probe says
        how far it got, and reads nothing, for the warm-up reads only when no one else does."""
        checks: dict[str, str] = {}
        warm = memory.store.warmup_status
        if settings.ready_after_warmup and not warm.ended:
            checks["warmup"] = (
                f"{warm.state}: {warm.seconds:.1f} s of its work, {warm.rounds} rounds, "
                f"{warm.searches} searches"
            )
        else:
            try:
                memory.store.tenant_version(_PROBE)
                checks["store"] = "ok"
            except Exception as err:
                checks["store"] = f"failed: {type(err).__name__}"
        try:
            memory.embedder.embed(["readyz"])
            checks["embedder"] = "ok"
        except Exception as err:
            checks["embedder"] = f"failed: {type(err).__name__}"
        ok = all(v == "ok" for v in checks.values())
        health = Health(status="ok" if ok else "unavailable", checks=checks)
        if ok:
            return health
        from fastapi.responses import JSONResponse

        # a warming or restarting store: a load balancer's probe may come back soon
        return JSONResponse(health.model_dump(), status_code=503, headers={"Retry-After": "5"})

    @app.get("/ui", response_class=HTMLResponse, include_in_schema=False)
    def ui() -> HTMLResponse:
        from mem0g.service.explorer import page

        return HTMLResponse(page(None))

    return app


class _Freezes:
    """Who holds the frozen heap: several services of one process (tests, an app that mounts
    two) each freeze at startup and release at shutdown; the heap is given back when the last
    one stops, and never when it was frozen before the first (someone else's freeze)."""

    lock = threading.Lock()
    holders = 0
    foreign = False


def freeze_startup_heap(wait_seconds: float = 10.0) -> None:
    """Exempt what is alive now from the cyclic garbage collector (`ServiceSettings.gc_freeze`).

    Why: a full collection walks every tracked object, and a process with torch, transformers
    and pydantic loaded tracks ~600,000 before it holds any memory (~300 ms a full pass on 2
    cores, docs/benchmarks.md). CPython runs one whenever the survivors of the last one grow by
    a quarter, so after a burst of adds some request stalls that long. Frozen objects are
    skipped; reference counting still frees them. Waits (bounded) for the search path's
    background loads, so their modules are frozen too, and collects the young generations
    first, so little garbage is frozen with them. Pair each call with `release_startup_heap`."""
    load_in_background().join(wait_seconds)
    with _Freezes.lock:
        if _Freezes.holders == 0:
            _Freezes.foreign = gc.get_freeze_count() > 0
        gc.collect(1)
        gc.freeze()
        _Freezes.holders += 1


def release_startup_heap() -> None:
    """The other half of `freeze_startup_heap`: the last holder gives the heap back."""
    with _Freezes.lock:
        _Freezes.holders = max(0, _Freezes.holders - 1)
        if _Freezes.holders == 0 and not _Freezes.foreign:
            gc.unfreeze()


def freeze_holders() -> int:
    """How many running services of this process hold the frozen heap."""
    return _Freezes.holders


def serve(memory: Memory, settings: ServiceSettings, *, log_level: str = "info") -> None:
    """Run the service in the foreground (uvicorn), refusing an open non-loopback bind."""
    import uvicorn

    keys = Keyring.load(settings.keys_file)
    check_bind(settings.host, keys.configured)
    app = create_app(memory, settings, keys=keys, close_memory=True)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=log_level)
