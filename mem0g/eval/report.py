"""results.json, report.md and the PNG plots of a run directory, from its jsonl records alone
(`mem0g eval report RUN_DIR` re-renders them at any time)."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from mem0g.eval.data import EvalInputError, category_name
from mem0g.eval.metrics import latency, mean, mean_std

KS = (5, 10, 20)
SYSTEMS = ("mem0g", "dense", "bm25", "dense+bm25 rrf")

# Published figures, quoted as published (not measured here).
PUBLISHED = [
    ("Mem0g (Chhikara et al., 2025)", "LoCoMo J, categories 1-4", "68.44", "gpt-4o-mini"),
    ("Zep (2026)", "LoCoMo", "94.7", "-"),
    ("Zep (2026)", "LongMemEval", "90.2", "-"),
    ("Zep (2026)", "retrieval p50 / p95", "87 / 155 ms", "-"),
    ("EverCore", "LoCoMo", "~92", "-"),
    ("Hindsight", "LoCoMo", "~92", "-"),
]
MAPPING = (
    "LoCoMo categories by the dataset's own numbers: 1 multi-hop, 2 temporal, 3 open-domain, "
    "4 single-hop, 5 adversarial. Some published tables swap 1, 3 and 4; every figure here "
    "uses these numbers."
)


def _rows(path: Path) -> list[dict[str, Any]]:
    from mem0g.eval.rundir import _jsonl

    return _jsonl(path)


def _latest(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    by: dict[Any, dict[str, Any]] = {}
    for row in rows:
        by[row[key]] = row
    return list(by.values())


def _r(value: float, digits: int = 4) -> float | None:
    return (
        None
        if value is None or (isinstance(value, float) and math.isnan(value))
        else round(value, digits)
    )


def summarize(run_dir: Path) -> dict[str, Any]:
    config_path = run_dir / "config.json"
    if not config_path.exists():
        raise EvalInputError(f"{run_dir}: not an eval run directory (no config.json)")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    questions = _latest(_rows(run_dir / "questions.jsonl"), "id")
    ingest = [r for r in _rows(run_dir / "ingest.jsonl")]
    runs = _rows(run_dir / "runs.jsonl")
    stores = _latest(_rows(run_dir / "stores.jsonl"), "unit")
    planned, units = _planned(run_dir)
    # the figures cover the run's current selection (config.json's categories and limits):
    # what a wider selection answered before stays in the records, for a wider resume
    outside = 0
    if planned is not None:
        wanted = set(planned)
        outside = sum(1 for q in questions if q["id"] not in wanted)
        questions = [q for q in questions if q["id"] in wanted]
    if units is not None:
        chosen = set(units)
        ingest = [r for r in ingest if r["unit"] in chosen]
        stores = [r for r in stores if r["unit"] in chosen]
    bench = config["benchmark"]
    results: dict[str, Any] = {"config": config, "questions": len(questions)}
    if outside:
        results["outside_selection"] = outside
    if partial := _partial(planned, questions, runs):
        results["partial"] = partial

    # ingestion
    calls_per_add = [r["usage"]["calls"] for r in ingest]
    by_task: dict[str, int] = defaultdict(int)
    modes: dict[str, int] = defaultdict(int)
    for r in ingest:
        for task, n in r["usage"].get("by_task", {}).items():
            by_task[task] += n
        for mode, n in (r["usage"].get("modes") or {}).items():
            modes[mode] += n
    results["ingest"] = {
        "adds": len(ingest),
        "add_ms": latency([r["ms"] for r in ingest]),
        "seconds": round(sum(r["ms"] for r in ingest) / 1000, 2),
        "llm_calls_per_add": _r(mean(calls_per_add)) if ingest else 0,
        "llm_calls_by_task": dict(by_task),
        "llm_modes": dict(modes),
        "prompt_tokens_per_add": _r(mean([r["usage"]["prompt_tokens"] for r in ingest]), 1)
        if ingest
        else 0,
        "completion_tokens_per_add": _r(mean([r["usage"]["completion_tokens"] for r in ingest]), 1)
        if ingest
        else 0,
        "rejected_extractions": sum(len(r.get("rejected", [])) for r in ingest),
        "failed_adds": sum(1 for r in ingest if r.get("failed")),
        "relations": {
            e: sum(r.get("relations", {}).get(e, 0) for r in ingest)
            for e in ("ADD", "UPDATE", "INVALIDATE", "NOOP")
        },
    }
    results["store"] = {
        key: sum(s.get(key, 0) for s in stores)
        for key in ("entities", "relations", "valid_relations", "facts", "episodes")
    }
    results["runs"] = {
        "invocations": len(runs),
        "network_calls": {
            p: sum(r["network_calls"].get(p, 0) for r in runs)
            for p in sorted({p for r in runs for p in r["network_calls"]})
        },
        "last_network_calls": sum(runs[-1]["network_calls"].values()) if runs else None,
        "cache_hits": sum(r.get("cache_hits", 0) for r in runs),
        "seconds": round(sum(r.get("seconds", 0) for r in runs), 2),
    }
    results["search_ms"] = latency([q["search_ms"] for q in questions if "search_ms" in q])
    results["search_ms_values"] = sorted(q["search_ms"] for q in questions if "search_ms" in q)
    tokens = [q["context_tokens"] for q in questions if "context_tokens" in q]
    if tokens:  # retrieval mode: the context block at k = context_limit
        results["context_tokens"] = {
            "n": len(tokens),
            "mean": round(sum(tokens) / len(tokens), 1),
            "max": max(tokens),
        }
    order = sorted({q["category"] for q in questions}, key=lambda c: (len(c), c))
    if config["mode"] == "retrieval":
        results["retrieval"] = _retrieval(bench, questions, order)
    else:
        results.update(_full(bench, questions, order, config))
    return results


def _planned(run_dir: Path) -> tuple[list[str] | None, list[str] | None]:
    """The question and unit ids of the last invocation's selection (planned.json: a list of
    question ids in run directories made before it named the units too); None: unknown."""
    path = run_dir / "planned.json"
    if not path.exists():
        return None, None
    planned = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(planned, list):
        return [str(q) for q in planned], None
    return [str(q) for q in planned["questions"]], [str(u) for u in planned["units"]]


def _partial(
    planned: list[str] | None, questions: list[dict[str, Any]], runs: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """How far a run that stopped got: the questions its last invocation planned, how many of
    them are answered, and why it stopped; None for a run that finished."""
    if planned is None:
        return None
    done = {q["id"] for q in questions}
    answered = sum(1 for qid in planned if qid in done)
    last = runs[-1] if runs else {}
    stopped = None if last.get("completed", False) else last.get("error") or "did not finish"
    if answered == len(planned) and stopped is None:
        return None
    return {"planned": len(planned), "answered": answered, "stopped": stopped}


def partial_line(partial: dict[str, Any]) -> str:
    """The one line a partial run's report and `mem0g eval report` lead with."""
    why = f" (the last invocation stopped: {partial['stopped']})" if partial["stopped"] else ""
    return (
        f"partial run: {partial['answered']} of the {partial['planned']} questions answered"
        f"{why}; the figures cover the answered ones only: run the same command to resume"
    )


