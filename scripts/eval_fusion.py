"""Evidence recall of fusion recipes on LoCoMo, per conversation and category, with no LLM.

Ingests each conversation's observation facts once (`add(infer=False)`, grouped per session
and speaker with the session's date, as `mem0g eval locomo --mode retrieval --facts
observation` does; every conversation before any search, as the harness does), then searches
every question with each recipe (presets by name, or `name:json` for a recipe of one's own)
through `Memory.search`, beside the harness's own baselines over the same facts (dense, BM25,
plain dense+BM25 RRF). Recipes are compared on one conversation (`--tune`) and reported on
the others as held out. Prints tables, writes JSON (bench-results/ by default). Never tuned
on in CI: it is a measurement. Context tokens (k = 10) are measured for the last recipe.

    .venv/bin/python scripts/eval_fusion.py ../shared/data/locomo/locomo2.json \
        --recipes dense,dense_bm25,hybrid --tune conv-26 --out bench-results/fusion.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mem0g import Memory  # noqa: E402
from mem0g.eval.data import load_locomo  # noqa: E402
from mem0g.eval.metrics import percentile, recall_at_k  # noqa: E402
from mem0g.eval.retrieval import _Baselines  # noqa: E402
from mem0g.resolve.links import plan_links  # noqa: E402
from mem0g.resolve.names import normalize_name, token_keys  # noqa: E402
from mem0g.retrieve.fusion import PRESETS  # noqa: E402
from mem0g.types import Entity, Tenant, WritePlan  # noqa: E402

KS = (5, 10, 20)
CATEGORIES = ("1", "2", "3", "4")
NAMES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop"}


def recipe(spec: str) -> tuple[str, Any]:
    if ":" in spec:
        name, body = spec.split(":", 1)
        return name, json.loads(body)
    if spec not in PRESETS:
        raise SystemExit(f"unknown preset {spec!r}; presets: {sorted(PRESETS)}")
    return spec, spec


def top_level(specs: str) -> list[str]:
    """The comma-separated recipes (commas inside a recipe's JSON do not separate)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(specs):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(specs[start:i])
            start = i + 1
    return [*parts, specs[start:]]


def ingest(memory: Memory, unit: Any, tenant: str) -> list[tuple[str, list[str]]]:
    """Observation facts per (session, speaker), dated; returns (text, refs) per fact and
    fills memory with them. The fact ids map back to dia_ids in `refs_of`."""
    times = {s.id: s.time for s in unit.sessions}
    groups: dict[tuple[str, str], list[Any]] = {}
    for ob in unit.observations:
        groups.setdefault((ob.session, ob.speaker), []).append(ob)
    stored = []
    for (sid, speaker), obs in groups.items():
        if sid not in times:
            continue
        messages = [{"role": "user", "name": speaker, "content": ob.text} for ob in obs]
        result = memory.add(messages, user_id=tenant, timestamp=times[sid], infer=False)
        for f, ob in zip(result.facts, obs, strict=True):
            REFS[f.id] = ob.refs
            stored.append((ob.text, ob.refs))
    return stored


REFS: dict[str, list[str]] = {}


_CAPITAL = re.compile(r"[A-Z][\w'’&-]*")
_NOT_NAMES = frozenset(
    """I January February March April May June July August September October
    November December Monday Tuesday Wednesday Thursday Friday Saturday Sunday""".split()
)


def proper_names(texts: list[str]) -> list[str]:
    """Runs of capitalised words (at most 3) that are not a sentence's first word, possessive
    cut: a crude, LLM-free stand-in for the graph path's entity extraction (benchmark only)."""
    found: dict[str, None] = {}
    for text in texts:
        for sentence in re.split(r"(?<=[.!?])\s+", text):
            words = sentence.split()
            run: list[str] = []
            for i, raw in enumerate([*words, ""]):
                word = re.sub(r"['’]s$", "", raw.strip(".,;:!?()\"'"))
                if i > 0 and _CAPITAL.fullmatch(word) and word not in _NOT_NAMES and len(run) < 3:
                    run.append(word)
                    continue
                if run:
                    found[" ".join(run)] = None
                run = []
    return list(found)


def given_entities(memory: Memory, unit: Any, tenant: str, kind: str) -> int:
    """Entities of the tenant given without an LLM (a stand-in for the graph path's
    extraction, which needs one): the two speakers, and with `names` also the proper names
    of the facts (`proper_names`). Written after the facts, so they link to the earlier facts
    naming them (`resolve.links`); returns the links made."""
    owner = Tenant(user_id=tenant)
    names = list(dict.fromkeys(unit.speakers))
    if kind == "names":
        names = list(dict.fromkeys([*names, *proper_names([ob.text for ob in unit.observations])]))
    vectors = memory.embedder.embed(names)
    entities = []
    keys_seen: set[str] = set()
    for n, v in zip(names, vectors, strict=True):
        key = normalize_name(n)
        if not key or key in keys_seen:
            continue
        keys_seen.add(key)
        entities.append(Entity(tenant=owner, name=n, type="person" if n in unit.speakers
                               else "entity", embedding=[float(x) for x in v],
                               keys=[key, *token_keys(n, "person")]))  # fmt: skip
    plan = plan_links(memory.store, WritePlan(tenant=owner, new_entities=entities))
    memory.store.apply(plan)
    return len(plan.fact_links)


def row(q: Any, refs: list[list[str]]) -> dict[str, Any]:
    return {"category": q.category, **{f"r@{k}": recall_at_k(refs, q.evidence, k) for k in KS}}


def scores(rows: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Mean recall per category and overall; None where a category has no question (conv-30
    has no open-domain one: a recall of 0 there would read as all missed)."""
    out: dict[str, dict[str, float | None]] = {}
    for cat in (*CATEGORIES, "overall"):
        chosen = [r for r in rows if cat == "overall" or r["category"] == cat]
        out[cat] = {
            f"r@{k}": round(sum(r[f"r@{k}"] for r in chosen) / len(chosen), 4) if chosen else None
            for k in KS
        }
        out[cat]["n"] = len(chosen)
    return out


def _cell(by: dict[str, float | None]) -> str:
    if not by["n"]:
        return "– (no question)"
    return "/".join(f"{by[f'r@{k}']:.3f}" for k in KS)


def table(systems: dict[str, dict[str, dict[str, float | None]]]) -> None:
    """recall@5/@10/@20 per category and overall, one system a line."""
    print("system | " + " | ".join(f"{c} {NAMES.get(c, '')}" for c in (*CATEGORIES,
                                                                      "overall")))  # fmt: skip
    for system, by in systems.items():
        cells = [_cell(by[c]) for c in (*CATEGORIES, "overall")]
        print(f"{system} | " + " | ".join(cells))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data", type=Path)
    p.add_argument("--recipes", default="dense,dense_bm25,hybrid")
    p.add_argument("--tune", default=None, help="the conversation recipes are chosen on")
    p.add_argument("--store", choices=("embedded", "neo4j"), default="embedded")
    p.add_argument(
        "--entities",
        choices=("none", "speakers", "names"),
        default="none",
        help="entities given after ingestion, with no LLM: the two speakers, "
        "or the speakers and the facts' proper names",
    )
    p.add_argument("--out", type=Path, default=ROOT / "bench-results" / "fusion.json")
    args = p.parse_args()
    data = load_locomo(args.data)
    recipes = [recipe(s) for s in top_level(args.recipes) if s]
    graph_store: dict[str, Any] = {"provider": "embedded", "path": tempfile.mkdtemp()}
    if args.store == "neo4j":  # NEO4J_URI's server, else one started for this run
        from mem0g.testing.neo4j import neo4j_for_tests

        uri, user, password = neo4j_for_tests()  # stopped at exit if it started one
        graph_store = {"provider": "neo4j", "url": uri, "username": user, "password": password}
    memory = Memory({"graph_store": graph_store, "memory": {"summary": False}})
    if args.store == "neo4j":
        memory.store.reset()
    results: dict[str, Any] = {"load_before": os.getloadavg(), "store": args.store,
                               "entities": args.entities, "units": {}}  # fmt: skip
    pooled: dict[str, list[dict[str, Any]]] = {}  # every conversation's rows, per system
    try:
        # every conversation is stored before any is searched, as the harness does: BM25's
        # word statistics are the store's, so each search sees the same store
        stores: dict[str, tuple[list[tuple[str, list[str]]], int]] = {}
        for unit in data.units:
            tenant = f"fusion-{unit.id}"
            stored = ingest(memory, unit, tenant)
            links = 0
            if args.entities != "none":
                links = given_entities(memory, unit, tenant, args.entities)
            stores[unit.id] = (stored, links)
        for unit in data.units:
            tenant = f"fusion-{unit.id}"
            stored, links = stores[unit.id]
            baselines = _Baselines(memory.embedder, unit, stored)
            questions = [q for q in unit.questions if q.category in CATEGORIES and q.evidence]
            systems: dict[str, list[dict[str, Any]]] = {}
            timings: dict[str, list[float]] = {}
            tokens: list[int] = []
            for name, value in recipes:
                # a recipe of one's own may set retrieval options too: {"retrieval": {...}}
                body = dict(value) if isinstance(value, dict) else value
                options = body.pop("retrieval", {}) if isinstance(body, dict) else {}
                fresh = type(memory.config.retrieval)(fusion=body, **options)
                for option in ("fusion", "link_lexical", *options):
                    # the retrievers read the same config object
                    setattr(memory.config.retrieval, option, getattr(fresh, option))
                rows, ms = [], []
                for q in questions:
                    started = time.perf_counter()
                    hits = memory.search(q.text, user_id=tenant, limit=max(KS))
                    ms.append((time.perf_counter() - started) * 1000)
                    refs = [REFS.get(f.id, []) for f in hits.facts]
                    rows.append(row(q, refs))
                    if name == recipes[-1][0]:
                        block = memory.context_block(q.text, user_id=tenant, limit=10)
                        tokens.append(block.tokens)
                systems[f"mem0g {name}"] = rows
                timings[name] = ms
            for base in ("dense", "bm25", "rrf"):
                rows = []
                for q in questions:
                    refs = getattr(baselines, base)(q.text, max(KS))
                    rows.append(row(q, refs))
                systems[f"baseline {base}"] = rows
            for system, rows in systems.items():
                pooled.setdefault(system, []).extend(rows)
            results["units"][unit.id] = {
                "facts": len(stored),
                "fact_links": links,
                "questions": len(questions),
                "held_out": args.tune is not None and unit.id != args.tune,
                "systems": {s: scores(r) for s, r in systems.items()},
                "search_ms": {
                    n: {"p50": round(percentile(v, 50), 1), "p95": round(percentile(v, 95), 1)}
                    for n, v in timings.items()
                },
                "context_tokens_k10": {
                    "mean": round(sum(tokens) / max(len(tokens), 1), 1),
                    "max": max(tokens, default=0),
                },
            }
    finally:
        memory.close()
    results["load_after"] = os.getloadavg()
    results["overall"] = {s: scores(r) for s, r in pooled.items()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    for uid, u in results["units"].items():
        role = "held out" if u["held_out"] else ("tuned on" if args.tune else "")
        print(
            f"\n{uid} ({u['facts']} facts, {u['fact_links']} links, {u['questions']} "
            f"questions) {role}"
        )
        table(u["systems"])
        print("search ms", u["search_ms"], "context tokens", u["context_tokens_k10"])
    print(f"\nall conversations ({sum(u['questions'] for u in results['units'].values())} "
          "questions)")  # fmt: skip
    table(results["overall"])
    print("load", results["load_before"], "->", results["load_after"], "json", args.out)


if __name__ == "__main__":
    main()
