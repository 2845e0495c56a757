"""The Neo4j store against a server whose operator set limits (its own server: the settings
would hurt the shared one's tests): a write larger than the server lets one transaction be
fails at once, clearly, with nothing written, and the store works on."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from mem0g import Memory
from mem0g.stores.base import StoreError
from mem0g.testing.neo4j import Neo4jServer, start_maven_server

# a short-lived JVM: the C1 JIT alone (see tests/test_neo4j_server.py)
SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1"
TRANSACTION_MAX = "2m"


@pytest.fixture(scope="module")
def limited() -> Iterator[Neo4jServer]:
    server = start_maven_server(
        settings=[f"db.memory.transaction.max={TRANSACTION_MAX}"], java_opts=SHORT_LIVED_JVM
    )
    try:
        yield server
    finally:
        server.stop()


def _config(server: Neo4jServer) -> dict[str, Any]:
    return {
        "graph_store": {"provider": "neo4j", "url": server.uri, "username": server.user,
                        "password": server.password, "warmup": False},
        "embedder": {"provider": "hashing"},
        "memory": {"graph": False, "summary": False},
    }  # fmt: skip


@pytest.mark.neo4j
def test_an_add_over_the_transaction_memory_limit_fails_at_once_and_writes_nothing(
    limited: Neo4jServer,
) -> None:
    """The server refuses the transaction with a *transient* error code
    (MemoryPoolOutOfMemoryError), which the driver retried with back-off for ~40 s, to fail
    the same way each time: the limit is the operator's setting, not a passing state."""
    with Memory(_config(limited)) as memory:
        memory.add("alice keeps bees", user_id="alice", infer=False)
        before = memory.stats()
        many = [{"role": "user", "content": f"alice keeps bee {i} in hive {i * 7}"}
                for i in range(400)]  # fmt: skip
        began = time.monotonic()
        with pytest.raises(StoreError) as refused:
            memory.add(many, user_id="alice", infer=False)
        took = time.monotonic() - began
        message = str(refused.value)
        assert "db.memory.transaction.max" in message and "nothing was written" in message
        assert "\n" not in message
        assert took < 15, f"retried for {took:.0f} s"
        assert memory.stats() == before  # all or nothing
        memory.add("alice keeps goats", user_id="alice", infer=False)  # works on
        assert memory.stats().facts == before.facts + 1
