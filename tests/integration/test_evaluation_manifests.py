"""An evaluation's manifest names paths relative to the project, never this machine's folders, and
its build key still changes when the predictions do (it hashes their content)."""

from __future__ import annotations

import json

import pytest
from support.flip_eval_data import IMAGE_IDS, write_flip_dataset, write_label_predictions
from support.spin_eval_data import perfect_predictions, write_dataset

from segbench.flows.flip import evaluate_coco_cd
from segbench.flows.spin.evaluate import evaluate_spin

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


def _manifest(out):
    return json.loads((out / "manifest.json").read_text())


def test_a_flip_evaluation_manifest_is_portable_and_follows_the_predictions(tmp_path):
    repo = tmp_path / "project"
    write_flip_dataset(repo / "data" / "coco_cd")
    preds = write_label_predictions(repo / "preds" / "baseline")
    out = repo / "reports" / "baseline"
    assert not evaluate_coco_cd(repo, None, preds, out).up_to_date
    text = (out / "manifest.json").read_text()
    assert str(tmp_path) not in text
    params = _manifest(out)["params"]
    assert params["predictions"] == "preds/baseline" and params["source"] == "."

    assert evaluate_coco_cd(repo, None, preds, out).up_to_date
    # Same folder, other content: the key follows the files, not their path.
    write_label_predictions(preds, swapped=set())
    again = evaluate_coco_cd(repo, None, preds, out)
    assert not again.up_to_date and again.summary.num_images == len(IMAGE_IDS)
    assert _manifest(out)["params"]["predictions"] == "preds/baseline"


def test_a_spin_evaluation_manifest_is_portable_and_follows_the_predictions(tmp_path):
    repo = tmp_path / "project"
    write_dataset(repo / "data" / "spin")
    parts = repo / "preds" / "spin_test_parts_results.json"
    parts.parent.mkdir(parents=True)
    parts.write_text(json.dumps(perfect_predictions()["parts"]))
    outside = tmp_path / "elsewhere" / "spin_test_wholes_results.json"  # outside the project: named only
    outside.parent.mkdir()
    outside.write_text(json.dumps(perfect_predictions()["wholes"]))
    out = repo / "reports" / "spin"
    predictions = {"parts": parts, "wholes": outside}
    assert not evaluate_spin(repo, None, predictions, out).up_to_date
    assert str(tmp_path) not in (out / "manifest.json").read_text()
    params = _manifest(out)["params"]
    assert params["predictions"] == {"parts": "preds/spin_test_parts_results.json",
                                     "wholes": "spin_test_wholes_results.json"}
    assert params["source"] == "."

    assert evaluate_spin(repo, None, predictions, out).up_to_date
    parts.write_text(json.dumps(perfect_predictions()["parts"][:1]))
    assert not evaluate_spin(repo, None, predictions, out).up_to_date
