"""Test doubles for mem0g: a scripted OpenAI-compatible LLM server (TEST DOUBLE, not an LLM).

Imported lazily so ``python -m mem0g.testing.server`` runs without a double-import warning.
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
