"""Search identity check for refactors: the same fixed stores must answer the same fixed
queries with the same ids and scores before and after a change.

Builds a deterministic memory (fixed ids, times and texts, the offline `hashing` embedder) in
each store (the embedded one in a temporary directory; Neo4j on a throwaway server from
`mem0g.testing.neo4j`, emptied first), writes it through `store.apply` (plans as `add` makes
them: episodes, entities with keys, relations, invalidations, mentions, facts and fact
changes), then runs a fixed query set through the public `Memory.search` / `Memory.context`
with current, `as_of` and `include_invalid` validity, and writes every hit's id, score and
sources as JSON.

    PYTHONPATH=. .venv/bin/python scripts/search_identity.py --out before.json
    PYTHONPATH=. .venv/bin/python scripts/search_identity.py --out after.json --compare before.json

`--compare` exits 1 when an id list differs or a score moved by more than `--tolerance`.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from mem0g import Memory
from mem0g.config import EmbedderConfig
from mem0g.embed import CachedEmbedder, make_embedder
from mem0g.resolve.names import normalize_name
from mem0g.stores.base import GraphStore
from mem0g.types import (
    Entity,
    Episode,
    Fact,
    FactChange,
    FactEvent,
    Invalidation,
    Message,
    Relation,
    Tenant,
    WritePlan,
)

UTC = timezone.utc
T0 = datetime(2023, 1, 2, 9, 0, tzinfo=UTC)
REFERENCE = datetime(2024, 6, 1, tzinfo=UTC)
TENANTS = [
    Tenant(user_id="alice"),
    Tenant(user_id="bob"),
    Tenant(user_id="alice", agent_id="bot"),
]
PEOPLE = (
    "Alice Smith, Bob Jones, Carol White, Dan Brown, Eve Black, Frank Green, Grace Hall, "
    "Heidi King, Ivan Long, Judy Moss, Ken Nash, Lara Ortiz"
).split(", ")
PLACES = ["Paris", "Berlin", "Lisbon", "Tokyo", "Oslo"]
ORGS = ["Acme Corp", "Globex", "Initech", "Umbrella"]
THINGS = ["tennis", "chess", "jazz", "sushi", "hiking", "python", "painting"]
RELATIONS = [
    ("person", "lives_in", "place"),
    ("person", "works_at", "org"),
    ("person", "likes", "thing"),
    ("person", "friend_of", "person"),
    ("person", "visited", "place"),
    ("org", "based_in", "place"),
]
FACT_TEXTS = [
    "{p} likes {t} on weekends", "{p} moved to {c} in May 2023", "{p} works as an engineer at {o}",
    "{p} has a dog called Rex", "{p} met {q} at a {t} club", "{p} is allergic to peanuts",
    "{p} plans a trip to {c} next year", "{p} started learning {t} last spring",
]  # fmt: skip
QUERIES = [
    "Where does Alice live?", "who works at Acme Corp", "what does Bob like",
    "friends of Carol White", "who lives in Paris", "Which city is Globex based in?",
    "tennis", "When did Dan move?", "what happened in May 2023", "who visited Tokyo last year",
    "Eve Black works at", "jazz chess painting", "engineer", "dog", "trip next year",
    "Frank Green friend", "Initech Berlin", "who likes sushi", "Lisbon Oslo", "peanuts allergy",
]  # fmt: skip
AS_OF = [datetime(2023, 3, 1, tzinfo=UTC), datetime(2023, 9, 1, tzinfo=UTC)]


def _id(kind: str, *parts: object) -> str:
    return f"{kind}-" + "-".join(str(p) for p in parts)


def _entity(
    embedder: CachedEmbedder,
    entities: dict[str, Entity],
    tenant: Tenant,
    t: int,
    kind: str,
    name: str,
    when: datetime,
    new: list[Entity],
) -> Entity:
    """The tenant's entity of this name, made (and listed in `new`) on first use."""
    if name in entities:
        return entities[name]
    vec = embedder.embed([name])[0]
    ent = Entity(
        id=_id("e", t, len(entities)), tenant=tenant, name=name, type=kind,
        keys=[normalize_name(name)], embedding=vec.tolist(), created_at=when, updated_at=when,
    )  # fmt: skip
    entities[name] = ent
    new.append(ent)
    return ent


