"""The ready-to-paste Neo4j Browser queries (cypher/browser/*.cypher) on a real server.

A small graph is built once per module through `Memory` on Neo4j, its LLM the scripted TEST
DOUBLE server (no live model): Maya moves from London to Paris (a contradiction: the London edge
is invalidated, kept as history), repeats that she works at Northwind Labs (a second mention),
and goes from vegetarian to vegan (a fact UPDATE); her London fact is DELETEd. Bob, another
tenant, also lives in London. Every file is then run the way the Browser runs it: its `:param`
lines are evaluated by the server (`:param x => expr` is `RETURN expr`), and the query (the
file without its comments and `:param` lines) runs with those parameters.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import neo4j
import pytest

from mem0g import Memory
from mem0g.embed import CachedEmbedder
from mem0g.stores.neo4j import Neo4jGraphStore
from mem0g.testing import ScriptedLLMServer
from mem0g.testing.script import turn

pytestmark = pytest.mark.neo4j

BROWSER_DIR = Path(__file__).resolve().parents[1] / "cypher" / "browser"
PARAM_LINE = re.compile(r":param\s+([A-Za-z_][A-Za-z0-9_]*)\s*=>\s*(.+?)\s*;\s*")
UTC = timezone.utc

T1 = "2023-03-14T19:05:00+00:00"
T2 = "2023-11-08T18:45:00+00:00"
T3 = "2024-01-20T11:00:00+00:00"
MOVED = datetime(2023, 10, 1, tzinfo=UTC)  # the Paris edge's valid_from: London's invalid_at

MAYA_1 = "I live in London and I work at Northwind Labs."
MAYA_2 = "I moved to Paris last month. Still at Northwind Labs, of course."
MAYA_3 = "New year, new me: I went fully vegan."
BOB_1 = "Bob here: London is home."


def _facts(contains: str, facts: list[str]) -> dict[str, Any]:
    return {"task": "extract_facts", "match": {"messages": contains}, "response": {"facts": facts}}


def _update(contains: str, operations: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "task": "update_memory",
        "match": {"contains": contains},
        "times": 1,
        "response": {"operations": operations},
    }


RULES: list[dict[str, Any]] = [
    *turn(
        "I live in London and I work at Northwind",
        [("Maya", "person"), ("London", "city"), ("Northwind Labs", "organization")],
        [("Maya", "lives_in", "London"), ("Maya", "works_at", "Northwind Labs")],
    ),
    _facts("I live in London and I work", ["Maya lives in London", "Maya is vegetarian"]),
    # the contradiction: e1 is the existing edge most like "Maya lives_in Paris" (London)
    *turn(
        "I moved to Paris",
        [("Maya", "person"), ("Paris", "city"), ("Northwind Labs", "organization")],
        [("Maya", "lives_in", "Paris", "2023-10-01"), ("Maya", "works_at", "Northwind Labs")],
        [("INVALIDATE", 0, "e1")],
    ),
    _facts("I moved to Paris", ["Maya lives in Paris"]),
    _update(
        "Maya lives in Paris",
        [{"op": "DELETE", "new_index": 0, "existing_id": "m1"}, {"op": "ADD", "new_index": 0}],
    ),
    *turn("I went fully vegan", [("Maya", "person")], []),
    _facts("I went fully vegan", ["Maya is vegan"]),
    _update(
        "Maya is vegan",
        [{"op": "UPDATE", "new_index": 0, "existing_id": "m1", "text": "Maya is vegan"}],
    ),
    *turn(
        "London is home", [("Bob", "person"), ("London", "city")], [("Bob", "lives_in", "London")]
    ),
    _facts("London is home", ["Bob lives in London"]),
]


# ---------------------------------------------------------------- the files, as the Browser reads


@dataclass
class BrowserQuery:
    path: Path
    params: dict[str, str]  # name -> the Cypher expression of its `:param` line
    query: str

    @property
    def used(self) -> set[str]:
        return set(re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*)", self.query))


def parse_browser_file(path: Path) -> BrowserQuery:
    """`:param` lines and comments out, the rest is the one query (its closing `;` dropped)."""
    params: dict[str, str] = {}
    body: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith(":param"):
            match = PARAM_LINE.fullmatch(stripped)
            assert match, f"{path.name}: not a `:param name => value;` line: {line!r}"
            assert match.group(1) not in params, f"{path.name}: {match.group(1)} set twice"
            params[match.group(1)] = match.group(2)
        elif stripped.startswith(":"):
            pytest.fail(f"{path.name}: unexpected Browser command {line!r}")
        elif not stripped.startswith("//"):
            body.append(line)
    query = "\n".join(body).strip()
    assert query.endswith(";"), f"{path.name}: the query should end with ';'"
    query = query[:-1].rstrip()
    assert ";" not in query, f"{path.name}: one query per file"
    return BrowserQuery(path, params, query)


ALL_FILES = sorted(p.name for p in BROWSER_DIR.glob("*.cypher"))


# ---------------------------------------------------------------- the graph


@dataclass
class Graph:
    driver: neo4j.Driver
    episodes: dict[str, str] = field(default_factory=dict)  # turn name -> episode id
    edges: dict[tuple[str, str, str], str] = field(default_factory=dict)  # triple -> edge id

    def params(self, browser_query: BrowserQuery) -> dict[str, Any]:
        """What the Browser's `:param name => expr` does: the server evaluates `expr`."""
        values = {}
        with self.driver.session() as session:
            for name, expression in browser_query.params.items():
                values[name] = session.run(f"RETURN {expression} AS value").single()["value"]
        return values

    def run_records(self, file: str, /, **overrides: Any) -> list[neo4j.Record]:
        """Run a file with its own parameters; `overrides` change declared ones only."""
        browser_query = parse_browser_file(BROWSER_DIR / file)
        assert set(overrides) <= set(browser_query.params), "overrides must be declared"
        params = {**self.params(browser_query), **overrides}
        with self.driver.session() as session:
            return list(session.run(browser_query.query, params))

    def run(self, file: str, /, **overrides: Any) -> list[dict[str, Any]]:
        return [record.data() for record in self.run_records(file, **overrides)]


