"""README examples run as written: a broken example fails the suite, not a newcomer."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _python_block_after(heading: str) -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, f"no python block under {heading!r}"
    return match.group(1)


def test_testing_your_own_integration_runs_as_written() -> None:
    code = _python_block_after("Testing your own integration")
    exec(compile(code, f"{README.name}: Testing your own integration", "exec"), {})