# LongMemEval: the share found, and its own recall_all (every evidence item found: what its
# print_retrieval_metrics.py reports) and recall_any
_LME_METRICS = ("recall", "recall_all", "recall_any")


def _retrieval(bench: str, questions: list[dict[str, Any]], order: list[str]) -> dict[str, Any]:
    kinds = ("evidence",) if bench == "locomo" else ("session", "turn")
    out: dict[str, Any] = {}
    for system in SYSTEMS:
        per: dict[str, Any] = {}
        groups = [(c, [q for q in questions if q["category"] == c]) for c in order]
        overall = [q for q in questions if bench != "locomo" or q["category"] != "5"]
        groups.append(("overall" if bench != "locomo" else "overall 1-4", overall))
        if bench == "locomo":
            groups.append(("all 1-5", questions))
        for name, qs in groups:
            entry: dict[str, Any] = {}
            for kind in kinds:
                for k in KS:
                    for metric in ("recall",) if bench == "locomo" else _LME_METRICS:
                        key = f"{kind}_{metric}@{k}"
                        vals = [
                            q["systems"][system][key]
                            for q in qs
                            if key in q["systems"].get(system, {})
                        ]
                        entry[key] = _r(mean(vals))
                    vals = [1 for q in qs if f"{kind}_recall@{k}" in q["systems"].get(system, {})]
                    entry[f"{kind}_n"] = len(vals)
                    if bench != "locomo":  # the questions LongMemEval's own metrics cover
                        key = f"{kind}_recall_all@{k}"
                        entry[f"{kind}_n_longmemeval"] = sum(
                            1 for q in qs if key in q["systems"].get(system, {})
                        )
            per[name] = entry
        out[system] = per
    return out


