"""The Neo4j store under conditions operators meet: a server that is not there, a URL or
password that is wrong, a database that does not exist, a write larger than the server lets
one transaction be. Each is one clear line (StoreError) naming what to check, never the
password, at once; and the store works on once the condition is gone. This module's own
server carries the limits (they would hurt the shared one's tests), and takes its wrong
logins (Neo4j locks the user out for 5 s after 3)."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mem0g import Memory
from mem0g.config import GraphStoreConfig
from mem0g.stores.base import StoreError
from mem0g.stores.neo4j import Neo4jGraphStore
from mem0g.testing.neo4j import Neo4jServer, free_port, start_maven_server
from mem0g.types import Tenant

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


@pytest.mark.neo4j
def test_a_user_too_large_for_one_transaction_is_still_deleted(
    limited: Neo4jServer, caplog: pytest.LogCaptureFixture
) -> None:
    """`delete_all` of a user whose deletion needs more than the server lets one transaction
    have: the one transaction is refused (at its commit, which the driver retried for 30 s),
    so the user is deleted in batches small enough (a quarter each time one is refused),
    at once, and the kept counts stay true."""
    with Memory(_config(limited)) as memory:
        memory.add("erin keeps goats", user_id="erin", infer=False)
        for part in range(40):
            many = [{"role": "user", "content": f"dora keeps bee {part}-{i} in hive {i}"}
                    for i in range(50)]  # fmt: skip
            memory.add(many, user_id="dora", infer=False)
        assert memory.stats(user_id="dora").facts == 2000
        store = memory.store
        assert isinstance(store, Neo4jGraphStore)
        deleted: list[int] = []
        real = store.delete_tenant

        def delete_tenant(scope: Any) -> int:
            deleted.append(real(scope))
            return deleted[-1]

        store.delete_tenant = delete_tenant  # type: ignore[method-assign]
        with caplog.at_level(logging.WARNING, logger="neo4j"):
            memory.delete_all(user_id="dora")
        assert "will be retried" not in caplog.text  # refused once, not five times
        assert deleted, "delete_all did not reach the store"
        assert memory.stats(user_id="dora").facts == 0
        assert memory.stats(user_id="dora").episodes == 0
        erin = store.facts(Tenant(user_id="erin"))
        assert [f.text for f in erin] == ["erin keeps goats"]
        assert store.fact_vector_sum(Tenant(user_id="dora")) is None  # kept sums follow
        memory.add("dora keeps bees again", user_id="dora", infer=False)  # works on
        assert memory.stats(user_id="dora").facts == 1


@pytest.mark.neo4j
def test_reset_of_a_store_too_large_for_one_batch_takes_smaller_batches(
    limited: Neo4jServer,
) -> None:
    """`reset` deletes in batches of `reset_batch` rows; a batch the server refuses for its
    memory is taken again a quarter the size, so the store is emptied all the same."""
    with Memory(_config(limited)) as memory:
        for part in range(40):
            many = [{"role": "user", "content": f"carol keeps bee {part}-{i} in hive {i}"}
                    for i in range(50)]  # fmt: skip
            memory.add(many, user_id="carol", infer=False)
        assert memory.stats(user_id="carol").facts == 2000
        memory.reset()
        assert memory.stats().facts == 0 and memory.stats().episodes == 0
        memory.add("carol keeps bees again", user_id="carol", infer=False)  # works on
        assert memory.stats().facts == 1


def _refusal(store: Neo4jGraphStore) -> str:
    """The one line a first use of `store` fails with, at once."""
    began = time.monotonic()
    with pytest.raises(StoreError) as failed:
        store.stats()
    assert time.monotonic() - began < 10
    message = str(failed.value)
    assert "\n" not in message, message
    return message


@pytest.mark.parametrize("scheme", ["bolt", "neo4j", "bolt+s", "neo4j+ssc"])
def test_a_server_that_is_not_there_is_named_in_one_line(scheme: str) -> None:
    url = f"{scheme}://127.0.0.1:{free_port()}"  # nothing listens there
    with Neo4jGraphStore(url, ("neo4j", "some-password")) as store:
        message = _refusal(store)
    assert f"cannot reach Neo4j at {url}" in message, message
    assert "some-password" not in message


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:7474",  # the HTTP port: the driver's preview, which needs aiohttp
        "127.0.0.1:7687",  # no scheme
        "bolt//127.0.0.1:7687",
        "bolt://neo4j:hunter2-secret@127.0.0.1:7687",  # the password written into the URL
    ],
)
def test_a_url_the_store_cannot_use_is_refused_at_open_without_the_password(url: str) -> None:
    """Not a raw ConfigurationError or ModuleNotFoundError, and not the driver's message,
    which repeats a URL's user info (its password) word for word."""
    config = {
        "graph_store": {"provider": "neo4j", "url": url, "password": "hunter2-secret"},
        "embedder": {"provider": "hashing"},
    }
    with pytest.raises(StoreError, match=r"graph_store\.url") as refused:
        Memory(config)
    message = str(refused.value)
    assert "hunter2-secret" not in message and "\n" not in message, message


@pytest.mark.neo4j
def test_wrong_password_wrong_database_and_tls_against_a_plain_server_are_named(
    limited: Neo4jServer,
) -> None:
    url = limited.uri
    wrong = _refusal(Neo4jGraphStore(url, (limited.user, "not-the-password")))
    assert f"Neo4j at {url} refused the login of user 'neo4j'" in wrong, wrong
    assert "not-the-password" not in wrong
    missing = _refusal(Neo4jGraphStore(url, (limited.user, limited.password), database="mem"))
    assert f"Neo4j at {url} has no database 'mem'" in missing, missing
    tls = url.replace("bolt://", "bolt+s://")
    secure = _refusal(Neo4jGraphStore(tls, (limited.user, limited.password)))
    assert f"cannot reach Neo4j at {tls}" in secure and "TLS" in secure, secure
    with Neo4jGraphStore(url, (limited.user, limited.password)) as store:
        assert store.stats().entities == 0  # the right settings work, and one wrong login
        # did not lock the user out (three in a row would, for 5 s)


def test_a_server_that_accepts_but_never_answers_fails_within_the_connect_timeout() -> None:
    """A hung server (or a proxy in front of none) takes the TCP connection and never
    sends the Bolt handshake: each call waited the driver's 60 s; graph_store.connect_timeout
    bounds it."""
    with socket.socket() as mute:
        mute.bind(("127.0.0.1", 0))
        mute.listen(8)  # accepted by the kernel, never answered
        url = f"bolt://127.0.0.1:{mute.getsockname()[1]}"
        config = GraphStoreConfig(provider="neo4j", url=url, password="x", connect_timeout=2)
        with Neo4jGraphStore.from_config(config) as store:
            began = time.monotonic()
            with pytest.raises(StoreError, match=f"cannot reach Neo4j at {url}"):
                store.stats()
            assert time.monotonic() - began < 10
