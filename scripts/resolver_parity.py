"""Entity resolution on Neo4j against the embedded store's exact answer, on a large tenant.

Reads every entity of one tenant of a Neo4j database (e.g. the 100k-edge store that
`bench_search.py --store neo4j --keep-server` leaves behind), copies them into an embedded store
in a temporary directory (its search is exact), and then for a sample of the entities:

* self: `similar_entities(exact=True)` with the entity's own vector must return the entity;
* resolve: a variant of its name that the resolver should merge into it ("Dr. X", "X Inc.",
  "X hobby"), never equal to a stored key, so the decision rests on the embedding candidates;
  each Neo4j store's answer (merged into which node, or new) is compared with the embedded one.

Every store first answers --warmup untimed searches. Both ways are measured on Neo4j: with
the held name vectors (the default) and with the HNSW index alone (`entity_vectors=0`, as
before). The variants are embedded once beforehand, so every store's resolve times exclude the
model. Prints the disagreements and per-call p50/p95, writes JSON. A measurement: the exit
code is 0 either way.

    NEO4J_PASSWORD=... .venv/bin/python scripts/resolver_parity.py --url bolt://127.0.0.1:7687 \
        --user-id bench-user --sample 400 --out bench-results/resolver-parity.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from mem0g.config import EmbedderConfig, ResolverConfig
from mem0g.embed import make_embedder
from mem0g.resolve.entities import resolve_entities
from mem0g.resolve.names import canonical_type
from mem0g.stores import EmbeddedGraphStore
from mem0g.stores.neo4j import Neo4jGraphStore
from mem0g.types import Tenant, Validity, WritePlan

_VARIANTS = {"person": "Dr. {}", "organization": "{} Inc."}


def variant(name: str, type_: str) -> str:
    """A form the resolver should merge into `name` whose normalised key differs from it."""
    return _VARIANTS.get(canonical_type(type_), "{} hobby").format(name)


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = np.asarray(seconds) * 1000.0
    return {"p50_ms": round(float(np.percentile(ms, 50)), 2),
            "p95_ms": round(float(np.percentile(ms, 95)), 2)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--url", default=os.environ.get("NEO4J_URI", "bolt://127.0.0.1:7687"))
    parser.add_argument("--username", default=os.environ.get("NEO4J_USERNAME", "neo4j"))
    parser.add_argument("--user-id", required=True, help="the tenant (user_id only)")
    parser.add_argument("--sample", type=int, default=400)
    parser.add_argument("--k", type=int, default=ResolverConfig().candidates)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=300, help="untimed searches per store")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    auth = (args.username, os.environ.get("NEO4J_PASSWORD", ""))
    tenant = Tenant(user_id=args.user_id)
    held = Neo4jGraphStore(args.url, auth)
    index = Neo4jGraphStore(args.url, auth, entity_vectors=0)
    stored = held.snapshot(tenant, Validity(include_invalid=True)).entities
    entities = [e for e in stored if e.embedding]
    if not entities:
        sys.exit(f"no entities with embeddings for user_id={args.user_id!r} at {args.url}")
    print(f"{len(entities)} entities of {tenant.key}", flush=True)
    rng = np.random.default_rng(args.seed)
    sample = [entities[i] for i in rng.choice(len(entities), min(args.sample, len(entities)),
                                               replace=False)]  # fmt: skip
    embedder = make_embedder(EmbedderConfig())
    threshold = ResolverConfig().threshold
    now = datetime.now(timezone.utc)
    report: dict[str, Any] = {"entities": len(entities), "sample": len(sample), "k": args.k,
                              "threshold": threshold, "url": args.url,
                              "machine": platform.platform()}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        embedded = EmbeddedGraphStore(Path(tmp))
        for start in range(0, len(entities), 2000):
            embedded.apply(WritePlan(tenant=tenant, new_entities=entities[start : start + 2000]))
        started = time.perf_counter()
        held.similar_entities(tenant, np.asarray(entities[0].embedding), args.k, exact=True)
        report["first_use_load_s"] = round(time.perf_counter() - started, 2)
        print(f"held vectors loaded in {report['first_use_load_s']} s", flush=True)
        stores = {"embedded": embedded, "neo4j_held": held, "neo4j_index": index}
        warm = [entities[i] for i in rng.choice(len(entities), args.warmup)]
        for store in stores.values():  # untimed: the server's JIT compiles the read paths
            for ent in warm:
                store.similar_entities(tenant, np.asarray(ent.embedding), args.k, exact=True)
        for name, store in stores.items():
            lost, took = 0, []
            for ent in sample:
                started = time.perf_counter()
                hits = store.similar_entities(tenant, np.asarray(ent.embedding), args.k,
                                              exact=True)  # fmt: skip
                took.append(time.perf_counter() - started)
                lost += ent.id not in {e.id for e, _ in hits}
            report[name] = {"self_lost": lost, "similar_entities": percentiles(took)}
        embedder.embed([variant(e.name, e.type) for e in sample])  # (cached from now on)
        answers: dict[str, list[str | None]] = {}
        for name, store in stores.items():
            answers[name], took = [], []
            for ent in sample:
                alias = variant(ent.name, ent.type)
                started = time.perf_counter()
                out = resolve_entities(store, embedder, tenant, {alias: ent.type},
                                       threshold=threshold, k=args.k, now=now)  # fmt: skip
                took.append(time.perf_counter() - started)
                answers[name].append(None if out.new_entities else out.ids[alias])
            merged = sum(a == e.id for a, e in zip(answers[name], sample, strict=True))
            report[name] |= {"resolve": percentiles(took), "merged_into_own": merged}
        for name in ("neo4j_held", "neo4j_index"):
            differ = sum(a != b for a, b in zip(answers[name], answers["embedded"], strict=True))
            report[name]["resolve_differs_from_embedded"] = differ
        embedded.close()
    for name in stores:
        print(name, json.dumps(report[name]))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    held.close()
    index.close()


if __name__ == "__main__":
    main()