def build_plans(embedder: CachedEmbedder, rounds: int = 6) -> list[WritePlan]:
    """The fixed memory: per tenant, `rounds` adds that each bring entities, relations
    (some invalidating earlier ones, some mentioned again), facts and fact updates."""
    rng = np.random.default_rng(20261201)
    plans: list[WritePlan] = []
    for t_index, tenant in enumerate(TENANTS):
        entities: dict[str, Entity] = {}
        relations: list[Relation] = []
        facts: list[Fact] = []
        pools = {"person": PEOPLE, "place": PLACES, "org": ORGS, "thing": THINGS}

        get = functools.partial(_entity, embedder, entities, tenant, t_index)

        for r in range(rounds):
            when = T0 + timedelta(days=45 * r + 7 * t_index)
            new_entities: list[Entity] = []
            new_relations: list[Relation] = []
            invalidations: list[Invalidation] = []
            for k in range(5):
                src_kind, rel, dst_kind = RELATIONS[int(rng.integers(len(RELATIONS)))]
                src_name = str(rng.choice(pools[src_kind]))
                dst_name = str(rng.choice(pools[dst_kind]))
                if src_name == dst_name:
                    continue
                src = get(src_kind, src_name, when, new_entities)
                dst = get(dst_kind, dst_name, when, new_entities)
                text = f"{src.name} {rel} {dst.name}"
                vec = embedder.embed([text])[0]
                relation = Relation(
                    id=_id("r", t_index, r, k), tenant=tenant, source_id=src.id,
                    source=src.name, relation=rel, destination_id=dst.id, destination=dst.name,
                    embedding=vec.tolist(), valid_from=when - timedelta(days=int(rng.integers(40))),
                    created_at=when, updated_at=when,
                )  # fmt: skip
                # a new home or job ends the old one (the update resolver's INVALIDATE)
                for old in relations:
                    if (
                        rel in ("lives_in", "works_at")
                        and old.source_id == src.id
                        and old.relation == rel
                        and old.invalid_at is None
                    ):
                        old.invalid_at = when
                        invalidations.append(Invalidation(relation_id=old.id, invalid_at=when))
                relations.append(relation)
                new_relations.append(relation)
            new_facts: list[Fact] = []
            events: list[FactEvent] = []
            for k in range(3):
                template = FACT_TEXTS[int(rng.integers(len(FACT_TEXTS)))]
                text = template.format(
                    p=rng.choice(PEOPLE), q=rng.choice(PEOPLE), t=rng.choice(THINGS),
                    c=rng.choice(PLACES), o=rng.choice(ORGS),
                )  # fmt: skip
                fact = Fact(
                    id=_id("f", t_index, r, k), tenant=tenant, text=text,
                    embedding=embedder.embed([text])[0].tolist(), created_at=when,
                    updated_at=when,
                )  # fmt: skip
                facts.append(fact)
                new_facts.append(fact)
                events.append(FactEvent(
                    id=_id("fe", t_index, r, k), fact_id=fact.id, tenant=tenant, event="ADD",
                    new_text=text, at=when, episode_id=_id("ep", t_index, r),
                ))  # fmt: skip
            changes: list[FactChange] = []
            if r >= 2:  # one update and, every other round, one delete of an older fact
                old = facts[(r * 7 + t_index) % (len(facts) - 3)]
                if old.text and not old.text.endswith("(updated)"):
                    text = old.text + " (updated)"
                    changes.append(FactChange(
                        fact_id=old.id, text=text, embedding=embedder.embed([text])[0].tolist()
                    ))  # fmt: skip
                    events.append(FactEvent(
                        id=_id("fu", t_index, r), fact_id=old.id, tenant=tenant,
                        event="UPDATE", old_text=old.text, new_text=text, at=when,
                    ))  # fmt: skip
                    old.text = text
                if r % 2 == 1:
                    gone = facts[(r * 5 + t_index + 1) % (len(facts) - 3)]
                    if gone.id not in {c.fact_id for c in changes} and gone.text != "":
                        changes.append(FactChange(fact_id=gone.id))
                        events.append(FactEvent(
                            id=_id("fd", t_index, r), fact_id=gone.id, tenant=tenant,
                            event="DELETE", old_text=gone.text, at=when,
                        ))  # fmt: skip
                        gone.text = ""
            episode = Episode(
                id=_id("ep", t_index, r), tenant=tenant, timestamp=when, created_at=when,
                messages=[Message(content=f"round {r} of {tenant.user_id}", timestamp=when)],
            )  # fmt: skip
            plans.append(WritePlan(
                tenant=tenant, episode=episode, new_entities=new_entities,
                new_relations=new_relations, invalidations=invalidations, new_facts=new_facts,
                fact_changes=changes, fact_events=events, updated_at=when,
            ))  # fmt: skip
    return plans


