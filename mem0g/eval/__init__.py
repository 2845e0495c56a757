"""Evaluation harness: LoCoMo and LongMemEval, in full mode (answer + judge through any
OpenAI-compatible LLM) or retrieval mode (no LLM at all), resumable and cached.

    from mem0g.eval import run_locomo, run_longmemeval, render
    run_locomo("locomo10.json", "runs/locomo", mode="retrieval", facts="observation")
    render("runs/locomo")   # results.json, report.md, plots/*.png

The command line is `mem0g eval locomo|longmemeval|report` (mem0g/eval/cli.py).
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
