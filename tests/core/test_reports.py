"""Report helpers write numbers, missing values and paths the same way in every report."""

from __future__ import annotations

from pathlib import Path

from segbench.core.reports import cell, evaluated_lines, fmt, markdown_table, plain, portable_paths
from segbench.providers.base import Usage, describe_usage


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
        "source": ".", "at_rev": ".@v1", "gt": "data/cafe/CAFE.json", "predictions": ".segbench/preds",
        "elsewhere": "preds.json", "given": "preds/", "levels": {"parts": "p.json"}, "rho": 0.95, "rev": None}


def test_what_was_evaluated_reads_as_words_not_python_reprs():
    lines = evaluated_lines({"rev": None, "answers": None, "rho": 0.95, "changed": True,
                             "ground_truth": {"wholes": "w.json", "parts": "p.json"}})
    text = "\n".join(lines)
    assert "- **rev**: working tree" in text and "- **answers**: n/a" in text
    assert "- **ground_truth**: wholes `w.json`, parts `p.json`" in text
    assert "- **rho**: `0.95`" in text and "- **changed**: `yes`" in text
    assert "None" not in text and "{" not in text and "True" not in text


def test_log_lines_name_counts_in_words_without_python_reprs():
    counts = {"parts": 14, "unused_rules": 0, "levels": {"exact": 3, "broad": 0.123456}, "names": ["a", "b"],
              "problems": {}, "answers": None}
    line = plain(counts)
    assert line == "parts 14, unused rules 0, levels (exact 3, broad 0.1235), names a, b, problems none, answers n/a"
    assert not any(mark in line for mark in "{}[]'")


def test_provider_usage_reads_as_a_sentence_with_the_cost_rounded():
    usage = Usage(calls=12, cache_hits=3, retries=1, reasks=0, prompt_tokens=1200, completion_tokens=340,
                  cost_usd=0.012345678)
    expected = "12 calls (3 from the cache, 1 retries, 0 re-asks), 1200 prompt + 340 completion tokens, $0.0123"
    assert describe_usage(usage) == expected
    assert describe_usage(usage.model_dump()) == expected  # as flows carry it in their summaries


def test_a_report_shows_its_plots_with_links_relative_to_its_folder(tmp_path):
    from segbench.core.reports import write_report_files

    paths = write_report_files(tmp_path / "r", {"m": 1}, {"rev": None}, "# Report\n\ntext\n",
                               {"class_iou": ("class_iou.png", b"\x89PNG")})
    text = paths["report"].read_text()
    assert text.endswith("## Plots\n\n![class iou](class_iou.png)\n") and (tmp_path / "r" / "class_iou.png").is_file()
    assert "## Plots" not in write_report_files(tmp_path / "s", {}, {}, "# R\n", {})["report"].read_text()
