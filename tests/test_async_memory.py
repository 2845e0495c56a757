"""`AsyncMemory` under cancellation: a cancelled write is settled before the cancel reaches
the caller (the thread running it cannot be stopped); a cancelled read returns at once."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from service_support import service_memory

from mem0g import AsyncMemory, Memory


@pytest.fixture
def memory(tmp_path, llm_server, hashing) -> Iterator[Memory]:
    m = service_memory(tmp_path / "store", llm_server, hashing)
    yield m
    m.close()


def _gated(memory: Memory, name: str) -> tuple[threading.Event, threading.Event]:
    """`memory.<name>` made to wait for `gate` once it started."""
    started, gate = threading.Event(), threading.Event()
    real = getattr(memory, name)

    def slow(*args: Any, **kwargs: Any) -> Any:
        started.set()
        gate.wait(10)
        return real(*args, **kwargs)

    setattr(memory, name, slow)
    return started, gate


def test_a_cancelled_add_is_settled_before_the_cancel_arrives(memory: Memory) -> None:
    started, gate = _gated(memory, "add")
    m = AsyncMemory(memory=memory)

    async def main() -> list[str]:
        task = asyncio.create_task(m.add("Ana lives in Oslo", user_id="u", infer=False))
        await asyncio.to_thread(started.wait, 10)
        task.cancel()
        await asyncio.sleep(0.2)
        assert not task.done()  # its thread is still writing: the cancel waits for it
        task.cancel()  # a second cancel waits as well
        await asyncio.sleep(0.05)
        assert not task.done()
        gate.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        # settled when the cancel arrived: no add is still running behind the caller
        return [f.text for f in memory.get_all(user_id="u").facts]

    assert asyncio.run(main()) == ["Ana lives in Oslo"]


def test_a_cancelled_add_that_fails_raises_the_cancel(memory: Memory) -> None:
    started, gate = _gated(memory, "add")
    m = AsyncMemory(memory=memory)

    async def main() -> None:
        task = asyncio.create_task(m.add([], user_id="u", infer=False))  # invalid: no message
        await asyncio.to_thread(started.wait, 10)
        task.cancel()
        gate.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert memory.get_all(user_id="u").facts == []


def test_a_cancelled_search_returns_at_once(memory: Memory) -> None:
    started, gate = _gated(memory, "search")
    m = AsyncMemory(memory=memory)

    async def main() -> None:
        task = asyncio.create_task(m.search("Oslo", user_id="u"))
        await asyncio.to_thread(started.wait, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)  # the read's thread is still blocked
        gate.set()

    asyncio.run(main())
