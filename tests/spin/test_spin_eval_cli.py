"""`segbench evaluate spin` end to end on a two-image SPIN split written in the dataset's format."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from support.spin_eval_data import TWO_QUADRUPEDS, box, gt_mask, perfect_predictions, rle, write_dataset
from typer.testing import CliRunner

from segbench.cli import app
from segbench.core.errors import AnnotationError, InputError

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


def _invoke(*args: str):
    repo = Path(args[args.index("--repo") + 1])  # every call names the project; its data/ is the data root
    return CliRunner().invoke(app, ["--data-root", str(repo / "data"), "--work-dir", str(repo.parent / "work"),
                                    "evaluate", "spin", *args])


@pytest.fixture
def project(tmp_path):
    write_dataset(tmp_path / "project" / "data" / "spin")
    return tmp_path / "project"


def _write_predictions(folder, split="test"):
    """General prompts: exact except the Eye, half outside its Head. Specific prompts: exact, no subparts."""
    folder.mkdir(parents=True, exist_ok=True)
    general, specific = perfect_predictions("general"), perfect_predictions("specific")
    general["subparts"][0]["segmentation"] = rle(box(1, 3, 3, 5))  # annotation 1000, the Eye
    specific["subparts"] = []
    for level in general:
        path = folder / f"spin_{split}_{level}_results.json"
        path.write_text(json.dumps(general[level] + specific[level]))
    return folder


def _answers(path):
    path.write_text(json.dumps([
        {"image_id": 10, "category_id": 1, "level": "subparts", "answer": "Yes, I can see it."},
        {"image_id": 10, "category_id": 3, "level": "subparts", "answer": "yes"},  # Beak on a quadruped: wrong
        {"gt_id": 102, "level": "parts", "prompt": "specific", "answer": "No."},
    ]))
    return path


def _check_examples(out, report):
    """examples.png: a row per image (both answered), truth then prediction at each level. Predictions
    are exact but for the Eye (general prompts): the wholes' tiles match, image 10's subparts do not."""
    from PIL import Image

    assert "![examples](examples.png)" in report
    with Image.open(out / "examples.png") as sheet:
        assert sheet.size == (6 * 160, 24 + 2 * (160 + 26))
        pixels = np.asarray(sheet.convert("RGB")).astype(int)

    def tile(row, column):
        top = 24 + row * (160 + 26)
        return pixels[top:top + 156, column * 160 + 2:column * 160 + 158]

    assert all(np.array_equal(tile(row, 0), tile(row, 1)) for row in range(2))  # wholes: exact
    assert any(not np.array_equal(tile(row, 4), tile(row, 5)) for row in range(2))  # subparts: the Eye moved


def test_evaluate_spin_writes_metrics_report_and_plots(project, tmp_path):
    preds = _write_predictions(tmp_path / "preds")
    out = tmp_path / "report"
    result = _invoke("--predictions", str(preds), "--answers", str(_answers(tmp_path / "answers.json")),
                     "--repo", str(project), "--dataset-dir", "data/spin", "--out", str(out))
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "SPIN (2 images, %)" in result.output and "Report:" in result.output

    metrics = json.loads((out / "metrics.json").read_text())["metrics"]
    general, specific = metrics["prompts"]["general"], metrics["prompts"]["specific"]
    assert general["spcs"]["s2p"]["score"] == pytest.approx(2.5 / 3, abs=1e-6)  # Eye 0.5, Back 1, Beak 1
    assert general["spcs"]["p2o"]["score"] == 1.0
    assert general["levels"]["subparts"]["categories"][0] == {
        "id": 1, "name": "Quadruped-Head-Eye", "iou": 0.0, "mean_entity_iou": 0.0, "entities": 1, "abstained": 0,
        "unprompted": 0}  # cols 3-4 against the Eye's cols 1-2: no overlap, but predicted (not abstained)
    assert general["secs"]["score"] == 1.0  # a misplaced Eye is still an Eye of a Head of a Quadruped
    assert specific["levels"]["parts"]["miou"] == 1.0
    assert specific["levels"]["subparts"] | {"categories": None} == {
        "miou": 0.0, "mean_entity_iou": 0.0, "entities": 3, "abstained": 3, "abstention_rate": 1.0,
        "unprompted_predictions": 0, "categories": None}
    assert specific["spcs"]["s2p"] == {"score": None, "pairs": 0, "child_abstained": 3, "parent_abstained": 0}
    assert specific["secs"] == {"score": None, "pixels": 0, "images": 0}
    recognition = metrics["recognition"]
    assert recognition["general"]["subparts"]["macc"] == 0.5  # Eye right, Beak wrong: two categories
    assert recognition["specific"]["parts"]["macc"] == 0.0

    report = (out / "report.md").read_text()
    for heading in ("## Localization", "## Hierarchical consistency", "## Region size vs IoU (SPIN's Table 5)",
                    "## Per super-category (general", "## Recognition"):
        assert heading in report
    assert "| subparts | specific | 0.00 |" in report
    # specific subparts: every one abstained (IoU 0 each), so no line to fit
    assert specific["size_vs_iou"]["subparts"] is None and "| subparts | specific | – | – | – | – |" in report
    for plot in ("miou_by_level.png", "consistency.png", "per_supercategory.png"):
        assert (out / plot).read_bytes()[:4] == b"\x89PNG"
    _check_examples(out, report)
    assert not (out / "skipped.json").exists()

    # Same inputs → byte-identical outputs.
    again = tmp_path / "again"
    assert _invoke("--predictions", str(preds), "--answers", str(tmp_path / "answers.json"), "--repo", str(project),
                   "--dataset-dir", "data/spin", "--out", str(again)).exit_code == 0
    for name in ("metrics.json", "report.md", "miou_by_level.png", "consistency.png", "per_supercategory.png"):
        assert (again / name).read_bytes() == (out / name).read_bytes(), name


def test_level_files_and_skip_policy(project, tmp_path):
    preds = _write_predictions(tmp_path / "preds")
    parts = preds / "spin_test_parts_results.json"
    entries = json.loads(parts.read_text())
    entries.append({"image_id": 999, "category_id": 0, "segmentation": rle(gt_mask(100))})
    parts.write_text(json.dumps(entries))
    out = tmp_path / "report"

    failed = _invoke("--parts", str(parts), "--repo", str(project), "--dataset-dir", "data/spin", "--out", str(out))
    assert isinstance(failed.exception, AnnotationError)
    assert failed.exception.path == str(parts) and "unknown image_id 999" in str(failed.exception)
    assert not out.exists()  # nothing half-written

    result = _invoke("--parts", str(parts), "--repo", str(project), "--dataset-dir", "data/spin", "--out", str(out),
                     "--on-error", "skip")
    assert result.exit_code == 0, result.output + repr(result.exception)
    metrics = json.loads((out / "metrics.json").read_text())["metrics"]
    assert metrics["skipped"] == {"count": 1, "by_error": {"AnnotationError": 1}}
    assert metrics["prompts"]["general"]["levels"]["parts"]["miou"] == 1.0
    assert metrics["prompts"]["general"]["levels"]["wholes"]["abstention_rate"] == 1.0  # no wholes file given
    assert json.loads((out / "skipped.json").read_text())["items"][0]["item"] == "prediction 6"


def test_missing_inputs_are_explained(project, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = _invoke("--predictions", str(empty), "--repo", str(project), "--dataset-dir", "data/spin")
    assert isinstance(result.exception, InputError) and "spin_test_subparts_results.json" in str(result.exception)
    preds = _write_predictions(tmp_path / "preds")
    result = _invoke("--predictions", str(preds), "--repo", str(project), "--dataset-dir", "data/nope",
                     "--out", str(tmp_path / "r"))
    assert isinstance(result.exception, InputError) and "spin_test_wholes.json" in str(result.exception)


def test_rev_evaluates_a_published_version(project, tmp_path):
    from segbench.core.versioning import configure_remote, ensure_repo
    from segbench.flows.publish import publish_data

    repo = ensure_repo(project, init_git=True)
    configure_remote(repo, str(tmp_path / "remote"))
    first = publish_data(repo=str(repo), commit=True, message="SPIN v1")
    # Version 2 moves the Eye so that the predictions no longer match it.
    subparts = repo / "data" / "spin" / "dataset" / "spin_test_subparts.json"
    coco = json.loads(subparts.read_text())
    coco["annotations"][0]["segmentation"] = rle(box(0, 1, 0, 1))
    subparts.write_text(json.dumps(coco))
    publish_data(repo=str(repo), commit=True, message="SPIN v2")
    shutil.rmtree(repo / ".dvc" / "cache")  # the first version must come from the remote

    preds = tmp_path / "preds"
    preds.mkdir()
    (preds / "spin_test_subparts_results.json").write_text(json.dumps(perfect_predictions()["subparts"]))
    out = tmp_path / "report"
    result = _invoke("--predictions", str(preds), "--rev", first.commit, "--repo", str(repo),
                     "--dataset-dir", "data/spin", "--out", str(out))
    assert result.exit_code == 0, result.output + repr(result.exception)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["evaluated"]["rev"] == first.commit
    # Without --out, the report folder names the revision by its commit, also when given as a moving name.
    again = _invoke("--predictions", str(preds), "--rev", "HEAD~1", "--repo", str(repo), "--dataset-dir", "data/spin")
    assert again.exit_code == 0, again.output + repr(again.exception)
    assert [p.name.split("-")[0] for p in (repo / "reports" / "spin").iterdir()] == [first.commit[:12]]
    assert metrics["metrics"]["prompts"]["general"]["levels"]["subparts"]["miou"] == 1.0


def _write_levels(folder: Path, predictions: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for level, entries in predictions.items():
        (folder / f"spin_test_{level}_results.json").write_text(json.dumps(entries))
    return folder


def test_two_instances_of_a_category_in_one_image_are_scored_one_by_one(tmp_path):
    project = tmp_path / "project"
    write_dataset(project / "data" / "spin", boxes=TWO_QUADRUPEDS)
    preds = _write_levels(tmp_path / "preds", perfect_predictions(boxes=TWO_QUADRUPEDS, by_gt_id=True))
    out = tmp_path / "report"
    result = _invoke("--predictions", str(preds), "--repo", str(project), "--dataset-dir", "data/spin",
                     "--out", str(out))
    assert result.exit_code == 0, result.output + repr(result.exception)
    general = json.loads((out / "metrics.json").read_text())["metrics"]["prompts"]["general"]
    assert {lv: general["levels"][lv]["miou"] for lv in general["levels"]} == {
        "wholes": 1.0, "parts": 1.0, "subparts": 1.0}
    assert general["levels"]["parts"]["entities"] == 3  # two Quadruped Heads and the Bird's
    assert general["spcs"]["mean"] == 1.0 and general["secs"]["score"] == 1.0

    # Only one of the two Eyes predicted: the other is an abstention, not a second chance for the first.
    half = perfect_predictions(boxes=TWO_QUADRUPEDS, by_gt_id=True)
    half["subparts"] = [p for p in half["subparts"] if p["gt_id"] != 1003]
    _write_levels(tmp_path / "half", half)
    result = _invoke("--predictions", str(tmp_path / "half"), "--repo", str(project), "--dataset-dir", "data/spin",
                     "--out", str(tmp_path / "half-report"))
    assert result.exit_code == 0, result.output + repr(result.exception)
    metrics = json.loads((tmp_path / "half-report" / "metrics.json").read_text())["metrics"]
    subparts = metrics["prompts"]["general"]["levels"]["subparts"]
    assert subparts["abstained"] == 1 and subparts["entities"] == 3


def test_a_category_union_still_answers_both_instances(tmp_path):
    project = tmp_path / "project"
    write_dataset(project / "data" / "spin", boxes=TWO_QUADRUPEDS)
    union = {level: [] for level in ("wholes", "parts", "subparts")}
    for level, image_id, cat, _, _ in TWO_QUADRUPEDS.values():  # one mask per (image, category)
        if not any((e["image_id"], e["category_id"]) == (image_id, cat) for e in union[level]):
            union[level].append({"image_id": image_id, "category_id": cat, "score": 0.9,
                                 "segmentation": rle(_mask_of(level, (image_id, cat)))})
    preds = _write_levels(tmp_path / "preds", union)
    result = _invoke("--predictions", str(preds), "--repo", str(project), "--dataset-dir", "data/spin",
                     "--out", str(tmp_path / "report"))
    assert result.exit_code == 0, result.output + repr(result.exception)
    general = json.loads((tmp_path / "report" / "metrics.json").read_text())["metrics"]
    general = general["prompts"]["general"]
    assert general["levels"]["parts"]["entities"] == 2 and general["levels"]["parts"]["miou"] == 1.0
    assert general["secs"]["score"] == 1.0


def _mask_of(level, key):
    """The union of the ground-truth boxes of (image, category) at ``level``."""
    out = box(0, 0, 0, 0)
    for lv, image_id, cat, _, bounds in TWO_QUADRUPEDS.values():
        if (lv, image_id, cat) == (level, *key):
            out = out | box(*bounds)
    return out


@pytest.mark.parametrize(("rule", "macc"), [("substring", 0.5), ("word", 1.0)])
def test_yes_rule_decides_whether_eyes_is_a_yes(project, tmp_path, rule, macc):
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps([
        {"image_id": 10, "category_id": 1, "level": "subparts", "answer": "Yes."},  # the Eye is there
        {"image_id": 10, "category_id": 3, "level": "subparts", "answer": "No, I see its eyes."},  # no Beak
    ]))
    out = tmp_path / rule
    result = _invoke("--answers", str(answers), "--yes-rule", rule, "--repo", str(project), "--dataset-dir",
                     "data/spin", "--out", str(out))
    assert result.exit_code == 0, result.output + repr(result.exception)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["metrics"]["recognition"]["general"]["subparts"]["macc"] == macc
    assert metrics["evaluated"]["yes_rule"] == rule


def test_a_box_models_detections_are_scored_as_the_union_of_their_boxes(project, tmp_path):
    # Quadruped-Torso, rows 4-10 × all 12 columns (72 px), given as two boxes covering 36 px of it.
    parts = tmp_path / "boxes.json"
    parts.write_text(json.dumps([{"image_id": 10, "category_id": 1, "bbox": [0, 4, 6, 3], "score": 0.4},
                                 {"image_id": 10, "category_id": 1, "bbox": [6, 7, 6, 3], "score": 0.9}]))
    out = tmp_path / "report"
    result = _invoke("--parts", str(parts), "--repo", str(project), "--dataset-dir", "data/spin", "--out", str(out))
    assert result.exit_code == 0, result.output + repr(result.exception)
    levels = json.loads((out / "metrics.json").read_text())["metrics"]["prompts"]["general"]["levels"]
    torso = next(c for c in levels["parts"]["categories"] if c["id"] == 1)
    assert torso["iou"] == pytest.approx(36 / 72)
