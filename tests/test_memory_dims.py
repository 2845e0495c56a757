"""A Memory given a store written with another embedding size says so when it is made,
before any LLM call, and leaves the store as it was (both stores)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from mem0g import Memory
from mem0g.stores import GraphStore

FACTS_ONLY = {"memory": {"graph": False}}


def _memory(dims: int, store: GraphStore) -> Memory:
    return Memory({"embedder": {"provider": "hashing", "dims": dims}, **FACTS_ONLY}, store=store)


def test_a_store_of_other_dims_is_refused_at_construction(
    open_store: Callable[..., GraphStore],
) -> None:
    first = _memory(64, open_store(dims=64))
    first.add("Alice lives in Paris", user_id="u", infer=False)
    before = first.get_all(user_id="u")
    first.close()

    reopened = open_store(dims=64)
    with pytest.raises(ValueError, match=r"64-dimensional.*32-dimensional"):
        _memory(32, reopened)

    same = _memory(64, reopened)  # the matching embedder still opens it, with nothing lost
    assert same.get_all(user_id="u") == before
    same.close()
