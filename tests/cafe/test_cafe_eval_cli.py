"""`segbench evaluate cafe|cgf1` through the CLI: metrics.json, report.md and plots, and clean errors."""

from __future__ import annotations

import json

import pytest
from support.cafe_eval_data import HAND_PAIRS, HAND_PREDS, TARGET, cafe_gt, pred
from typer.testing import CliRunner

from segbench.cli import app
from segbench.core.errors import InputError

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture
def files(tmp_path):
    gt, preds = tmp_path / "CAFE.json", tmp_path / "preds.json"
    gt.write_text(json.dumps(cafe_gt(HAND_PAIRS)))
    preds.write_text(json.dumps(HAND_PREDS))
    return tmp_path, gt, preds


def _invoke(tmp_path, *args):
    return CliRunner().invoke(app, ["--data-root", str(tmp_path / "data"), "--work-dir", str(tmp_path / "work"),
                                    "evaluate", *args])


def test_evaluate_cafe_writes_metrics_report_and_plots(files):
    tmp_path, gt, preds = files
    result = _invoke(tmp_path, "cafe", "--gt", str(gt), "--predictions", str(preds), "--score-threshold", "0.5",
                     "--iou-threshold", "0.3", "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output + repr(result.exception)
    out = tmp_path / "out"
    metrics = json.loads((out / "metrics.json").read_text())["metrics"]
    assert metrics["Overall"]["TA-FP"] == 2 and metrics["Overall"]["UA-FN"] == 2
    assert metrics["SM"]["UCSR"] == 0.5 and metrics["CC"]["ACSR"] == 1.0
    assert {"cgF1", "cgF1@0.5", "cgF1@0.75", "IL_MCC", "pmF1"} <= set(metrics["OC"])
    assert "Target-aware classification" in (out / "report.md").read_text()
    for plot in ("cgf1_by_subset.png", "false_positive_rates.png", "tau_sweep.png"):
        assert (out / plot).read_bytes()[:4] == b"\x89PNG"
    assert "TA-TP" in result.output and "Report:" in result.output


def test_evaluate_cafe_reads_the_published_export_and_calibrates(files):
    tmp_path, gt, preds = files
    published = tmp_path / "data" / "cafe"
    published.mkdir(parents=True)
    (published / "CAFE.json").write_text(gt.read_text())
    result = _invoke(tmp_path, "cafe", "--repo", str(tmp_path), "--predictions", str(preds), "--calibrate",
                     "--calibration-gt", str(gt), "--calibration-predictions", str(preds),
                     "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output + repr(result.exception)
    saved = json.loads((tmp_path / "out" / "metrics.json").read_text())
    metrics = saved["metrics"]
    assert metrics["calibration"]["threshold"] == metrics["params"]["score_threshold"]
    assert saved["evaluated"]["ground_truth"].endswith("data/cafe/CAFE.json")


def test_evaluate_cgf1_oracle(files):
    tmp_path, gt, preds = files
    other = tmp_path / "other.json"
    other.write_text(gt.read_text())
    result = _invoke(tmp_path, "cgf1", "--gt", str(gt), "--gt", str(other), "--predictions", str(preds),
                     "--out", str(tmp_path / "cg"))
    assert result.exit_code == 0, result.output + repr(result.exception)
    saved = json.loads((tmp_path / "cg" / "metrics.json").read_text())
    metrics = saved["metrics"]
    assert metrics["pmF1"] == metrics["positive_micro_F1"] and saved["evaluated"]["protocol"] == "oracle"
    assert (tmp_path / "cg" / "report.md").exists() and (tmp_path / "cg" / "cgf1_by_iou.png").exists()


def test_bad_predictions_fail_with_a_typed_error(files):
    tmp_path, gt, preds = files
    preds.write_text(json.dumps([pred(424242, TARGET, 0.9)]))
    result = _invoke(tmp_path, "cafe", "--gt", str(gt), "--predictions", str(preds), "--out", str(tmp_path / "o"))
    assert isinstance(result.exception, InputError)
    assert "424242" in str(result.exception) and str(preds) in str(result.exception)
    assert not (tmp_path / "o" / "metrics.json").exists()
