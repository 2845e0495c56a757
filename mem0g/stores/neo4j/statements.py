"""The `.cypher` files: every statement lives in ``cypher/*.cypher`` as a named block
(``// name: x``), parsed once per process. Values only ever travel as parameters."""

from __future__ import annotations

import functools
import re

from mem0g.resources import read_text

CYPHER_FILES = (
    "schema", "write", "facts", "read", "retrieval", "export", "delete", "entities", "lexical",
    "archive", "links", "walk", "warmup",
)  # fmt: skip


_HEADER = re.compile(r"//\s*name:\s*([A-Za-z_][A-Za-z0-9_]*)\s*")


def parse_statements(text: str) -> dict[str, str]:
    """Split a .cypher file into named statements.

    ``// name: x`` opens statement ``x``; it runs to the next header. Other whole-line ``//``
    comments are dropped, as is the closing ``;`` (the driver sends one statement at a time).
    """
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        header = _HEADER.fullmatch(line.strip())
        if header:
            if header.group(1) in blocks:
                raise ValueError(f"statement {header.group(1)!r} is defined twice")
            current = blocks[header.group(1)] = []
        elif current is not None and not line.lstrip().startswith("//"):
            current.append(line.rstrip())
    out = {
        name: "\n".join(lines).strip().removesuffix(";").rstrip() for name, lines in blocks.items()
    }
    if empty := [name for name, body in out.items() if not body]:
        raise ValueError(f"empty statements: {', '.join(empty)}")
    return out


@functools.cache
def statements() -> dict[str, str]:
    """Every named statement of every cypher/ file, parsed once per process."""
    merged: dict[str, str] = {}
    for kind in CYPHER_FILES:
        for name, body in parse_statements(read_text("cypher", f"{kind}.cypher")).items():
            if name in merged:
                raise ValueError(f"statement {name!r} is defined in two cypher files")
            merged[name] = body
    return merged
