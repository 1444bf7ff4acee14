"""Report helpers write numbers, missing values and paths the same way in every report."""

from __future__ import annotations

from pathlib import Path

from segbench.core.reports import cell, evaluated_lines, fmt, markdown_table, portable_paths


def test_numbers_have_four_decimals_and_missing_values_read_n_a():
    assert fmt(0.6983500251589405) == "0.6984"
    assert fmt(None) == fmt(float("nan")) == "n/a"
    assert [cell(v) for v in (None, True, False, 3, "x", 0.5)] == ["n/a", "yes", "no", "3", "x", "0.5000"]
    assert markdown_table(["a", "b"], [["x", None]]).splitlines()[-1] == "| x | n/a |"


def test_paths_in_reports_are_relative_to_the_project_or_just_a_name(tmp_path):
    project = tmp_path / "project"
    value = {"source": str(project), "at_rev": f"{project}@v1", "gt": f"{project}:data/cafe/CAFE.json",
             "predictions": str(project / ".segbench" / "preds"), "elsewhere": "/datasets/coco/preds.json",
             "given": "preds/", "levels": {"parts": Path(project / "p.json")}, "rho": 0.95, "rev": None}
    assert portable_paths(value, project) == {
        "source": ".", "at_rev": ".@v1", "gt": ".:data/cafe/CAFE.json", "predictions": ".segbench/preds",
        "elsewhere": "preds.json", "given": "preds/", "levels": {"parts": "p.json"}, "rho": 0.95, "rev": None}


def test_what_was_evaluated_reads_as_words_not_python_reprs():
    lines = evaluated_lines({"rev": None, "answers": None, "rho": 0.95, "changed": True,
                             "ground_truth": {"wholes": "w.json", "parts": "p.json"}})
    text = "\n".join(lines)
    assert "- **rev**: working tree" in text and "- **answers**: n/a" in text
    assert "- **ground_truth**: wholes `w.json`, parts `p.json`" in text
    assert "- **rho**: `0.95`" in text and "- **changed**: `yes`" in text
    assert "None" not in text and "{" not in text and "True" not in text