def _hits(result: Any) -> dict[str, Any]:
    return {
        "relations": [[h.id, h.score, h.sources] for h in result.relations],
        "facts": [[h.id, h.score, h.sources] for h in result.facts],
    }


def run_queries(memory: Memory) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tenant in TENANTS:
        ids = tenant.model_dump(exclude_none=True)
        key = "/".join(f"{k}={v}" for k, v in ids.items())
        for query in QUERIES:
            variants: dict[str, Any] = {
                "current": {},
                "invalid": {"include_invalid": True},
                **{f"as_of={d.date()}": {"as_of": d} for d in AS_OF},
            }
            for name, extra in variants.items():
                result = memory.search(query, **ids, limit=8, reference_time=REFERENCE, **extra)
                out[f"{key} | {query} | {name}"] = _hits(result)
            out[f"{key} | {query} | context"] = memory.context(
                query, **ids, limit=6, max_tokens=400, reference_time=REFERENCE
            )
        # the tenant filter: user alice without agent sees the bot's rows too
        out[f"{key} | get_all"] = sorted(r.id for r in memory.get_all(**ids).relations)
    return out


def run_store_reads(store: GraphStore, embedder: CachedEmbedder) -> dict[str, Any]:
    """The store's own scored reads (raw cosines, before fusion turns them into ranks)."""
    from mem0g.types import Validity

    out: dict[str, Any] = {}
    validities = {"current": Validity(), "invalid": Validity(include_invalid=True),
                  **{f"as_of={d.date()}": Validity(as_of=d) for d in AS_OF}}  # fmt: skip
    for tenant in TENANTS:
        key = "/".join(f"{k}={v}" for k, v in tenant.model_dump(exclude_none=True).items())
        for query in QUERIES:
            q = embedder.embed([query])[0]
            ents = store.similar_entities(tenant, q, 6)
            out[f"store {key} | {query} | entities"] = [[e.id, s] for e, s in ents]
            exact = store.similar_entities(tenant, q, 6, exact=True, light=True)
            out[f"store {key} | {query} | entities exact"] = [[e.id, s] for e, s in exact]
            facts = store.similar_facts(tenant, q, 6)
            out[f"store {key} | {query} | facts"] = [[f.id, s] for f, s in facts]
            seeds = [e.id for e, _ in ents[:2]]
            for name, validity in validities.items():
                refs = store.similar_relations(tenant, q, 8, validity)
                out[f"store {key} | {query} | relations {name}"] = [[r.id, r.score] for r in refs]
                walk = store.expand(tenant, seeds, 2, validity, 40, vector=q)
                out[f"store {key} | {query} | expand {name}"] = [[r.id, r.score] for r in walk]
                hubs = [(r.destination_id, r.relation, True) for r in walk if r.hop == 1][:4]
                sib = store.siblings(tenant, hubs, validity, 20, vector=q)
                out[f"store {key} | {query} | siblings {name}"] = [[r.id, r.score] for r in sib]
    return out


