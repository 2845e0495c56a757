"""Costs that stay linear (issue #14, item 4), proved by counting work, never by timing: the
names of one add are compared with a bounded number of candidates each (the add's own new
entities are indexed by key and by vector, as a store indexes its entities), and a search of
one tenant does the same work however many other tenants the embedded store holds. The LLM is
the scripted TEST DOUBLE server; embeddings the hashing embedder."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from mem0g import Memory
from mem0g.resolve import entities as resolution
from mem0g.testing import ScriptedLLMServer


def _names_add(n: int) -> list[dict[str, Any]]:
    """One add whose extraction names n new people, each linked to the first."""
    names = [f"Person{i:05d} Surname{i:05d}" for i in range(n)]
    return [
        {"task": "extract_entities",
         "response": {"entities": [{"name": x, "type": "person"} for x in names]}},
        {"task": "establish_relations",
         "response": {"relations": [{"source": names[0], "relation": "knows", "destination": x}
                                    for x in names[1:]]}},
        {"task": "resolve_updates", "response": {"operations": []}},
    ]  # fmt: skip


def _config(server: ScriptedLLMServer, path: Path, **limits: int) -> dict[str, Any]:
    return {
        "llm": {"base_url": server.base_url, "api_key": "test", "max_retries": 0},
        "embedder": {"provider": "hashing"},
        "graph_store": {"provider": "embedded", "path": str(path)},
        "memory": {"facts": False, "summary": False, "recent_messages": 0},
        "limits": limits,
    }


@pytest.mark.parametrize("n", [40, 320])
def test_each_new_name_of_an_add_meets_a_bounded_number_of_candidates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, n: int
) -> None:
    """N new names in one answer: every name is judged against at most the k nearest and the
    same-key entities of the store and of the batch, so the comparisons grow as N, not N x N
    (all pairs: 51,040 at N = 320; measured 57.6 s for N = 1,000 before the batch index)."""
    judged: list[int] = []
    real = resolution.judge

    def counting(name: str, type_: str | None, candidates: Sequence[Any], *rest: Any) -> Any:
        judged.append(len(candidates))
        return real(name, type_, candidates, *rest)

    monkeypatch.setattr(resolution, "judge", counting)
    with ScriptedLLMServer(_names_add(n)) as server:
        config = _config(server, tmp_path / "store", max_names=n, max_relations=n)
        with Memory(config) as memory:
            result = memory.add("a long conversation", user_id="u", timestamp="2024-01-01")
            k = memory.config.resolver.candidates
    assert len(result.entities) == n
    assert len(judged) == n
    assert max(judged) <= 2 * k + 2  # the store's k and the batch's k, plus same-key ones
    assert sum(judged) <= n * (2 * k + 2)


def _calls(work: Callable[[], object]) -> int:
    """Python function calls made by `work` (a count of work done, not a time)."""
    count = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event == "call":
            count += 1

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize("words", ["shared", "own"])
def test_a_search_does_the_same_work_beside_20_or_600_tenants(tmp_path: Path, words: str) -> None:
    """A one-fact tenant's search (vectors, BM25, links, the walk), repeated, costs the same
    Python calls with 20 or 600 other tenants in the store, whether the searched words are
    in every tenant's fact or only in its own. (The SQLite side: test_lexical.py counts
    FTS5's steps; issue #14 measured a growing scan: 0.3 ms at 10 tenants, 346 ms at 20k.)"""
    with ScriptedLLMServer() as server:
        config = _config(server, tmp_path / "store")
        config["memory"]["facts"] = True
        with Memory(config) as memory:

            def tenants(first: int, last: int) -> None:
                for i in range(first, last):
                    memory.add(f"tenant {i} keeps locker code {i} near {_word(i)}",
                               user_id=f"user-{i}", infer=False)  # fmt: skip

            def search() -> None:
                query = "locker code" if words == "shared" else _word(7)
                assert len(memory.search(query, user_id="user-7").facts) == 1

            tenants(0, 20)
            search()  # the query's vector and terms, once
            few = _calls(search)
            tenants(20, 600)
            search()
            many = _calls(search)
    assert many <= few * 1.05 + 20, (few, many)


def _word(i: int) -> str:
    """A letters-only word no other tenant's fact holds."""
    return "qu" + "".join("bcdfghjklmnpqrstvwxz"[int(d)] for d in str(i))
