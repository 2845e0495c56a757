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
    try:  # a lone surrogate ("\ud800" in JSON) is a str, but no store or model takes it
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(
            f"{what} is not valid Unicode: a lone surrogate at character {err.start}"
        ) from None
    return value


MAX_TENANT_KEY_CHARS = 5_000
"""The longest tenant key (`Tenant.key`: the ids as JSON, a character outside ASCII written as
a 6- or 12-character escape) a store takes. Neo4j indexes the key on every node, alone and
beside an entity key of up to 2 KB (512 characters of 4 bytes), and an index key stops near
8 KB ("Property value is too large to index"): three 256-character ids in letters outside
the BMP make a 9,228-character key, which failed the add after all its LLM calls."""


MAX_LIMIT = 100_000_000
"""The largest `limit` of a search. A search reads up to 3 x limit candidates (the pool a
time window re-ranks), and Neo4j takes list bounds as 32-bit integers: past 715,827,882 a
query naming a time failed there ("Expected an integer between -2147483648 and 2147483647")
while the embedded store answered it, and from 2**63 both failed with an OverflowError."""


def tenant(
    limits: LimitsConfig, user_id: Any = None, agent_id: Any = None, run_id: Any = None
) -> Tenant:
    """The tenant (or filter) of a call; ids are strings of bounded length, and together
    they make a key of bounded length (`MAX_TENANT_KEY_CHARS`)."""
    for name, value in (("user_id", user_id), ("agent_id", agent_id), ("run_id", run_id)):
        if value is not None:
            text(value, name, limits.max_id_chars)
    found = Tenant(user_id=user_id, agent_id=agent_id, run_id=run_id)
    if len(found.key) > MAX_TENANT_KEY_CHARS:
        raise ValueError(
            f"user_id, agent_id and run_id make a tenant key of {len(found.key)} characters "
            f"(JSON: a character outside ASCII is written as 6 or 12); at most "
            f"{MAX_TENANT_KEY_CHARS} are allowed: use shorter ids"
        )
    return found


MAX_ROLE_CHARS = 64
"""The longest role ("user", "assistant", "tool", ...) an add takes, as the service's. A
message's role is stored with it and sent to the LLM with every later add of its tenant
(the recent messages), so an unchecked one (a lone surrogate, a megabyte) broke them all."""


def messages(limits: LimitsConfig, parsed: list[Message], *, as_facts: bool) -> None:
    """Every message's content, role and name within bounds (`as_facts`: each becomes a fact
    verbatim)."""
    for i, found in enumerate(parsed):
        message(limits, found, f"message {i}", as_facts=as_facts)


def message(limits: LimitsConfig, found: Message, what: str, *, as_facts: bool) -> None:
    """One message's content, role and name within bounds; `what` names it in the error
    ("message 2", or "line 7" of a file `mem0g add --file` checks before its first add)."""
    limit = min(limits.max_message_chars, limits.max_fact_chars if as_facts else 10**12)
    text(found.content, f"{what}'s content", limit)
    text(found.role, f"{what}'s role", MAX_ROLE_CHARS)
    if found.name is not None:
        text(found.name, f"{what}'s name", limits.max_name_chars)