def _memory(store: GraphStore, embedder: CachedEmbedder) -> Memory:
    config = {
        "llm": {"base_url": "http://127.0.0.1:9", "api_key": "unused", "max_retries": 0},
        "memory": {"facts": True, "summary": False},
    }
    return Memory(config, embedder=embedder, store=store)


@contextmanager
def embedded_store(dims: int) -> Iterator[GraphStore]:
    from mem0g.stores.embedded import EmbeddedGraphStore

    with tempfile.TemporaryDirectory() as tmp:
        store = EmbeddedGraphStore(Path(tmp) / "graph", dims=dims)
        try:
            yield store
        finally:
            store.close()


@contextmanager
def neo4j_store(dims: int) -> Iterator[GraphStore]:
    from mem0g.stores.neo4j import Neo4jGraphStore
    from mem0g.testing.neo4j import start_neo4j

    server = start_neo4j()
    try:
        store = Neo4jGraphStore(server.uri, (server.user, server.password), dims=dims)
        store.reset()
        try:
            yield store
        finally:
            store.reset()
            store.close()
    finally:
        server.stop()


def run(kind: str, embedder: CachedEmbedder, reopen: bool = True) -> dict[str, Any]:
    plans = build_plans(embedder)
    opener = embedded_store if kind == "embedded" else neo4j_store
    with opener(embedder.dims) as store:
        for plan in plans:
            store.apply(plan)
        memory = _memory(store, embedder)
        try:
            return {**run_queries(memory), **run_store_reads(store, embedder)}
        finally:
            memory.summaries.close()
            memory._paths.shutdown(wait=True)
            if memory._reads is not None:
                memory._reads.shutdown(wait=True)


def compare(before: dict[str, Any], after: dict[str, Any], tolerance: float) -> list[str]:
    problems: list[str] = []
    for kind in before:
        if kind not in after:
            continue
        for key, old in before[kind].items():
            new = after[kind].get(key)
            if isinstance(old, str) or (old and isinstance(old, list) and isinstance(old[0], str)):
                if old != new:
                    problems.append(f"{kind} {key}: {old!r} != {new!r}")
                continue
            if isinstance(old, list):  # a store read: [[id, score], ...]
                new = new or []
                if [h[0] for h in old] != [h[0] for h in new]:
                    problems.append(f"{kind} {key}: ids differ")
                elif any(abs(x[1] - y[1]) > tolerance for x, y in zip(old, new, strict=True)):
                    problems.append(f"{kind} {key}: scores differ")
                continue
            for part in ("relations", "facts"):
                a, b = old[part], (new or {}).get(part, [])
                if [h[0] for h in a] != [h[0] for h in b]:
                    ids = ([h[0] for h in a], [h[0] for h in b])
                    problems.append(f"{kind} {key} {part}: ids {ids[0]} != {ids[1]}")
                    continue
                for x, y in zip(a, b, strict=True):
                    if abs(x[1] - y[1]) > tolerance or x[2] != y[2]:
                        problems.append(f"{kind} {key} {part} {x[0]}: {x[1:]} != {y[1:]}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=["embedded", "neo4j", "both"], default="both")
    parser.add_argument("--out", type=Path, default=Path("bench-results/search_identity.json"))
    parser.add_argument("--compare", type=Path, help="an earlier --out to compare with")
    parser.add_argument("--tolerance", type=float, default=1e-9)
    args = parser.parse_args(argv)
    embedder = make_embedder(EmbedderConfig(provider="hashing"))
    kinds = ["embedded", "neo4j"] if args.store == "both" else [args.store]
    result = {kind: run(kind, embedder) for kind in kinds}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True))
    counts = {k: sum(len(v.get("relations", [])) + len(v.get("facts", [])) for v in r.values()
                     if isinstance(v, dict)) for k, r in result.items()}  # fmt: skip
    print(f"wrote {args.out}: {counts} hits")
    if args.compare:
        problems = compare(json.loads(args.compare.read_text()), result, args.tolerance)
        for line in problems[:40]:
            print(line)
        print(f"{len(problems)} differences from {args.compare}")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
