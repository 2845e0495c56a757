"""Evaluation harness: LoCoMo and LongMemEval, in full mode (answer + judge through any
OpenAI-compatible LLM) or retrieval mode (no LLM at all), resumable and cached.

    from mem0g.eval import run_locomo, run_longmemeval, render
    run_locomo("locomo10.json", "runs/locomo", mode="retrieval", facts="observation")
    render("runs/locomo")   # results.json, report.md, plots/*.png

The command line is `mem0g eval locomo|longmemeval|report` (mem0g/eval/cli.py).

What lives here: `data.py` (the dataset loaders and checks), `runner.py` (`Harness`: options,
run directory checks, ingestion, the worker pool), `retrieval.py` (retrieval mode: recall@k
for mem0g and the dense/BM25 baselines), `answering.py` (full mode: answer and judge),
`rundir.py` (the run directory's JSON Lines), `progress.py` (bars), `llm.py` (the response
cache and the chat clients), `metrics.py`, `report.py` (results.json, report.md, plots),
`cli.py`. Who may import it: the CLI (`mem0g eval`), tests and scripts. It is a client of
`Memory`, and imports llm, config, resources, types and `stores.vectors`.
"""

from __future__ import annotations

from mem0g.eval.data import EvalInputError, load_locomo, load_longmemeval
from mem0g.eval.report import render, summarize
from mem0g.eval.runner import EvalOptions, Harness, run_eval, run_locomo, run_longmemeval

__all__ = [
    "EvalInputError",
    "EvalOptions",
    "Harness",
    "load_locomo",
    "load_longmemeval",
    "render",
    "run_eval",
    "run_locomo",
    "run_longmemeval",
    "summarize",
]
