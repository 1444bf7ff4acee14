"""The evaluate-coco-cd and predict-baseline-coco-cd flows on a tiny hand-made COCO-CD dataset."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image
from support.flip_eval_data import IMAGE_IDS, write_flip_dataset, write_label_predictions

from segbench.core.errors import InputError
from segbench.core.io import canonical_json
from segbench.flows.coco_cd.baseline import predict_baseline
from segbench.flows.flip import evaluate_coco_cd

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

FG_AREA = 128 * 128


@pytest.fixture
def repo(tmp_path):
    """A project folder with data/coco_cd: masks and splits/rho_0.95/test.json (no images needed)."""
    write_flip_dataset(tmp_path / "project" / "data" / "coco_cd")
    return tmp_path / "project"


def test_label_map_predictions_give_hand_computed_metrics(repo, tmp_path):
    # Aligned groups (0, 3) predicted perfectly, counterfactual groups (1, 2) fully swapped.
    preds = write_label_predictions(tmp_path / "preds", swapped={1, 2})

    result = evaluate_coco_cd(repo, None, preds, tmp_path / "out", shard_size=3)

    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())["metrics"]
    assert metrics == json.loads(canonical_json(result.summary.model_dump(mode="json")))  # 6-decimal floats
    assert metrics["num_images"] == 8
    assert metrics["fg_decomposition"] == {
        "gt_fg_pixels": 8 * FG_AREA,
        "corr": 0.5,
        "flip": 0.5,
        "miss": 0.0,
    }
    assert metrics["flip"]["per_image_mean"] == 0.5 and metrics["fg_iou"] == 1.0
    # cat: 2 correct images of 4 cat images, plus 2 dog images predicted cat -> 2 / 6
    assert metrics["class_iou"]["cat"] == pytest.approx(1 / 3, abs=1e-6)
    assert metrics["miou"] == pytest.approx(1 / 3, abs=1e-6)
    assert metrics["gaps"]["cat"]["gap"] == 1.0 and metrics["gaps"]["dog"]["gap"] == 1.0
    assert metrics["flip_risk"] is None and "label maps" in metrics["flip_risk_unavailable"]
    assert set(result.paths) == {"metrics", "report", "per_group_iou", "flip_by_risk_decile", "examples"}
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| 0.5000 | 0.5000 | 0.0000 | 0.5000 | 0.5000 |" in report
    assert "Flip-risk unavailable" in report
    for name in ("per_group_iou.png", "flip_by_risk_decile.png"):
        with Image.open(tmp_path / "out" / name) as image:
            assert image.format == "PNG"


def test_the_examples_show_the_most_flipped_images_with_truth_and_prediction_in_their_colours(repo, tmp_path):
    preds = write_label_predictions(tmp_path / "preds", swapped={1, 2})
    evaluate_coco_cd(repo, None, preds, tmp_path / "out")
    assert "![examples](examples.png)" in (tmp_path / "out" / "report.md").read_text()
    with Image.open(tmp_path / "out" / "examples.png") as sheet:
        # four flipped images (groups 1 and 2, two each), a row each: image, truth, prediction
        assert sheet.size == (3 * 160, 24 + 4 * (160 + 26))
        pixels = np.asarray(sheet.convert("RGB")).astype(int)
    grey, cat, dog = np.array([214] * 3), np.array([0, 114, 178]), np.array([204, 121, 167])
    # the first row is image 285 (cat outdoors): its square's middle, scaled to the 156-pixel tile
    y, x = 24 + round(104 * 156 / 512), 2 + round(164 * 156 / 512)
    assert np.abs(pixels[y, x] - grey).max() <= 1  # the build holds no image: a grey canvas
    assert np.abs(pixels[y, 160 + x] - (0.55 * grey + 0.45 * cat)).max() <= 2  # truth: cat
    assert np.abs(pixels[y, 320 + x] - (0.55 * grey + 0.45 * dog)).max() <= 2  # prediction: dog
    unflipped = evaluate_coco_cd(repo, None, write_label_predictions(tmp_path / "exact", swapped=set()),
                                 tmp_path / "exact-out")
    assert "examples" not in unflipped.paths and not (tmp_path / "exact-out" / "examples.png").exists()


def test_baseline_predictions_evaluate_end_to_end(repo, tmp_path):
    predicted = predict_baseline(repo, None, tmp_path / "preds", shard_size=5, seed=0)
    assert predicted["num_images"] == 8
    assert sorted(p.name for p in (tmp_path / "preds").iterdir()) == [
        f"{i:012d}.npz" for i in IMAGE_IDS
    ]
    result = evaluate_coco_cd(repo, None, tmp_path / "preds", tmp_path / "out")
    summary = result.summary
    dec = summary.fg_decomposition
    assert dec.corr + dec.flip + dec.miss == pytest.approx(1.0, abs=1e-5)
    assert summary.gaps["cat"].gap > 0 and summary.gaps["dog"].gap > 0
    risk = summary.flip_risk
    assert risk.num_records == 8 and risk.fewer_than_10_records is True
    assert sum(d.count for d in risk.deciles) == 8
    assert "Fewer than 10 images" in (tmp_path / "out" / "report.md").read_text()


def test_missing_predictions_fail_with_the_directory_and_ids(repo, tmp_path):
    predict_baseline(repo, None, tmp_path / "preds")
    for image_id in IMAGE_IDS[:2]:
        (tmp_path / "preds" / f"{image_id:012d}.npz").unlink()
    with pytest.raises(InputError) as info:
        evaluate_coco_cd(repo, None, tmp_path / "preds", tmp_path / "out")
    text = str(info.value)
    assert str(tmp_path / "preds") in text and "2 of 8" in text
    assert "000000000139" in text and "fix:" in text
    assert not (tmp_path / "out" / "metrics.json").exists()


def test_wrong_shape_prediction_names_the_file(repo, tmp_path):
    predict_baseline(repo, None, tmp_path / "preds")
    bad = tmp_path / "preds" / f"{IMAGE_IDS[3]:012d}.npz"
    np.savez_compressed(bad, probs=np.zeros((3, 256, 256), np.float32))
    with pytest.raises(InputError, match=f"{IMAGE_IDS[3]:012d}.npz.*shape"):
        evaluate_coco_cd(repo, None, tmp_path / "preds", tmp_path / "out")


def test_the_command_reports_flip_risk_over_ground_truth_foreground_beside_the_deployable(repo, tmp_path):
    from support.cli import run

    predict_baseline(repo, None, tmp_path / "preds", shard_size=5, seed=0)  # probabilities: risk is defined
    out = tmp_path / "out"
    run(repo, "evaluate", "coco-cd", "--predictions", str(tmp_path / "preds"), "--repo", str(repo), "--out", str(out))
    metrics = json.loads((out / "metrics.json").read_text())["metrics"]
    assert metrics["flip_risk"]["num_records"] == metrics["flip_risk_gt_foreground"]["num_records"] == 8
    assert "### Over ground-truth foreground (App. G, analysis)" in (out / "report.md").read_text()