def _full(
    bench: str, questions: list[dict[str, Any]], order: list[str], config: dict[str, Any]
) -> dict[str, Any]:
    runs = config.get("judge_runs") or 1
    judged = [q for q in questions if "judge" in q]
    per: dict[str, Any] = {}
    scored_order = [c for c in order if not (bench == "locomo" and c == "5")]
    groups = [(c, [q for q in judged if q["category"] == c]) for c in scored_order]
    groups.append(("overall" if bench != "locomo" else "overall 1-4", judged))
    if bench == "longmemeval":
        abst = [q for q in judged if str(q["id"]).endswith("_abs")]
        if abst:
            groups.append(("abstention", abst))
    for name, qs in groups:
        if not qs:
            continue
        run_scores = [mean([q["judge"][i] for q in qs if len(q["judge"]) > i]) for i in range(runs)]
        m, s = mean_std([v for v in run_scores if not math.isnan(v)])
        entry: dict[str, Any] = {"n": len(qs), "J_mean": _r(100 * m, 2), "J_std": _r(100 * s, 2)}
        if bench == "locomo":
            entry["f1"] = _r(100 * mean([q["f1"] for q in qs]), 2)
            entry["bleu1"] = _r(100 * mean([q["bleu1"] for q in qs]), 2)
        per[name] = entry
    out: dict[str, Any] = {"scores": per}
    adversarial = [q for q in questions if "adversarial" in q]
    if adversarial:
        out["adversarial"] = {
            "n": len(adversarial),
            "accuracy": _r(100 * mean([q["adversarial"] for q in adversarial]), 2),
            "method": 'forced choice: "Not mentioned in the conversation" against the '
            "dataset's adversarial answer, order fixed per question",
        }
    per_q_calls, per_q_tokens, cached = [], [], 0
    for q in questions:
        uses = q.get("llm", [])
        per_q_calls.append(len(uses))
        per_q_tokens.append(
            sum((u.get("prompt_tokens") or 0) + (u.get("completion_tokens") or 0) for u in uses)
        )
        cached += sum(1 for u in uses if u.get("cached"))
    out["per_question"] = {
        "llm_calls": _r(mean(per_q_calls), 2) if questions else 0,
        "llm_tokens": _r(mean(per_q_tokens), 1) if questions else 0,
        "answered_from_cache": cached,
        "context_tokens": _r(mean([q.get("context_tokens", 0) for q in questions]), 1),
        "question_ms": latency([q["question_ms"] for q in questions if "question_ms" in q]),
    }
    return out


# ---------------------------------------------------------------- rendering


def _fmt(value: Any, pct: bool = False) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{100 * value:.1f}" if pct else f"{value:.2f}"
    return str(value)


