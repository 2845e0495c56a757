"""Every Python and shell block in README.md and docs/*.md is part of the suite: a broken
example fails CI, not a newcomer.

- Python blocks run as written (README's against the scripted TEST DOUBLE LLM server through
  OPENAI_BASE_URL; the Neo4j one against the session's real server through NEO4J_URI).
- Every `mem0g ...` command of the shell blocks runs (test_the_docs_mem0g_commands_run):
  all of them, each `[--opt]` and `a|b` variant, in the docs' order, as one shell session
  against one fresh embedded store in a temp dir, the LLM being the test double, in this
  process through typer's CliRunner (one MiniLM load for all). Placeholders (FACT_ID,
  ENTITY_ID, KEEP_ID, FILE, DIR, ...) get real values from earlier commands or the store;
  each command must exit 0 and show it did its job (search finds Paris, history shows the
  fact's events, a restore holds what was exported, `dump -o` writes what `dump` prints).
  So the blocks must work top to bottom, as a reader runs them. NOT_RUN lists the mem0g
  commands that are only checked, with the reason (servers that run until stopped, the
  evaluations, a Neo4j store); a command added to a block runs unless it is listed there.
- Everything else in the shell blocks is a long job (installs, benchmarks, evaluation
  scripts, Neo4j server scripts, docker), so it is checked, not run: every `mem0g ...` is
  also parsed by the real CLI (subcommand, option, choice and required argument), `make T`
  must be a Makefile target, `python scripts/X.py --opt` must name a script that declares
  `--opt`, `pytest` paths and markers must exist; `[--opt]` and `a|b` are checked each way.
A block in an unknown language, or a command this file does not know how to check, fails.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import re
import shlex
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple, cast

import cli_runner
import pytest
from cli_runner import CliRunner
from typer.testing import Result

from mem0g.cli import app
from mem0g.testing import ScriptedLLMServer
from mem0g.testing.script import add_everything, turn

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = ("bash", "sh", "shell", "console")


class Block(NamedTuple):
    path: Path
    line: int
    lang: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks() -> list[Block]:
    found = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"^```(\w+)\n(.*?)^```", text, re.DOTALL | re.MULTILINE):
            line = text.count("\n", 0, match.start()) + 1
            found.append(Block(path, line, match.group(1), match.group(2)))
    return found


def _id(block: Block) -> str:
    return block.id


PYTHON = [b for b in blocks() if b.lang == "python"]
SHELLS = [b for b in blocks() if b.lang in SHELL]


def test_every_block_is_python_shell_or_data() -> None:
    """A block in another language would silently escape these tests."""
    known = {"python", *SHELL, "json", "jsonl", "cypher", "text", "mermaid"}
    assert {b.lang for b in blocks()} <= known, {b.id: b.lang for b in blocks()}
    assert len(PYTHON) >= 3 and len(SHELLS) >= 6  # the collector finds them


# ---------------------------------------------------------------- python blocks


def _readme_python_rules() -> list[dict[str, Any]]:
    """What the test double answers for README's "Python" block (a script, not a model)."""
    return [
        *turn(
            "moved to Paris",
            [("Alice", "person"), ("Paris", "city")],
            [("Alice", "lives_in", "Paris", "2023-08-01")],
            facts=["Alice lives in Paris"],
        ),
        add_everything(),
        {"task": "update_memory", "response": {"operations": [{"op": "ADD", "new_index": 0}]}},
        {"task": "summarize", "response": {"summary": "Alice moved to Paris (test double)."}},
    ]


def _run(block: Block) -> None:
    exec(compile(block.code, block.id, "exec"), {"__name__": "__docs__"})