@pytest.fixture(scope="module")
def graph(neo4j_server: Any, minilm: CachedEmbedder) -> Iterator[Graph]:
    auth = (neo4j_server.user, neo4j_server.password)
    store = Neo4jGraphStore(neo4j_server.uri, auth)
    store.reset()  # Community has one database: start from an empty mem0g graph
    store.close()
    with ScriptedLLMServer(RULES) as llm_server:
        config = {
            "llm": {"base_url": llm_server.base_url, "api_key": "test", "max_retries": 1},
            "graph_store": {
                "provider": "neo4j",
                "url": neo4j_server.uri,
                "username": neo4j_server.user,
                "password": neo4j_server.password,
            },
            "memory": {"facts": True, "graph": True, "summary": False},
        }
        with Memory(config, embedder=minilm) as memory:
            results = {
                "maya-1": memory.add(MAYA_1, user_id="maya", timestamp=T1),
                "maya-2": memory.add(MAYA_2, user_id="maya", timestamp=T2),
                "maya-3": memory.add(MAYA_3, user_id="maya", timestamp=T3),
                "bob-1": memory.add(BOB_1, user_id="bob", timestamp=T1),
            }
            snapshot = memory.get_all(user_id="maya", include_invalid=True)
        assert not llm_server.unmatched, "every LLM request had a scripted answer"
    events = {
        (c.event.value, c.source, c.relation, c.destination) for c in results["maya-2"].relations
    }
    assert ("INVALIDATE", "Maya", "lives_in", "London") in events  # the history to look at
    assert ("NOOP", "Maya", "works_at", "Northwind Labs") in events  # a second mention
    assert [(f.event, f.text) for f in results["maya-3"].facts] == [("UPDATE", "Maya is vegan")]
    driver = neo4j.GraphDatabase.driver(neo4j_server.uri, auth=auth)
    yield Graph(
        driver=driver,
        episodes={name: result.episode_id for name, result in results.items()},
        edges={(r.source, r.relation, r.destination): r.id for r in snapshot.relations},
    )
    driver.close()


def _utc(value: Any) -> datetime | None:
    """A driver DateTime as an aware datetime in UTC."""
    return None if value is None else value.to_native().astimezone(UTC)


def _triples(records: list[neo4j.Record]) -> set[tuple[str, str, str]]:
    out = set()
    for record in records:
        path = record["p"]
        (rel,) = path.relationships
        out.add((rel.start_node["name"], rel["name"], rel.end_node["name"]))
    return out


# ---------------------------------------------------------------- the files themselves


