"""Every `mem0g` command through typer's CliRunner, on a temporary embedded store.

The LLM is `ScriptedLLMServer`, a TEST DOUBLE of an OpenAI-compatible API that answers from a
small fact table below (it is not an LLM); embeddings use the offline hashing embedder. Both
paths of an add run by default (graph and facts), as they do for users; the tests about one
path switch the other off with MEM0G_MEMORY__FACTS / MEM0G_MEMORY__GRAPH.
"""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from cli_runner import CliRunner
from click.testing import Result

from mem0g import Memory, __version__
from mem0g.archive import VERSION
from mem0g.cli import app
from mem0g.config import EmbedderConfig
from mem0g.embed import make_embedder
from mem0g.export import from_json
from mem0g.testing import ScriptedLLMServer

# sentence -> (source, type, relation, destination, type) that the test double "extracts"
FACTS: dict[str, tuple[str, str, str, str, str]] = {
    "Alice lives in Paris": ("Alice", "person", "lives_in", "Paris", "city"),
    "Alice moved to Berlin": ("Alice", "person", "lives_in", "Berlin", "city"),
    "Alice works at Acme": ("Alice", "person", "works_at", "Acme", "organization"),
    "Bob likes jazz": ("Bob", "person", "likes", "jazz", "genre"),
    "Carol plays chess": ("Carol", "person", "plays", "chess", "game"),
}


# what the fact extractor writes for a sentence, when not the sentence itself
FACT_TEXT = {"Alice moved to Berlin": "Alice lives in Berlin"}


