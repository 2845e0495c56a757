"""The bundled sample conversation (sample.json), its scripted answers (script.json), the tenant
it is stored for, and the questions the demo asks of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SAMPLE_PATH = Path(__file__).with_name("sample.json")
SCRIPT_PATH = Path(__file__).with_name("script.json")
USER_ID = "maya"

QUERIES: list[tuple[str, str | None]] = [
    ("Where does Maya live?", None),
    ("Where did Maya live in spring 2023?", "2023-04-15"),
    ("Who works with Sam?", None),
    ("What can't Maya eat?", None),
    ("Where does Leo Park work?", None),
    ("Where did Leo Park work in autumn 2023?", "2023-10-15"),
]
HITS_SHOWN = 5
FACT_HITS_SHOWN = 3
CONTEXT_QUERY = "What can't Maya eat?"
CONTEXT_LIMIT = 5


def load_sessions(path: Path = SAMPLE_PATH) -> list[dict[str, Any]]:
    """The bundled sample: a list of {"title", "timestamp", "messages"} (also a valid input of
    `mem0g add --file`)."""
    sessions = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(sessions, list) or not sessions:
        raise ValueError(f"{path}: expected a non-empty list of sessions")
    return sessions