@pytest.mark.parametrize(
    "block", [b for b in PYTHON if b.path.name == "README.md"], ids=lambda b: b.id
)
def test_readme_python_blocks_run(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # "./memory" and other relative paths land here
    monkeypatch.setenv("MEM0G_HOME", str(tmp_path / "home"))
    with ScriptedLLMServer(_readme_python_rules()) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-double")
        _run(block)
        if "./memory" in block.code:
            assert (tmp_path / "memory" / "graph.db").is_file()
            assert llm.calls("extract_entities") == 1  # the block's one inferred add


@pytest.mark.neo4j
@pytest.mark.parametrize(
    "block", [b for b in PYTHON if b.path.name != "README.md"], ids=lambda b: b.id
)
def test_docs_python_blocks_run(
    block: Block, neo4j_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEO4J_URI", neo4j_server.uri)  # the launcher takes a running server
    monkeypatch.setenv("NEO4J_USERNAME", neo4j_server.user)
    monkeypatch.setenv("NEO4J_PASSWORD", neo4j_server.password)
    _run(block)


# ---------------------------------------------------------------- shell blocks


def _uncommented(line: str) -> str:
    """The line without its `# comment` (a # inside quotes is text)."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def _keep_some(command: str, keep: tuple[bool, ...]) -> str:
    parts = iter(keep)
    return re.sub(r"\[([^\]]*)\]", lambda m: m.group(1) if next(parts) else "", command)


def _lines(block: Block) -> Iterator[str]:
    """The command lines of a shell block: continuations joined; comments, blank lines and a
    console block's output (what is not a `$ ` line) left out."""
    for line in block.code.replace("\\\n", " ").splitlines():
        if block.lang == "console":  # commands are the `$ ` lines; the rest is their output
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if line.strip() and not line.lstrip().startswith("#"):
            yield line


def _variants(line: str) -> Iterator[list[str]]:
    """The commands a documentation line stands for: `;` and ` | ` separate commands,
    `[...]` is optional (checked with and without), `a|b` in a token is either."""
    for command in re.split(r";| \| ", _uncommented(line)):
        if not command.strip():
            continue
        optional = re.findall(r"\[([^\]]*)\]", command)
        for keep in itertools.product((False, True), repeat=len(optional)):
            tokens = shlex.split(_keep_some(command, keep))
            choices = [t.split("|") if "|" in t else [t] for t in tokens]
            for picked in itertools.product(*choices):
                yield list(picked)


class Parsed(NamedTuple):
    names: tuple[str, ...]  # the subcommand's path: ("entities", "merge")
    params: dict[str, Any]  # the leaf command's parameters
    root: dict[str, Any]  # the root's: --path, --config


def _mem0g(args: list[str]) -> Parsed:
    """Parse like the real CLI, down to the leaf subcommand, without running anything."""
    from mem0g.cli.args import rearrange

    command: Any = cli_runner.command(app)  # built once: this runs for every docs command
    ctx = command.make_context("mem0g", rearrange(command, None, args))
    root, names = dict(ctx.params), []
    while hasattr(command, "get_command"):  # a group: resolve and parse its subcommand
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        assert rest, f"mem0g {' '.join(args)}: no subcommand"
        name, command, rest = command.resolve_command(ctx, rest)
        names.append(name)
        ctx = command.make_context(name, rest, parent=ctx)
    return Parsed(tuple(names), dict(ctx.params), root)


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][\w-]*):", text, re.MULTILINE))


def _script(args: list[str]) -> None:
    path = ROOT / args[0]
    assert path.is_file(), f"{args[0]} does not exist"
    source = path.read_text(encoding="utf-8")
    for package in re.findall(r"^from (\w+)\.\w+ import", source, re.MULTILINE):
        if (path.parent / package / "__init__.py").is_file():  # a thin entry: its package
            source += "".join(
                f.read_text(encoding="utf-8") for f in (path.parent / package).glob("*.py")
            )
    for option in (a.split("=", 1)[0] for a in args[1:] if a.startswith("--")):
        assert f'"{option}"' in source, f"{args[0]} declares no {option}"


def _pytest(args: list[str]) -> None:
    markers = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    it = iter(args)
    for arg in it:
        if arg == "-m":
            marker = next(it).removeprefix("not ")
            assert f'"{marker}:' in markers, f"no pytest marker {marker!r}"
        elif not arg.startswith("-"):
            assert (ROOT / arg.split("::")[0]).exists(), f"no test path {arg}"


def _is_assignment(arg: str) -> bool:
    return re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", arg) is not None


