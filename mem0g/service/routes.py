"""The /v1 endpoints: one per `Memory` method, same field and result names.

Each handler checks the key (scope, then tenant grant) before it touches anything, then makes
one call into `Memory` (or `mem0g.export`). Handlers are plain `def`s: FastAPI runs them on its
thread pool, so a slow add never blocks the event loop. Request models are built from the
configured `Limits`, so the OpenAPI schema states the limits a request is checked against.
(No `from __future__ import annotations`: FastAPI reads these closures' annotations live.)
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    create_model,
)

from mem0g import export
from mem0g.memory import Memory
from mem0g.service.auth import Keyring, Principal, Scope
from mem0g.service.errors import PROBLEM, Problem, ServiceError
from mem0g.service.jobs import Job, JobQueue
from mem0g.service.settings import Limits
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
    PossibleDuplicate,
    Relation,
    SearchResult,
    SplitResult,
    Tenant,
)

MEDIA = {
    "json": "application/json",
    "graphml": "application/xml",
    "cypher": "text/plain",
    "mermaid": "text/plain",
    "html": "text/html",
}
ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": Problem, "content": {PROBLEM: {}}}
    for status in (400, 401, 403, 404, 409, 413, 422, 429, 502, 503)
}


def _iso_text(value: Any) -> Any:
    """Times are ISO-8601 strings in JSON (pydantic alone would also take a number)."""
    if value is not None and not isinstance(value, (str, datetime)):
        raise ValueError("an ISO-8601 date-time string is expected")
    return value


When = Annotated[datetime | None, BeforeValidator(_iso_text)]


class Deleted(BaseModel):
    """What a delete removed. `deleted` is entities + relations (what `Memory.delete_all`
    returns); the kinds say it all, facts and episodes included, as the CLI prints them."""

    deleted: int
    entities: int = 0
    relations: int = 0
    facts: int = 0
    episodes: int = 0


class ContextResult(BaseModel):
    context: str


class MessageIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: str = Field(default="user", max_length=64)
    content: str = Field(min_length=1, pattern=r"\S")
    name: str | None = Field(default=None, max_length=256)
    timestamp: When = None


@dataclass
class Models:
    """Request bodies with the configured limits in their schema."""

    add: type[BaseModel]
    search: type[BaseModel]
    context: type[BaseModel]
    update: type[BaseModel]
    merge: type[BaseModel]
    split: type[BaseModel]


def build_models(limits: Limits) -> Models:
    ident = Annotated[str | None, Field(default=None, min_length=1, max_length=limits.max_id_chars)]
    tenant = {"user_id": (ident, None), "agent_id": (ident, None), "run_id": (ident, None)}
    query = Annotated[str, Field(min_length=1, max_length=limits.max_query_chars, pattern=r"\S")]
    limit = Annotated[StrictInt, Field(ge=1, le=limits.max_limit)]

    def body(name: str, **fields: Any) -> type[BaseModel]:
        every: dict[str, Any] = {**fields, **tenant}
        model: type[BaseModel] = create_model(name, __config__=ConfigDict(extra="forbid"), **every)
        return model

    messages = Annotated[
        Annotated[list[MessageIn], Field(min_length=1, max_length=limits.max_messages)]
        | Annotated[str, Field(min_length=1, pattern=r"\S")],
        Field(description="a string, or messages {role, content, name, timestamp}"),
    ]
    return Models(
        add=body(
            "AddRequest",
            messages=(messages, ...),
            timestamp=(When, None),
            infer=(StrictBool, True),
        ),
        search=body(
            "SearchRequest",
            query=(query, ...),
            limit=(limit, 10),
            as_of=(When, None),
            include_invalid=(StrictBool, False),
            reference_time=(When, None),
        ),
        context=body(
            "ContextRequest",
            query=(query, ...),
            limit=(limit, 10),
            max_tokens=(Annotated[StrictInt, Field(ge=1, le=100_000)], 1000),
            as_of=(When, None),
            reference_time=(When, None),
        ),
        update=body(
            "UpdateRequest",
            text=(Annotated[str, Field(min_length=1, max_length=20_000, pattern=r"\S")], ...),
        ),
        merge=body(
            "MergeRequest",
            keep_id=(Annotated[str, Field(min_length=1, max_length=128)], ...),
            other_id=(Annotated[str, Field(min_length=1, max_length=128)], ...),
        ),
        split=body(
            "SplitRequest",
            merge_id=(Annotated[str | None, Field(min_length=1, max_length=128)], None),
            entity_id=(Annotated[str | None, Field(min_length=1, max_length=128)], None),
            other_id=(Annotated[str | None, Field(min_length=1, max_length=128)], None),
        ),
    )


_bearer = HTTPBearer(auto_error=False, description="an API key from the keys file")


def build_router(memory: Memory, keys: Keyring, jobs: JobQueue, limits: Limits) -> APIRouter:
    # request bodies built from the limits at run time: mypy cannot read `body: models.add`
    # as a type (the `type: ignore[name-defined]` below); FastAPI and the OpenAPI schema can
    models = build_models(limits)
    router = APIRouter(prefix="/v1", responses=ERRORS)
    Id = Annotated[str | None, Query(min_length=1, max_length=limits.max_id_chars)]
    ObjectId = Annotated[str, Path(min_length=1, max_length=128)]

    def principal(
        creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> Principal:
        found = keys.authenticate(creds.credentials if creds else None)
        if found is None:
            raise ServiceError(401, "a valid API key is required (Authorization: Bearer KEY)")
        return found

    Caller = Annotated[Principal, Depends(principal)]

    def tenant_query(
        user_id: Id = None, agent_id: Id = None, run_id: Id = None
    ) -> dict[str, str | None]:
        return {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}

    Ids = Annotated[dict[str, str | None], Depends(tenant_query)]

    def allow(caller: Principal, scope: Scope, ids: dict[str, str | None]) -> dict[str, Any]:
        """403 unless the key has the scope and reaches the tenant; the ids are returned for
        the `Memory` call (a request naming no tenant is a 422 from `Tenant`)."""
        tenant = Tenant(**ids)
        if not caller.has(scope):
            raise ServiceError(403, f"key {caller.name!r} lacks the {scope!r} scope")
        if not caller.reaches(tenant):
            raise ServiceError(403, f"key {caller.name!r} may not reach this tenant")
        return ids

    def admin(caller: Principal) -> None:
        if not caller.has("admin"):
            raise ServiceError(403, f"key {caller.name!r} lacks the 'admin' scope")

    def ids_of(body: BaseModel) -> dict[str, str | None]:
        return {k: getattr(body, k) for k in ("user_id", "agent_id", "run_id")}

    # ------------------------------------------------------------ memories (facts + graph)

    @router.post(
        "/memories",
        response_model=AddResult,
        responses={202: {"model": Job, "description": "queued (mode=async)"}},
        summary="add",
    )
    def add(
        body: models.add,  # type: ignore[name-defined]
        caller: Caller,
        mode: Literal["sync", "async"] = "sync",
    ) -> Any:
        """`mode=async`: 202 with a job (GET /v1/jobs/{id}), applied in order per tenant."""
        ids = allow(caller, "write", ids_of(body))
        messages = body.messages
        if isinstance(messages, list):
            messages = [m.model_dump() for m in messages]
        kwargs = {**ids, "timestamp": body.timestamp, "infer": body.infer}

        def work() -> AddResult:
            return memory.add(messages, **kwargs)

        if mode == "async":
            job = jobs.submit(Tenant(**ids), work, owner=caller.name)
            return _json(job, 202, {"Location": f"/v1/jobs/{job.id}"})
        return work()

    @router.post("/search", response_model=SearchResult, summary="search")
    def search(body: models.search, caller: Caller) -> SearchResult:  # type: ignore[name-defined]
        ids = allow(caller, "read", ids_of(body))
        return memory.search(
            body.query,
            **ids,
            limit=body.limit,
            as_of=body.as_of,
            include_invalid=body.include_invalid,
            reference_time=body.reference_time,
        )

    @router.post("/context", response_model=ContextResult, summary="context")
    def context(body: models.context, caller: Caller) -> ContextResult:  # type: ignore[name-defined]
        ids = allow(caller, "read", ids_of(body))
        text = memory.context(
            body.query,
            **ids,
            limit=body.limit,
            max_tokens=body.max_tokens,
            as_of=body.as_of,
            reference_time=body.reference_time,
        )
        return ContextResult(context=text)

    @router.get("/memories", response_model=GraphSnapshot, summary="get_all")
    def get_all(
        caller: Caller,
        q: Ids,
        include_invalid: bool = False,
        as_of: datetime | None = None,
    ) -> GraphSnapshot:
        ids = allow(caller, "read", q)
        return memory.get_all(**ids, include_invalid=include_invalid, as_of=as_of)

    @router.delete("/memories", response_model=Deleted, summary="delete_all")
    def delete_all(
        caller: Caller,
        q: Ids,
        all_users: Annotated[
            bool,
            Query(description="confirm a delete without user_id: it spans every user "
                  "(agent_id=x deletes agent x's data of all users)"),
        ] = False,
    ) -> Deleted:  # fmt: skip
        """Delete what the filter matches. Without user_id the filter spans users, so it must
        be confirmed with `all_users=true` (Python: `all_users=True`, CLI: `--all-users`):
        else 422 and nothing is deleted."""
        ids = allow(caller, "write", q)
        if ids["user_id"] is None and not all_users:
            raise ServiceError(
                422,
                "delete_all without user_id deletes that agent's/run's data for every user; "
                "add all_users=true to the query to confirm",
            )
        before = memory.stats(**ids)  # the CLI's counts too (a write meanwhile is not in them)
        deleted = memory.delete_all(**ids, all_users=all_users)
        return Deleted(
            deleted=deleted,
            entities=before.entities,
            relations=before.relations,
            facts=before.facts,
            episodes=before.episodes,
        )

    @router.get("/memories/{fact_id}", response_model=Fact, summary="get")
    def get(
        fact_id: ObjectId,
        caller: Caller,
        q: Ids,
    ) -> Fact:
        ids = allow(caller, "read", q)
        found = memory.get(fact_id, **ids)
        if found is None:
            raise ServiceError(404, f"no fact {fact_id!r} for this tenant")
        return found

    @router.put("/memories/{fact_id}", response_model=FactResult, summary="update")
    def update(fact_id: ObjectId, body: models.update, caller: Caller) -> FactResult:  # type: ignore[name-defined]
        ids = allow(caller, "write", ids_of(body))
        return memory.update(fact_id, body.text, **ids)

    @router.delete("/memories/{fact_id}", response_model=FactResult, summary="delete")
    def delete(
        fact_id: ObjectId,
        caller: Caller,
        q: Ids,
    ) -> FactResult:
        ids = allow(caller, "write", q)
        return memory.delete(fact_id, **ids)

    @router.get("/memories/{fact_id}/history", response_model=list[FactEvent], summary="history")
    def history(
        fact_id: ObjectId,
        caller: Caller,
        q: Ids,
    ) -> list[FactEvent]:
        ids = allow(caller, "read", q)
        return memory.history(fact_id, **ids)

    @router.get("/episodes", response_model=list[Episode], summary="episodes")
    def episodes(caller: Caller, q: Ids) -> list[Episode]:
        """What was said: the messages of each add, in write order (the provenance of every
        edge and fact points at one by id)."""
        ids = allow(caller, "read", q)
        return memory.episodes(**ids)

    # ------------------------------------------------------------ entities

    @router.get("/entities", response_model=list[Entity], summary="list_entities")
    def list_entities(
        caller: Caller,
        q: Ids,
    ) -> list[Entity]:
        ids = allow(caller, "read", q)
        return memory.list_entities(**ids)

    @router.get(
        "/entities/duplicates",
        response_model=list[PossibleDuplicate],
        summary="possible_duplicates",
    )
    def possible_duplicates(
        caller: Caller,
        q: Ids,
    ) -> list[PossibleDuplicate]:
        ids = allow(caller, "read", q)
        return memory.possible_duplicates(**ids)

    @router.get("/entities/{entity_id}", response_model=Entity, summary="get_entity")
    def get_entity(
        entity_id: ObjectId,
        caller: Caller,
        q: Ids,
    ) -> Entity:
        ids = allow(caller, "read", q)
        found = memory.get_entity(entity_id, **ids)
        if found is None:
            raise ServiceError(404, f"no entity {entity_id!r} for this tenant")
        return found

    @router.get(
        "/entities/{entity_id}/relations",
        response_model=list[Relation],
        summary="entity_relations",
    )
    def entity_relations(
        entity_id: ObjectId,
        caller: Caller,
        q: Ids,
        include_invalid: bool = False,
    ) -> list[Relation]:
        ids = allow(caller, "read", q)
        return memory.entity_relations(entity_id, **ids, include_invalid=include_invalid)

    @router.get(
        "/entities/{entity_id}/history", response_model=list[EntityEvent], summary="entity_history"
    )
    def entity_history(
        entity_id: ObjectId,
        caller: Caller,
        q: Ids,
    ) -> list[EntityEvent]:
        ids = allow(caller, "read", q)
        return memory.entity_history(entity_id, **ids)

    @router.post("/entities/merge", response_model=MergeResult, summary="merge_entities")
    def merge_entities(body: models.merge, caller: Caller) -> MergeResult:  # type: ignore[name-defined]
        ids = allow(caller, "write", ids_of(body))
        return memory.merge_entities(body.keep_id, body.other_id, **ids)

    @router.post("/entities/split", response_model=SplitResult, summary="split_entity")
    def split_entity(body: models.split, caller: Caller) -> SplitResult:  # type: ignore[name-defined]
        ids = allow(caller, "write", ids_of(body))
        return memory.split_entity(
            body.merge_id, entity_id=body.entity_id, other_id=body.other_id, **ids
        )

    # ------------------------------------------------------------ export, stats, admin, jobs

    @router.get(
        "/export",
        summary="export",
        response_class=Response,
        responses={
            200: {
                "content": {
                    m: {"schema": {"type": "object"} if m == MEDIA["json"] else {"type": "string"}}
                    for m in set(MEDIA.values())
                }
            }
        },
    )
    def export_graph(
        caller: Caller,
        q: Ids,
        format: Literal["json", "graphml", "cypher", "mermaid", "html"] = "json",
        include_invalid: bool = True,
    ) -> Response:
        ids = q
        if any(ids.values()):
            allow(caller, "read", ids)
            snapshot = memory.get_all(**ids, include_invalid=include_invalid)
            tenant: Tenant | None = Tenant(**ids)
        else:  # every tenant: an operator's backup
            admin(caller)
            snapshot, tenant = memory.get_everything(include_invalid=include_invalid), None
        episodes = export.html_episodes(memory, tenant) if format == "html" else []
        text = export.dump(snapshot, format, tenant=tenant, episodes=episodes)
        return Response(text, media_type=MEDIA[format])

    @router.get("/stats", response_model=StoreStats, summary="stats")
    def stats(
        caller: Caller,
        q: Ids,
    ) -> StoreStats:
        ids = q
        if any(ids.values()):
            allow(caller, "read", ids)
        else:
            admin(caller)
        found = memory.stats(**ids)
        if not caller.has("admin"):  # the copy's and the warm-up's counters are the whole
            # process's (every tenant's searches, the store's data): not a tenant's to read
            found = found.model_copy(update={"warmup": None, "local_copy": None})
        return found

    @router.get("/tenants", response_model=list[Tenant], summary="tenants")
    def tenants(caller: Caller) -> list[Tenant]:
        admin(caller)
        return memory.tenants()

    @router.post("/reset", status_code=204, summary="reset")
    def reset(caller: Caller) -> Response:
        admin(caller)
        memory.reset()
        return Response(status_code=204)

    @router.get("/jobs/{job_id}", response_model=Job, summary="job")
    def job(job_id: ObjectId, caller: Caller) -> Job:
        """A job of a tenant the key reaches (another tenant's job reads as unknown: 404)."""
        found = jobs.get(job_id)
        if found is None or not caller.reaches(found.tenant):
            raise ServiceError(404, f"no job {job_id!r} (jobs are kept in memory only)")
        if not (caller.has("read") or caller.has("write")):
            raise ServiceError(404, f"no job {job_id!r} (jobs are kept in memory only)")
        return found

    return router


def _json(model: BaseModel, status: int, headers: dict[str, str]) -> Response:
    return Response(
        model.model_dump_json(), status_code=status, media_type="application/json", headers=headers
    )