def _facts(payload: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    text = " ".join(m["content"] for m in payload["messages"])  # the new messages only
    return [fact for sentence, fact in FACTS.items() if sentence in text]


def _topic(fact_text: str) -> tuple[str, str] | None:
    """(source, relation) of a fact text: two facts on one topic contradict each other."""
    for sentence, (src, _, relation, _, _) in FACTS.items():
        if FACT_TEXT.get(sentence, sentence) == fact_text:
            return src, relation
    return None


def _extract_facts(payload: dict[str, Any]) -> dict[str, Any]:
    text = " ".join(m["content"] for m in payload["messages"])
    return {"facts": [FACT_TEXT.get(s, s) for s in FACTS if s in text]}


def _update_memory(payload: dict[str, Any]) -> dict[str, Any]:
    """A new fact on a known topic replaces the old one (DELETE + ADD); else it is ADDed."""
    operations: list[dict[str, Any]] = []
    for new in payload["new"]:
        for old in payload["existing"]:
            if _topic(old["text"]) == _topic(new["text"]) is not None:
                operations.append(
                    {"op": "DELETE", "new_index": new["index"], "existing_id": old["id"]}
                )
        operations.append({"op": "ADD", "new_index": new["index"]})
    return {"operations": operations}


def _summarize(payload: dict[str, Any]) -> dict[str, Any]:
    return {"summary": f"A chat of {len(payload['messages'])} more messages (test double)."}


def _entities(payload: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, str] = {}
    for src, src_type, _, dst, dst_type in _facts(payload):
        found.setdefault(src, src_type)
        found.setdefault(dst, dst_type)
    return {"entities": [{"name": n, "type": t} for n, t in found.items()]}


def _relations(payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "relations": [
            {"source": s, "relation": r, "destination": d, "valid_from": None}
            for s, _, r, d, _ in _facts(payload)
        ]
    }


def _updates(payload: dict[str, Any]) -> dict[str, Any]:
    """Same source and relation, another destination: the new fact replaces the old one."""
    operations = []
    for new in payload["new"]:
        old = next(
            (
                e
                for e in payload["existing"]
                if (e["source"], e["relation"]) == (new["source"], new["relation"])
                and e["destination"] != new["destination"]
            ),
            None,
        )
        if old is None:
            operations.append({"op": "ADD", "new_index": new["index"]})
        else:
            operations.append({"op": "UPDATE", "new_index": new["index"], "existing_id": old["id"]})
    return {"operations": operations}


RULES: list[dict[str, Any]] = [
    {
        "task": "extract_entities",
        "match": {"contains": "boom"},
        "response": {"status": 400, "error": "scripted failure (test double)"},
    },
    {"task": "extract_entities", "response": _entities},
    {"task": "establish_relations", "response": _relations},
    {"task": "resolve_updates", "response": _updates},
    {"task": "extract_facts", "response": _extract_facts},
    {"task": "update_memory", "response": _update_memory},
    {"task": "summarize", "response": _summarize},
]


@pytest.fixture
def server() -> Iterator[ScriptedLLMServer]:
    """The TEST DOUBLE LLM server (scripted answers, not a real LLM)."""
    with ScriptedLLMServer(RULES) as srv:
        yield srv


class Cli:
    """Runs the app against one store directory with the test-double LLM configured."""

    def __init__(self, store: Path, env: dict[str, str | None]) -> None:
        self.store = store
        self.env = env
        self.runner = CliRunner(env=env)

    def __call__(self, *args: str, input: str | None = None) -> Result:
        # --path picks the embedded store: a Neo4j one is the env's alone
        neo4j = self.env.get("MEM0G_GRAPH_STORE__PROVIDER") == "neo4j"
        where = [] if neo4j else ["--path", str(self.store)]
        return self.runner.invoke(app, [*where, *args], input=input)

    def json(self, *args: str) -> Any:
        result = self(*args, "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    def stats(self, *args: str) -> dict[str, int]:
        return self.json("stats", *args)  # type: ignore[no-any-return]

    def memory(self) -> Memory:
        """The store the commands wrote, opened through the library (no LLM needed)."""
        embedder = make_embedder(EmbedderConfig(provider="hashing"))
        return Memory({"graph_store": {"path": str(self.store)}}, embedder=embedder)


def _env(tmp_path: Path, base_url: str | None) -> dict[str, str | None]:
    return {
        "MEM0G_HOME": str(tmp_path / "home"),
        "MEM0G_LLM__BASE_URL": base_url,
        "MEM0G_LLM__API_KEY": "test" if base_url else None,
        "MEM0G_LLM__MAX_RETRIES": "0",
        "MEM0G_EMBEDDER__PROVIDER": "hashing",
        "MEM0G_GRAPH_STORE__PATH": None,
        "MEM0G_MEMORY__GRAPH": None,
        "MEM0G_MEMORY__FACTS": None,
        "MEM0G_MEMORY__SUMMARY": None,
        "OPENAI_API_KEY": None,
        "OPENAI_BASE_URL": None,
        "COLUMNS": "160",  # wide tables, so cells are not cut in assertions
    }


@pytest.fixture
def cli(tmp_path: Path, server: ScriptedLLMServer) -> Cli:
    return Cli(tmp_path / "store", _env(tmp_path, server.base_url))


def _write(path: Path, data: Any, *, lines: bool = False) -> Path:
    if lines:
        path.write_text("\n".join(json.dumps(item) for item in data) + "\n", encoding="utf-8")
    else:
        path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _error_line(result: Result, *, progress: bool = False) -> str:
    """The one red line: no traceback, nothing else on stderr (but a progress bar)."""
    lines = result.stderr.strip().splitlines()
    if progress:
        lines = [line for line in lines if line.startswith("Error: ")]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    assert "Traceback" not in result.output
    return lines[0]


# ---------------------------------------------------------------- add


def _count(result: Result, row: str) -> int:
    """A row of the add summary table."""
    found = re.search(rf"│ {re.escape(row)}\s+│\s+(\d+)", result.stdout)
    assert found, (row, result.stdout)
    return int(found.group(1))


def _fact_ids(cli: Cli, query: str, *tenant: str) -> dict[str, str]:
    """text -> id of the tenant's facts that `search` finds."""
    return {f["text"]: f["id"] for f in cli.json("search", query, *tenant)["facts"]}


def test_add_text(cli: Cli, server: ScriptedLLMServer) -> None:
    result = cli("add", "Alice lives in Paris", "-u", "alice", "--timestamp", "2024-03-01")
    assert result.exit_code == 0, result.output
    assert re.search(r"ADD\s+│\s+Alice\s+│\s+lives_in\s+│\s+Paris\s+│\s+2024-03-01", result.stdout)
    # the fact path ran beside the graph path: its table shows the id to use with get/history
    fact_id = _fact_ids(cli, "Paris", "-u", "alice")["Alice lives in Paris"]
    assert re.search(rf"ADD\s+│\s+{fact_id}\s+│\s+Alice lives in Paris\s+│", result.stdout)
    assert re.search(r"episodes stored\s+│\s+1/1", result.stdout)
    assert _count(result, "relations ADD") == _count(result, "facts ADD") == 1
    assert _count(result, "facts DELETE") == 0
    assert _count(result, "LLM calls") == 3 == server.calls()
    assert server.calls("extract_entities") == server.calls("establish_relations") == 1
    assert server.calls("extract_facts") == 1
    assert cli.stats("-u", "alice") == {
        "entities": 2,
        "relations": 1,
        "valid_relations": 1,
        "invalid_relations": 0,
        "episodes": 1,
        "tenants": 1,
        "facts": 1,
    }


def test_add_update_invalidates(cli: Cli, server: ScriptedLLMServer) -> None:
    assert cli("add", "Alice lives in Paris", "-u", "alice").exit_code == 0
    result = cli("add", "Alice moved to Berlin", "-u", "alice")
    assert result.exit_code == 0, result.output
    assert _count(result, "relations UPDATE") == _count(result, "relations INVALIDATE") == 1
    # the fact memory: the similar old fact went to update_memory, which deleted it
    assert server.calls("update_memory") == 1
    assert (_count(result, "facts DELETE"), _count(result, "facts ADD")) == (1, 1)
    assert re.search(r"DELETE\s+│\s+\w+\s+│\s+Alice lives in Paris", result.stdout)
    assert _count(result, "LLM calls") == 5 == server.calls() - 3
    assert cli.stats("-u", "alice")["invalid_relations"] == 1
    assert list(_fact_ids(cli, "where does Alice live", "-u", "alice")) == ["Alice lives in Berlin"]


def test_add_json_file_with_progress(cli: Cli, tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": "Alice lives in Paris", "timestamp": "2024-01-01T10:00:00Z"},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "Alice works at Acme", "timestamp": "2024-02-01T10:00:00Z"},
        {"role": "assistant", "content": "Nice!"},
        {"role": "user", "content": "Bob likes jazz"},
    ]
    path = _write(tmp_path / "chat.json", messages)
    result = cli("add", "--file", str(path), "-u", "alice", "--timestamp", "2024-03-01")
    assert result.exit_code == 0, result.output
    assert "adding episodes" in result.stderr and "3/3" in result.stderr  # the progress bar
    assert re.search(r"episodes stored\s+│\s+3/3", result.stdout)
    assert _count(result, "relations ADD") == _count(result, "facts ADD") == 3
    assert "Alice lives in Paris" not in result.stdout  # a file prints counts, not every change
    assert cli.stats("-u", "alice")["episodes"] == 3  # default batch: 2 messages per episode
    # each episode carries its own time: its first message's, else --timestamp
    hits = cli.json("search", "Alice Bob", "-u", "alice")["relations"]
    valid_from = {h["relation"]: h["valid_from"] for h in hits}
    assert valid_from == {
        "lives_in": "2024-01-01T10:00:00Z",
        "works_at": "2024-02-01T10:00:00Z",
        "likes": "2024-03-01T00:00:00Z",
    }


def test_add_json_object_with_batch(cli: Cli, tmp_path: Path) -> None:
    doc = {"messages": [{"content": s} for s in ("Alice lives in Paris", "Bob likes jazz")]}
    path = _write(tmp_path / "chat.json", doc)
    result = cli("add", "-f", str(path), "-u", "alice", "--batch", "1")
    assert result.exit_code == 0, result.output
    assert cli.stats("-u", "alice")["episodes"] == 2


def test_add_jsonl_messages_and_episodes(cli: Cli, tmp_path: Path) -> None:
    plain = _write(
        tmp_path / "plain.jsonl",
        [{"role": "user", "content": "Alice lives in Paris"}, {"role": "user", "content": "hi"}],
        lines=True,
    )
    result = cli("add", "-f", str(plain), "-u", "alice")
    assert result.exit_code == 0, result.output
    assert cli.stats("-u", "alice")["episodes"] == 1

    episodes = _write(
        tmp_path / "episodes.jsonl",
        [
            {
                "messages": [{"role": "user", "content": "Bob likes jazz"}],
                "timestamp": "2023-05-01",
            },
            {"messages": [{"role": "user", "content": "Carol plays chess"}]},
        ],
        lines=True,
    )
    result = cli("add", "-f", str(episodes), "-u", "bob")
    assert result.exit_code == 0, result.output
    assert cli.stats("-u", "bob")["episodes"] == 2
    hit = cli.json("search", "Bob jazz", "-u", "bob")["relations"][0]
    assert (hit["relation"], hit["valid_from"]) == ("likes", "2023-05-01T00:00:00Z")


def test_add_file_reads_openai_text_parts(cli: Cli, tmp_path: Path) -> None:
    """A message's content may be OpenAI's text parts, as `Memory.add` takes it; an image
    part is refused with its line, before the first add."""
    parts = [{"type": "text", "text": "Hi!"}, {"type": "text", "text": "Bob likes jazz"}]
    path = _write(tmp_path / "parts.jsonl", [{"role": "user", "content": parts}], lines=True)
    result = cli("add", "-f", str(path), "-u", "bob")
    assert result.exit_code == 0, result.output
    assert cli.json("search", "Bob jazz", "-u", "bob")["relations"][0]["relation"] == "likes"
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    path = _write(tmp_path / "image.jsonl", [{"content": parts}, {"content": [image]}], lines=True)
    result = cli("add", "-f", str(path), "-u", "carol", "--batch", "1")
    assert result.exit_code == 2, result.output
    assert "line 2: content: Value error, content part 0 is of type 'image_url'" in (
        _error_line(result)
    )
    assert cli.stats("-u", "carol")["episodes"] == 0


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.json", None, "no such file"),
        ("broken.json", '[\n  {"content": "Alice lives in Paris"},\n  {"content": }\n]', "line 3"),
        (
            "broken.jsonl",
            '{"content": "Alice lives in Paris"}\n{"content": "ok"}\n{"content": \n',
            "line 3: invalid JSON",
        ),
        (
            "nocontent.json",
            '[{"content": "Alice lives in Paris"}, {"role": "assistant"}]',
            "item 2: message without content",
        ),
        ("blank.jsonl", '{"content": "Alice lives in Paris"}\n{"content": "  "}\n', "line 2"),
        ("badtime.json", '[{"content": "Alice lives in Paris", "timestamp": "soon"}]', "soon"),
        (
            "numtime.jsonl",
            '{"messages": [{"content": "x"}], "timestamp": 5}\n',
            "line 1: timestamp",
        ),
        ("empty.json", "", "empty"),
        ("scalar.json", "42", "expected a list"),
        (
            "mixed.jsonl",
            '{"content": "Alice lives in Paris"}\n{"messages": [{"content": "x"}]}\n',
            "one form per file",
        ),
        # the limits too, before the first add (episode 1 was stored, then episode 2 failed)
        (
            "long.jsonl",
            '{"messages": [{"content": "Alice lives in Paris"}]}\n'
            f'{{"messages": [{{"content": "{"x" * 32_001}"}}]}}\n',
            "line 2, message 1's content is 32001 characters long; at most 32000",
        ),
        (
            "surrogate.json",
            '[{"content": "Alice lives in Paris"}, {"content": "ok"}, {"content": "a \\ud800"}]',
            "item 3's content is not valid Unicode",
        ),
        (
            "longname.json",
            '[{"content": "Alice lives in Paris"}, {"content": "ok"}, '
            f'{{"content": "hi", "name": "{"N" * 300}"}}]',
            "item 3's name is 300 characters long",
        ),
        (
            "role.json",
            '[{"content": "Alice lives in Paris"}, {"content": "ok"}, '
            '{"content": "hi", "role": ""}]',
            "item 3's role is empty",
        ),
    ],
)
def test_add_bad_file_stores_nothing(
    cli: Cli,
    server: ScriptedLLMServer,
    tmp_path: Path,
    name: str,
    content: str | None,
    message: str,
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content, encoding="utf-8")
    result = cli("add", "--file", str(path), "-u", "alice")
    assert result.exit_code == 2, result.output
    line = _error_line(result)
    assert message in line and name in line
    assert server.calls() == 0  # the whole file is validated before the first add
    assert not (cli.store / "graph.db").exists()  # not even an empty store was created


def test_add_failure_midway_reports_what_was_stored(
    cli: Cli, server: ScriptedLLMServer, tmp_path: Path
) -> None:
    episodes = [
        {"messages": [{"content": "Alice lives in Paris"}]},
        {"messages": [{"content": "boom: the test double answers HTTP 400"}]},
        {"messages": [{"content": "Bob likes jazz"}]},
    ]
    path = _write(tmp_path / "episodes.jsonl", episodes, lines=True)
    result = cli("add", "-f", str(path), "-u", "alice")
    assert result.exit_code == 1, result.output
    line = _error_line(result, progress=True)
    assert "episode 2/3 (line 2) failed" in line
    assert "1 episode(s) before it are stored" in line
    assert re.search(r"episodes stored\s+│\s+1/3", result.stdout)
    assert cli.stats("-u", "alice")["episodes"] == 1
    assert server.calls("extract_entities") == 2  # stopped: episode 3 was never sent
    # the failed episode's fact path ran too, but nothing of that episode was written
    assert list(_fact_ids(cli, "Alice Bob", "-u", "alice")) == ["Alice lives in Paris"]