def _check(args: list[str]) -> None:
    while args and _is_assignment(args[0]):
        args = args[1:]  # VAR=value before the command
    if args and args[0] == "export":  # export VAR=value ...: nothing to run
        assert all(_is_assignment(a) for a in args[1:]), args
        return
    head, rest = args[0], args[1:]
    if head == "mem0g" or head.endswith("/mem0g"):
        _mem0g(rest)
    elif head == "make":
        targets = [a for a in rest if "=" not in a and not a.startswith("-")]
        assert set(targets) <= _make_targets(), f"make {targets}: no such target"
    elif head in ("python", "python3") or head.endswith("/python"):
        if rest[:2] == ["-m", "pytest"]:
            _pytest(rest[2:])
        else:
            _script(rest)
    elif head.startswith("scripts/"):
        _script(args)
    elif head == "docker":
        files = [rest[i + 1] for i, a in enumerate(rest) if a == "-f"]
        assert files and all((ROOT / f).is_file() for f in files), args
    else:
        raise AssertionError(f"the docs test does not know how to check {head!r}")


@pytest.mark.parametrize("block", SHELLS, ids=_id)
def test_shell_blocks_name_real_commands_and_options(block: Block) -> None:
    checked = 0
    for line in _lines(block):
        for args in _variants(line):
            try:
                _check(args)
            except Exception as err:  # click's UsageError, an assertion: say which line
                raise AssertionError(f"{block.id}: {' '.join(args)}: {err}") from err
            checked += 1
    assert checked, f"{block.id}: no command in the block"


def test_the_shell_checker_catches_mistakes() -> None:
    """The checks above can fail: a wrong option, subcommand, choice or target is caught."""
    for bad in (
        "mem0g search x -u a --as-off 2023",
        "mem0g entities lst -u a",
        "mem0g dump --format yaml",
        "mem0g history",
        "make benchmark",
        "python scripts/bench_search.py --no-such-option",
        "python -m pytest -m modle tests/test_names.py",
    ):
        with pytest.raises(Exception):  # noqa: B017 (click or assertion errors alike)
            for args in _variants(bad):
                _check(args)


# ---------------------------------------------------------------- shell blocks: mem0g runs

# The `mem0g` commands of the docs that are only checked (above), not run, and why. Every
# other `mem0g` command of a shell block runs (test_the_docs_mem0g_commands_run); a reason
# no command needs any more fails that test, so this list stays the true one.
NOT_RUN: dict[str, str] = {
    "serve": "a server that runs until stopped; its `--check` variant runs, and "
    "tests/test_service_*.py start it for real",
    "mcp http": "an HTTP server that runs until stopped (tests/test_service_mcp*.py serve it)",
    "eval": "evaluations of datasets we do not ship (LoCoMo, LongMemEval) with hundreds of LLM "
    "calls; tests/test_eval.py runs them on small fixtures",
    "neo4j": "the store is the Neo4j server the block's `export` names (bolt://db:7687); "
    "tests/test_archive.py imports into a real Neo4j",
}


def _not_run(parsed: Parsed, env: dict[str, str]) -> str | None:
    """The NOT_RUN reason that holds for a command, if any."""
    if env.get("MEM0G_GRAPH_STORE__PROVIDER") == "neo4j":
        return "neo4j"
    if parsed.names == ("serve",) and not parsed.params["check"]:
        return "serve"
    if parsed.names == ("mcp",) and parsed.params["transport"].value == "http":
        return "mcp http"
    if parsed.names[:1] == ("eval",):
        return "eval"
    return None


PLACEHOLDERS = ("FACT_ID", "ENTITY_ID", "KEEP_ID", "OTHER_ID", "MERGE_ID", "FILE", "DIR")


def _add_every_fact(payload: dict[str, Any]) -> dict[str, Any]:
    return {"operations": [{"op": "ADD", "new_index": new["index"]} for new in payload["new"]]}


