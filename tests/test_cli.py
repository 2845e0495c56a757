"""Every `mem0g` command through typer's CliRunner, on a temporary embedded store.

The LLM is `ScriptedLLMServer`, a TEST DOUBLE of an OpenAI-compatible API that answers from a
small fact table below (it is not an LLM); embeddings use the offline hashing embedder.
"""

from __future__ import annotations

import io
import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from click.testing import Result
from typer.testing import CliRunner

from mem0g import Memory, __version__
from mem0g.cli import app
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


def _facts(payload: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    text = " ".join(m["content"] for m in payload["messages"])
    return [fact for sentence, fact in FACTS.items() if sentence in text]


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
        self.runner = CliRunner(env=env)

    def __call__(self, *args: str, input: str | None = None) -> Result:
        return self.runner.invoke(app, ["--path", str(self.store), *args], input=input)

    def json(self, *args: str) -> Any:
        result = self(*args, "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    def stats(self, *args: str) -> dict[str, int]:
        return self.json("stats", *args)  # type: ignore[no-any-return]


def _env(tmp_path: Path, base_url: str | None) -> dict[str, str | None]:
    return {
        "MEM0G_HOME": str(tmp_path / "home"),
        "MEM0G_LLM__BASE_URL": base_url,
        "MEM0G_LLM__API_KEY": "test" if base_url else None,
        "MEM0G_LLM__MAX_RETRIES": "0",
        "MEM0G_EMBEDDER__PROVIDER": "hashing",
        "MEM0G_GRAPH_STORE__PATH": None,
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


def test_add_text(cli: Cli, server: ScriptedLLMServer) -> None:
    result = cli("add", "Alice lives in Paris", "-u", "alice", "--timestamp", "2024-03-01")
    assert result.exit_code == 0, result.output
    assert re.search(r"ADD\s+│\s+Alice\s+│\s+lives_in\s+│\s+Paris\s+│\s+2024-03-01", result.stdout)
    assert re.search(r"episodes stored\s+│\s+1/1", result.stdout)
    assert re.search(r"LLM calls\s+│\s+2", result.stdout)
    assert server.calls("extract_entities") == server.calls("establish_relations") == 1
    assert cli.stats("-u", "alice") == {
        "entities": 2,
        "relations": 1,
        "valid_relations": 1,
        "invalid_relations": 0,
        "episodes": 1,
        "tenants": 1,
    }


def test_add_update_invalidates(cli: Cli) -> None:
    assert cli("add", "Alice lives in Paris", "-u", "alice").exit_code == 0
    result = cli("add", "Alice moved to Berlin", "-u", "alice")
    assert result.exit_code == 0, result.output
    assert re.search(r"UPDATE\s+│\s+1", result.stdout)
    assert re.search(r"INVALIDATE\s+│\s+1", result.stdout)
    assert cli.stats("-u", "alice")["invalid_relations"] == 1


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
    assert re.search(r"ADD\s+│\s+3", result.stdout)
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
    assert cli.stats()["episodes"] == 0


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


def test_add_needs_text_or_file(cli: Cli, tmp_path: Path) -> None:
    result = cli("add", "-u", "alice")
    assert result.exit_code == 2
    assert "either TEXT or --file" in _error_line(result)
    result = cli("add", "   ", "-u", "alice")
    assert result.exit_code == 2
    assert "TEXT: message without content" in _error_line(result)


def test_add_without_llm_is_one_clear_error(tmp_path: Path) -> None:
    cli = Cli(tmp_path / "store", _env(tmp_path, None))
    result = cli("add", "Alice lives in Paris", "-u", "alice")
    assert result.exit_code == 1
    assert "no LLM configured" in _error_line(result)


# ---------------------------------------------------------------- search


def test_search_table_and_json(cli: Cli) -> None:
    cli("add", "Alice lives in Paris", "-u", "alice", "-t", "2024-01-01")
    cli("add", "Alice moved to Berlin", "-u", "alice", "-t", "2024-06-01")
    result = cli("search", "where does Alice live", "-u", "alice")
    assert result.exit_code == 0, result.output
    header = result.stdout.splitlines()[1]
    for column in ("score", "source", "relation", "destination", "valid from", "invalid at"):
        assert column in header
    assert re.search(r"Alice\s+│\s+lives_in\s+│\s+Berlin\s+│\s+2024-06-01", result.stdout)
    assert "Paris" not in result.stdout  # ended facts are not current

    data = cli.json("search", "where does Alice live", "-u", "alice", "--include-invalid")
    assert data["query"] == "where does Alice live"
    assert {h["destination"]: h["invalid_at"] for h in data["relations"]} == {
        "Berlin": None,
        "Paris": "2024-06-01T00:00:00Z",
    }
    past = cli.json("search", "Alice", "-u", "alice", "--as-of", "2024-03-01", "--limit", "1")
    assert [h["destination"] for h in past["relations"]] == ["Paris"]


def test_search_nothing_and_bad_input(cli: Cli) -> None:
    result = cli("search", "anything", "-u", "nobody")
    assert result.exit_code == 0
    assert "no relations found" in result.stderr
    result = cli("search", "x", "-u", "alice", "--as-of", "yesterday-ish")
    assert result.exit_code == 2
    assert "--as-of" in _error_line(result)


def test_search_prints_names_verbatim(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rich markup in a name must show as text, not style the table."""
    fact = ("[bold]Eve[/bold]", "person", "likes", "tea", "drink")
    monkeypatch.setitem(FACTS, "[bold]Eve[/bold] likes tea", fact)
    assert cli("add", "[bold]Eve[/bold] likes tea", "-u", "eve").exit_code == 0
    result = cli("search", "Eve tea", "-u", "eve")
    assert "[bold]Eve[/bold]" in result.stdout


# ---------------------------------------------------------------- dump


@pytest.fixture
def history(cli: Cli) -> Cli:
    """A tenant whose Paris fact ended when Alice moved to Berlin."""
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


def test_dump_rejects_unknown_format(history: Cli) -> None:
    result = history("dump", "-u", "alice", "-F", "csv")
    assert result.exit_code == 2


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
    }
    assert history.stats("-u", "bob")["relations"] == 1
    assert "user 'bob'" in history("stats", "-u", "bob").stdout


def test_stats_of_a_new_store(cli: Cli) -> None:
    assert cli.stats() == {
        "entities": 0,
        "relations": 0,
        "valid_relations": 0,
        "invalid_relations": 0,
        "episodes": 0,
        "tenants": 0,
    }


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
    result = Cli(tmp_path / "store", env)("doctor")
    assert result.exit_code == 0, result.output
    assert _rows(result) == {"config": "ok", "llm": "ok", "embedder": "ok", "store": "ok"}
    assert "sk-secret" not in result.stdout and "***wxyz" in result.stdout  # masked
    assert "384 dims" in result.stdout
    assert "reachable" in result.stdout


def test_doctor_with_an_unreachable_llm(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cli = Cli(tmp_path / "store", _env(tmp_path, f"http://127.0.0.1:{port}/v1"))
    result = cli("doctor")
    assert result.exit_code == 1
    assert _rows(result) == {"config": "ok", "llm": "fail", "embedder": "ok", "store": "ok"}
    assert "not reachable" in result.stdout


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
    result = history("delete", "--user", "alice")
    assert result.exit_code == 0, result.output
    assert "deleted 7 entities and relations of user 'alice'" in result.stdout
    assert history.stats("-u", "alice")["entities"] == 0
    assert history.stats("-u", "bob")["relations"] == 1


@pytest.mark.parametrize(
    "args",
    [
        ("add", "Alice lives in Paris"),
        ("search", "Alice"),
        ("delete",),
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
