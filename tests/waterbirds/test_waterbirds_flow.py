"""The build-waterbirds flow on the synthetic CUB/Places source, and evaluate-waterbirds on it."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from PIL import Image

from segbench.core.io import sha256_tree
from segbench.demo.waterbirds.birds import generate_demo_birds
from segbench.flows.flip import evaluate_waterbirds
from segbench.flows.waterbirds.build import build_waterbirds
from segbench.schemas.waterbirds import DEMO_SIZES
from segbench.tasks.waterbirds.dataset import WaterbirdsParams

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return generate_demo_birds(tmp_path_factory.mktemp("birds"), seed=0)


def test_build_is_byte_reproducible_and_follows_the_waterbirds_construction(source, tmp_path):
    cub, places = source
    params = WaterbirdsParams(**DEMO_SIZES)
    first = build_waterbirds(cub, places, tmp_path / "a" / "waterbirds_seg", params)
    build_waterbirds(cub, places, tmp_path / "b" / "waterbirds_seg", params)
    a, b = tmp_path / "a" / "waterbirds_seg", tmp_path / "b" / "waterbirds_seg"
    assert sha256_tree(a, exclude=["manifest.json"]) == sha256_tree(b, exclude=["manifest.json"])
    manifest_a, manifest_b = (json.loads((d / "manifest.json").read_text()) for d in (a, b))
    manifest_a.pop("created_at"), manifest_b.pop("created_at")
    assert manifest_a == manifest_b

    # The Waterbirds construction: every test image from CUB's test split, every val and train image from
    # its train split, at every ρ; balanced val and test; the same train size at every ρ. (The demo source
    # puts 7 of the 30 birds of each of its 6 species in CUB's test split.)
    counts = first.counts
    for rho in ("rho_0.5", "rho_0.95"):
        for split, cub_splits in (("test", {"test"}), ("val", {"train"}), ("train", {"train"})):
            images = json.loads((a / "splits" / rho / f"{split}.json").read_text())["images"]
            assert {image["cub_split"] for image in images} == cub_splits, (rho, split)
            assert all(image["id"] == 2 * image["cub_image_id"] + (image["context"] == "water") for image in images)
    assert counts.splits["rho_0.95"]["val"] == [5] * 4 and counts.splits["rho_0.95"]["test"] == [10] * 4
    half, t = counts.train_per_class_total // 2, counts.train_per_class_total
    assert counts.splits["rho_0.5"]["train"] == [half] * 4
    assert counts.splits["rho_0.95"]["train"] == [int(0.95 * t), t - int(0.95 * t), t - int(0.95 * t), int(0.95 * t)]
    assert counts.per_cub_split == {"train": 138, "test": 42} and counts.rendered == sum(counts.per_group.values())
    assert {m["species"] for m in first.mislabels} == {"194.Eastern_Towhee", "088.Western_Meadowlark"}

    test = json.loads((a / "splits" / "rho_0.95" / "test.json").read_text())
    for image in test["images"]:
        mask = np.asarray(Image.open(a / image["mask_file"]))
        assert mask.shape == (image["height"], image["width"])
        expected = 1 + (image["class"] == "waterbird")
        assert set(np.unique(mask)) == {0, expected}
        assert image["group_id"] == 2 * (expected - 1) + (image["context"] == "water")
        assert Image.open(a / image["image_file"]).mode == "RGB"
    species = json.loads((a / "species.json").read_text())
    assert species["species"]["194.Eastern_Towhee"] == "landbird"


def test_substring_rule_changes_the_types(source, tmp_path):
    cub, places = source
    summary = build_waterbirds(cub, places, tmp_path / "w", WaterbirdsParams(species_match="substring", val_per_group=2,
                                                                            test_per_group=3))
    assert summary.counts.per_class == {"landbird": 30, "waterbird": 150}


def test_evaluate_waterbirds_with_gt_masks_as_predictions(source, tmp_path):
    cub, places = source
    repo = tmp_path / "project"
    dataset = repo / "data" / "waterbirds_seg"
    build_waterbirds(cub, places, dataset, WaterbirdsParams(**DEMO_SIZES))
    predictions = tmp_path / "preds"
    predictions.mkdir()
    test = json.loads((dataset / "splits" / "rho_0.95" / "test.json").read_text())
    for image in test["images"]:
        shutil.copy(dataset / image["mask_file"], predictions / f"{image['id']:012d}.png")
    result = evaluate_waterbirds(repo=repo, rev=None, predictions=predictions, out=tmp_path / "report")
    summary = result.summary
    assert summary.num_images == 40
    assert summary.fg_decomposition.corr == 1.0 and summary.fg_decomposition.flip == 0.0
    assert summary.class_iou.model_dump()["waterbird"] == 1.0
    report = (tmp_path / "report" / "report.md").read_text()
    assert report.startswith("# Waterbirds-seg evaluation") and "landbird on land (aligned)" in report
