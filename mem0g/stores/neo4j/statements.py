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
_PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
PACKED = "args"  # the one map parameter of a packed read: $x is read as $args.x


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


def packed(text: str) -> str:
    """`text` reading each parameter from the one map parameter `$args` (`$x` becomes
    `$args.x`; our statement text only, never a value). Neo4j keys its plan cache on the
    text and the parameters' types, and the type of a string or a list carries its size
    bucket: a search statement was planned again for each new length of its query text, word
    list or id list. A map's type carries none, so one plan serves every length."""
    return _PARAMETER.sub(rf"${PACKED}.\1", text)


@functools.cache
def packed_statements() -> dict[str, str]:
    """Every statement as `packed` reads it (only the auto-commit reads are sent so)."""
    return {name: packed(text) for name, text in statements().items()}
