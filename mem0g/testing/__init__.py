"""Test doubles for mem0g: a scripted OpenAI-compatible LLM server (TEST DOUBLE, not an LLM).

Imported lazily so ``python -m mem0g.testing.server`` runs without a double-import warning.

What lives here: `server.py` (the scripted server: HTTP, recorded requests, `main`),
`matching.py` (its rules: checked, matched, rendered), `script.py` (builders of rule lists),
`neo4j.py` (the real Neo4j launcher: env, Docker or Maven route). Who may import it: tests,
scripts, the demo (scripted mode) and users checking their own integration; nothing on the
memory path. It imports nothing of mem0g but its own modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mem0g.testing.server import (
        TEST_DOUBLE_LABEL,
        RecordedRequest,
        Rule,
        ScriptedLLMServer,
    )

__all__ = ["TEST_DOUBLE_LABEL", "RecordedRequest", "Rule", "ScriptedLLMServer"]


def __getattr__(name: str) -> Any:
    """Resolve public names from the server module on first use."""
    if name in __all__:
        from mem0g.testing import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
