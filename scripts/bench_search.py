"""Benchmark `Memory.search` latency against query-embedding latency, and `add` overhead.

The code lives in the scripts/bench/ package (see its docstring); this file keeps the command
line. `python scripts/bench_search.py --help` lists the options.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/: the `bench` package

from bench.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
