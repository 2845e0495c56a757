"""The Neo4j store's background warm-up (mem0g/stores/neo4j_warmup.py): it reads every
search and add read statement against a reserved empty tenant, ends by itself, writes nothing,
and a failure leaves the store usable."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mem0g import Memory
from mem0g.config import EmbedderConfig
from mem0g.embed import make_embedder
from mem0g.stores.base import StoreError
from mem0g.stores.neo4j import Neo4jGraphStore, parse_statements
from mem0g.stores.neo4j.warmup import (
    MIN_ROUNDS,
    WARMUP_USER,
    Warmup,
    _settled,
    warmup_params,
    warmup_statements,
)

SEARCH_READS = {
    "find_entities", "edges_at", "sibling_edges", "get_relations", "tenant_version",
    "similar_entities_scan", "similar_relations_index", "similar_relations_scan",
    "similar_facts_index", "similar_facts_scan", "recent_episodes", "get_summary",
    "lexical_facts", "lexical_relations",
}  # fmt: skip


def test_only_read_statements_with_known_parameters_are_chosen() -> None:
    files = {
        "read": parse_statements(
            "// name: fine\nMATCH (n {user_id: $user_id}) RETURN n\n"
            "// name: writes\nMATCH (n {user_id: $user_id}) SET n.x = 1\n"
            "// name: unknown\nMATCH (n {x: $no_such_parameter}) RETURN n\n"
            "// name: vector\nRETURN $vector AS v\n"
        ),
        "write": parse_statements("// name: elsewhere\nMATCH (n) RETURN n\n"),
    }
    assert warmup_statements(files, warmup_params(4)) == ["fine", "vector"]
    assert warmup_statements(files, warmup_params(None)) == ["fine"]  # no dims, no vectors


def test_warm_when_rounds_stop_getting_faster() -> None:
    assert not _settled([1.0] * (MIN_ROUNDS - 1))
    assert _settled([3.0, 2.0, *([1.0] * MIN_ROUNDS)])
    assert not _settled([*([1.0] * MIN_ROUNDS), 3.0, 3.0, 3.0])  # slower again: not yet


def test_a_failing_read_ends_the_warmup_and_is_reported() -> None:
    calls: list[str] = []

    def read(name: str, params: dict[str, Any]) -> list[Any]:
        calls.append(name)
        if len(calls) == 3:
            raise StoreError("read x failed: the server went away")
        return []

    warmup = Warmup(read, lambda: (["a", "b"], {}), budget=10)
    warmup.start()
    warmup.join(10)
    assert warmup.status.state == "failed" and "went away" in (warmup.status.error or "")
    assert len(calls) == 3  # it stopped at the failure


@pytest.mark.neo4j
def test_warmup_reads_everything_writes_nothing_and_ends(
    neo4j_connect: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = make_embedder(EmbedderConfig(provider="hashing"))
    store: Neo4jGraphStore = neo4j_connect(dims=embedder.dims)  # an earlier test's dims go
    with Memory({"memory": {"graph": False}}, embedder=embedder, store=store) as memory:
        for user in ("alice", "bob"):  # other tenants' data is present
            memory.add(f"{user} keeps bees", user_id=user, infer=False)
            memory.add(f"{user} likes jazz", user_id=user, infer=False)

        def census() -> tuple[Any, ...]:
            rows = store._read_tx("census", lambda tx: tx.run(
                "MATCH (n) OPTIONAL MATCH (n)-[r]->() "
                "RETURN count(DISTINCT n) AS nodes, count(r) AS rels, "
                "sum(size(keys(n))) AS props").single().values())  # fmt: skip
            return tuple(rows)

        before = census()
        read: list[str] = []
        real = store._read

        def spy(name: str, params: dict[str, Any]) -> Any:
            if threading.current_thread().name == "mem0g-neo4j-warmup":
                read.append(name)
                assert params.get("user_id") == WARMUP_USER  # only the reserved tenant
            return real(name, params)

        monkeypatch.setattr(store, "_read", spy)
        searching = threading.Thread(
            target=lambda: memory.search("bees", user_id="alice")  # searches work meanwhile
        )
        warmup = store.start_warmup(budget=60)
        searching.start()
        warmup.join(90)
        searching.join(60)
        status = store.warmup_status
        assert status.state == "done", status
        assert status.rounds >= 1 and status.seconds < 60
        assert set(read) >= SEARCH_READS, SEARCH_READS - set(read)
        assert census() == before
        assert memory.stats().warmup == status  # Memory.stats reports it
        hits = memory.search("bees", user_id="alice")
        assert [f.text for f in hits.facts][:1] == ["alice keeps bees"]


@pytest.mark.neo4j
def test_a_store_from_config_warms_in_the_background_and_close_stops_it(
    neo4j_server: Any, neo4j_connect: Any
) -> None:
    neo4j_connect().close()  # emptied
    config = {
        "graph_store": {
            "provider": "neo4j", "url": neo4j_server.uri, "username": neo4j_server.user,
            "password": neo4j_server.password, "warmup_seconds": 30,
        },
        "embedder": {"provider": "hashing"},
    }  # fmt: skip
    memory = Memory(config)
    assert memory.store.warmup_status.state in ("waiting", "running", "done")
    assert memory.stats().entities == 0  # opening did not wait for it
    memory.close()
    assert memory.store.warmup_status.state in ("done", "failed", "running")
    off = Memory({**config, "graph_store": {**config["graph_store"], "warmup": False}})
    assert off.store.warmup_status.state == "off" and off.stats().warmup is None
    off.close()