def _markdown(results: dict[str, Any]) -> str:
    c = results["config"]
    bench = c["benchmark"]
    lines = [
        f"# mem0g evaluation: {bench}, {c['mode']} mode",
        "",
        f"- run `{c['run_id']}`, created {c['created']}; dataset `{c['dataset']}` "
        f"(sha256 {c['dataset_sha256'][:12]}…)",
        f"- store: {c['store']}; facts: {c['facts']}; embedder: {c['embedder']}",
    ]
    if partial := results.get("partial"):
        head, rest = partial_line(partial).split(" answered", 1)
        lines[2:2] = [f"**{head[0].upper()}{head[1:]} answered**{rest}.", ""]
    lines += [f"- dataset as read: {note}" for note in c.get("dataset_notes") or []]
    if long := c.get("long_messages"):
        lines.append(
            f"- long turns: {long['messages']} over {long['limit']} characters (the longest "
            f"message an add takes here) stored as {long['pieces']} pieces, cut at paragraph, "
            "sentence or word ends; each piece keeps its turn's id"
        )
    if c["mode"] == "full":
        lines.append(
            f"- memory LLM: {c['memory_model']} (mode {c.get('memory_mode')}); answer model: "
            f"{c['answer_model']}; judge: {c['judge_model']}, {c['judge_runs']} runs at "
            "temperature 0 (mean ± standard deviation over runs)"
        )
    limits = {
        k: c.get(k)
        for k in ("limit_conversations", "limit_questions", "limit_sessions", "categories")
    }
    lines.append(
        f"- limits: {', '.join(f'{k}={v}' for k, v in limits.items() if v) or 'none (whole file)'}"
    )
    if outside := results.get("outside_selection"):
        lines.append(
            f"- {outside} questions answered under an earlier, wider selection are kept in "
            "questions.jsonl and left out of these figures, which cover this selection only"
        )
    lines += ["", f"{MAPPING}" if bench == "locomo" else "", ""]
    if c["mode"] == "retrieval":
        r = results["retrieval"]
        kinds = ("evidence",) if bench == "locomo" else ("session", "turn")
        tables = [(kind, "recall", f"{kind} recall@k (measured)") for kind in kinds]
        if bench != "locomo":
            tables += [(kind, "recall_all", f"{kind} recall_all@k (LongMemEval's metric; "
                        "measured)") for kind in kinds]  # fmt: skip
        for kind, metric, title in tables:
            lines += [
                f"## {title}",
                "",
                "| category | n | " + " | ".join(f"{s} @{k}" for s in SYSTEMS for k in KS) + " |",
                "|---|---|" + "---|" * (len(SYSTEMS) * len(KS)),
            ]
            n_key = f"{kind}_n" if metric == "recall" else f"{kind}_n_longmemeval"
            for cat in r["mem0g"]:
                n = r["mem0g"][cat].get(n_key, 0)
                label = category_name(bench, cat) if bench == "locomo" and cat.isdigit() else cat
                vals = [
                    _fmt(r[s][cat].get(f"{kind}_{metric}@{k}"), pct=True)
                    for s in SYSTEMS
                    for k in KS
                ]
                lines.append(f"| {label} | {n} | " + " | ".join(vals) + " |")
            lines.append("")
        if bench != "locomo":
            lines += [
                "recall@k: mem0g's measure, the share of the evidence found (every turn marked "
                "has_answer, the assistant's too; the dataset's answer sessions). "
                "recall_all@k: LongMemEval's, as its run_retrieval.py scores it: 1 when every "
                "user turn marked has_answer (or each of their sessions) is among the top k "
                "user turns (or sessions) of the ranking, assistant hits passed over as its "
                "index holds user turns only; questions with no such turn are left out (n). "
                "results.json has its recall_any@k too.",
                "",
            ]
        lines += [
            "mem0g: the turns (or observations) stored with `infer=False` and found by "
            "`Memory.search`; dense: cosine over the same stored texts with the same embedding "
            "model; bm25: `bm25s` over them; dense+bm25 rrf: the two fused by reciprocal rank "
            "(k = 60). Recall in percent.",
            "",
        ]
    else:
        lines += [
            "## Accuracy (measured)",
            "",
            "| category | n | J | " + ("F1 | BLEU-1 |" if bench == "locomo" else ""),
            "|---|---|---|" + ("---|---|" if bench == "locomo" else ""),
        ]
        for cat, e in results["scores"].items():
            label = category_name(bench, cat) if bench == "locomo" and cat.isdigit() else cat
            j = f"{e['J_mean']:.2f} ± {e['J_std']:.2f}" if e["J_mean"] is not None else "–"
            extra = f" {_fmt(e.get('f1'))} | {_fmt(e.get('bleu1'))} |" if bench == "locomo" else ""
            lines.append(f"| {label} | {e['n']} | {j} |{extra}")
        if "adversarial" in results:
            a = results["adversarial"]
            lines += [
                "",
                f"Category 5 (adversarial), not in J: {a['accuracy']:.2f}% of {a['n']} "
                f"questions ({a['method']}).",
            ]
        pq = results["per_question"]
        lines += [
            "",
            "## Per question (measured)",
            "",
            f"- LLM calls {pq['llm_calls']}, tokens {pq['llm_tokens']} (answer + judge runs); "
            f"{pq['answered_from_cache']} answered from the cache",
            f"- context tokens (chars / 4): {pq['context_tokens']}",
            f"- total time per question: {_lat(pq['question_ms'])}",
        ]
        lines += [
            "",
            "## Comparison",
            "",
            "| system | benchmark | score | model | source |",
            "|---|---|---|---|---|",
        ]
        overall = results["scores"].get("overall 1-4" if bench == "locomo" else "overall")
        if overall:
            score = f"{overall['J_mean']:.2f} ± {overall['J_std']:.2f}"
            models = (
                f"memory {c['memory_model']}, answer {c['answer_model']}, judge {c['judge_model']}"
            )
            lines.append(f"| mem0g (this run) | {bench} J | {score} | {models} | measured |")
        for system, what, score, model in PUBLISHED:
            lines.append(f"| {system} | {what} | {score} | {model} | published |")
    ing, st, runs = results["ingest"], results["store"], results["runs"]
    by_task = ing["llm_calls_by_task"] or "none"
    lines += [
        "",
        "## Search and ingestion (measured)",
        "",
        f"- search latency: {_lat(results['search_ms'])}",
        *(
            [f"- context tokens per question (estimated, k = 10): {results['context_tokens']}"]
            if "context_tokens" in results
            else []
        ),
        f"- adds: {ing['adds']}, {_lat(ing['add_ms'])}; {ing['seconds']} s in all",
        f"- LLM calls per add: {ing['llm_calls_per_add']} (by task: {by_task}; "
        f"structured-output modes: {ing['llm_modes'] or 'none'}); tokens per add: "
        f"prompt {ing['prompt_tokens_per_add']}, completion {ing['completion_tokens_per_add']}",
        f"- extractions rejected by the sanity rules: {ing['rejected_extractions']}; adds that "
        f"failed (no valid answer after the retries, nothing written): {ing['failed_adds']}",
        f"- stored: {st['entities']} entities, {st['relations']} edges "
        f"({st['valid_relations']} valid), {st['facts']} facts, {st['episodes']} episodes",
        f"- network LLM calls: {runs['network_calls'] or 'none'} over "
        f"{runs['invocations']} invocation(s); cache hits {runs['cache_hits']}",
        "",
        "![per category](plots/categories.png)",
        "",
        "![search latency](plots/search_latency_cdf.png)",
        "",
    ]
    return "\n".join(lines)


