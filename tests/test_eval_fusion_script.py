"""scripts/eval_fusion.py's per-category scores (no store, no model: the rows by hand)."""

from __future__ import annotations

from script_module import load_script


def test_a_category_with_no_question_scores_none_not_zero(capsys) -> None:  # type: ignore[no-untyped-def]
    """LoCoMo's conv-30 has no open-domain (3) question: its recall there was printed and
    written as 0.000, as if every question had missed."""
    fusion = load_script("eval_fusion")
    rows = [{"category": "1", "r@5": 0.5, "r@10": 1.0, "r@20": 1.0},
            {"category": "4", "r@5": 1.0, "r@10": 1.0, "r@20": 1.0}]  # fmt: skip
    by = fusion.scores(rows)
    assert by["3"] == {"r@5": None, "r@10": None, "r@20": None, "n": 0}
    assert by["overall"] == {"r@5": 0.75, "r@10": 1.0, "r@20": 1.0, "n": 2}
    fusion.table({"s": by})
    line = capsys.readouterr().out.splitlines()[1]
    assert line == "s | 0.500/1.000/1.000 | – (no question) | – (no question) | " \
        "1.000/1.000/1.000 | 0.750/1.000/1.000"  # fmt: skip
