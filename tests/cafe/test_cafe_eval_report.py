"""The CAFE / cgF1 reports: what the Markdown says, that the files are written, and byte-identical reruns."""

from __future__ import annotations

import json

from support.cafe_eval_data import HAND_PAIRS, HAND_PREDS, cafe_gt

from segbench.tasks.cafe.cgf1 import evaluate_cgf1
from segbench.tasks.cafe.cgf1_inputs import load_ground_truth, load_predictions
from segbench.tasks.cafe.eval_report import render_cafe_markdown, write_cafe_report, write_cgf1_report
from segbench.tasks.cafe.metrics import evaluate_cafe

EVALUATED = {"ground_truth": "gt.json", "predictions": "preds.json"}


def _metrics() -> dict:
    truth = load_ground_truth(cafe_gt(HAND_PAIRS), "gt.json")
    metrics = evaluate_cafe(truth, load_predictions(HAND_PREDS, "preds.json", truth)).model_dump(mode="json")
    return metrics | {"calibration": None}


def test_markdown_lists_every_subset_and_the_fn_note():
    text = render_cafe_markdown(_metrics(), EVALUATED)
    assert "| SM | 2 | 1 | 1 | 0 | 0 | 1 | 1 |" in text  # N, TA-TP, TA-FN, UA-FN, TN, TA-FP, UA-FP
    assert "| Overall | 0.4000 | 0.2000 | 0.6000 | 0.2000 | 0.2000 | 0.4000 |" in text
    assert "TA-FN + UA-FN equals the TA-FN column" in text
    assert text.count("| 0.") >= 9  # one τ-sweep row per τ


def test_empty_subset_renders_as_not_available():
    truth = load_ground_truth(cafe_gt({1: "SM"}), "gt.json")
    text = render_cafe_markdown(evaluate_cafe(truth, load_predictions([], "p", truth)).model_dump(mode="json"),
                                EVALUATED)
    assert "| OC | n/a | n/a | n/a | n/a | n/a | n/a |" in text


def test_reports_are_written_and_reproducible(tmp_path):
    metrics = _metrics()
    first = write_cafe_report(tmp_path / "a", metrics, EVALUATED)
    second = write_cafe_report(tmp_path / "b", metrics, EVALUATED)
    assert set(first) == {"metrics", "report", "cgf1_by_subset", "false_positive_rates", "tau_sweep", "summary_md",
                          "summary_csv", "standing"}
    report = first["report"].read_text()
    assert "## Where the model stands" in report and "| **this model** | evaluated here |" in report
    assert "| SAM 3 | End-to-end | 53 | 61.4 | -10.5 | 38.5 |" in report
    assert first["summary_md"].read_text().count("\n| ") == 5  # header + 4 rows
    for name, path in first.items():
        assert path.read_bytes() == second[name].read_bytes(), name
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    saved = json.loads(first["metrics"].read_text())
    assert set(saved) == {"evaluated", "metrics"}
    assert saved["metrics"]["Overall"]["TA-FP"] == 2 and saved["evaluated"] == EVALUATED


def test_cgf1_report(tmp_path):
    truth = load_ground_truth(cafe_gt(HAND_PAIRS), "gt.json")
    summary = evaluate_cgf1([truth], load_predictions(HAND_PREDS, "preds.json", truth)).model_dump(mode="json")
    paths = write_cgf1_report(tmp_path, summary, EVALUATED)
    saved = json.loads(paths["metrics"].read_text())
    assert saved["evaluated"] == EVALUATED
    assert {"cgF1", "IL_MCC", "pmF1", "positive_micro_F1", "IL_FPR", "positive_macro_F1", "cgF1@0.5",
            "cgF1@0.75"} <= set(saved["metrics"])
    assert "| IL_MCC |" in paths["report"].read_text() and paths["cgf1_by_iou"].stat().st_size > 1000


def test_the_plots_draw_the_rows_the_tables_show():
    """The plots module names the rows itself (the drawing process imports it, not the evaluation)."""
    from segbench.tasks.cafe import eval_plots, eval_report

    assert eval_plots.ROWS == eval_report.ROWS
