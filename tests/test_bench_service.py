"""Smoke test of scripts/bench_service.py: tiny load, hashing embedder, no timing thresholds;
it checks one run writes a complete report, so the benchmark cannot rot unnoticed."""

from __future__ import annotations

import json

from script_module import load_script


def test_tiny_run_writes_complete_report(tmp_path) -> None:
    bench = load_script("bench_service")
    out = tmp_path / "service.json"
    argv = ["--seed", "6", "--searches", "8", "--adds", "4", "--warmup", "2",
            "--concurrency", "1,2", "--embedder", "hashing", "--out", str(out)]  # fmt: skip
    assert bench.main(argv) == 0
    report = json.loads(out.read_text())
    assert report["in_process_search"]["n"] == report["served_search_interleaved"]["n"] == 8
    assert [row["concurrency"] for row in report["levels"]] == [1, 2]
    for row in report["levels"]:
        assert row["search"]["n"] == 8 and row["add"]["n"] == 4
        assert row["search"]["p95_ms"] >= row["search"]["p50_ms"] > 0
    assert report["served_over_in_process_search_p95"] > 0
    assert len(report["load_start"]) == 3 and len(report["load_end"]) == 3
