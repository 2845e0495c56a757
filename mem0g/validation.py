"""Checks of what a caller hands `Memory`, run before any LLM call or store read, the same
for both stores: a wrong type is a TypeError and a bad value a ValueError, each saying what
was wrong; nothing is reinterpreted. The bounds are `MemoryConfig.limits`."""

from __future__ import annotations

from typing import Any

from mem0g.config import LimitsConfig
from mem0g.types import Message, Tenant


def text(value: Any, what: str, limit: int | None = None) -> str:
    """A non-blank string of at most `limit` characters (returned as given)."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, not {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{what} is empty")
    if limit is not None and len(value) > limit:
        raise ValueError(
            f"{what} is {len(value)} characters long; at most {limit} are allowed "
            "(see limits in the configuration)"
        )
    return value


def tenant(
    limits: LimitsConfig, user_id: Any = None, agent_id: Any = None, run_id: Any = None
) -> Tenant:
    """The tenant (or filter) of a call; ids are strings of bounded length."""
    for name, value in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)):
        if value is not None:
            text(value, name, limits.max_id_chars)
    return Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id)


def messages(limits: LimitsConfig, parsed: list[Message], *, as_facts: bool) -> None:
    """Every message's content within bounds (`as_facts`: each becomes a fact verbatim)."""
    limit = min(limits.max_message_chars, limits.max_fact_chars if as_facts else 10**12)
    for i, message in enumerate(parsed):
        text(message.content, f"message {i}'s content", limit)
        if message.name is not None:
            text(message.name, f"message {i}'s name", limits.max_name_chars)
