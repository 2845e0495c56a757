"""`AsyncMemory`: the in-process `Memory` API for asyncio code.

Every call runs on a worker thread (`asyncio.to_thread`), so a slow add (LLM calls, a
transaction) or a search never blocks the event loop; `Memory` is thread-safe (adds of one
tenant are serialised inside it). Methods are `Memory`'s, wrapped, so their names, arguments
and docstrings are the same by construction.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any

from mem0g.memory import Memory


def _offload(name: str) -> Callable[..., Coroutine[Any, Any, Any]]:
    sync = getattr(Memory, name)

    @functools.wraps(sync)
    async def method(self: AsyncMemory, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(getattr(self.memory, name), *args, **kwargs)

    return method


class AsyncMemory:
    """`AsyncMemory(config)` or `AsyncMemory(memory=existing)`; `await m.add(...)` etc."""

    def __init__(self, config: Any = None, *, memory: Memory | None = None, **kwargs: Any) -> None:
        self.memory = memory if memory is not None else Memory(config, **kwargs)

    add = _offload("add")
    search = _offload("search")
    context = _offload("context")
    get_all = _offload("get_all")
    get_everything = _offload("get_everything")
    get = _offload("get")
    update = _offload("update")
    delete = _offload("delete")
    history = _offload("history")
    episodes = _offload("episodes")
    delete_all = _offload("delete_all")
    reset = _offload("reset")
    stats = _offload("stats")
    tenants = _offload("tenants")
    summary = _offload("summary")
    refresh_summary = _offload("refresh_summary")
    list_entities = _offload("list_entities")
    get_entity = _offload("get_entity")
    entity_relations = _offload("entity_relations")
    entity_history = _offload("entity_history")
    possible_duplicates = _offload("possible_duplicates")
    merge_entities = _offload("merge_entities")
    split_entity = _offload("split_entity")
    rebuild_indexes = _offload("rebuild_indexes")

    async def aclose(self) -> None:
        await asyncio.to_thread(self.memory.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
