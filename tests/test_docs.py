"""Every Python and shell block in README.md and docs/*.md is part of the suite: a broken
example fails CI, not a newcomer.

- Python blocks run as written (README's against the scripted TEST DOUBLE LLM server through
  OPENAI_BASE_URL; the Neo4j one against the session's real server through NEO4J_URI).
- Shell blocks are long jobs (installs, benchmarks, evaluations on datasets we do not ship), so
  each command in them is checked, not run: `mem0g ...` is parsed by the real CLI (every
  subcommand, option, choice and required argument), `make T` must be a Makefile target,
  `python scripts/X.py --opt` must name a script that declares `--opt`, `pytest` paths and
  markers must exist. `[--opt]` optional parts and `a|b` alternatives are checked each way.
A block in an unknown language, or a command this file does not know how to check, fails.
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import typer

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


def _mem0g(args: list[str]) -> None:
    """Parse like the real CLI, down to the leaf subcommand, without running anything."""
    from mem0g.cli.args import rearrange

    command: Any = typer.main.get_command(app)
    ctx = command.make_context("mem0g", rearrange(command, None, args))
    while hasattr(command, "get_command"):  # a group: resolve and parse its subcommand
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        assert rest, f"mem0g {' '.join(args)}: no subcommand"
        name, command, rest = command.resolve_command(ctx, rest)
        ctx = command.make_context(name, rest, parent=ctx)


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


def _check(args: list[str]) -> None:
    while args and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", args[0]):
        args = args[1:]  # VAR=value before the command
    if args and args[0] == "export":  # export VAR=value ...: nothing to run
        assert all(re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", a) for a in args[1:]), args
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
    for line in block.code.replace("\\\n", " ").splitlines():
        if block.lang == "console":  # commands are the `$ ` lines; the rest is their output
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
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
