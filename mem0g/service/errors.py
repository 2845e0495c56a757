"""Errors as `application/problem+json` (RFC 9457) with the request id; no stack traces.

Every response carries `X-Request-ID` (the client's, when it sent a sane one, else a new one),
and every problem body repeats it, so a user's report can be found in the server log, which is
the only place an unexpected error's traceback goes. `classify` maps mem0g's exceptions to a
status once, for synchronous requests and for async jobs alike.
"""

from __future__ import annotations

import logging
import re
import uuid
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mem0g.llm.client import LLMError
from mem0g.service.jobs import JobError, QueueFull, ShuttingDown
from mem0g.service.settings import is_loopback
from mem0g.stores.base import PlanConflict, StoreError, UnknownEntityError

log = logging.getLogger("mem0g.service")

PROBLEM = "application/problem+json"
_SANE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


class Problem(BaseModel):
    """The body of every error response."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    request_id: str


class ServiceError(Exception):
    """An error with a status chosen where it is raised (403, 404, 413, ...)."""

    def __init__(self, status: int, detail: str, title: str | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.title = status, detail, title


_TITLES = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Request too large",
    422: "Invalid request",
    429: "Too many requests",
    500: "Internal error",
    502: "LLM failure",
    503: "Unavailable",
}


def _one_line(err: BaseException) -> str:
    if isinstance(err, KeyError) and err.args:
        return str(err.args[0])
    if isinstance(err, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in err.errors()
        )
    return " ".join(str(err).split()) or type(err).__name__


def classify(err: BaseException) -> JobError:
    """Status, title and a one-line detail for an exception (500 says nothing inside)."""
    if isinstance(err, ServiceError):
        status = err.status
    elif isinstance(err, (UnknownEntityError, KeyError)):
        status = 404
    elif isinstance(err, (ValueError, ValidationError)):
        status = 422
    elif isinstance(err, LLMError):
        status = 502
    elif isinstance(err, QueueFull):
        status = 429
    elif isinstance(err, PlanConflict):
        status = 409
    elif isinstance(err, (StoreError, ShuttingDown)):
        status = 503
    else:
        log.exception("unexpected error", exc_info=err)
        return JobError(status=500, title=_TITLES[500], detail="unexpected error; see server log")
    title = (err.title if isinstance(err, ServiceError) else None) or _TITLES.get(status, "Error")
    detail = _one_line(err)
    if isinstance(err, LLMError):
        detail = f"the LLM call failed, nothing was stored: {detail}"
    return JobError(status=status, title=title, detail=detail)


def retry_after(err: Exception) -> dict[str, str] | None:
    """When to try again, for the answers worth retrying: a full queue drains in about a
    second; a store that went away (a restart) or a service shutting down takes longer."""
    if isinstance(err, QueueFull):
        return {"Retry-After": "1"}
    if isinstance(err, (StoreError, ShuttingDown)):
        return {"Retry-After": "5"}
    return None


def request_id(request: Request) -> str:
    return getattr(request.state, "request_id", None) or "-"


def problem(request: Request, error: JobError, headers: dict[str, str] | None = None) -> Any:
    body = Problem(
        title=error.title, status=error.status, detail=error.detail, request_id=request_id(request)
    )
    return JSONResponse(
        body.model_dump(), status_code=error.status, media_type=PROBLEM, headers=headers
    )


def _methods(request: Request) -> set[str]:
    found: set[str] = set()
    for route in request.app.router.routes:
        regex, methods = getattr(route, "path_regex", None), getattr(route, "methods", None)
        if regex is not None and methods and regex.match(request.url.path):
            found |= set(methods)
    return found


def install(app: FastAPI) -> None:
    """Exception handlers turning everything into problems."""

    async def on_any(request: Request, err: Exception) -> Any:
        return problem(request, classify(err), retry_after(err))

    async def on_http(request: Request, err: Exception) -> Any:
        assert isinstance(err, HTTPException)
        status = err.status_code
        title = _TITLES.get(status, "Error")
        detail = err.detail if isinstance(err.detail, str) else title
        headers = dict(err.headers or {})
        if status == 405:  # Starlette lists one route's methods; the path may have several
            headers["Allow"] = ", ".join(sorted(_methods(request)))
        return problem(request, JobError(status=status, title=title, detail=detail), headers)

    async def on_validation(request: Request, err: Exception) -> Any:
        assert isinstance(err, RequestValidationError)
        parts = []
        for e in err.errors():
            loc = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
            parts.append(f"{loc}: {e.get('msg', 'invalid')}")
        detail = "; ".join(parts)[:2000]
        return problem(request, JobError(status=422, title=_TITLES[422], detail=detail))

    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(HTTPException, on_http)
    # known classes first: their handlers answer inside the app (a bare `Exception` handler is
    # Starlette's last resort, which logs and re-raises after answering)
    for known in (ServiceError, ValueError, KeyError, ValidationError, LLMError, StoreError,
                  QueueFull, ShuttingDown):  # fmt: skip
        app.add_exception_handler(known, on_any)
    app.add_exception_handler(Exception, on_any)


class RequestContext:
    """ASGI middleware: the request id, and the body size limit (413 before any handler runs;
    bodies are small, so one within the limit is read whole and replayed)."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app, self.max_body = app, max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        rid = given if _SANE_ID.match(given) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = rid

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", rid.encode())]
            await send(message)

        length = dict(scope["headers"]).get(b"content-length")
        too_big = length is not None and length.isdigit() and int(length) > self.max_body
        chunks: list[bytes] = []
        if not too_big and scope["method"] in ("POST", "PUT", "PATCH", "DELETE"):
            size, more = 0, True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_body:
                    too_big = True
                    break
                chunks.append(chunk)
                more = message.get("more_body", False)
        if too_big:
            await _send_problem(send_with_id, rid, 413, f"body over {self.max_body} bytes")
            return
        body, replayed = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal replayed
            if chunks and not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            if (
                not chunks
                and not replayed
                and scope["method"] in ("POST", "PUT", "PATCH", "DELETE")
            ):
                replayed = True
                return {"type": "http.request", "body": b"", "more_body": False}
            return await receive()

        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send_with_id(message)

        try:
            await self.app(scope, replay, tracked)
        except Exception as err:  # the traceback goes to the log, never to the client
            log.exception("request %s failed", rid, exc_info=err)
            if not started:
                await _send_problem(send_with_id, rid, 500, "unexpected error; see server log")


