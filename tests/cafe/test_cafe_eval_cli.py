"""`segbench evaluate cafe|cgf1` through the CLI: metrics.json, report.md and plots, and clean errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

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
    plots = ("cgf1_by_subset.png", "false_positive_rates.png", "tau_sweep.png", "standing.png")
    for plot in plots:
        assert (out / plot).read_bytes()[:4] == b"\x89PNG"
    shown = re.findall(r"!\[[^]]*\]\(([^)]+)\)", (out / "report.md").read_text())
    assert sorted(shown) == sorted(plots)  # every plot shown, and no table file as an image
    assert (out / "summary.csv").read_text().startswith("Subset,N,TA-TP,TA-FN,TA-FP,UA-FP,TN,AFPR,UFPR,IL-FPR,ACSR,"
                                                       "UCSR,CSR,SoftSwap,cgF1,")
    assert "| Overall | 5 | 2 | 3 | 2 | 1 | 2 |" in (out / "summary.md").read_text()
    assert "Where the model stands" in (out / "report.md").read_text()
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


def _subset_files(tmp_path):
    paths = {}
    for subset in ("SM", "CC", "OC"):
        paths[subset] = tmp_path / f"CAFE_{subset}.json"
        paths[subset].write_text(json.dumps(cafe_gt({k: v for k, v in HAND_PAIRS.items() if v == subset})))
    return paths


def test_one_predictions_file_against_each_subset_file(files):
    tmp_path, gt, preds = files
    subsets = _subset_files(tmp_path)
    result = _invoke(tmp_path, "cgf1", "--each", *(a for s in subsets.values() for a in ("--gt", str(s))),
                     "--predictions", str(preds), "--out", str(tmp_path / "each"))
    assert result.exit_code == 0, result.output + repr(result.exception)
    files_ = json.loads((tmp_path / "each" / "metrics.json").read_text())["metrics"]["files"]
    ignored = {Path(f["ground_truth"]).stem: f["ignored"] for f in files_}
    # 9 predictions: SM keeps those of images 1, 1001, 2, 1002; CC of 3, 1003; OC of 1004 and 5 (twice)
    assert {k: (v["predictions"], v["images"], v["expected"]) for k, v in ignored.items()} == {
        "CAFE_SM": (5, 4, True), "CAFE_CC": (7, 6, True), "CAFE_OC": (6, 6, True)}
    report = (tmp_path / "each" / "report.md").read_text()
    assert "Warning" not in result.output and "Where the model stands: CAFE (CAFEval2026), OC (CAFE_OC)" in report
    # Each file's cgF1 is the per-subset cgF1 of `evaluate cafe` on the whole export.
    whole = _invoke(tmp_path, "cafe", "--gt", str(gt), "--predictions", str(preds), "--out", str(tmp_path / "all"))
    assert whole.exit_code == 0, whole.output
    per_subset = json.loads((tmp_path / "all" / "metrics.json").read_text())["metrics"]
    for f in files_:
        subset = Path(f["ground_truth"]).stem.removeprefix("CAFE_")
        assert f["cgF1"] == per_subset[subset]["cgF1"] and f["IL_MCC"] == per_subset[subset]["IL_MCC"]


def test_one_subset_file_ignores_the_other_subsets(files):
    tmp_path, _, preds = files
    subsets = _subset_files(tmp_path)
    cg = _invoke(tmp_path, "cgf1", "--gt", str(subsets["SM"]), "--predictions", str(preds),
                 "--out", str(tmp_path / "cg"))
    assert cg.exit_code == 0, cg.output + repr(cg.exception)
    assert json.loads((tmp_path / "cg" / "metrics.json").read_text())["metrics"]["ignored"]["predictions"] == 5
    assert "Ignored: 5 predictions on 4 images" in cg.output and "Warning" not in cg.output
    cafe = _invoke(tmp_path, "cafe", "--gt", str(subsets["OC"]), "--predictions", str(preds),
                   "--out", str(tmp_path / "oc"))
    assert cafe.exit_code == 0, cafe.output + repr(cafe.exception)
    metrics = json.loads((tmp_path / "oc" / "metrics.json").read_text())["metrics"]
    assert metrics["ignored"]["predictions"] == 6 and metrics["OC"]["N"] == 2 and metrics["SM"]["N"] == 0
    assert "Ignored predictions: 6 on 6 images" in (tmp_path / "oc" / "report.md").read_text()


def test_a_stray_prediction_warns_with_one_file_and_fails_with_several(files):
    tmp_path, gt, preds = files
    preds.write_text(json.dumps([*HAND_PREDS, pred(424242, TARGET, 0.9)]))
    result = _invoke(tmp_path, "cafe", "--gt", str(gt), "--predictions", str(preds), "--out", str(tmp_path / "o"))
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "Warning" in result.output and "1 predictions on 1 images" in result.output
    assert "**Unexpected:**" in (tmp_path / "o" / "report.md").read_text()
    subsets = _subset_files(tmp_path)
    result = _invoke(tmp_path, "cgf1", "--each", *(a for s in subsets.values() for a in ("--gt", str(s))),
                     "--predictions", str(preds), "--out", str(tmp_path / "each"))
    assert isinstance(result.exception, InputError)
    assert "424242" in str(result.exception) and str(preds) in str(result.exception)
    assert result.exception.item == f"prediction {len(HAND_PREDS)}"
    assert not (tmp_path / "each" / "metrics.json").exists()
