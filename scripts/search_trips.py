"""Round trips per search on Neo4j: how many statements one `Memory.search` sends, by name.

Builds the deterministic memory of scripts/search_identity.py on a throwaway Neo4j server
(`mem0g.testing.neo4j`, emptied first), runs its fixed queries (current, `include_invalid`,
`as_of`; with and without facts), records every read the store sends meanwhile
(`Neo4jGraphStore.recording_reads`), and prints the mean and the maximum per search, by
statement. Prints also the chain: how many reads had to wait for an earlier read of the same
search (the retriever's sequence: link, walk, final read), from the retriever's own order.

    PYTHONPATH=. .venv/bin/python scripts/search_trips.py --out bench-results/trips.json

`--plans` also counts the plans the server makes for the query set (`CALL
db.clearQueryCaches()` reports how many it drops), reads sent apart and packed in one map.
"""

from __future__ import annotations

import argparse
import json
import re
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


def _plans_cleared(store: Any) -> int:
    """Plans the server's query cache held (it is empty afterwards)."""
    with store._connected().session(database=store.database) as session:
        (message,) = session.run("CALL db.clearQueryCaches()").value()
    found = re.search(r"cleared of (\d+) quer", message)
    return int(found.group(1)) if found else 0  # "Query cache already empty."


def plans(memory: Any, store: Any) -> dict[str, Any]:
    """Plans the server makes for the query set's searches (each run once, from an empty
    cache), reads sent apart and packed in one map (graph_store.packed_reads): Neo4j plans a
    statement again for each size bucket of its strings and lists."""
    out: dict[str, Any] = {}
    for packed in (False, True):
        store._use_cypher_options("", packed)
        _plans_cleared(store)
        with store.recording_reads() as seen:
            for tenant in TENANTS:
                ids = tenant.model_dump(exclude_none=True)
                for query in QUERIES:
                    for extra in ({}, {"include_invalid": True}, *({"as_of": d} for d in AS_OF)):
                        memory.search(query, **ids, limit=8, reference_time=REFERENCE, **extra)
        out["packed" if packed else "apart"] = {
            "plans": _plans_cleared(store),
            "statements": len(set(seen)),
            "reads": len(seen),
        }
    return out


def _search_all(memory: Any) -> int:
    """The query set's searches, each once; returns how many."""
    done = 0
    for tenant in TENANTS:
        ids = tenant.model_dump(exclude_none=True)
        for query in QUERIES:
            for extra in ({}, {"include_invalid": True}, *({"as_of": d} for d in AS_OF)):
                memory.search(query, **ids, limit=8, reference_time=REFERENCE, **extra)
                done += 1
    return done


def after_restarts(embedder: Any, rounds: int) -> dict[str, list[float]]:
    """Server CPU per search (ms) over the query set's searches right after a restart of the
    server (a fresh JVM on the same data), reads apart and packed in turn, `rounds` times
    each: the same data, the same machine, minutes apart."""
    from mem0g.stores.neo4j import Neo4jGraphStore
    from mem0g.testing.neo4j import start_neo4j

    server = start_neo4j()
    auth = (server.user, server.password)
    out: dict[str, list[float]] = {"apart": [], "packed": []}
    try:
        with Neo4jGraphStore(server.uri, auth, dims=embedder.dims) as store:
            store.reset()
            for plan in build_plans(embedder):
                store.apply(plan)
        for packed in (False, True) * rounds:
            server.restart()
            store = Neo4jGraphStore(server.uri, auth, dims=embedder.dims, packed_reads=packed)
            memory = _memory(store, embedder)
            try:
                store.stats()  # the schema step at open, not a search
                began = server.cpu_seconds()
                searches = _search_all(memory)
                used = server.cpu_seconds()
                if began is not None and used is not None:
                    cpu = round((used - began) * 1000 / searches, 1)
                    way = "packed" if packed else "apart"
                    out[way].append(cpu)
                    print(f"after a restart, reads {way}: server CPU per search {cpu} ms "
                          f"over {searches} searches", flush=True)  # fmt: skip
            finally:
                memory.close()
    finally:
        server.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("bench-results/search_trips.json"))
    parser.add_argument(
        "--plans", action="store_true", help="also count the plans the server makes, reads "
        "packed and apart (graph_store.packed_reads)"
    )  # fmt: skip
    parser.add_argument(
        "--restarts", type=int, default=0, metavar="N", help="instead: server CPU per search "
        "after a restart, reads apart and packed in turn, N times each"
    )  # fmt: skip
    args = parser.parse_args(argv)
    embedder = make_embedder(EmbedderConfig(provider="hashing"))
    if args.restarts:
        print(json.dumps(after_restarts(embedder, args.restarts)))
        return 0
    result: dict[str, Any] = {}
    with neo4j_store(embedder.dims) as store:
        for plan in build_plans(embedder):
            store.apply(plan)
        for facts in (False, True):
            memory = _memory(store, embedder)
            memory.config.memory.facts = facts
            try:
                result["with_facts" if facts else "graph_only"] = count(memory, store, facts)
                if args.plans:
                    result["with_facts" if facts else "graph_only"]["plans"] = plans(memory, store)
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
        for way, seen in part.get("plans", {}).items():
            print(f"    plans, reads {way}: {seen['plans']} for {seen['statements']} statements "
                  f"read ({seen['reads']} reads)")  # fmt: skip
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
