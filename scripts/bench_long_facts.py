"""Long facts: is a fact's tail searchable? Truncation at the model's window against the mean
of its windows, on real LoCoMo sessions packed into long facts.

Each session's turns ("Speaker: text" lines) are packed, whole, into facts of at most `--chars`
characters (2,000 by default: `limits.max_fact_chars`, the longest fact an add takes), stored with
`add(infer=False)` on the embedded store; each fact keeps the dia_ids of its turns. Every
category 1-4 question with evidence is then searched through `Memory.search` twice per store
build, once with the `dense` recipe and once with the default, and evidence recall@1/3/5/10 is
reported per conversation and overall. The two builds differ only in
`embedder.long_texts` ("truncate": MiniLM reads the first 256 word pieces, about 1,200
characters, and drops the rest; "windows": the token-weighted mean of the windows' vectors).
The embedding time of each fact alone is timed too (p50 / p95): windows cost more.

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/bench_long_facts.py \
        ../shared/data/locomo/locomo2.json --out bench-results/long-facts.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mem0g import Memory  # noqa: E402
from mem0g.eval.data import Unit, load_locomo  # noqa: E402
from mem0g.eval.metrics import percentile, recall_at_k  # noqa: E402

KS = (1, 3, 5, 10)
CATEGORIES = ("1", "2", "3", "4")


def packed(unit: Unit, chars: int) -> list[tuple[str, list[str], Any]]:
    """(text, dia_ids, session time) of each fact: a session's turns packed whole, in order,
    into texts of at most `chars` characters (a longer turn alone is cut at `chars`)."""
    out: list[tuple[str, list[str], Any]] = []
    for session in unit.sessions:
        text, refs = "", list[str]()
        for turn in session.turns:
            line = f"{turn.speaker}: {turn.text}"[:chars]
            if text and len(text) + 1 + len(line) > chars:
                out.append((text, refs, session.time))
                text, refs = "", []
            text = f"{text}\n{line}" if text else line
            refs.append(turn.ref)
        if text:
            out.append((text, refs, session.time))
    return out


def run(data: list[Unit], chars: int, mode: str) -> dict[str, Any]:
    memory = Memory({
        "graph_store": {"provider": "embedded", "path": tempfile.mkdtemp()},
        "embedder": {"long_texts": mode},
        "memory": {"summary": False},
    })  # fmt: skip
    refs_of: dict[str, list[str]] = {}
    embed_ms: list[float] = []
    tokens: list[int] = []
    rows: dict[str, dict[str, list[float]]] = {}
    try:
        inner = memory.embedder.inner
        tokenizer = inner._model.tokenizer  # type: ignore[attr-defined]
        facts = {unit.id: packed(unit, chars) for unit in data}
        for unit in data:
            for text, refs, when in facts[unit.id]:
                started = time.perf_counter()
                inner.embed([text])
                embed_ms.append((time.perf_counter() - started) * 1000)
                tokens.append(len(tokenizer(text, add_special_tokens=False,
                                            verbose=False)["input_ids"]))  # fmt: skip
                message = {"role": "user", "content": text}
                result = memory.add([message], user_id=f"long-{unit.id}", timestamp=when,
                                    infer=False)  # fmt: skip
                refs_of[result.facts[0].id] = refs
        for recipe in ("dense", "hybrid"):
            memory.config.retrieval.fusion = type(memory.config.retrieval)(fusion=recipe).fusion
            for unit in data:
                for q in unit.questions:
                    if q.category not in CATEGORIES or not q.evidence:
                        continue
                    hits = memory.search(q.text, user_id=f"long-{unit.id}", limit=max(KS))
                    got = [refs_of.get(f.id, []) for f in hits.facts]
                    for key in (unit.id, "overall"):
                        cell = rows.setdefault(f"{recipe} {key}", {f"r@{k}": [] for k in KS})
                        for k in KS:
                            cell[f"r@{k}"].append(recall_at_k(got, q.evidence, k))
    finally:
        memory.close()
    window = 254
    recall = {key: {k: round(sum(v) / len(v), 3) for k, v in cell.items()}
              for key, cell in rows.items()}  # fmt: skip
    return {
        "facts": len(tokens),
        "facts_over_window": sum(t > window for t in tokens),
        "word_pieces_p50_p95_max": [percentile(tokens, 50), percentile(tokens, 95), max(tokens)],
        "embed_ms_p50_p95": [round(percentile(embed_ms, q), 1) for q in (50, 95)],
        "recall": recall,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data", type=Path, help="a LoCoMo JSON file (never committed)")
    p.add_argument("--chars", type=int, default=2000, help="the longest fact (characters)")
    p.add_argument("--out", type=Path, default=ROOT / "bench-results" / "long-facts.json")
    args = p.parse_args()
    data = load_locomo(args.data).units
    results: dict[str, Any] = {"chars": args.chars, "load_before": os.getloadavg(), "modes": {}}
    for mode in ("truncate", "windows"):
        started = time.time()
        res = run(data, args.chars, mode)
        res["seconds"] = round(time.time() - started, 1)
        results["modes"][mode] = res
        print(f"{mode}: {res['facts']} facts ({res['facts_over_window']} over the window; word "
              f"pieces p50/p95/max {res['word_pieces_p50_p95_max']}), embed one fact p50/p95 "
              f"{res['embed_ms_p50_p95'][0]} / {res['embed_ms_p50_p95'][1]} ms")  # fmt: skip
        for key, cell in res["recall"].items():
            print(f"  {key:22s} " + "  ".join(f"{k} {v:.3f}" for k, v in cell.items()))
    results["load_after"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