def test_add_needs_text_or_file(cli: Cli, tmp_path: Path) -> None:
    result = cli("add", "-u", "alice")
    assert result.exit_code == 2
    assert "either TEXT or --file" in _error_line(result)
    result = cli("add", "   ", "-u", "alice")
    assert result.exit_code == 2
    assert "TEXT: message without content" in _error_line(result)


def test_add_without_llm_is_one_clear_error(tmp_path: Path) -> None:
    """Checked before the embedding model loads (a model that cannot load proves it: it took
    30 s before the error, issue #15 item 8) and before a store is made."""
    env = _env(tmp_path, None) | {
        "MEM0G_EMBEDDER__PROVIDER": "sentence-transformers",
        "MEM0G_EMBEDDER__MODEL": str(tmp_path / "no-such-model"),  # loading it would fail
    }
    cli = Cli(tmp_path / "store", env)
    result = cli("add", "Alice lives in Paris", "-u", "alice")
    assert result.exit_code == 1
    line = _error_line(result)
    assert "no LLM configured" in line and "--no-infer" in line
    assert not cli.store.exists()


def test_add_no_infer_text_needs_no_llm(tmp_path: Path) -> None:
    cli = Cli(tmp_path / "store", _env(tmp_path, None))  # no LLM configured at all
    result = cli("add", "My locker code is 4521", "-u", "alice", "--no-infer", "-t", "2024-05-01")
    assert result.exit_code == 0, result.output
    assert re.search(r"ADD\s+│\s+\w{32}\s+│\s+My locker code is 4521", result.stdout)
    assert "relations" not in result.stdout.split("add summary")[0]  # no graph path ran
    assert _count(result, "facts ADD") == 1
    assert _count(result, "relations ADD") == _count(result, "LLM calls") == 0
    hit = cli.json("search", "locker code", "-u", "alice")["facts"][0]
    assert (hit["text"], hit["provenance"][0]["timestamp"]) == (
        "My locker code is 4521",
        "2024-05-01T00:00:00Z",
    )
    assert cli.stats("-u", "alice")["entities"] == 0


def test_add_no_infer_file_makes_no_llm_call(
    cli: Cli, server: ScriptedLLMServer, tmp_path: Path
) -> None:
    """Not even the summary refresh that 12 messages would make due (memory.summary_every=10)."""
    messages = [{"role": "user", "content": f"Note {i}: Alice lives in Paris"} for i in range(12)]
    path = _write(tmp_path / "notes.json", messages)
    result = cli("add", "-f", str(path), "-u", "alice", "--no-infer", "--json")
    assert result.exit_code == 0, result.output
    added = json.loads(result.stdout)
    assert len(added) == 6  # batches of 2 messages, one fact per message
    assert [f["event"] for r in added for f in r["facts"]] == ["ADD"] * 12
    assert all(r["relations"] == [] and r["usage"]["calls"] == 0 for r in added)
    assert server.calls() == 0
    assert len(_fact_ids(cli, "Note Alice", "-u", "alice", "--limit", "20")) == 12
    with cli.memory() as m:
        assert m.summary(user_id="alice") is None


def test_add_file_refreshes_the_summary_and_counts_it(
    cli: Cli, server: ScriptedLLMServer, tmp_path: Path
) -> None:
    messages = [{"role": "user", "content": f"small talk {i}"} for i in range(12)]
    path = _write(tmp_path / "chat.json", messages)
    result = cli("add", "-f", str(path), "-u", "alice")
    assert result.exit_code == 0, result.output
    assert server.calls("summarize") == 1  # due after 10 messages; the CLI waited for it
    assert _count(result, "LLM calls") == server.calls()  # the summary call is counted too
    with cli.memory() as m:
        summary = m.summary(user_id="alice")
    # queued after message 10; it covers the 6th episode too if that was stored first
    assert summary is not None and summary.messages_covered in (10, 12)
    assert summary.text.startswith("A chat of ")


def test_graph_only_config(tmp_path: Path, server: ScriptedLLMServer) -> None:
    cli = Cli(tmp_path / "store", _env(tmp_path, server.base_url) | {"MEM0G_MEMORY__FACTS": "0"})
    result = cli("add", "Alice lives in Paris", "-u", "alice")
    assert result.exit_code == 0, result.output
    assert _count(result, "LLM calls") == 2 and server.calls("extract_facts") == 0
    assert _count(result, "facts ADD") == 0
    result = cli("search", "Alice", "-u", "alice")
    assert "facts" not in result.stdout and "relations" in result.stdout
    assert result.stderr == ""  # no "no facts found": the fact memory is off, not empty


def test_facts_only_config(tmp_path: Path, server: ScriptedLLMServer) -> None:
    cli = Cli(tmp_path / "store", _env(tmp_path, server.base_url) | {"MEM0G_MEMORY__GRAPH": "0"})
    result = cli("add", "Alice lives in Paris", "-u", "alice")
    assert result.exit_code == 0, result.output
    assert _count(result, "LLM calls") == 1 == server.calls("extract_facts") == server.calls()
    result = cli("search", "Alice", "-u", "alice")
    assert "Alice lives in Paris" in result.stdout and "relations" not in result.stdout
    assert result.stderr == ""


# ---------------------------------------------------------------- search


def _header(result: Result, title: str) -> str:
    """The header line of the table titled `title`."""
    lines = result.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip() == title)
    return lines[at + 2]


def test_search_table_and_json(cli: Cli) -> None:
    cli("add", "Alice lives in Paris", "-u", "alice", "-t", "2024-01-01")
    cli("add", "Alice moved to Berlin", "-u", "alice", "-t", "2024-06-01")
    result = cli("search", "where does Alice live", "-u", "alice")
    assert result.exit_code == 0, result.output
    assert result.stdout.index("facts") < result.stdout.index("relations")
    for column in ("score", "id", "fact", "said"):
        assert column in _header(result, "facts")
    for column in ("score", "source", "relation", "destination", "valid from", "invalid at"):
        assert column in _header(result, "relations")
    fact_row = r"│ \d\.\d{3} │ \w{32} │ Alice lives in Berlin\s+│ 2024-06-01 │"
    assert re.search(fact_row, result.stdout)
    assert re.search(r"Alice\s+│\s+lives_in\s+│\s+Berlin\s+│\s+2024-06-01", result.stdout)
    assert "Paris" not in result.stdout  # neither the ended relation nor the deleted fact
    assert result.stderr == ""

    data = cli.json("search", "where does Alice live", "-u", "alice", "--include-invalid")
    assert data["query"] == "where does Alice live"
    assert [(f["text"], f["provenance"][0]["timestamp"]) for f in data["facts"]] == [
        ("Alice lives in Berlin", "2024-06-01T00:00:00Z")
    ]
    assert {h["destination"]: h["invalid_at"] for h in data["relations"]} == {
        "Berlin": None,
        "Paris": "2024-06-01T00:00:00Z",
    }
    past = cli.json("search", "Alice", "-u", "alice", "--as-of", "2024-03-01", "--limit", "1")
    assert [h["destination"] for h in past["relations"]] == ["Paris"]
    # facts obey --as-of as edges do (issue #15 item 3): the text true then, nothing said later
    assert [f["text"] for f in past["facts"]] == ["Alice lives in Paris"]
    before = cli.json("search", "where does Alice live", "-u", "alice", "--as-of", "1999-01-01")
    assert (before["facts"], before["relations"]) == ([], [])


def test_search_nothing_and_bad_input(cli: Cli) -> None:
    cli.memory().close()  # an empty store
    result = cli("search", "anything", "-u", "nobody")
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "no facts found for user 'nobody'" in result.stderr
    assert "no relations found for user 'nobody'" in result.stderr
    result = cli("search", "x", "-u", "alice", "--as-of", "yesterday-ish")
    assert result.exit_code == 2
    assert "--as-of" in _error_line(result)
    # --include-invalid is every time, so it would drop --as-of's filter: refused together
    result = cli("search", "x", "-u", "alice", "--as-of", "2023-06-01", "--include-invalid")
    assert result.exit_code == 2
    assert "as_of and include_invalid exclude each other" in _error_line(result)