class LoopbackOnly:
    """ASGI middleware of the open service (no keys file: every request is an admin, which
    `check_bind` keeps to loopback): a browser on this machine is a loopback client too, so a
    web page could make it act. Refused (403, before any handler): a request whose `Host` is
    neither this machine nor a single-label name (a page's own name rebound to 127.0.0.1 by
    its DNS, letting the page read the answers; a public page's name always has a dot), and
    one a page of another origin sent (`Origin`: a form POST needs no CORS preflight)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            host = headers.get(b"host", b"").decode("latin-1")
            origin = headers.get(b"origin", b"").decode("latin-1")
            name = _hostname("//" + host)
            rebound = bool(host) and not (_local(name) or _single_label(name))
            foreign = bool(origin) and not _local(_hostname(origin))
            if rebound or foreign:
                rid = scope.get("state", {}).get("request_id", "-")
                detail = (
                    "the service without API keys answers loopback clients only (Host "
                    "127.0.0.1 or localhost, no other web origin); use a keys file"
                )
                await _send_problem(send, rid, 403, detail)
                return
        await self.app(scope, receive, send)


def _hostname(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:  # not a URL (an unclosed "[", ...): no name of this machine
        return None


def _local(name: str | None) -> bool:
    """A name of this machine: a loopback address, localhost, or a *.localhost name."""
    return name is not None and (is_loopback(name) or name.endswith(".localhost"))


def _single_label(name: str | None) -> bool:
    """A name no public DNS answers (no dot; not an IPv6 address), so no page can rebind it."""
    return name is not None and "." not in name and ":" not in name


async def _send_problem(send: Send, rid: str, status: int, detail: str) -> None:
    body = Problem(title=_TITLES[status], status=status, detail=detail, request_id=rid)
    data = body.model_dump_json().encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", PROBLEM.encode()),
                (b"content-length", str(len(data)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})
