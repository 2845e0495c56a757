"""Find the data files (prompts/, cypher/) in a wheel (mem0g/_data/) or in a source checkout."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(kind: str) -> Path:
    """The directory of `kind` ("prompts" or "cypher"), wherever this install keeps it."""
    for candidate in (_PACKAGE / "_data" / kind, _PACKAGE.parent / kind):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"mem0g data directory {kind!r} is missing from this install")


@cache
def read_text(kind: str, name: str) -> str:
    path = data_dir(kind) / name
    if not path.is_file():
        raise FileNotFoundError(f"mem0g {kind} file {name!r} not found in {path.parent}")
    return path.read_text(encoding="utf-8")


def prompt(task: str) -> str:
    """The system prompt of an LLM task (prompts/<task>.md)."""
    return read_text("prompts", f"{task}.md")