@pytest.mark.parametrize("name", ALL_FILES)
def test_every_file_is_one_query_with_declared_parameters(name: str) -> None:
    browser_query = parse_browser_file(BROWSER_DIR / name)
    assert browser_query.params, f"{name}: no `:param` lines"
    assert set(browser_query.params) == browser_query.used, (
        f"{name}: `:param` lines {sorted(browser_query.params)} "
        f"but the query uses {sorted(browser_query.used)}"
    )
    text = (BROWSER_DIR / name).read_text(encoding="utf-8")
    assert text.startswith("//"), f"{name}: should open with comments saying what it shows"


def test_every_file_is_covered() -> None:
    assert set(ALL_FILES) == set(CHECKS), "a cypher/browser file without a test (or vice versa)"


@pytest.mark.parametrize("name", ALL_FILES)
def test_every_file_runs_with_its_own_parameters(graph: Graph, name: str) -> None:
    CHECKS[name](graph)


# ---------------------------------------------------------------- one check per file


def check_tenant_graph(graph: Graph) -> None:
    records = graph.run_records("tenant-graph.cypher")
    # now: Paris, not the invalidated London edge, and nothing of Bob's
    works = ("Maya", "works_at", "Northwind Labs")
    assert _triples(records) == {("Maya", "lives_in", "Paris"), works}
    for record in records:
        (rel,) = record["p"].relationships
        assert rel["invalid_at"] is None and rel["user_id"] == "maya"
    # as it stood in June 2023 (before the move) and before anything was said
    june = datetime(2023, 6, 1, tzinfo=UTC)
    then = graph.run_records("tenant-graph.cypher", as_of=june)
    assert _triples(then) == {("Maya", "lives_in", "London"), works}
    assert graph.run_records("tenant-graph.cypher", as_of=datetime(2020, 1, 1, tzinfo=UTC)) == []
    # the other tenant, through the same parameters
    bob = graph.run_records("tenant-graph.cypher", user_id="bob")
    assert _triples(bob) == {("Bob", "lives_in", "London")}


def check_entity_history(graph: Graph) -> None:
    rows = graph.run("entity-history.cypher")  # name => 'Maya'
    by_destination = {row["destination"]: row for row in rows}
    assert {(r["source"], r["relation"], r["destination"]) for r in rows} == {
        ("Maya", "lives_in", "London"),
        ("Maya", "lives_in", "Paris"),
        ("Maya", "works_at", "Northwind Labs"),
    }
    london = by_destination["London"]
    assert london["status"] == "ended"
    assert _utc(london["invalid_at"]) == MOVED  # the history keeps when it stopped being true
    assert _utc(london["valid_from"]) == datetime.fromisoformat(T1)
    assert london["edge_id"] == graph.edges[("Maya", "lives_in", "London")]
    paris = by_destination["Paris"]
    assert paris["status"] == "current" and paris["invalid_at"] is None
    assert _utc(paris["valid_from"]) == MOVED
    assert by_destination["Northwind Labs"]["mentions"] == 2
    # oldest first: London and Northwind (2023-03) before Paris (2023-10)
    assert rows[-1]["destination"] == "Paris"
    # case-insensitive, and the destination side too; Bob's London is another tenant's
    assert graph.run("entity-history.cypher", name="mAYA") == rows
    london_rows = graph.run("entity-history.cypher", name="london")
    assert [(r["entity"], r["source"], r["status"]) for r in london_rows] == [
        ("London", "Maya", "ended")
    ]
    bob_rows = graph.run("entity-history.cypher", user_id="bob", name="LONDON")
    assert [(r["source"], r["status"]) for r in bob_rows] == [("Bob", "current")]
    assert graph.run("entity-history.cypher", name="Nobody") == []
    # aliases count as names (set here in a transaction that is rolled back)
    browser_query = parse_browser_file(BROWSER_DIR / "entity-history.cypher")
    params = {**graph.params(browser_query), "name": "maya lin"}
    with graph.driver.session() as session, session.begin_transaction() as tx:
        tx.run(
            "MATCH (e:Entity {user_id: $user_id, name: $name}) "
            "SET e.aliases = coalesce(e.aliases, []) + $alias",
            user_id="maya",
            name="Maya",
            alias="Maya Lin",
        )
        aliased = [record.data() for record in tx.run(browser_query.query, params)]
        tx.rollback()
    assert aliased == rows


