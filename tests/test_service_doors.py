"""One behavioural suite run against every door: `Memory`, `AsyncMemory`, and `Client` /
`AsyncClient` through a live server on 127.0.0.1. Same calls, same results, same errors."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from service_support import live_server, service_memory

from mem0g import AsyncClient, AsyncMemory, Client, Memory
from mem0g.llm.client import LLMError
from mem0g.service.app import create_app
from mem0g.testing.script import turn
from mem0g.types import AddResult, Entity, Fact, GraphSnapshot, SearchResult

T1, T2 = "2023-01-10T10:00:00Z", "2023-06-10T10:00:00Z"

RULES = [
    *turn("moved to Paris", [("Alice", "person"), ("Paris", "city")],
          [("Alice", "lives_in", "Paris")], facts=["Alice lives in Paris"]),
    *turn("moved to Berlin", [("Alice", "person"), ("Berlin", "city")],
          [("Alice", "lives_in", "Berlin")], [("INVALIDATE", 0, "e1")],
          facts=["Alice lives in Berlin"]),
    *turn("Bob likes tea", [("Bob", "person"), ("tea", "drink")], [("Bob", "likes", "tea")],
          facts=["Bob likes tea"]),
    *turn("Carol works", [("Carol", "person"), ("Acme", "organization")],
          [("Carol", "works_at", "Acme")], facts=[]),
    {"task": "resolve_updates", "response": {"operations": []}},
    {"task": "update_memory", "response": {"operations": []}},
    {"task": "extract_entities", "match": {"contains": "explode"},
     "response": {"status": 500, "error": "down"}},
]  # fmt: skip


class _Sync:
    """Runs an async door's methods on a private event loop thread, so one suite drives all."""

    def __init__(self, target: Any) -> None:
        self._target = target
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            result = attr(*args, **kwargs)
            assert inspect.isawaitable(result), f"{name} must be awaitable"
            return asyncio.run_coroutine_threadsafe(_await(result), self._loop).result(60)

        return call

    def stop(self, closer: str) -> None:
        asyncio.run_coroutine_threadsafe(getattr(self._target, closer)(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


async def _await(awaitable: Any) -> Any:
    return await awaitable


@pytest.fixture(params=["Memory", "AsyncMemory", "Client", "AsyncClient"])
def door(request, tmp_path, llm_server, hashing) -> Iterator[Any]:
    for rule in RULES:
        llm_server.add_rule(rule)
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    kind = request.param
    try:
        if kind == "Memory":
            yield memory
        elif kind == "AsyncMemory":
            wrapped = _Sync(AsyncMemory(memory=memory))
            yield wrapped
            wrapped.stop("aclose")
        else:
            with live_server(create_app(memory)) as base:
                if kind == "Client":
                    with Client(base) as client:
                        yield client
                else:
                    wrapped = _Sync(AsyncClient(base))
                    yield wrapped
                    wrapped.stop("aclose")
    finally:
        memory.close()


def test_add_search_and_history_of_the_graph(door) -> None:
    first = door.add("I moved to Paris", user_id="alice", timestamp=T1)
    assert isinstance(first, AddResult)
    assert [(c.event, c.destination) for c in first.relations] == [("ADD", "Paris")]
    second = door.add([{"role": "user", "content": "I moved to Berlin"}], user_id="alice",
                      timestamp=T2)  # fmt: skip
    assert {c.event for c in second.relations} == {"ADD", "INVALIDATE"}
    now = door.search("where does alice live", user_id="alice")
    assert isinstance(now, SearchResult)
    assert {r.destination for r in now.relations} == {"Berlin"}
    then = door.search("where does alice live", user_id="alice", as_of="2023-03-01")
    assert {r.destination for r in then.relations} == {"Paris"}
    everything = door.search("where does alice live", user_id="alice", include_invalid=True)
    assert {r.destination for r in everything.relations} == {"Paris", "Berlin"}
    snapshot = door.get_all(user_id="alice", include_invalid=True)
    assert isinstance(snapshot, GraphSnapshot) and len(snapshot.relations) == 2
    assert len(door.get_all(user_id="alice").relations) == 1
    text = door.context("where does alice live", user_id="alice")
    assert "Alice -- lives_in --> Berlin" in text
    assert door.stats(user_id="alice").entities == 3


def test_fact_lifecycle_by_id(door) -> None:
    added = door.add("my locker code is 4521", user_id="alice", infer=False)
    fact_id = added.facts[0].id
    fact = door.get(fact_id, user_id="alice")
    assert isinstance(fact, Fact) and fact.text == "my locker code is 4521"
    assert door.get(fact_id, user_id="bob") is None  # another tenant's id reads as unknown
    assert door.update(fact_id, "my locker code is 9999", user_id="alice").previous_text == (
        "my locker code is 4521"
    )
    assert door.delete(fact_id, user_id="alice").event == "DELETE"
    assert door.get(fact_id, user_id="alice") is None
    assert [e.event for e in door.history(fact_id, user_id="alice")] == ["ADD", "UPDATE", "DELETE"]
    with pytest.raises(LookupError):
        door.update(fact_id, "again", user_id="alice")


def test_an_id_is_one_id_not_a_part_of_a_url(door) -> None:
    """An id with URL syntax in it names no record, through every door: the clients send it
    as one path segment (a "#" once cut it, so `get("<id>#x")` answered the fact "<id>")."""
    added = door.add("my locker code is 4521", user_id="alice", infer=False)
    fact_id = added.facts[0].id
    for odd in (f"{fact_id}#x", f"{fact_id}?user_id=alice", f"{fact_id}%23"):
        assert door.get(odd, user_id="alice") is None, odd
        assert door.history(odd, user_id="alice") == [], odd
    for blank in ("", " "):  # a blank id is a caller's bug, refused alike by every door
        for read in (door.get, door.history, door.get_entity):
            with pytest.raises(ValueError, match="_id is empty"):
                read(blank, user_id="alice")
    alice = door.list_entities(user_id="alice")
    assert door.get_entity(f"{fact_id}#x", user_id="alice") is None and alice == []
    with pytest.raises(LookupError):
        door.delete(f"{fact_id}#x", user_id="alice")
    assert door.get(fact_id, user_id="alice").text == "my locker code is 4521"


def test_tenants_do_not_see_each_other(door) -> None:
    door.add("I moved to Paris", user_id="alice", timestamp=T1)
    door.add("Bob likes tea", user_id="bob")
    assert {r.destination for r in door.search("what", user_id="bob").relations} == {"tea"}
    assert {e.name for e in door.list_entities(user_id="alice")} == {"Alice", "Paris"}
    assert door.delete_all(user_id="bob") > 0
    assert door.get_all(user_id="bob").entities == []
    assert len(door.get_all(user_id="alice").entities) == 2


def test_entities_merge_and_split(door) -> None:
    door.add("Bob likes tea", user_id="alice")
    door.add("Carol works at Acme", user_id="alice")
    entities = {e.name: e for e in door.list_entities(user_id="alice")}
    assert isinstance(entities["Bob"], Entity)
    assert door.get_entity(entities["Bob"].id, user_id="bob") is None
    bob, carol = entities["Bob"], entities["Carol"]
    merged = door.merge_entities(carol.id, bob.id, user_id="alice")
    assert door.get_entity(bob.id, user_id="alice") is None
    rels = door.entity_relations(carol.id, user_id="alice")
    assert {r.relation for r in rels} == {"likes", "works_at"}
    assert [e.event for e in door.entity_history(carol.id, user_id="alice")] == ["MERGE"]
    door.split_entity(merged.merge_id, user_id="alice")
    assert door.get_entity(bob.id, user_id="alice").name == "Bob"
    with pytest.raises(LookupError):
        door.merge_entities("nope", bob.id, user_id="alice")


def test_errors_are_the_same_families(door) -> None:
    with pytest.raises(ValueError):
        door.search("   ", user_id="alice")
    with pytest.raises(ValueError):
        door.search("where", limit=3)  # no tenant
    with pytest.raises(LLMError):
        door.add("I explode", user_id="alice")
    assert door.get_all(user_id="alice").facts == []


def test_clients_have_memorys_signatures() -> None:
    shared = [n for n in dir(Memory) if not n.startswith("_") and n in dir(Client)]
    assert len(shared) >= 19
    for name in shared:
        if name in ("close",):
            continue
        expected = _params(getattr(Memory, name))
        for door in (Client, AsyncClient, AsyncMemory):
            assert _params(getattr(door, name)) == expected, (door, name)


def _params(method: Any) -> list[tuple[str, Any, Any]]:
    """Names, kinds and defaults (annotations may be spelled differently)."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(method).parameters.values()]


def test_async_memory_does_not_block_the_event_loop(tmp_path, llm_server, hashing) -> None:
    memory = service_memory(tmp_path / "store", llm_server, hashing)
    real_add = memory.add
    memory.add = lambda *a, **k: (time.sleep(0.3), real_add(*a, **k))[1]  # type: ignore[method-assign]

    async def main() -> tuple[int, AddResult]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        async with AsyncMemory(memory=memory) as m:
            result = await m.add("slow note", user_id="alice", infer=False)
        task.cancel()
        return ticks, result

    ticks, result = asyncio.run(main())
    assert result.facts[0].text == "slow note"
    assert ticks >= 10  # the loop kept running while the add slept on its worker thread