def _session_rules() -> list[dict[str, Any]]:
    """What the test double answers for the docs' adds: README's sentence and the turns of
    docs/examples/ (what a model would extract, written down); `doctor`'s probe is a
    summarize call."""
    return [
        *turn(
            "moved to Paris",
            [("Alice", "person"), ("Paris", "city")],
            [("Alice", "lives_in", "Paris", "2023-08-01")],
            facts=["Alice lives in Paris"],
        ),
        *turn(
            "moved to Lisbon",
            [("Maya", "person"), ("Lisbon", "city"), ("Tidewater Labs", "organization")],
            [("Maya", "lives_in", "Lisbon"), ("Maya", "works_at", "Tidewater Labs")],
            facts=["Maya lives in Lisbon", "Maya works at Tidewater Labs"],
        ),
        *turn(
            "My sister Inês",
            [("Maya", "person"), ("Inês", "person")],
            [("Inês", "sister_of", "Maya")],
            facts=["Maya's sister is Inês"],
        ),
        *turn(
            "learning the cello",
            [("Maya", "person"), ("cello", "instrument")],
            [("Maya", "plays", "cello")],
            facts=["Maya is learning the cello"],
        ),
        *turn(
            "teacher is called Rui",
            [("Rui", "person"), ("Maya", "person")],
            [("Rui", "teaches", "Maya")],
            facts=["Maya's cello teacher is Rui"],
        ),
        add_everything(),
        {"task": "update_memory", "response": _add_every_fact},
        {"task": "summarize", "response": {"summary": "Alice's and Maya's news (test double)."}},
    ]


# what an MCP client sends `mem0g mcp`: the handshake, then a search
MCP_REQUESTS: list[dict[str, Any]] = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test_docs", "version": "0"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "search_memory", "arguments": {"query": "where does alice live?"}},
    },
]


class _McpClient(io.RawIOBase):
    """The stdin of `mem0g mcp` as an MCP client feeds it: MCP_REQUESTS, then the end of input
    once the last request is answered on `answers` (the server's stdout), or after 60 s."""

    def __init__(self, answers: io.BytesIO) -> None:
        self.pending = b"".join(json.dumps(r).encode() + b"\n" for r in MCP_REQUESTS)
        self.answers = answers
        self.last = f'"id":{MCP_REQUESTS[-1]["id"]},'.encode()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self.pending:  # what a client does next: wait for its answer, then hang up
            deadline = time.monotonic() + 60
            while self.last not in self.answers.getvalue() and time.monotonic() < deadline:
                time.sleep(0.01)
            return 0
        size = min(len(buffer), len(self.pending))
        buffer[:size], self.pending = self.pending[:size], self.pending[size:]
        return size


class Done(NamedTuple):
    """What a command did: exit code, stdout, stderr, the traceback of an exception."""

    code: int
    out: str
    err: str
    failure: str


def _traceback(error: BaseException) -> str:
    return "".join(traceback.format_exception(error))


