"""`Client` and `AsyncClient`: `Memory`'s methods, names and arguments over HTTP (httpx).

Code moves between in-process and served memory by changing one constructor:
`Memory(config)` -> `Client("http://127.0.0.1:8000", api_key)`. Results are the same pydantic
types. Each method is written once (in `_Methods`) as "build the request, parse the answer";
the sync client sends it and returns the result, the async one returns an awaitable. Errors
come back as the exception families `Memory` raises: bad input is a `ValueError`, an unknown
id a `LookupError`, an LLM failure an `LLMError`, a refused key a `PermissionError`.
(Over 500 lines: every `Memory` method is spelled out with its real signature, for IDEs and
`help()`, rather than generated.)
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import TypeAdapter

from mem0g import validation
from mem0g.llm.client import LLMError
from mem0g.service.jobs import Job
from mem0g.stores.base import StoreStats
from mem0g.types import (
    AddResult,
    Entity,
    EntityEvent,
    Episode,
    Fact,
    FactEvent,
    FactResult,
    GraphSnapshot,
    MergeResult,
    Message,
    PossibleDuplicate,
    Relation,
    SearchResult,
    SplitResult,
    Tenant,
)

T = TypeVar("T")


class APIError(Exception):
    """An error answer of the service (problem+json): status, detail and request id."""

    def __init__(self, status: int, detail: str, request_id: str | None) -> None:
        super().__init__(f"{detail} (HTTP {status}, request {request_id})")
        self.status, self.detail, self.request_id = status, detail, request_id


class BadRequest(APIError, ValueError):
    pass


class NotFound(APIError, LookupError):
    pass


class Forbidden(APIError, PermissionError):
    pass


class LLMFailure(APIError, LLMError):
    pass


class Unavailable(APIError, RuntimeError):
    """The service could not take the request now (queue full, shutting down, store down)."""


class Conflict(APIError, RuntimeError):
    """Another writer changed the tenant every time the write was planned (409): nothing
    was written; a `RuntimeError`, as `Memory`'s `PlanConflict`, so it is retried, not
    taken for bad input."""


def _error(response: httpx.Response) -> APIError:
    try:
        body = response.json()
        detail = str(body.get("detail") or body)
    except ValueError:
        detail = response.text[:500]
    status = response.status_code
    kind: type[APIError] = APIError
    if status in (400, 413, 422):
        kind = BadRequest
    elif status == 409:
        kind = Conflict
    elif status == 404:
        kind = NotFound
    elif status in (401, 403):
        kind = Forbidden
    elif status == 502:
        kind = LLMFailure
    elif status in (429, 503):
        kind = Unavailable
    return kind(status, detail, response.headers.get("x-request-id"))


@dataclass
class _Call:
    """One HTTP request and how to read its answer (`none_on_404`: `get`-style lookups)."""

    method: str
    path: str
    params: dict[str, Any] = field(default_factory=dict)
    json: Any = None
    parse: Callable[[httpx.Response], Any] = lambda r: None
    none_on_404: bool = False


def _model(kind: Any) -> Callable[[httpx.Response], Any]:
    adapter = TypeAdapter(kind)
    return lambda r: adapter.validate_json(r.content)


def _ids(user_id: str | None, agent_id: str | None, run_id: str | None) -> dict[str, str]:
    ids = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
    return {k: v for k, v in ids.items() if v is not None}


def _seg(value: str, what: str) -> str:
    """An id as one path segment: "#", "?" or "/" in it are the id's, not the URL's (a "#"
    cut unescaped, and `delete("<id>#x")` deleted the fact "<id>"). A blank or non-string id
    is refused as `Memory` refuses it (blank, it named another route)."""
    return quote(validation.text(value, what), safe="")


def _time(value: datetime | str | None) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else value


def _messages(messages: Any) -> Any:
    if isinstance(messages, str):
        return messages
    items = [messages] if isinstance(messages, dict) else list(messages)
    return [m.model_dump(mode="json") if isinstance(m, Message) else dict(m) for m in items]


def _clean(params: dict[str, Any]) -> dict[str, Any]:
    return {
        k: (str(v).lower() if isinstance(v, bool) else v)
        for k, v in params.items()
        if v is not None
    }


class _Methods:
    """`Memory`'s public methods, each as one request; `_send` is the transport."""

    def _send(self, call: _Call) -> Any:
        raise NotImplementedError

    def _get(self, path: str, params: dict[str, Any], kind: Any, none_on_404: bool = False) -> Any:
        return self._send(_Call("GET", path, params=params, parse=_model(kind),
                                none_on_404=none_on_404))  # fmt: skip

    def _post(self, path: str, body: dict[str, Any], kind: Any) -> Any:
        return self._send(_Call("POST", path, json=body, parse=_model(kind)))

    def add(
        self,
        messages: Any,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        timestamp: datetime | str | None = None,
        infer: bool = True,
    ) -> AddResult:
        body = {"messages": _messages(messages), "timestamp": _time(timestamp), "infer": infer}
        return self._send(
            _Call(
                "POST",
                "/v1/memories",
                json={**body, **_ids(user_id, agent_id, run_id)},
                parse=_model(AddResult),
            )
        )

    def add_async(
        self,
        messages: Any,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        timestamp: datetime | str | None = None,
        infer: bool = True,
    ) -> Job:
        """Queue an add (202): the job applies in order with the tenant's other queued adds."""
        body = {"messages": _messages(messages), "timestamp": _time(timestamp), "infer": infer}
        return self._send(
            _Call(
                "POST",
                "/v1/memories",
                params={"mode": "async"},
                json={**body, **_ids(user_id, agent_id, run_id)},
                parse=_model(Job),
            )
        )

    def job(self, job_id: str) -> Job | None:
        return self._send(
            _Call("GET", f"/v1/jobs/{_seg(job_id, 'job_id')}", parse=_model(Job), none_on_404=True)
        )

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 10,
        as_of: datetime | str | None = None,
        include_invalid: bool = False,
        reference_time: datetime | str | None = None,
    ) -> SearchResult:
        body = {
            "query": query,
            "limit": limit,
            "as_of": _time(as_of),
            "include_invalid": include_invalid,
            "reference_time": _time(reference_time),
            **_ids(user_id, agent_id, run_id),
        }
        return self._post("/v1/search", body, SearchResult)

    def context(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 10,
        max_tokens: int = 1000,
        as_of: datetime | str | None = None,
        reference_time: datetime | str | None = None,
    ) -> str:
        body = {
            "query": query,
            "limit": limit,
            "max_tokens": max_tokens,
            "as_of": _time(as_of),
            "reference_time": _time(reference_time),
            **_ids(user_id, agent_id, run_id),
        }
        call = _Call("POST", "/v1/context", json=body, parse=lambda r: r.json()["context"])
        return self._send(call)

    def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        include_invalid: bool = False,
        as_of: datetime | str | None = None,
    ) -> GraphSnapshot:
        params = {
            **_ids(user_id, agent_id, run_id),
            "include_invalid": include_invalid,
            "as_of": _time(as_of),
        }
        return self._send(_Call("GET", "/v1/memories", params=params, parse=_model(GraphSnapshot)))

    def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        all_users: bool = False,
    ) -> int:
        return self._send(
            _Call(
                "DELETE",
                "/v1/memories",
                params={**_ids(user_id, agent_id, run_id), "all_users": all_users},
                parse=lambda r: r.json()["deleted"],
            )
        )

    def _fact(self, method: str, fact_id: str, ids: dict[str, str], **kw: Any) -> _Call:
        return _Call(
            method,
            f"/v1/memories/{_seg(fact_id, 'fact_id')}",
            params=ids if method != "PUT" else {},
            **kw,
        )

    def get(
        self,
        fact_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> Fact | None:
        ids = _ids(user_id, agent_id, run_id)
        return self._send(self._fact("GET", fact_id, ids, parse=_model(Fact), none_on_404=True))

    def update(
        self,
        fact_id: str,
        text: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> FactResult:
        ids = _ids(user_id, agent_id, run_id)
        return self._send(
            self._fact("PUT", fact_id, ids, json={"text": text, **ids}, parse=_model(FactResult))
        )

    def delete(
        self,
        fact_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> FactResult:
        ids = _ids(user_id, agent_id, run_id)
        return self._send(self._fact("DELETE", fact_id, ids, parse=_model(FactResult)))

    def history(
        self,
        fact_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> list[FactEvent]:
        return self._get(
            f"/v1/memories/{_seg(fact_id, 'fact_id')}/history",
            _ids(user_id, agent_id, run_id),
            list[FactEvent],
        )

    def episodes(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> list[Episode]:
        return self._get("/v1/episodes", _ids(user_id, agent_id, run_id), list[Episode])

    def list_entities(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> list[Entity]:
        return self._get("/v1/entities", _ids(user_id, agent_id, run_id), list[Entity])

    def possible_duplicates(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> list[PossibleDuplicate]:
        return self._get(
            "/v1/entities/duplicates", _ids(user_id, agent_id, run_id), list[PossibleDuplicate]
        )

    def get_entity(
        self,
        entity_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> Entity | None:
        return self._get(
            f"/v1/entities/{_seg(entity_id, 'entity_id')}",
            _ids(user_id, agent_id, run_id),
            Entity,
            none_on_404=True,
        )

    def entity_relations(
        self,
        entity_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        include_invalid: bool = False,
    ) -> list[Relation]:
        params = {**_ids(user_id, agent_id, run_id), "include_invalid": include_invalid}
        return self._get(
            f"/v1/entities/{_seg(entity_id, 'entity_id')}/relations", params, list[Relation]
        )

    def entity_history(
        self,
        entity_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> list[EntityEvent]:
        return self._get(
            f"/v1/entities/{_seg(entity_id, 'entity_id')}/history",
            _ids(user_id, agent_id, run_id),
            list[EntityEvent],
        )

    def merge_entities(
        self,
        keep_id: str,
        other_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> MergeResult:
        body = {"keep_id": keep_id, "other_id": other_id, **_ids(user_id, agent_id, run_id)}
        return self._post("/v1/entities/merge", body, MergeResult)

    def split_entity(
        self,
        merge_id: str | None = None,
        *,
        entity_id: str | None = None,
        other_id: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> SplitResult:
        body = {
            "merge_id": merge_id,
            "entity_id": entity_id,
            "other_id": other_id,
            **_ids(user_id, agent_id, run_id),
        }
        return self._post("/v1/entities/split", body, SplitResult)

    def dump(
        self,
        format: str = "json",
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        include_invalid: bool = True,
    ) -> str:
        """A dump (`mem0g.export` formats, and "html": the explorer page), as text."""
        params = {
            **_ids(user_id, agent_id, run_id),
            "format": format,
            "include_invalid": include_invalid,
        }
        return self._send(_Call("GET", "/v1/export", params=params, parse=lambda r: r.text))

    def stats(self, **ids: str | None) -> StoreStats:
        params = _ids(ids.get("user_id"), ids.get("agent_id"), ids.get("run_id"))
        return self._send(_Call("GET", "/v1/stats", params=params, parse=_model(StoreStats)))

    def tenants(self) -> list[Tenant]:
        return self._send(_Call("GET", "/v1/tenants", parse=_model(list[Tenant])))

    def reset(self) -> None:
        return self._send(_Call("POST", "/v1/reset"))


def _result(call: _Call, response: httpx.Response) -> Any:
    if response.status_code == 404 and call.none_on_404:
        return None
    if response.status_code >= 400:
        raise _error(response)
    return call.parse(response)


def _request(call: _Call) -> dict[str, Any]:
    body = call.json
    if isinstance(body, dict):
        body = {k: v for k, v in body.items() if v is not None}
    return {"method": call.method, "url": call.path, "params": _clean(call.params), "json": body}


def _headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


class Client(_Methods):
    """`Memory`'s API against a running `mem0g serve`."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 300.0,
        **httpx_args: Any,
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url, headers=_headers(api_key), timeout=timeout, **httpx_args
        )

    def _send(self, call: _Call) -> Any:
        return _result(call, self._http.request(**_request(call)))

    def wait(self, job_id: str, timeout: float = 300.0, poll: float = 0.05) -> Job:
        """Poll a job until it succeeded or failed (TimeoutError after `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.job(job_id)
            if job is None:
                raise LookupError(f"no job {job_id!r}")
            if job.state in ("succeeded", "failed"):
                return job
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {job.state} after {timeout}s")
            time.sleep(poll)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Methods):
    """The same methods as `Client`, each returning an awaitable."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 300.0,
        **httpx_args: Any,
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url, headers=_headers(api_key), timeout=timeout, **httpx_args
        )

    def _send(self, call: _Call) -> Awaitable[Any]:
        async def send() -> Any:
            return _result(call, await self._http.request(**_request(call)))

        return send()

    async def wait(self, job_id: str, timeout: float = 300.0, poll: float = 0.05) -> Job:
        import asyncio

        deadline = time.monotonic() + timeout
        while True:
            job = await self.job(job_id)  # type: ignore[misc]
            if job is None:
                raise LookupError(f"no job {job_id!r}")
            if job.state in ("succeeded", "failed"):
                return job
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {job.state} after {timeout}s")
            await asyncio.sleep(poll)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