def _lat(stats: dict[str, Any]) -> str:
    if not stats.get("n"):
        return "–"
    return f"p50 {stats['p50_ms']:.1f} ms, p95 {stats['p95_ms']:.1f} ms (n={stats['n']})"


def _plots(results: dict[str, Any], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    bench = results["config"]["benchmark"]
    paths = []
    fig, ax = plt.subplots(figsize=(8, 4))
    if results["config"]["mode"] == "retrieval":
        r = results["retrieval"]
        kind = "evidence" if bench == "locomo" else "session"
        cats = list(r["mem0g"])
        width = 0.8 / len(SYSTEMS)
        for i, system in enumerate(SYSTEMS):
            vals = [100 * (r[system][c].get(f"{kind}_recall@10") or 0) for c in cats]
            ax.bar([x + i * width for x in range(len(cats))], vals, width, label=system)
        ax.set_xticks([x + width for x in range(len(cats))])
        ax.set_xticklabels(
            [category_name(bench, c) if c.isdigit() else c for c in cats],
            rotation=20,
            ha="right",
            fontsize=8,
        )
        ax.set_ylabel(f"{kind} recall@10 (%)")
        ax.legend()
    else:
        scores = results["scores"]
        cats = list(scores)
        ax.bar(
            range(len(cats)),
            [scores[c]["J_mean"] or 0 for c in cats],
            yerr=[scores[c]["J_std"] or 0 for c in cats],
            capsize=4,
        )
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels(
            [category_name(bench, c) if c.isdigit() else c for c in cats],
            rotation=20,
            ha="right",
            fontsize=8,
        )
        ax.set_ylabel("LLM-judge J (%)")
    c = results["config"]
    ax.set_title(f"mem0g on {bench} ({c['mode']} mode, facts: {c['facts']}), measured")
    fig.tight_layout()
    path = out / "categories.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    paths.append(path)

    fig, ax = plt.subplots(figsize=(6, 4))
    values = results["search_ms_values"]
    if values:
        ax.step(values, [(i + 1) / len(values) for i in range(len(values))], where="post")
    ax.set_xlabel("search latency (ms)")
    ax.set_ylabel("fraction of questions")
    ax.set_title("mem0g search latency CDF, measured")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = out / "search_latency_cdf.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    paths.append(path)
    return paths


def render(run_dir: Path | str) -> dict[str, Any]:
    """Write results.json, report.md and plots/ from the run's records; returns the results."""
    run_dir = Path(run_dir)
    results = summarize(run_dir)
    _plots(results, run_dir / "plots")
    (run_dir / "report.md").write_text(_markdown(results), encoding="utf-8")
    saved = {k: v for k, v in results.items() if k != "search_ms_values"}
    (run_dir / "results.json").write_text(
        json.dumps(saved, indent=2, ensure_ascii=False), encoding="utf-8"
    )
    return saved
