"""What `mem0g add --file` reads: JSON or JSON Lines of plain messages or of episodes, each
checked before anything is added (docs/add-file-format.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mem0g import validation
from mem0g.cli.common import InputError, _json_error, _parse_time, _read_text, _reason
from mem0g.config import LimitsConfig
from mem0g.types import Message, calls_tools_only

# ---------------------------------------------------------------- input files


@dataclass
class EpisodeInput:
    """One future `Memory.add`: its messages, time, and where in the file it came from."""

    messages: list[Message]
    timestamp: datetime | None
    where: str


@dataclass(frozen=True)
class Checks:
    """What every message must also pass (`Memory.add`'s limits), checked with the file so
    that a message over them stops the command before the first add, not midway."""

    limits: LimitsConfig
    as_facts: bool = False  # --no-infer: each message becomes a fact


def _message(obj: Any, where: str, checks: Checks | None = None) -> Message:
    if not isinstance(obj, dict):
        raise InputError(f"{where}: a message must be a JSON object, got {type(obj).__name__}")
    content = obj.get("content")
    if not (isinstance(content, list) or (isinstance(content, str) and content.strip())):
        raise InputError(f"{where}: message without content")  # a list: text parts (Message)
    data = dict(obj)
    if data.get("timestamp") is not None:
        data["timestamp"] = _parse_time(data["timestamp"], f"{where}: timestamp")
    try:
        message = Message.model_validate(data)
        if checks is not None:
            validation.message(checks.limits, message, where, as_facts=checks.as_facts)
    except ValidationError as err:
        raise InputError(f"{where}: {_reason(err)}") from None
    except ValueError as err:
        raise InputError(str(err)) from None
    return message


def _episode(
    obj: dict[str, Any], where: str, default: datetime | None, checks: Checks | None
) -> EpisodeInput:
    messages = obj.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InputError(f"{where}: 'messages' must be a non-empty list")
    parsed = [
        _message(m, f"{where}, message {i}", checks)
        for i, m in enumerate(messages, 1)
        if not calls_tools_only(m)
    ]
    if not parsed:
        raise InputError(f"{where}: no message with text (only tool calls)")
    own = _parse_time(obj.get("timestamp"), f"{where}: timestamp")
    return EpisodeInput(parsed, own or parsed[0].timestamp or default, where)


def read_episodes(
    path: Path, *, batch: int = 2, timestamp: datetime | None = None, checks: Checks | None = None
) -> list[EpisodeInput]:
    """Parse and validate a whole JSON/JSONL file before anything is added (`checks`: also
    the limits `Memory.add` applies).

    Plain messages are grouped `batch` at a time (2 = one user/assistant exchange); objects
    with a "messages" list are one episode each. An episode's time is its own "timestamp",
    else its first message's, else `timestamp` (--timestamp), else the time of the add.
    """
    text = _read_text(path).removeprefix("\ufeff")  # the BOM of Windows tools' UTF-8
    if not text.strip():
        raise InputError(f"{path}: the file is empty")

    items: list[tuple[str, Any]]
    jsonl = path.suffix.lower() in {".jsonl", ".ndjson"}
    if not jsonl:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as err:
            if err.msg != "Extra data":  # several documents: read it as JSON Lines
                raise _json_error(path, err) from None
            jsonl = True
    if jsonl:
        items = []
        # "\n" alone ends a line ("\r" before it is JSON whitespace): `splitlines` also broke
        # at U+2028, U+2029 and U+0085, which JSON keeps unescaped inside strings
        for lineno, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                items.append((f"line {lineno}", json.loads(line)))
            except json.JSONDecodeError as err:
                raise InputError(f"{path}: line {lineno}: invalid JSON: {err.msg}") from None
    elif isinstance(doc, dict) and "messages" in doc:
        if not isinstance(doc["messages"], list):
            raise InputError(f"{path}: 'messages' must be a list")
        timestamp = _parse_time(doc.get("timestamp"), f"{path}: timestamp") or timestamp
        items = [(f"message {i}", m) for i, m in enumerate(doc["messages"], 1)]
    elif isinstance(doc, list):
        items = [(f"item {i}", m) for i, m in enumerate(doc, 1)]
    else:
        raise InputError(f'{path}: expected a list of messages or {{"messages": [...]}}')
    if not items:
        raise InputError(f"{path}: no messages")
    items = [(where, obj) for where, obj in items if not calls_tools_only(obj)]
    if not items:
        raise InputError(f"{path}: no message with text (only tool calls)")

    is_episode = [isinstance(obj, dict) and "messages" in obj for _, obj in items]
    try:
        if all(is_episode):
            return [_episode(obj, where, timestamp, checks) for where, obj in items]
        if any(is_episode):
            where = items[is_episode.index(True)][0]
            raise InputError(
                f'{where}: an {{"messages": [...]}} episode among plain messages; '
                "use one form per file"
            )
        messages = [_message(obj, where, checks) for where, obj in items]
    except InputError as err:
        raise InputError(f"{path}: {err}") from None
    episodes = []
    for start in range(0, len(messages), batch):
        chunk = messages[start : start + batch]
        first, last = items[start][0], items[start + len(chunk) - 1][0]
        where = first if first == last else f"{first} to {last}"
        episodes.append(EpisodeInput(chunk, chunk[0].timestamp or timestamp, where))
    return episodes
