"""scripts/bench_scale.py on tiny sizes: its report is complete and its figures are counts of
what was really stored (no timing is asserted). The LLM is the scripted TEST DOUBLE."""

from __future__ import annotations

import json
from pathlib import Path

from script_module import load_script


def test_tiny_scale_run_writes_its_report(tmp_path: Path) -> None:
    bench = load_script("bench_scale")
    out = tmp_path / "scale.json"
    assert bench.main(["--names", "3,6", "--tenants", "2,5", "--searches", "3",
                       "--out", str(out)]) == 0  # fmt: skip
    report = json.loads(out.read_text())
    assert [(r["names"], r["entities"]) for r in report["names_per_add"]] == [(3, 3), (6, 6)]
    assert [r["tenants"] for r in report["tenants_per_store"]] == [2, 5]
    # first searches of tenants not searched before (2, then the 3 others of 5), then 3
    # repeated searches of those, timed apart
    assert [r["first"]["n"] for r in report["tenants_per_store"]] == [2, 3]
    assert [r["searched_tenants"] for r in report["tenants_per_store"]] == [2, 3]
    assert all(r["repeat"]["n"] == r["repeat_cpu"]["n"] == 3 for r in report["tenants_per_store"])
    assert all(r["loaded_before_first_search"] is not None for r in report["tenants_per_store"])
    assert report["reopen"]["tenants"] == 5 and report["reopen"]["open_s"] > 0
    assert report["load_before"] is not None and report["machine"]["cpu_count"]
