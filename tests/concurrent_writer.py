"""One writer process of tests/test_concurrent_writers.py: opens a `Memory` on the shared
store given as JSON on the command line and adds the given texts in order, as a separate app
worker would. Prints one JSON line per add (its events), so the test can read what happened."""

from __future__ import annotations

import json
import sys

from mem0g import Memory


def main() -> None:
    config, texts, start = json.loads(sys.argv[1])
    with Memory(config) as memory:
        for i, text in enumerate(texts):
            result = memory.add(
                [{"role": "user", "name": "Alice", "content": text}],
                user_id="alice",
                timestamp=f"2024-01-{start + i:02d}T10:00:00",
            )
            events = [
                (c.event.value, c.source, c.relation, c.destination) for c in result.relations
            ]
            print(json.dumps({"text": text, "events": events, "calls": result.usage.calls}))


if __name__ == "__main__":
    main()