def check_edge_provenance(graph: Graph) -> None:
    # the file's placeholder id matches nothing
    assert graph.run("edge-provenance.cypher") == []
    works = graph.edges[("Maya", "works_at", "Northwind Labs")]
    rows = graph.run("edge-provenance.cypher", edge_id=works)
    assert [row["mention"] for row in rows] == [1, 2]
    assert [row["episode_id"] for row in rows] == [
        graph.episodes["maya-1"],
        graph.episodes["maya-2"],
    ]
    assert [_utc(row["mentioned_at"]) for row in rows] == [
        datetime.fromisoformat(T1),
        datetime.fromisoformat(T2),
    ]
    assert [_utc(row["episode_time"]) for row in rows] == [
        datetime.fromisoformat(T1),
        datetime.fromisoformat(T2),
    ]
    assert {(r["source"], r["relation"], r["destination"]) for r in rows} == {
        ("Maya", "works_at", "Northwind Labs")
    }
    messages = [json.loads(row["messages"]) for row in rows]
    assert [m[0]["content"] for m in messages] == [MAYA_1, MAYA_2]
    assert messages[0][0]["role"] == "user"
    # the invalidated edge keeps its provenance
    london_id = graph.edges[("Maya", "lives_in", "London")]
    london = graph.run("edge-provenance.cypher", edge_id=london_id)
    assert [row["episode_id"] for row in london] == [graph.episodes["maya-1"]]


def check_recent_changes(graph: Graph) -> None:
    rows = graph.run("recent-changes.cypher")  # the last 30 days, at most 50
    changes = [(r["change"], r["source"], r["relation"], r["destination"]) for r in rows]
    assert sorted(changes) == sorted(
        [
            ("created", "Maya", "lives_in", "London"),
            ("created", "Maya", "works_at", "Northwind Labs"),
            ("created", "Maya", "lives_in", "Paris"),
            ("invalidated", "Maya", "lives_in", "London"),
        ]
    )
    # newest first: the second add's invalidation and creation come before the first add's
    assert {c for c in changes[:2]} == {
        ("invalidated", "Maya", "lives_in", "London"),
        ("created", "Maya", "lives_in", "Paris"),
    }
    times = [r["recorded_at"] for r in rows]
    assert times == sorted(times, reverse=True)
    invalidated = next(r for r in rows if r["change"] == "invalidated")
    assert _utc(invalidated["invalid_at"]) == MOVED
    assert invalidated["edge_id"] == graph.edges[("Maya", "lives_in", "London")]
    # the latest N, with no time window; and a window that holds nothing
    latest = graph.run("recent-changes.cypher", days=None, limit=2)
    assert latest == rows[:2]
    assert graph.run("recent-changes.cypher", days=0) == []
    assert [r["source"] for r in graph.run("recent-changes.cypher", user_id="bob")] == ["Bob"]


def check_tenant_facts(graph: Graph) -> None:
    rows = graph.run("tenant-facts.cypher")
    table = [(r["status"], r["text"], r["event"], r["old_text"], r["new_text"]) for r in rows]
    assert table == [
        # in the order they were learned; London is deleted but still listed with its history
        ("deleted", None, "ADD", None, "Maya lives in London"),
        ("deleted", None, "DELETE", "Maya lives in London", None),
        ("current", "Maya is vegan", "ADD", None, "Maya is vegetarian"),
        ("current", "Maya is vegan", "UPDATE", "Maya is vegetarian", "Maya is vegan"),
        ("current", "Maya lives in Paris", "ADD", None, "Maya lives in Paris"),
    ]
    said = {(r["event"], r["new_text"] or r["old_text"]): _utc(r["said_at"]) for r in rows}
    assert said[("DELETE", "Maya lives in London")] == datetime.fromisoformat(T2)
    assert said[("UPDATE", "Maya is vegan")] == datetime.fromisoformat(T3)
    assert len({r["fact_id"] for r in rows}) == 3
    assert [r["text"] for r in graph.run("tenant-facts.cypher", user_id="bob")] == [
        "Bob lives in London"
    ]


CHECKS = {
    "tenant-graph.cypher": check_tenant_graph,
    "entity-history.cypher": check_entity_history,
    "edge-provenance.cypher": check_edge_provenance,
    "recent-changes.cypher": check_recent_changes,
    "tenant-facts.cypher": check_tenant_facts,
}