def test_search_prints_names_verbatim(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rich markup in a name must show as text, not style the table."""
    fact = ("[bold]Eve[/bold]", "person", "likes", "tea", "drink")
    monkeypatch.setitem(FACTS, "[bold]Eve[/bold] likes tea", fact)
    result = cli("add", "[bold]Eve[/bold] likes tea", "-u", "eve")
    assert result.exit_code == 0
    assert result.stdout.count("[bold]Eve[/bold]") == 2  # the relation and the fact
    result = cli("search", "Eve tea", "-u", "eve")
    assert result.stdout.count("[bold]Eve[/bold]") == 2


# ---------------------------------------------------------------- one fact, by id


def test_get_update_forget_and_history(cli: Cli) -> None:
    assert cli("add", "Alice works at Acme", "-u", "alice", "-t", "2024-02-01").exit_code == 0
    fact_id = _fact_ids(cli, "Acme", "-u", "alice")["Alice works at Acme"]

    result = cli("get", fact_id, "-u", "alice")
    assert result.exit_code == 0, result.output
    assert re.search(rf"id\s+│ {fact_id}", result.stdout)
    assert re.search(r"text\s+│ Alice works at Acme", result.stdout)
    assert re.search(r"said\s+│ 2024-02-01", result.stdout)
    assert re.search(r"tenant\s+│ user 'alice'", result.stdout)
    fact = cli.json("get", fact_id, "-u", "alice")
    assert (fact["id"], fact["text"], fact["tenant"]["user_id"]) == (
        fact_id,
        "Alice works at Acme",
        "alice",
    )
    assert "embedding" not in fact or fact["embedding"] is None

    result = cli("update", fact_id, "Alice works at Acme as an engineer", "-u", "alice")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == (
        f"updated fact {fact_id}: Alice works at Acme → Alice works at Acme as an engineer"
    )
    assert cli.json("get", fact_id, "-u", "alice")["text"] == "Alice works at Acme as an engineer"
    assert list(_fact_ids(cli, "Acme engineer", "-u", "alice")) == [
        "Alice works at Acme as an engineer"  # re-embedded: search finds the new text
    ]

    result = cli("forget", fact_id, "-u", "alice")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == (
        f"forgot fact {fact_id}: Alice works at Acme as an engineer (kept in its history)"
    )
    assert _fact_ids(cli, "Acme engineer", "-u", "alice") == {}
    assert cli("get", fact_id, "-u", "alice").exit_code == 2  # gone from get

    result = cli("history", fact_id, "-u", "alice")  # but its history stays
    assert result.exit_code == 0, result.output
    assert f"history of fact {fact_id}" in result.stdout
    for column in ("said", "stored", "event", "actor", "old → new"):
        assert column in _header(result, f"history of fact {fact_id}")
    rows = re.findall(
        r"│ (2024-02-01|by hand)\s+│ [\d-]+ [\d:]+ │ (\w+)\s+│ (\w+)\s+│ (.+?)\s+│", result.stdout
    )
    # the add was said on 2024-02-01 (-t); the edits by hand have no conversation time
    assert rows == [
        ("2024-02-01", "ADD", "llm", "Alice works at Acme"),
        ("by hand", "UPDATE", "user", "Alice works at Acme → Alice works at Acme as an engineer"),
        ("by hand", "DELETE", "user", "Alice works at Acme as an engineer"),
    ], result.stdout
    events = cli.json("history", fact_id, "-u", "alice")
    assert [(e["event"], e["old_text"], e["new_text"]) for e in events] == [
        ("ADD", None, "Alice works at Acme"),
        ("UPDATE", "Alice works at Acme", "Alice works at Acme as an engineer"),
        ("DELETE", "Alice works at Acme as an engineer", None),
    ]


def test_history_of_a_fact_the_llm_deleted(cli: Cli) -> None:
    [paris] = cli.json("add", "Alice lives in Paris", "-u", "alice", "-t", "2024-01-01")
    fact_id = paris["facts"][0]["id"]
    assert cli("add", "Alice moved to Berlin", "-u", "alice", "-t", "2024-06-01").exit_code == 0
    assert cli("get", fact_id, "-u", "alice").exit_code == 2
    result = cli("history", fact_id, "-u", "alice")
    assert result.exit_code == 0, result.output
    assert re.search(r"│ ADD\s+│ llm\s+│ Alice lives in Paris\s+│", result.stdout)
    assert re.search(r"│ DELETE\s+│ llm\s+│ Alice lives in Paris\s+│", result.stdout)
    events = cli.json("history", fact_id, "-u", "alice")
    assert [(e["event"], e["actor"]) for e in events] == [("ADD", "llm"), ("DELETE", "llm")]
    assert events[1]["episode_id"] != events[0]["episode_id"] is not None


def test_update_and_forget_json(cli: Cli) -> None:
    [added] = cli.json("add", "Bob likes jazz", "-u", "bob")
    fact_id = added["facts"][0]["id"]
    assert added["facts"][0] == {
        "event": "ADD",
        "id": fact_id,
        "text": "Bob likes jazz",
        "previous_text": None,
    }
    assert cli.json("update", fact_id, "Bob loves jazz", "-u", "bob") == {
        "event": "UPDATE",
        "id": fact_id,
        "text": "Bob loves jazz",
        "previous_text": "Bob likes jazz",
    }
    assert cli.json("forget", fact_id, "-u", "bob") == {
        "event": "DELETE",
        "id": fact_id,
        "text": "Bob loves jazz",
        "previous_text": None,
    }


@pytest.mark.parametrize(
    "command",
    [("get",), ("update", "{id}", "Alice lives in Rome"), ("forget",), ("history",)],
    ids=lambda c: c[0],
)
def test_unknown_fact_id_is_a_clear_error(cli: Cli, command: tuple[str, ...]) -> None:
    """Exit code 2 (bad input), one line; another tenant's id is exactly as unknown."""
    assert cli("add", "Alice lives in Paris", "-u", "alice").exit_code == 0
    fact_id = _fact_ids(cli, "Paris", "-u", "alice")["Alice lives in Paris"]
    name, *rest = command
    for wrong, tenant in [("f" * 32, "alice"), (fact_id, "mallory")]:
        args = [a.replace("{id}", wrong) for a in rest] if rest else [wrong]
        result = cli(name, *args, "-u", tenant)
        assert result.exit_code == 2, result.output
        assert _error_line(result) == f"Error: no fact '{wrong}' for user '{tenant}'"
        assert result.stdout == ""
    # nothing happened to alice's fact
    assert cli.json("get", fact_id, "-u", "alice")["text"] == "Alice lives in Paris"
    assert len(cli.json("history", fact_id, "-u", "alice")) == 1


def test_update_with_empty_text_is_bad_input(cli: Cli) -> None:
    [added] = cli.json("add", "Bob likes jazz", "-u", "bob")
    result = cli("update", added["facts"][0]["id"], "  ", "-u", "bob")
    assert result.exit_code == 2
    assert "text is empty" in _error_line(result)


# ---------------------------------------------------------------- dump


@pytest.fixture
def history(
    store_kind: str, tmp_path: Path, server: ScriptedLLMServer, request: pytest.FixtureRequest
) -> Cli:
    """A tenant whose Paris fact ended when Alice moved to Berlin, on each kind of store (the
    Neo4j one configured through MEM0G_GRAPH_STORE__* as a user would, database emptied)."""
    env = _env(tmp_path, server.base_url)
    if store_kind == "neo4j":
        neo4j = request.getfixturevalue("neo4j_server")
        request.getfixturevalue("neo4j_connect")  # empties the database
        env |= {
            "MEM0G_GRAPH_STORE__PROVIDER": "neo4j",
            "MEM0G_GRAPH_STORE__URL": neo4j.uri,
            "MEM0G_GRAPH_STORE__USERNAME": neo4j.user,
            "MEM0G_GRAPH_STORE__PASSWORD": neo4j.password,
        }
    cli = Cli(tmp_path / "store", env)
    for text, when in [
        ("Alice lives in Paris", "2024-01-01"),
        ("Alice works at Acme", "2024-02-01"),
        ("Alice moved to Berlin", "2024-06-01"),
    ]:
        assert cli("add", text, "-u", "alice", "-t", when).exit_code == 0
    assert cli("add", "Bob likes jazz", "-u", "bob").exit_code == 0
    return cli


def test_dump_json(history: Cli) -> None:
    result = history("dump", "-u", "alice")
    assert result.exit_code == 0, result.output
    snapshot = from_json(result.stdout)
    assert {e.name for e in snapshot.entities} == {"Alice", "Paris", "Acme", "Berlin"}
    assert {(r.destination, r.invalid_at is not None) for r in snapshot.relations} == {
        ("Paris", True),
        ("Acme", False),
        ("Berlin", False),
    }
    assert json.loads(result.stdout)["tenant"]["user_id"] == "alice"
    assert snapshot.facts, "the fact memory is part of the dump"
    assert all(f.tenant.user_id == "alice" for f in snapshot.facts)
    current = from_json(history("dump", "-u", "alice", "--current-only").stdout)
    assert {r.destination for r in current.relations} == {"Acme", "Berlin"}


def test_dump_without_tenant_dumps_every_tenant(history: Cli) -> None:
    result = history("dump")
    assert result.exit_code == 0, result.output
    snapshot = from_json(result.stdout)
    assert {e.tenant.user_id for e in snapshot.entities} == {"alice", "bob"}
    assert len(snapshot.relations) == 4  # alice's three (one ended) and bob's one
    assert json.loads(result.stdout)["tenant"] is None


def test_dump_graphml(history: Cli) -> None:
    result = history("dump", "-u", "alice", "--format", "graphml")
    assert result.exit_code == 0, result.output
    graph = nx.read_graphml(io.BytesIO(result.stdout.encode()), force_multigraph=True)
    assert sorted(d["name"] for _, d in graph.nodes(data=True)) == [
        "Acme",
        "Alice",
        "Berlin",
        "Paris",
    ]
    edges = {d["destination"]: d for _, _, d in graph.edges(data=True)}
    assert set(edges) == {"Paris", "Acme", "Berlin"}
    assert edges["Paris"]["invalid_at"].startswith("2024-06-01")
    assert "invalid_at" not in edges["Berlin"]


def test_dump_cypher(history: Cli) -> None:
    result = history("dump", "-u", "alice", "-F", "cypher")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("//")
    assert all(line.endswith(";") for line in lines[1:])
    assert sum(line.startswith("CREATE (:Entity") for line in lines) == 4
    relates = [line for line in lines if ":RELATES" in line]
    assert len(relates) == 3
    assert any("name: 'lives_in'" in r and "invalid_at: datetime('2024-06-01" in r for r in relates)


def test_dump_mermaid_to_file(history: Cli, tmp_path: Path) -> None:
    out = tmp_path / "graph.mmd"
    result = history("dump", "-u", "alice", "-F", "mermaid", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert "wrote 4 entities and 3 relations" in result.stderr
    text = out.read_text(encoding="utf-8")
    assert text.startswith("flowchart LR\n")
    assert re.search(r'n\d+ -\.->\|"lives_in \(until 2024-06-01\)"\| n\d+', text)
    assert len(re.findall(r"n\d+ -->\|", text)) == 2


def test_dump_and_export_into_a_missing_folder_name_it(cli: Cli, tmp_path: Path) -> None:
    """The error names the folder asked for, not the hidden temporary file beside the output
    (".graph.json.1a2b3c4d5e6f.part")."""
    assert cli("add", "hello", "--no-infer", "-u", "alice").exit_code == 0
    missing = tmp_path / "no-such-folder"
    for command in ("dump", "export"):
        failed = cli(command, "-o", str(missing / "out.json"))
        assert failed.exit_code == 1, failed.output
        line = _error_line(failed, progress=True)
        assert str(missing) in line and ".part" not in line, line
    assert not missing.exists()


def test_a_failed_dump_keeps_the_file_it_would_replace(
    history: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that fails half-way (here a character UTF-8 cannot encode) used to leave the
    file it was replacing cut off; now the old file stays, and no temporary file is left."""
    out = tmp_path / "dumps" / "graph.mmd"
    out.parent.mkdir()
    assert history("dump", "-u", "alice", "-F", "mermaid", "-o", str(out)).exit_code == 0
    good = out.read_text(encoding="utf-8")
    from mem0g import export

    monkeypatch.setattr(export, "dump", lambda *a, **k: "flowchart LR\n" * 5000 + "\ud800")
    failed = history("dump", "-u", "alice", "-F", "mermaid", "-o", str(out))
    assert failed.exit_code != 0
    assert out.read_text(encoding="utf-8") == good
    assert [p.name for p in out.parent.iterdir()] == ["graph.mmd"]


def test_reads_dumps_and_deletes_load_no_model(history: Cli) -> None:
    """stats, dump, history and delete open either store without an embedder (both read the
    vector size from their data): a model that cannot load does not stop them."""
    broken = Cli(
        history.store,
        history.env
        | {
            "MEM0G_EMBEDDER__PROVIDER": "sentence-transformers",
            "MEM0G_EMBEDDER__MODEL": "/no/model",
        },
    )
    assert broken.stats()["relations"] == 4
    dumped = broken("dump", "-u", "alice")
    assert dumped.exit_code == 0, dumped.output
    assert len(from_json(dumped.stdout).relations) == 3
    assert broken("delete", "--user", "bob", "--yes").exit_code == 0
    assert broken.stats()["tenants"] == 1
    searched = broken("search", "Alice", "-u", "alice")  # a search needs the model: clear error
    assert searched.exit_code != 0
    assert "/no/model" in _error_line(searched)


def test_dump_rejects_unknown_format(history: Cli) -> None:
    result = history("dump", "-u", "alice", "-F", "csv")
    assert result.exit_code == 2


# ---------------------------------------------------------------- reindex


def test_reindex_rebuilds_what_the_store_has(history: Cli, store_kind: str) -> None:
    """Neo4j: each vector index rebuilt, and searches answer as before; the embedded store
    keeps no index, so there is nothing to do."""
    before = history("search", "where does Alice live", "-u", "alice", "--json")
    assert before.exit_code == 0, before.output
    result = history("reindex", "--json")
    assert result.exit_code == 0, result.output
    done = json.loads(result.stdout)
    if store_kind == "embedded":
        assert done == []
        plain = history("reindex")
        assert plain.exit_code == 0 and "nothing to rebuild" in plain.stdout
    else:
        assert [(d["kind"], d["index"]) for d in done] == [
            ("entities", "mem0g_entity_embedding"),
            ("relations", "mem0g_relation_embedding"),
            ("facts", "mem0g_fact_embedding"),
        ]
        table = history("reindex", "--kind", "relations")
        assert table.exit_code == 0, table.output
        assert "mem0g_relation_embedding" in table.stdout
        assert "mem0g_entity_embedding" not in table.stdout
    after = history("search", "where does Alice live", "-u", "alice", "--json")
    assert json.loads(after.stdout) == json.loads(before.stdout)
    bad = history("reindex", "--kind", "edges")
    assert bad.exit_code == 2


# ---------------------------------------------------------------- stats


def test_stats_table_per_tenant_and_whole_store(history: Cli) -> None:
    result = history("stats")
    assert result.exit_code == 0, result.output
    assert "the whole store" in result.stdout
    assert re.search(r"tenants\s+│\s+2", result.stdout)
    assert re.search(r"invalid relations\s+│\s+1", result.stdout)
    assert history.stats() == {
        "entities": 6,
        "relations": 4,
        "valid_relations": 3,
        "invalid_relations": 1,
        "episodes": 4,
        "tenants": 2,
        "facts": 3,
    }
    assert history.stats("-u", "bob")["relations"] == 1
    assert "user 'bob'" in history("stats", "-u", "bob").stdout


def test_stats_of_a_new_store(cli: Cli) -> None:
    cli.memory().close()
    assert cli.stats() == {
        "entities": 0,
        "relations": 0,
        "valid_relations": 0,
        "invalid_relations": 0,
        "episodes": 0,
        "tenants": 0,
        "facts": 0,
    }


def test_stats_counts_current_facts(history: Cli) -> None:
    everything = history.stats()
    alice, bob = history.stats("-u", "alice"), history.stats("-u", "bob")
    assert (alice["facts"], bob["facts"]) == (2, 1)  # alice's Paris fact was replaced
    assert everything["facts"] == 3
    table = history("stats", "-u", "alice").stdout
    assert re.search(r"facts\s+│\s+2\b", table), table


# ---------------------------------------------------------------- doctor


def _rows(result: Result) -> dict[str, str]:
    rows = {}
    for line in result.stdout.splitlines():
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if len(cells) == 3 and cells[1] in {"ok", "warn", "fail"}:
            rows[cells[0]] = cells[1]
    return rows


def test_doctor_with_the_test_double_reachable(tmp_path: Path, server: ScriptedLLMServer) -> None:
    env = _env(tmp_path, server.base_url) | {"MEM0G_LLM__API_KEY": "sk-secret-key-0123456789-wxyz"}
    cli = Cli(tmp_path / "store", env)
    fresh = cli("doctor")
    assert fresh.exit_code == 0, fresh.output
    assert _rows(fresh)["store"] == "warn"  # nothing there yet, and doctor creates nothing
    assert "holds no store yet" in fresh.stdout and not cli.store.exists()
    cli.memory().close()
    result = cli("doctor")
    assert result.exit_code == 0, result.output
    assert _rows(result) == {"config": "ok", "llm": "ok", "embedder": "ok", "store": "ok"}
    assert "sk-secret" not in result.stdout and "***wxyz" in result.stdout  # masked
    assert "(MEM0G_LLM__API_KEY)" in result.stdout  # where the key came from
    assert "384 dims" in result.stdout
    assert "reachable" in result.stdout


def test_doctor_with_an_unreachable_llm(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cli = Cli(tmp_path / "store", _env(tmp_path, f"http://127.0.0.1:{port}/v1"))
    cli.memory().close()
    result = cli("doctor")
    assert result.exit_code == 1
    assert _rows(result) == {"config": "ok", "llm": "fail", "embedder": "ok", "store": "ok"}
    assert "not reachable" in result.stdout


@pytest.mark.neo4j
def test_doctor_says_when_opening_the_store_upgraded_an_older_layout(
    tmp_path: Path, neo4j_server: Any, neo4j_connect: Any
) -> None:
    import neo4j

    from mem0g.stores.neo4j.indexes import SCHEMA_VERSION

    neo4j_connect().close()  # emptied, the schema current
    auth = (neo4j_server.user, neo4j_server.password)
    with neo4j.GraphDatabase.driver(neo4j_server.uri, auth=auth) as driver:
        driver.execute_query("MATCH (m:Mem0gSchema) SET m.version = $v", v=SCHEMA_VERSION - 1)
        env = _env(tmp_path, None) | {
            "MEM0G_GRAPH_STORE__PROVIDER": "neo4j",
            "NEO4J_URI": neo4j_server.uri,
            "NEO4J_USERNAME": neo4j_server.user,
            "NEO4J_PASSWORD": neo4j_server.password,
        }
        result = CliRunner(env=env).invoke(app, ["doctor"])
        assert _rows(result)["store"] == "ok", result.output
        text = " ".join(result.stdout.replace("│", " ").split())
        gap = f"layout version {SCHEMA_VERSION - 1}, this mem0g writes {SCHEMA_VERSION}"
        assert "schema brought up to date in" in text and gap in text, text
        records, _, _ = driver.execute_query("MATCH (m:Mem0gSchema) RETURN m.version AS v")
        assert [r["v"] for r in records] == [SCHEMA_VERSION]


@pytest.mark.neo4j
def test_doctor_shows_where_neo4j_settings_came_from(
    tmp_path: Path, neo4j_server: Any, neo4j_connect: Any
) -> None:
    """NEO4J_URI / NEO4J_PASSWORD are honoured, and doctor names them as the settings' source."""
    neo4j_connect().close()
    uri, user, password = neo4j_server.uri, neo4j_server.user, neo4j_server.password
    env = _env(tmp_path, None) | {
        "MEM0G_GRAPH_STORE__PROVIDER": "neo4j",
        # doctor's own warm-up runs too (the suite turns warm-ups off, conftest.py), bounded
        "MEM0G_GRAPH_STORE__WARMUP": "true",
        "MEM0G_GRAPH_STORE__WARMUP_SECONDS": "5",
        "NEO4J_URI": uri,
        "NEO4J_USERNAME": None,
        "NEO4J_PASSWORD": password,
    }
    result = CliRunner(env=env).invoke(app, ["doctor"])
    assert _rows(result)["store"] == "ok", result.output
    text = " ".join(result.stdout.replace("│", " ").split())
    assert "schema brought up to date" not in text  # the test server's schema is current
    assert f"neo4j {uri} (NEO4J_URI)" in text
    assert f"user {user} (default)" in text
    assert "(NEO4J_PASSWORD)" in text and "password unset" not in text
    assert password not in result.stdout


def test_doctor_without_llm_warns(tmp_path: Path) -> None:
    result = Cli(tmp_path / "store", _env(tmp_path, None))("doctor")
    assert result.exit_code == 0, result.output
    assert _rows(result)["llm"] == "warn"
    assert "not configured" in result.stdout


def test_doctor_with_a_bad_config(tmp_path: Path) -> None:
    config = _write(tmp_path / "config.json", {"llm": {"temperature": "hot"}})
    result = CliRunner(env=_env(tmp_path, None)).invoke(app, ["--config", str(config), "doctor"])
    assert result.exit_code == 1
    assert _rows(result) == {"config": "fail"}
    assert "temperature" in result.stdout


# ---------------------------------------------------------------- reset, delete, errors


def test_reset(history: Cli) -> None:
    result = history("reset", input="n\n")
    assert result.exit_code == 1  # declined: nothing happens
    assert history.stats()["episodes"] == 4
    result = history("reset", "--yes")
    assert result.exit_code == 0, result.output
    assert history.stats()["episodes"] == 0


def test_reset_after_confirmation(history: Cli) -> None:
    result = history("reset", input="y\n")
    assert result.exit_code == 0, result.output
    assert history.stats()["tenants"] == 0


def test_delete_tenant(history: Cli) -> None:
    """It asks first, saying how much (it deleted a user's whole memory unasked, while
    `reset` asked); no answer or "n" deletes nothing."""
    before = history.stats("-u", "alice")
    assert before["episodes"] > 0 and before["facts"] == 2
    counts = ", ".join(f"{before[k]} {k}" for k in ("entities", "relations", "facts", "episodes"))
    for answer in (None, "n\n"):
        kept = history("delete", "--user", "alice", input=answer)
        assert kept.exit_code == 1 and f"Delete {counts} of user 'alice'?" in kept.output
        assert history.stats("-u", "alice") == before
    result = history("delete", "--user", "alice", input="y\n")
    assert result.exit_code == 0, result.output
    assert f"deleted {counts} of user 'alice', with their history" in result.stdout
    assert history.stats("-u", "alice")["episodes"] == 0
    assert history.stats("-u", "alice")["entities"] == 0
    assert history.stats("-u", "bob")["relations"] == 1
    assert _fact_ids(history, "Alice", "-u", "alice") == {}
    assert list(_fact_ids(history, "Bob jazz", "-u", "bob")) == ["Bob likes jazz"]


@pytest.mark.parametrize(
    "args",
    [
        ("add", "Alice lives in Paris"),
        ("search", "Alice"),
        ("delete",),
        ("get", "0123"),
        ("update", "0123", "new text"),
        ("forget", "0123"),
        ("history", "0123"),
    ],
)
def test_missing_tenant_is_a_clear_error(cli: Cli, server: ScriptedLLMServer, args: tuple) -> None:
    result = cli(*args)
    assert result.exit_code == 2
    assert "needs a tenant: give --user/-u, --agent or --run" in _error_line(result)
    assert server.calls() == 0


def test_agent_and_run_tenants(cli: Cli) -> None:
    assert cli("add", "Bob likes jazz", "--agent", "helper", "--run", "r1").exit_code == 0
    assert cli.stats("--agent", "helper")["relations"] == 1
    assert cli.stats("--run", "r2")["relations"] == 0


def test_bad_config_file_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text("{\n  'llm': 1\n}", encoding="utf-8")
    result = CliRunner(env=_env(tmp_path, None)).invoke(app, ["--config", str(bad), "stats"])
    assert result.exit_code == 2
    assert "invalid JSON at line 2" in _error_line(result)
    unknown = _write(tmp_path / "unknown.json", {"nope": 1})
    result = CliRunner(env=_env(tmp_path, None)).invoke(app, ["--config", str(unknown), "stats"])
    assert result.exit_code == 2
    assert "invalid config: nope" in _error_line(result)


def test_path_with_a_neo4j_store_is_refused(tmp_path: Path, cli: Cli) -> None:
    """`--path DIR` picks the embedded store: with a config or MEM0G_* that picks Neo4j it
    was ignored, and `reset -y` meant for DIR emptied the Neo4j server instead."""
    assert cli("add", "hello", "--no-infer", "-u", "alice").exit_code == 0
    neo4j = {"graph_store": {"provider": "neo4j", "url": "bolt://127.0.0.1:9"}}
    config = _write(tmp_path / "neo4j.json", neo4j)
    before = cli.stats()
    for env, args in (
        ({}, ("-c", str(config), "reset", "-y")),
        ({"MEM0G_GRAPH_STORE__PROVIDER": "neo4j"}, ("stats",)),
    ):
        result = CliRunner(env={**cli.env, **env}).invoke(app, ["--path", str(cli.store), *args])
        assert result.exit_code == 2, result.output
        assert "--path" in _error_line(result) and "neo4j" in _error_line(result)
    assert cli.stats() == before


def test_config_file_sets_the_store(tmp_path: Path, server: ScriptedLLMServer) -> None:
    config = _write(tmp_path / "config.json", {"graph_store": {"path": str(tmp_path / "cfg")}})
    runner = CliRunner(env=_env(tmp_path, server.base_url))
    result = runner.invoke(app, ["-c", str(config), "add", "Bob likes jazz", "-u", "bob"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "cfg" / "graph.db").is_file()


def test_debug_shows_the_traceback(cli: Cli) -> None:
    result = cli.runner.invoke(
        app, ["--path", str(cli.store), "--debug", "search", "x", "-u", "a", "--as-of", "nope"]
    )
    assert result.exit_code == 1
    assert isinstance(result.exception, ValueError)


def test_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"mem0g {__version__}"


# ---------------------------------------------------------------- demo


def test_demo_runs_scripted_into_a_kept_store(tmp_path: Path, cli: Cli) -> None:
    target = tmp_path / "demo"
    result = cli("demo", "--scripted", "--path", str(target))
    assert result.exit_code == 0, result.output
    assert "test double" in result.stdout
    with Memory({"graph_store": {"path": str(target)}}, embedder=make_embedder()) as m:
        current = {
            (r.source, r.relation, r.destination) for r in m.get_all(user_id="maya").relations
        }
    assert ("Maya", "lives_in", "Paris") in current


# ---------------------------------------------------------------- where options go, which store


def test_global_options_after_the_subcommand(cli: Cli, server: ScriptedLLMServer) -> None:
    """`mem0g stats --path DIR` means `mem0g --path DIR stats`; tenant options go either side."""
    assert cli("add", "Alice works at Acme", "-u", "alice").exit_code == 0
    runner, store = cli.runner, str(cli.store)
    expected = cli.stats("-u", "alice")
    assert expected["facts"] == 1
    for args in (
        ["stats", "-u", "alice", "--json", "--path", store],
        ["stats", f"--path={store}", "--json", "-u", "alice"],
        ["-u", "alice", "--path", store, "stats", "--json"],
        ["--user=alice", "stats", "--json", "--path", store],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args, result.output)
        assert json.loads(result.stdout) == expected, args
    listed = runner.invoke(app, ["entities", "list", "-u", "alice", "--json", "--path", store])
    assert listed.exit_code == 0, listed.output
    assert {e["name"] for e in json.loads(listed.stdout)} == {"Alice", "Acme"}
    result = runner.invoke(app, ["-u", "alice", "doctor", "--path", store])
    assert result.exit_code == 2
    assert "`doctor` takes no tenant option (-u)" in result.output


def _paragraphs(text: str | None) -> list[str]:
    return [" ".join(p.split()) for p in (text or "").split("\n\n") if p.strip()]


def test_help_texts_read_as_whole_sentences() -> None:
    """A docstring's line breaks are not sentence breaks: `mem0g --help` lists each command by
    one unbroken line (its first sentence when long), and `COMMAND --help` shows each
    paragraph unbroken (issue #15 item 10; a wide terminal, so only a stray break splits one)."""
    import typer

    runner = CliRunner(env={"COLUMNS": "1000"})
    listing = runner.invoke(app, ["--help"]).stdout
    groups = [((), typer.main.get_command(app))]
    seen = 0
    while groups:
        path, group = groups.pop()
        for name, command in getattr(group, "commands", {}).items():
            paragraphs = _paragraphs(command.help)
            assert paragraphs, (*path, name)
            first = paragraphs[0]
            if not path:
                long = len(first) > 100 and ". " in first
                listed = first.split(". ", 1)[0] + "." if long else first
                assert listed in listing, name
            own = runner.invoke(app, [*path, name, "--help"])
            assert own.exit_code == 0, own.output
            for paragraph in paragraphs:
                assert paragraph in own.stdout, ([*path, name], paragraph)
            groups.append(((*path, name), command))
            seen += 1
    assert seen > 25  # the subcommands of entities and keys too


def test_demo_keeps_its_own_path_option() -> None:
    import typer

    from mem0g.cli.args import rearrange

    root = typer.main.get_command(app)
    ctx = root.make_context("mem0g", ["--help"], resilient_parsing=True)
    assert rearrange(root, ctx, ["demo", "--path", "D"]) == ["demo", "--path", "D"]
    assert rearrange(root, ctx, ["stats", "--path", "D"]) == ["--path", "D", "stats"]
    # a value that looks like an option stays the value of its own option
    assert rearrange(root, ctx, ["search", "--as-of", "x", "q", "--debug"]) == [
        "--debug",
        "search",
        "--as-of",
        "x",
        "q",
    ]
    assert rearrange(root, ctx, ["add", "-u", "a", "--", "--path"]) == [
        "add",
        "-u",
        "a",
        "--",
        "--path",
    ]


@pytest.mark.parametrize(
    "args",
    [
        ("stats",),
        ("search", "x", "-u", "a"),
        ("dump",),
        ("history", "0123", "-u", "a"),
        ("get", "0123", "-u", "a"),
        ("entities", "list", "-u", "a"),
        ("delete", "-u", "a"),
        ("reset", "--yes"),
    ],
)
def test_no_store_at_the_path_is_an_error(cli: Cli, args: tuple[str, ...]) -> None:
    """A mistyped --path must not look like an empty memory, nor create a store there."""
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert f"no mem0g store at {cli.store}" in _error_line(result)
    assert not cli.store.exists()


def test_path_that_is_a_file(cli: Cli, tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("not a store", encoding="utf-8")
    result = cli.runner.invoke(app, ["stats", "--path", str(target)])
    assert result.exit_code == 2
    assert f"store path {target} is a file; --path takes a directory" in _error_line(result)
    assert target.read_text(encoding="utf-8") == "not a store"


def test_ids_are_never_cut(
    cli: Cli, server: ScriptedLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 80 columns (a terminal's usual width) a long fact must wrap, not its id."""
    sentence = "Alice works at " + "the International Society of Long Names " * 3 + "Acme"
    monkeypatch.setitem(FACTS, sentence, ("Alice", "person", "works_at", "Acme", "organization"))
    cli = Cli(cli.store, cli.env | {"COLUMNS": "80"})  # the fixture's is 160
    added = cli("add", sentence, "-u", "alice")
    assert added.exit_code == 0, added.output
    fact_id = _fact_ids(cli, "Acme", "-u", "alice")[sentence]
    assert fact_id in added.stdout
    found = cli("search", "where does Alice work", "-u", "alice")
    assert fact_id in found.stdout and "…" not in found.stdout
    listed = cli("entities", "list", "-u", "alice")
    for entity in json.loads(cli("entities", "list", "-u", "alice", "--json").stdout):
        assert entity["id"] in listed.stdout


@pytest.mark.parametrize(("example", "episodes"), [("episodes.jsonl", 2), ("messages.json", 2)])
def test_the_shipped_add_file_examples_parse(example: str, episodes: int) -> None:
    """docs/examples are what docs/add-file-format.md and `add --help` point to."""
    from mem0g.cli import read_episodes

    path = Path(__file__).parent.parent / "docs" / "examples" / example
    parsed = read_episodes(path, batch=2)
    assert len(parsed) == episodes
    assert parsed[0].timestamp is not None and parsed[0].timestamp.year == 2024
    assert parsed[0].messages[0].name == "Maya"
    assert [len(e.messages) for e in parsed] == [2, 2]


def test_json_lines_are_split_at_newlines_only(tmp_path: Path) -> None:
    """JSON keeps U+2028, U+2029 and U+0085 unescaped inside strings (json.dumps with
    ensure_ascii=False writes them so), but `str.splitlines` also breaks lines there: a
    valid file failed as "line 1: invalid JSON: Unterminated string"."""
    from mem0g.cli import read_episodes

    said = ["one\u2028two", "three\u2029four", "five\x85six"]
    path = tmp_path / "chat.jsonl"
    lines = [json.dumps({"content": c}, ensure_ascii=False) for c in said]
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    episodes = read_episodes(path, batch=1)
    assert [e.messages[0].content for e in episodes] == said
    assert [e.where for e in episodes] == ["line 1", "line 2", "line 3"]


@pytest.mark.parametrize("name", ["chat.json", "chat.jsonl"])
def test_a_file_with_a_byte_order_mark_is_read(tmp_path: Path, name: str) -> None:
    """Windows tools (Notepad, PowerShell 5's Out-File) start UTF-8 with a byte order mark;
    such a file failed as "invalid JSON at line 1, column 1: Unexpected UTF-8 BOM"."""
    from mem0g.cli import read_episodes

    path = tmp_path / name
    body = [{"content": "Alice lives in Paris"}, {"content": "Bob likes jazz"}]
    text = json.dumps(body) if name.endswith(".json") else "\n".join(map(json.dumps, body))
    path.write_text("\ufeff" + text, encoding="utf-8")
    episodes = read_episodes(path, batch=1)
    assert [e.messages[0].content for e in episodes] == [m["content"] for m in body]


def test_a_file_of_an_openai_transcript_skips_its_tool_calls(tmp_path: Path) -> None:
    """An assistant message that only calls tools (`content: null`, `tool_calls`) stopped
    the whole file as "message without content"; it is skipped, in plain lists and in
    episodes, and a file of nothing else is refused."""
    from mem0g.cli import InputError, read_episodes

    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}
    said = [{"content": "Alice lives in Paris"}, call, {"role": "tool", "content": "Paris"}]
    plain = tmp_path / "chat.json"
    plain.write_text(json.dumps(said), encoding="utf-8")
    assert [[m.content for m in e.messages] for e in read_episodes(plain, batch=2)] == [
        ["Alice lives in Paris", "Paris"]
    ]
    episodes = tmp_path / "episodes.jsonl"
    episodes.write_text(json.dumps({"messages": said}), encoding="utf-8")
    assert [m.role for m in read_episodes(episodes)[0].messages] == ["user", "tool"]
    only = tmp_path / "only.json"
    only.write_text(json.dumps([call]), encoding="utf-8")
    with pytest.raises(InputError, match="no message with text"):
        read_episodes(only)


def test_delete_without_a_user_needs_all_users(cli: Cli) -> None:
    for user in ("alice", "bob"):
        assert cli("add", "Bob likes jazz", "-u", user, "--agent", "dj").exit_code == 0
    refused = cli("delete", "--agent", "dj")
    assert refused.exit_code == 2
    assert "--all-users" in _error_line(refused)
    assert cli.stats()["tenants"] == 2
    done = cli("delete", "--agent", "dj", "--all-users", "--yes")
    assert done.exit_code == 0, done.output
    assert cli.stats()["tenants"] == 0


def test_export_then_import_into_another_store(cli: Cli, tmp_path: Path) -> None:
    assert cli("add", "Alice lives in Paris", "-u", "alice", "-t", "2024-01-01").exit_code == 0
    assert cli("add", "Alice moved to Berlin", "-u", "alice", "-t", "2024-06-01").exit_code == 0
    archive = tmp_path / "backup.jsonl"
    exported = cli("export", "-o", str(archive))
    assert exported.exit_code == 0, exported.output
    assert "exported 1 tenants" in exported.stderr
    assert "1/1" in exported.stderr  # the progress bar over tenants, finished
    other = Cli(tmp_path / "other", cli.env)
    imported = other("import", str(archive))
    assert imported.exit_code == 0, imported.output
    assert "1/1" in imported.stderr and "imported" in imported.stderr
    assert other.stats() == cli.stats()
    assert other("dump", "-u", "alice").stdout == cli("dump", "-u", "alice").stdout
    refused = other("import", str(archive))
    assert refused.exit_code == 2 and "--merge" in _error_line(refused, progress=True)
    assert other("import", str(archive), "--merge").exit_code == 0
    assert other.stats() == cli.stats()
    newer = tmp_path / "newer.jsonl"
    lines = archive.read_text().splitlines()
    header = lines[0].replace(f'"version":{VERSION}', '"version":99')
    assert header != lines[0]
    newer.write_text("\n".join([header, *lines[1:]]))
    too_new = Cli(tmp_path / "third", cli.env)("import", str(newer))
    assert too_new.exit_code == 2 and "upgrade mem0g" in _error_line(too_new, progress=True)
    batched = Cli(tmp_path / "fourth", cli.env)
    assert batched("import", str(archive), "--batch", "0").exit_code == 2  # nothing opened
    assert batched("import", str(archive), "--batch", "50").exit_code == 0
    assert batched("dump", "-u", "alice").stdout == cli("dump", "-u", "alice").stdout


def test_export_and_import_of_a_tenant_named_like_markup(cli: Cli, tmp_path: Path) -> None:
    """The progress bar shows each tenant's name as it is: read as rich markup, a user id
    "[/x]" stopped the export and the import with a MarkupError traceback."""
    assert cli("add", "hello", "--no-infer", "-u", "[/x]").exit_code == 0
    archive = tmp_path / "backup.jsonl"
    exported = cli("export", "-o", str(archive))
    assert exported.exit_code == 0, exported.output
    assert "exported user '[/x]'" in exported.stderr
    other = Cli(tmp_path / "other", cli.env)
    imported = other("import", str(archive))
    assert imported.exit_code == 0, imported.output
    assert "imported user '[/x]'" in imported.stderr
    assert other.stats() == cli.stats()


def test_entities_show_prints_the_tenant_verbatim(cli: Cli) -> None:
    assert cli("add", "Alice lives in Paris", "-u", "[/x]").exit_code == 0
    [alice] = [e for e in cli.json("entities", "list", "-u", "[/x]") if e["name"] == "Alice"]
    shown = cli("entities", "show", alice["id"], "-u", "[/x]")
    assert shown.exit_code == 0, shown.output
    assert "user '[/x]'" in shown.stdout


def test_import_reads_an_archive_from_a_pipe(cli: Cli, tmp_path: Path) -> None:
    """`mem0g import <(zcat backup.jsonl.gz)` or `... | mem0g import /dev/stdin`: a pipe
    reads once (counting its tenants for the bar first left nothing to import)."""
    assert cli("add", "Alice lives in Paris", "-u", "alice").exit_code == 0
    text = cli("export", "--no-embeddings").stdout
    read, write = os.pipe()

    def feed() -> None:
        with os.fdopen(write, "w", encoding="utf-8") as pipe:
            pipe.write(text)

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        other = Cli(tmp_path / "other", cli.env)
        imported = other("import", f"/dev/fd/{read}")
    finally:
        feeder.join()
        os.close(read)
    assert imported.exit_code == 0, imported.output
    assert "imported 1 tenants" in imported.stdout
    assert other("dump", "-u", "alice").stdout == cli("dump", "-u", "alice").stdout


def test_a_dash_is_stdout_and_stdin(cli: Cli, tmp_path: Path, monkeypatch) -> None:
    """`export -o -` and `dump -o -` wrote a file named "-", and `import -` and `add --file -`
    looked for one; "-" is stdout or stdin, as in most command-line tools."""
    monkeypatch.chdir(tmp_path)
    assert cli("add", "Alice lives in Paris", "-u", "alice").exit_code == 0
    text = cli("export", "--no-embeddings").stdout
    again = cli("export", "--no-embeddings", "-o", "-").stdout
    assert again.splitlines()[1:] == text.splitlines()[1:]  # the header holds the time
    assert cli("dump", "-u", "alice", "-o", "-").stdout == cli("dump", "-u", "alice").stdout
    assert not (tmp_path / "-").exists()
    other = Cli(tmp_path / "other", cli.env)
    imported = other("import", "-", input=text)
    assert imported.exit_code == 0, imported.output
    assert "imported 1 tenants from stdin" in imported.stdout
    assert other("dump", "-u", "alice").stdout == cli("dump", "-u", "alice").stdout
    said = json.dumps([{"content": "Bob likes jazz"}])
    added = other("add", "--file", "-", "--no-infer", "-u", "bob", input=said)
    assert added.exit_code == 0, added.output
    assert other.stats("-u", "bob")["facts"] == 1


def test_an_archive_that_is_not_utf8_is_named(cli: Cli, tmp_path: Path) -> None:
    """A byte that is no UTF-8 in an archive ended the import with Python's "'utf-8' codec
    can't decode byte 0xff in position 428", naming neither the file nor what was imported."""
    assert cli("add", "hello", "--no-infer", "-u", "alice").exit_code == 0
    text = cli("export", "--no-embeddings").stdout.encode()
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(text.replace(b"hello", b"h\xffllo"))
    other = Cli(tmp_path / "other", cli.env)
    refused = other("import", str(bad))
    assert refused.exit_code == 2
    assert f"{bad}: not UTF-8 text" in _error_line(refused, progress=True)
    assert "0 tenants before it were imported" in _error_line(refused, progress=True)


def test_a_closed_pipe_ends_the_output_quietly(cli: Cli) -> None:
    """`mem0g export | head -1`: the reader leaving is no error to print (exit 1, as click
    does for the commands that print tables), so stderr keeps nothing but the progress."""
    assert cli("add", "hello", "--no-infer", "-u", "alice").exit_code == 0
    env = {k: v for k, v in os.environ.items() if k not in cli.env}
    env |= {k: v for k, v in cli.env.items() if v is not None}
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    try:
        for command in (["export"], ["search", "hello", "-u", "alice", "--json"]):
            ended = subprocess.run(
                [sys.executable, "-c", "from mem0g.cli import app; app()",
                 "--path", str(cli.store), *command],
                stdout=write, stderr=subprocess.PIPE, text=True, timeout=120,
                env=env,
            )  # fmt: skip
            assert ended.returncode == 1, ended.stderr
            assert "Error" not in ended.stderr and "Broken pipe" not in ended.stderr, command
    finally:
        os.close(write)


def test_a_refused_archive_makes_no_store(cli: Cli, tmp_path: Path) -> None:
    """A missing file, a directory or no archive at all is bad input (exit 2, one line), found
    before the store opens: a mistyped name leaves no new empty store behind."""
    assert cli("add", "Alice lives in Paris", "-u", "alice").exit_code == 0
    dump = tmp_path / "dump.json"
    assert cli("dump", "-o", str(dump)).exit_code == 0  # a view, not an archive
    target = Cli(tmp_path / "target", cli.env)
    for archive, reason in (
        (tmp_path / "missing.jsonl", "no such file"),
        (tmp_path, "is a directory"),
        (dump, "not a mem0g archive"),
    ):
        refused = target("import", str(archive))
        assert refused.exit_code == 2, refused.output
        assert reason in _error_line(refused).lower()
        assert not target.store.exists()


def test_search_reference_time_reads_time_words_against_it(
    cli: Cli, server: ScriptedLLMServer
) -> None:
    """--reference-time is the "now" of "last year"; a bad one is a clear error."""
    assert cli("add", "Alice works at Acme", "-u", "alice", "-t", "2023-05-01").exit_code == 0
    found = cli.json("search", "what did Alice do last year", "-u", "alice",
                     "--reference-time", "2024-03-01")  # fmt: skip
    assert [f["text"] for f in found["facts"]] == ["Alice works at Acme"]
    assert "time" in found["facts"][0]["sources"]  # said in 2023: inside "last year"
    later = cli.json("search", "what did Alice do last year", "-u", "alice",
                     "--reference-time", "2026-03-01")  # fmt: skip
    assert "time" not in later["facts"][0]["sources"]  # 2025 holds nothing of hers
    india = cli.json("search", "what did Alice do last year", "-u", "alice",
                     "--reference-time", "2024-01-01T02:00:00+05:30")  # fmt: skip
    assert "time" in india["facts"][0]["sources"]  # 2024 there: 2023 is last year, not 2022
    bad = cli("search", "x", "-u", "alice", "--reference-time", "soon")
    assert bad.exit_code == 2 and "--reference-time" in _error_line(bad)
