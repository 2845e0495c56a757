"""`AsyncMemory`: the in-process `Memory` API for asyncio code.

Every call runs on a worker thread (`asyncio.to_thread`), so a slow add (LLM calls, a
transaction) or a search never blocks the event loop; `Memory` is thread-safe (adds of one
tenant are serialised inside it). Methods are `Memory`'s, wrapped, so their names, arguments
and docstrings are the same by construction.

Cancelling: a thread cannot be stopped, so a cancelled read returns at once (its thread's
answer is dropped), while a cancelled write (add, update, delete, ...) waits for its thread
to end before `CancelledError` reaches the caller. Why: a write is atomic, and once the
cancel arrives it is settled, in the store whole or not at all, never still running behind
a caller who then reads, retries or closes the memory.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any

from mem0g.memory import Memory


def _offload(name: str, write: bool = False) -> Callable[..., Coroutine[Any, Any, Any]]:
    sync = getattr(Memory, name)

    @functools.wraps(sync)
    async def method(self: AsyncMemory, *args: Any, **kwargs: Any) -> Any:
        call = asyncio.to_thread(getattr(self.memory, name), *args, **kwargs)
        if not write:
            return await call
        return await _settled(asyncio.ensure_future(call))

    return method


async def _settled(work: asyncio.Future[Any]) -> Any:
    """`work`'s result; cancelled meanwhile, it still waits for `work` to end (however
    often it is cancelled again), then lets the first cancel through."""
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError as cancel:
        while not work.done():
            try:
                await asyncio.shield(work)
            except asyncio.CancelledError:
                continue
            except Exception:  # dropped: the caller asked to cancel
                break
        if not work.cancelled():
            work.exception()  # retrieved, so asyncio does not log it as lost
        raise cancel


class AsyncMemory:
    """`AsyncMemory(config)` or `AsyncMemory(memory=existing)`; `await m.add(...)` etc."""

    def __init__(self, config: Any = None, *, memory: Memory | None = None, **kwargs: Any) -> None:
        self.memory = memory if memory is not None else Memory(config, **kwargs)

    add = _offload("add", write=True)
    search = _offload("search")
    context = _offload("context")
    get_all = _offload("get_all")
    get_everything = _offload("get_everything")
    get = _offload("get")
    update = _offload("update", write=True)
    delete = _offload("delete", write=True)
    history = _offload("history")
    episodes = _offload("episodes")
    delete_all = _offload("delete_all", write=True)
    reset = _offload("reset", write=True)
    stats = _offload("stats")
    tenants = _offload("tenants")
    summary = _offload("summary")
    refresh_summary = _offload("refresh_summary", write=True)
    list_entities = _offload("list_entities")
    get_entity = _offload("get_entity")
    entity_relations = _offload("entity_relations")
    entity_history = _offload("entity_history")
    possible_duplicates = _offload("possible_duplicates")
    merge_entities = _offload("merge_entities", write=True)
    split_entity = _offload("split_entity", write=True)
    rebuild_indexes = _offload("rebuild_indexes", write=True)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.memory.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
