"""scripts/bench_long_facts.py on the tiny LoCoMo file: facts packed from whole turns, both
modes searched, a complete report. No figures are asserted: they are measured by hand."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from script_module import load_script

from mem0g.eval.data import load_locomo

DATA = Path(__file__).parent / "data" / "eval" / "locomo_tiny.json"
bench = load_script("bench_long_facts")


def test_packing_keeps_whole_turns_in_order_under_the_limit() -> None:
    unit = load_locomo(DATA).units[0]
    facts = bench.packed(unit, 120)
    turns = [t for s in unit.sessions for t in s.turns]
    assert [r for _, refs, _ in facts for r in refs] == [t.ref for t in turns]
    for text, refs, _ in facts:
        assert len(text) <= 120 and len(text.splitlines()) == len(refs)
    assert len(bench.packed(unit, 10_000)) == len(unit.sessions)


def test_a_run_reports_both_modes(tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "long.json"
    monkeypatch.setattr(sys, "argv", ["bench_long_facts.py", str(DATA), "--chars", "200",
                                      "--out", str(out)])  # fmt: skip
    bench.main()
    report = json.loads(out.read_text())
    assert set(report["modes"]) == {"truncate", "windows"}
    for mode in report["modes"].values():
        assert mode["facts"] > 0 and len(mode["embed_ms_p50_p95"]) == 2
        assert {"dense overall", "hybrid overall"} <= set(mode["recall"])
        for cell in mode["recall"].values():
            assert set(cell) == {"r@1", "r@3", "r@5", "r@10"}
            assert all(0.0 <= v <= 1.0 for v in cell.values())