class _Session:
    """Every `mem0g` command of the docs' shell blocks, run in the docs' order as one shell
    session would: one working directory (docs/ linked into it, so `docs/examples/...`
    resolves, and `backup.jsonl` or `keys.json` land there), one store (MEM0G_HOME), the
    test-double LLM, and typer's CliRunner in this process, so MiniLM loads once for all.
    Placeholders take real values from earlier commands or the store; `/tmp/...` paths are
    moved into the session's directory. Each command must exit 0, and `_expect` checks what
    it printed or wrote."""

    def __init__(self, tmp: Path, llm: ScriptedLLMServer) -> None:
        self.tmp = tmp
        (tmp / "docs").symlink_to(ROOT / "docs")
        (tmp / "config.json").write_text("{}", encoding="utf-8")  # README's `--config`
        self.env: dict[str, str | None] = {
            "MEM0G_HOME": str(tmp / "home"),
            "MEM0G_LLM__BASE_URL": llm.base_url,
            "MEM0G_LLM__API_KEY": "test-double",
            "MEM0G_LLM__MAX_RETRIES": "0",
            "MEM0G_EMBEDDER__PROVIDER": None,  # the default, MiniLM, as a user has it
            "MEM0G_GRAPH_STORE__PATH": None,
            "MEM0G_GRAPH_STORE__PROVIDER": None,
            "MEM0G_MEMORY__GRAPH": None,
            "MEM0G_MEMORY__FACTS": None,
            "MEM0G_MEMORY__SUMMARY": None,
            "OPENAI_API_KEY": None,
            "OPENAI_BASE_URL": None,
            "COLUMNS": "200",  # wide tables: no cell cut in the assertions
        }
        self.runner = CliRunner(env=self.env)
        self.ran: list[str] = []
        self.not_run: dict[str, list[str]] = {}
        self.counter = itertools.count(1)
        self.fact: dict[str, str] = {}  # the fact FACT_ID stands for: id, text
        self.merges: list[dict[str, str]] = []  # merge_id, keep, other: not split back yet
        self.dumps: dict[tuple[str | None, str], str] = {}  # (user, format) -> stdout
        self.exported = -1  # tenants in backup.jsonl
        self.before: Any = None  # stats before an `import --merge`

    def invoke(self, args: list[str], env: dict[str, str] | None = None) -> Result:
        return self.runner.invoke(app, args, env=env)

    def json(self, *args: str) -> Any:
        """The test's own look-ups (not the docs' commands): a command's JSON output."""
        result = self.invoke([*args, "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    def entities(self) -> list[dict[str, Any]]:
        return self.json("entities", "list", "-u", "alice")  # type: ignore[no-any-return]

    # ------------------------------------------------------------ running the blocks

    def run(self, block: Block) -> None:
        env: dict[str, str] = {}  # `export VAR=...` lines hold for the rest of their block
        for line in _lines(block):
            for args in _variants(line):
                prefix = list(itertools.takewhile(_is_assignment, args))
                args = args[len(prefix) :]
                if args[0] == "export":
                    env.update(a.split("=", 1) for a in args[1:])
                elif args[0] == "mem0g":
                    local = dict(a.split("=", 1) for a in prefix)
                    self.command(block, args[1:], {**env, **local})
                # other commands are the long jobs: checked only (test_shell_blocks_name_...)

    def command(self, block: Block, args: list[str], env: dict[str, str]) -> None:
        shown = f"{block.id}: mem0g {' '.join(args)}"
        parsed = _mem0g(args)
        reason = _not_run(parsed, env)
        if reason is not None:
            self.not_run.setdefault(reason, []).append(shown)
            return
        args = self.substitute(args, parsed)
        parsed = _mem0g(args)
        with contextlib.ExitStack() as stack:
            env = {**env, **self.prepare(parsed, stack)}
            if parsed.names == ("mcp",):
                done = self.mcp(args, env)
            else:
                result = self.invoke(args, env=env)
                error = result.exception
                failure = "" if isinstance(error, SystemExit | None) else _traceback(error)
                done = Done(result.exit_code, result.stdout, result.stderr, failure)
            output = f"{done.out}{done.err}{done.failure}"
            assert done.code == 0, f"{shown}\n{' '.join(args)}\n{output}"
            try:
                self.expect(parsed, args, done, env)
            except AssertionError as err:
                raise AssertionError(f"{shown}\n{output}\n{err}") from err
        self.ran.append(shown)

    def mcp(self, args: list[str], env: dict[str, str]) -> Done:
        """`mem0g mcp` (stdio) with an MCP client on its stdin and stdout (CliRunner's stdin
        would end at once, and the server cancels what still runs at the end of stdin)."""
        with self.runner.isolation(env=env) as (stdout, stderr, _):
            answers = cast(io.BytesIO, stdout)
            sys.stdin = io.TextIOWrapper(io.BufferedReader(_McpClient(answers)), encoding="utf-8")
            try:
                command = cli_runner.command(app)
                code = command.main(args, prog_name="mem0g", standalone_mode=False) or 0
                failure = ""
            except Exception as err:  # the test's failure message shows it
                code, failure = 1, _traceback(err)
            return Done(code, stdout.getvalue().decode(), stderr.getvalue().decode(), failure)

    def substitute(self, args: list[str], parsed: Parsed) -> list[str]:
        wanted = {a for a in args if re.fullmatch(r"[A-Z][A-Z_]*", a)}
        unknown = wanted - set(PLACEHOLDERS)
        assert not unknown, f"no value for {sorted(unknown)}: teach _Session.substitute one"
        value: dict[str, str] = {}
        if "FACT_ID" in wanted:  # one fact through history, get, update, forget
            if not self.fact:
                self.fact = next(
                    f
                    for f in self.json("search", "Paris", "-u", "alice")["facts"]
                    if "Paris" in f["text"]
                )
            value["FACT_ID"] = self.fact["id"]
        if "ENTITY_ID" in wanted:
            value["ENTITY_ID"] = self.entities()[0]["id"]
        if parsed.names == ("entities", "split"):  # takes back the oldest merge
            assert self.merges, "a split before any merge"
            merge = self.merges[0]
            value.update(MERGE_ID=merge["merge_id"], KEEP_ID=merge["keep"], OTHER_ID=merge["other"])
        elif {"KEEP_ID", "OTHER_ID"} & wanted:  # a merge: two entities no merge touched
            used = {m[k] for m in self.merges for k in ("keep", "other")}
            free = [e["id"] for e in self.entities() if e["id"] not in used]
            value["KEEP_ID"], value["OTHER_ID"] = free[-2:]
        if "FILE" in wanted:
            fmt = parsed.params.get("fmt")
            suffix = fmt.value if fmt else "out"
            value["FILE"] = str(self.tmp / f"file-{next(self.counter)}.{suffix}")
        if "DIR" in wanted:
            value["DIR"] = str(self.tmp / f"dir-{next(self.counter)}")  # a fresh directory
        return [value.get(a, str(self.tmp / a[5:]) if a.startswith("/tmp/") else a) for a in args]

    def prepare(self, parsed: Parsed, stack: contextlib.ExitStack) -> dict[str, str]:
        """What a command needs besides its arguments: the environment it runs in."""
        if parsed.names == ("import",):
            if parsed.params["merge"]:  # into the store that has the tenants: adds nothing
                self.before = self.json("stats")
                return {}
            # a restore goes into an empty store (one with the tenants refuses it)
            return {"MEM0G_GRAPH_STORE__PATH": str(self.tmp / f"restore-{next(self.counter)}")}
        if parsed.names == ("demo",) and parsed.params["live"] is not False:
            # live = the configured LLM; here a test double that plays the demo's own script
            from mem0g.demo import SCRIPT_PATH

            demo_llm = stack.enter_context(ScriptedLLMServer.from_file(SCRIPT_PATH))
            demo_llm.add_rule({"task": "summarize", "response": {"summary": "(test double)"}})
            return {"MEM0G_LLM__BASE_URL": demo_llm.base_url}
        return {}

    # ------------------------------------------------------------ what each command did

    def expect(self, parsed: Parsed, args: list[str], done: Done, env: dict[str, str]) -> None:
        """A few outputs that show the command did its job, not only that it exited 0."""
        out, params = done.out, parsed.params
        match parsed.names:
            case ("add",) if params["file"] is not None:
                stored = re.search(r"episodes stored\s+│\s+(\d+)/(\d+)", out)
                assert stored and stored[1] == stored[2] != "0"
            case ("add",) if params["infer"]:
                assert "Paris" in out  # what the test double extracted
            case ("add",):  # --no-infer: the text itself is the fact
                assert params["text"] in out
            case ("search",) if "live" in params["query"]:
                # the fact was said on 2023-09-01 and the edge holds from 2023-08-01
                assert ("Paris" in out) == (params["as_of"] is None)
            case ("search",):  # "what did alice do last year?" (2023)
                assert "Paris" in out
            case ("history",):
                assert "ADD" in out and self.fact["text"] in out
            case ("get",):
                assert self.fact["text"] in out
            case ("update",):
                assert f"→ {params['text']}" in out
                self.fact["text"] = params["text"]
            case ("forget",):
                assert "forgot fact" in out
                events = self.json("history", self.fact["id"], "-u", "alice")
                assert [e["event"] for e in events] == ["ADD", "UPDATE", "DELETE"]
            case ("dump",):
                self.dumped(params, out)
            case ("stats",):
                assert re.search(r"entities\s+│\s+[1-9]", out)
            case ("doctor",):
                assert "structured output: mode" in out  # the LLM check reached the double
            case ("demo",):
                assert "Done." in out
                if params["path"] is not None:
                    assert (params["path"] / "graph.db").is_file()
            case ("export",):
                exported = re.search(r"exported (\d+) tenants", done.err)
                assert exported, done.err
                self.exported = int(exported[1])
            case ("import",):
                assert f"imported {self.exported} tenants" in out
                self.imported(params, env)
            case ("reindex",):
                assert "nothing to rebuild" in out
            case ("entities", "list"):
                assert "Alice" in out
            case ("entities", "show"):
                assert self.entities()[0]["name"] in out
            case ("entities", "merge"):
                merge_id = (
                    json.loads(out)["merge_id"]
                    if params["as_json"]
                    else re.findall(r"entities split (\w+)`", out)[0]
                )
                self.merges.append({"merge_id": merge_id, "keep": args[2], "other": args[3]})
            case ("entities", "split"):
                back = self.merges.pop(0)["other"]
                assert back in out and back in {e["id"] for e in self.entities()}
            case ("keys", "add"):
                assert out.strip() and Path(params["keys"]).is_file()
            case ("serve",):
                assert out.startswith("ok: http://")
            case ("mcp",):
                answers = {a["id"]: a for a in map(json.loads, out.splitlines())}
                assert "Paris" in json.dumps(answers[2]["result"])  # alice's, the default user
            case ("delete",):
                assert out.startswith("deleted")
                if params["user"]:
                    assert self.json("stats", "-u", params["user"])["entities"] == 0
            case ("reset",):
                assert self.json("stats")["entities"] == 0

    def dumped(self, params: dict[str, Any], out: str) -> None:
        """`dump -o FILE` writes what `dump` prints; each format looks like itself."""
        key = (params["user"], params["fmt"].value)
        if params["output"] is None:
            self.dumps[key] = out
            text = out
        else:
            text = params["output"].read_text(encoding="utf-8")
            assert text == self.dumps.get(key, text)
        starts = {
            "json": "{",
            "graphml": "<?xml",
            "cypher": "//",
            "mermaid": "flowchart",
            "html": "<!doctype html>",
        }[key[1]]
        assert text.lstrip().lower().startswith(starts.lower()) and "Paris" in text, text[:200]

    def imported(self, params: dict[str, Any], env: dict[str, str]) -> None:
        """A restore holds what was exported; a merge into the same store adds nothing."""
        if params["merge"]:
            assert self.json("stats") == self.before
            return
        restored = Path(env["MEM0G_GRAPH_STORE__PATH"])
        tenants = [
            json.loads(line)["tenant"]
            for line in params["archive"].read_text(encoding="utf-8").splitlines()
            if line.startswith('{"kind": "tenant"')
        ]
        for tenant in tenants:
            scope = [
                arg
                for key, value in tenant.items()
                if value
                for arg in (f"--{key.removesuffix('_id')}", value)
            ]
            here = self.json("stats", *scope)
            there = self.json("--path", str(restored), "stats", *scope)
            assert here == there, (tenant, here, there)


def test_the_docs_mem0g_commands_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every `mem0g` command of every shell block, each `[--opt]` and `a|b` variant, runs in
    the docs' order against one embedded store and exits 0; NOT_RUN lists the exceptions."""
    monkeypatch.chdir(tmp_path)
    with ScriptedLLMServer(_session_rules()) as llm:
        session = _Session(tmp_path, llm)
        for block in SHELLS:
            session.run(block)
    assert set(session.not_run) == set(NOT_RUN), "a NOT_RUN reason no command needs any more"
    assert len(session.ran) >= 60, session.ran


def test_the_session_fails_on_a_failing_command_or_an_unknown_placeholder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run above can fail: a command that exits non-zero, a placeholder with no value."""
    monkeypatch.chdir(tmp_path)
    with ScriptedLLMServer([]) as llm:
        session = _Session(tmp_path, llm)
        for code, message in (
            ("mem0g stats\n", "no mem0g store at"),  # nothing added yet: exit 2
            ("mem0g get SOME_ID -u alice\n", r"no value for \['SOME_ID'\]"),
        ):
            with pytest.raises(AssertionError, match=message):
                session.run(Block(ROOT / "README.md", 1, "bash", code))


def test_the_install_warns_first_when_the_disk_is_short(tmp_path: Path) -> None:
    """`make install` checks free space before pip runs (a first install needs about 7 GB;
    pip's own "No space left on device" came minutes in). It warns, naming the directory
    and the CPU-only route, and goes on: a warm pip cache may need far less."""
    import shutil
    import subprocess

    make = shutil.which("make")
    assert make, "make is on PATH (the README's commands need it)"

    def check(min_free_gb: int) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [make, "--no-print-directory", "-C", str(ROOT), "disk-check"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "TMPDIR": str(tmp_path), "MIN_FREE_GB": str(min_free_gb)},
        )

    short = check(10**9)  # more than any disk
    assert short.returncode == 0, short.stderr
    lines = short.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("[mem0g] warning: ") for line in lines)
    assert f"free in {tmp_path};" in lines[1] and "TORCH_INDEX=" in lines[1]
    plenty = check(0)
    assert (plenty.returncode, plenty.stdout) == (0, "")
