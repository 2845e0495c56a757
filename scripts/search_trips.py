"""Round trips per search on Neo4j: how many statements one `Memory.search` sends, by name.

Builds the deterministic memory of scripts/search_identity.py on a throwaway Neo4j server
(`mem0g.testing.neo4j`, emptied first), runs its fixed queries (current, `include_invalid`,
`as_of`; with and without facts), records every read the store sends meanwhile
(`Neo4jGraphStore.recording_reads`), and prints the mean and the maximum per search, by
statement. Prints also the chain: how many reads had to wait for an earlier read of the same
search (the retriever's sequence: link, walk, final read), from the retriever's own order.

    PYTHONPATH=. .venv/bin/python scripts/search_trips.py --out bench-results/trips.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_identity import (
    AS_OF,
    QUERIES,
    REFERENCE,
    TENANTS,
    _memory,
    build_plans,
    neo4j_store,
)

from mem0g.config import EmbedderConfig
from mem0g.embed import make_embedder


def count(memory: Any, store: Any, facts: bool) -> dict[str, Any]:
    """Per search: the statements sent, by name; mean and max over the query set."""
    per_search: list[Counter[str]] = []
    for tenant in TENANTS:
        ids = tenant.model_dump(exclude_none=True)
        for query in QUERIES:
            for extra in ({}, {"include_invalid": True}, *({"as_of": d} for d in AS_OF)):
                memory.search(query, **ids, limit=8, reference_time=REFERENCE, **extra)  # warm
                with store.recording_reads() as seen:
                    memory.search(query, **ids, limit=8, reference_time=REFERENCE, **extra)
                per_search.append(Counter(seen))
    names = sorted({n for c in per_search for n in c})
    totals = [sum(c.values()) for c in per_search]
    return {
        "searches": len(per_search),
        "facts": facts,
        "mean_reads": sum(totals) / len(totals),
        "max_reads": max(totals),
        "min_reads": min(totals),
        "by_statement": {n: sum(c[n] for c in per_search) / len(per_search) for n in names},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench-results/search_trips.json"))
    args = parser.parse_args(argv)
    embedder = make_embedder(EmbedderConfig(provider="hashing"))
    result: dict[str, Any] = {}
    with neo4j_store(embedder.dims) as store:
        for plan in build_plans(embedder):
            store.apply(plan)
        for facts in (False, True):
            memory = _memory(store, embedder)
            memory.config.memory.facts = facts
            try:
                result["with_facts" if facts else "graph_only"] = count(memory, store, facts)
            finally:
                memory.summaries.close()
                memory._paths.shutdown(wait=True)
                if memory._reads is not None:
                    memory._reads.shutdown(wait=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True))
    for name, part in result.items():
        print(f"{name}: {part['mean_reads']:.2f} reads per search (min {part['min_reads']}, "
              f"max {part['max_reads']}, {part['searches']} searches)")  # fmt: skip
        for statement, mean in part["by_statement"].items():
            print(f"    {statement:28s} {mean:.2f}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
