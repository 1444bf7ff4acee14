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


def test_build_is_byte_reproducible_and_follows_the_splitter(source, tmp_path):
    cub, places = source
    params = WaterbirdsParams(**DEMO_SIZES)
    first = build_waterbirds(cub, places, tmp_path / "a" / "waterbirds_seg", params)
    build_waterbirds(cub, places, tmp_path / "b" / "waterbirds_seg", params)
    a, b = tmp_path / "a" / "waterbirds_seg", tmp_path / "b" / "waterbirds_seg"
    assert sha256_tree(a, exclude=["manifest.json"]) == sha256_tree(b, exclude=["manifest.json"])
    manifest_a, manifest_b = (json.loads((d / "manifest.json").read_text()) for d in (a, b))
    manifest_a.pop("created_at"), manifest_b.pop("created_at")
    assert manifest_a == manifest_b

    # 90 birds per type, 2/3 on the aligned place: groups 60 / 30 / 30 / 60; val 5 + test 10 leave
    # 45 / 15 / 15 / 45, so m = 15 and N = 30 per class.
    counts = first.counts
    assert counts.per_group == {"landbird on land": 60, "landbird on water": 30,
                                   "waterbird on land": 30, "waterbird on water": 60}
    assert counts.splits["rho_0.5"]["train"] == [15, 15, 15, 15]
    assert counts.splits["rho_0.95"]["train"] == [28, 2, 2, 28]
    assert counts.splits["rho_0.95"]["val"] == [5] * 4 and counts.splits["rho_0.95"]["test"] == [10] * 4
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
