"""Several writer processes on one store, as several app workers on one database: each plans
against what it read, the store refuses a plan whose tenant changed meanwhile, and the add is
planned again. With a slow LLM (the scripted TEST DOUBLE server, every answer delayed) four
processes adding the same overlapping facts end with each entity, edge and fact exactly once."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mem0g import Memory
from mem0g.testing import ScriptedLLMServer
from mem0g.testing.script import add_everything, turn
from mem0g.types import Tenant

WRITER = Path(__file__).with_name("concurrent_writer.py")
TEXTS = {
    "I live in Paris": (
        [("Alice", "person"), ("Paris", "city")],
        [("Alice", "lives_in", "Paris")],
        "Alice lives in Paris",
    ),
    "I work at Acme": (
        [("Alice", "person"), ("Acme", "organization")],
        [("Alice", "works_at", "Acme")],
        "Alice works at Acme",
    ),
    "My friend Bob Chen plays chess": (
        [("Alice", "person"), ("Bob Chen", "person"), ("chess", "hobby")],
        [("Alice", "is_friend_of", "Bob Chen"), ("Bob Chen", "plays", "chess")],
        "Bob Chen, a friend of Alice, plays chess",
    ),
}
DELAY = 0.25  # seconds per LLM answer: long enough for the writers' plans to overlap


def _slow(rule: dict[str, Any]) -> dict[str, Any]:
    answer = rule["response"]

    def respond(payload: dict[str, Any]) -> Any:
        time.sleep(DELAY)
        return answer

    return {**rule, "response": respond}


def _rules() -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for text, (entities, relations, fact) in TEXTS.items():
        rules += [_slow(r) for r in turn(text, entities, relations)]
        rules.append(
            _slow(
                {
                    "task": "extract_facts",
                    "match": {"messages": text},
                    "response": {"facts": [fact]},
                }
            )
        )
    rules.append(_slow({"task": "update_memory", "response": {"operations": []}}))
    rules.append(_slow(add_everything()))
    return rules


def _run_writers(config: dict[str, Any], writers: int) -> list[list[dict[str, Any]]]:
    texts = list(TEXTS)
    procs = []
    for i in range(writers):
        order = texts[i % len(texts) :] + texts[: i % len(texts)]  # every order, overlapping
        arg = json.dumps([config, order, 1 + 3 * i])
        procs.append(
            subprocess.Popen(
                [sys.executable, str(WRITER), arg],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        outputs.append([json.loads(line) for line in out.splitlines() if line.startswith("{")])
    return outputs


def _graph_store(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> dict[str, Any]:
    """The shared store of the writers: a file, or the test server emptied first."""
    if store_kind != "neo4j":
        return {"provider": "embedded", "path": str(tmp_path / "graph")}
    server = request.getfixturevalue("neo4j_server")
    request.getfixturevalue("neo4j_connect")  # empties the database
    return {"provider": "neo4j", "url": server.uri, "username": server.user,
            "password": server.password}  # fmt: skip


@pytest.mark.parametrize("store_kind", ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_writer_processes_create_each_thing_once(
    store_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    graph_store = _graph_store(store_kind, tmp_path, request)
    writers = 4
    with ScriptedLLMServer(_rules()) as llm:
        config = {
            "llm": {"base_url": llm.base_url, "api_key": "test", "max_retries": 0},
            "embedder": {"provider": "hashing"},
            "graph_store": graph_store,
            "memory": {"summary": False},
        }
        outputs = _run_writers(config, writers)
        calls = Counter(r.task for r in llm.requests)
    assert sum(len(o) for o in outputs) == writers * len(TEXTS)
    with Memory({**config, "llm": {"base_url": "http://127.0.0.1:9", "api_key": "x"}}) as m:
        everything = m.get_all(user_id="alice", include_invalid=True)
        names = Counter(e.name for e in everything.entities)
        assert names == Counter(["Alice", "Paris", "Acme", "Bob Chen", "chess"])
        edges = Counter((r.source, r.relation, r.destination) for r in everything.relations)
        assert edges == Counter(
            [
                ("Alice", "lives_in", "Paris"),
                ("Alice", "works_at", "Acme"),
                ("Alice", "is_friend_of", "Bob Chen"),
                ("Bob Chen", "plays", "chess"),
            ]
        )
        assert all(r.invalid_at is None for r in everything.relations)
        # every writer's mention reached the one edge (a NOOP for all but the first)
        assert {r.mentions for r in everything.relations} == {writers}
        assert sorted(f.text for f in everything.facts) == sorted(f for *_, f in TEXTS.values())
        assert m.stats(user_id="alice").episodes == writers * len(TEXTS)
        assert len(m.store.episodes(Tenant(user_id="alice"))) == writers * len(TEXTS)
    # re-plans reuse the LLM's answers: extraction is asked once per add, never again
    assert calls["extract_entities"] == writers * len(TEXTS)
    assert calls["extract_facts"] == writers * len(TEXTS)


@pytest.mark.parametrize("store_kind", ["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def test_a_write_between_plan_and_commit_is_planned_again_with_the_same_answers(
    store_kind: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Deterministic: while one add waits for its second LLM answer, another `Memory` on the
    same store adds the same fact. The first add's plan (two new entities, one new edge) is
    refused at commit (the tenant's version moved), planned again from fresh reads, and ends
    as a mention of the other's edge; the LLM answers it had are reused, not asked again."""
    graph_store = _graph_store(store_kind, tmp_path, request)
    entities, relations, _ = TEXTS["I live in Paris"]
    rules = turn("I live in Paris", entities, relations)
    extract, establish = rules[0], rules[1]
    other: list[Memory] = []
    config: dict[str, Any] = {}

    def meanwhile(payload: dict[str, Any]) -> Any:
        if not other:  # the first add's second call: the other writer adds and commits now
            other.append(Memory(config))
            other[0].add("I live in Paris", user_id="alice", timestamp="2024-01-02T10:00:00")
        return establish["response"]

    with ScriptedLLMServer(
        [extract, {**establish, "response": meanwhile}, add_everything()]
    ) as llm:
        config.update({
            "llm": {"base_url": llm.base_url, "api_key": "test", "max_retries": 0},
            "embedder": {"provider": "hashing"},
            "graph_store": graph_store,
            "memory": {"summary": False, "facts": False},
        })  # fmt: skip
        with Memory(config) as first, caplog.at_level(logging.INFO, logger="mem0g"):
            result = first.add("I live in Paris", user_id="alice", timestamp="2024-01-01T10:00:00")
            everything = first.get_all(user_id="alice", include_invalid=True)
        other[0].close()
        calls = Counter(r.task for r in llm.requests)
    assert [(c.event.value, c.source, c.destination) for c in result.relations] == [
        ("NOOP", "Alice", "Paris")
    ]
    assert sorted(e.name for e in everything.entities) == ["Alice", "Paris"]
    (edge,) = everything.relations
    assert (edge.source, edge.relation, edge.destination, edge.mentions) == (
        "Alice", "lives_in", "Paris", 2
    )  # fmt: skip
    replans = [r for r in caplog.records if "planning again" in r.getMessage()]
    assert len(replans) == 1  # refused once at commit, then planned again
    # each add asked extraction and relations once: the re-plan reused the first add's answers
    assert calls["extract_entities"] == calls["establish_relations"] == 2
