"""TEST DOUBLE: the rules of the scripted server (mem0g/testing/server.py), apart from HTTP:
a rule's shape checked when it is added, a request's task and JSON payload read from the
chat messages, a rule's ``match`` tested against them, and a response spec turned into the
answer to send (the rule format is in server.py's docstring)."""

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# a failing response callable is logged as the server's own error
logger = logging.getLogger("mem0g.testing.server")

TEST_DOUBLE_LABEL = "mem0g ScriptedLLMServer (TEST DOUBLE: scripted answers, not a real LLM)"
"""Label used in every banner/log line and error message so nobody mistakes this for an LLM."""

Rule = dict[str, Any]
"""One scripted rule; JSON-serialisable except for an optional callable ``response``."""

_RULE_KEYS = frozenset({"task", "match", "response", "responses", "times", "comment"})
_MATCH_KEYS = frozenset({"contains", "messages", "payload"})


@dataclass(frozen=True)
class _Answer:
    """What to send back: either a text (JSON or raw) answer or an HTTP error."""

    text: str = ""
    status: int = 200
    error: str | None = None
    body: Any = None  # the whole HTTP body instead of a completion (broken-server tests)
    content_type: str = "application/json"


class _RuleError(ValueError):
    """A rule is malformed; raised at add time so typos in scripts fail before any request."""


def _validate_rule(rule: Mapping[str, Any], index: int) -> Rule:
    """Check a rule's shape early, because a silently ignored typo makes a test pass wrongly."""
    if not isinstance(rule, Mapping):
        raise _RuleError(f"rule #{index} must be a mapping, got {type(rule).__name__}")
    unknown = set(rule) - _RULE_KEYS
    if unknown:
        raise _RuleError(f"rule #{index} has unknown keys {sorted(unknown)}")
    if ("response" in rule) == ("responses" in rule):
        raise _RuleError(f"rule #{index} needs exactly one of 'response' or 'responses'")
    if "responses" in rule:
        responses = rule["responses"]
        if not isinstance(responses, Sequence) or isinstance(responses, str) or not responses:
            raise _RuleError(f"rule #{index}: 'responses' must be a non-empty list")
    task = rule.get("task", "*")
    if not isinstance(task, str):
        raise _RuleError(f"rule #{index}: 'task' must be a string")
    times = rule.get("times")
    if times is not None and (isinstance(times, bool) or not isinstance(times, int) or times < 0):
        raise _RuleError(f"rule #{index}: 'times' must be a non-negative int")
    match = rule.get("match")
    if match is not None:
        if not isinstance(match, Mapping):
            raise _RuleError(f"rule #{index}: 'match' must be a mapping")
        bad = set(match) - _MATCH_KEYS
        if bad:
            raise _RuleError(f"rule #{index}: unknown match keys {sorted(bad)}")
        for key in ("contains", "messages"):
            needles = match.get(key)
            if needles is not None and not (
                isinstance(needles, str)
                or (isinstance(needles, list) and all(isinstance(c, str) for c in needles))
            ):
                raise _RuleError(f"rule #{index}: '{key}' must be a string or list of strings")
    return dict(rule)


def _all_in(needles: str | list[str], haystack: str) -> bool:
    folded = haystack.casefold()
    return all(n.casefold() in folded for n in ([needles] if isinstance(needles, str) else needles))


def _new_messages_text(payload: dict[str, Any]) -> str:
    """The contents of the payload's own messages, without the context around them."""
    messages = payload.get("messages")
    if not isinstance(messages, list):
        return ""
    return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, Mapping))


def _subset_match(pattern: Any, value: Any) -> bool:
    """Recursive subset match, so scripts pin only the payload parts that matter to a test."""
    if isinstance(pattern, Mapping):
        return isinstance(value, Mapping) and all(
            key in value and _subset_match(sub, value[key]) for key, sub in pattern.items()
        )
    if isinstance(pattern, list):
        return (
            isinstance(value, list)
            and len(pattern) <= len(value)
            and all(_subset_match(p, v) for p, v in zip(pattern, value, strict=False))
        )
    if isinstance(pattern, bool) or isinstance(value, bool):
        # True == 1 in Python; a JSON boolean pattern must not match a number.
        return type(pattern) is type(value) and pattern == value
    return bool(pattern == value)


def _match_holds(match: Mapping[str, Any] | None, payload: dict[str, Any], text: str) -> bool:
    """Evaluate a rule's ``match``: all given keys must hold; no match means always."""
    if not match:
        return True
    if "contains" in match and not _all_in(match["contains"], text):
        return False
    if "messages" in match and not _all_in(match["messages"], _new_messages_text(payload)):
        return False
    return not ("payload" in match and not _subset_match(match["payload"], payload))


def _render(spec: Any, payload: dict[str, Any]) -> _Answer:
    """Turn a response spec into an answer; callables run here, outside the server lock."""
    if callable(spec):
        try:
            spec = spec(payload)
        except Exception as exc:  # a broken benchmark callable should surface, not hang
            logger.exception("%s: response callable failed", TEST_DOUBLE_LABEL)
            return _Answer(status=500, error=f"scripted response callable raised {exc!r}")
    if isinstance(spec, str):
        return _Answer(text=spec)
    if isinstance(spec, Mapping):
        keys = set(spec)
        if keys == {"raw"} and isinstance(spec["raw"], str):
            return _Answer(text=spec["raw"])
        if keys == {"completion"}:
            return _Answer(body=spec["completion"])
        if keys == {"body", "content_type"}:
            return _Answer(body=str(spec["body"]), content_type=str(spec["content_type"]))
        status = spec.get("status")
        if keys <= {"status", "error"} and isinstance(status, int) and not isinstance(status, bool):
            return _Answer(status=status, error=str(spec.get("error", "scripted error")))
    return _Answer(text=json.dumps(spec, ensure_ascii=False))


def _message_text(content: Any) -> str:
    """Flatten message content (string or list of content parts) into plain text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _extract_payload(messages: Any) -> dict[str, Any]:
    """Parse the last user message as the JSON payload; keep unparsable text visible as _raw."""
    if not isinstance(messages, list):
        return {}
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == "user":
            text = _message_text(message.get("content"))
            try:
                parsed = json.loads(text)
            except ValueError:
                return {"_raw": text}
            return parsed if isinstance(parsed, dict) else {"_raw": text}
    return {}


def _request_task(body: Mapping[str, Any], payload: Mapping[str, Any]) -> str | None:
    """Task = the forced/first tool's name when tools are present, else payload["task"]."""
    tools = body.get("tools")
    if isinstance(tools, list) and tools:
        choice = body.get("tool_choice")
        if isinstance(choice, Mapping):
            name = (choice.get("function") or {}).get("name")
            if isinstance(name, str):
                return name
        first = tools[0] if isinstance(tools[0], Mapping) else {}
        name = (first.get("function") or {}).get("name")
        if isinstance(name, str):
            return name
    task = payload.get("task")
    return task if isinstance(task, str) else None
