"""The COCO-CD build flow on a small demo world: rules against the world's oracle, reproducibility,
outputs that pycocotools loads, and one test per kind of bad input (no partial output ever)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from pycocotools.coco import COCO

from segbench.core.errors import AnnotationError, InputError, InsufficientDataError, OnError
from segbench.core.io import sha256_tree
from segbench.demo.world import generate_demo_world
from segbench.schemas.coco_cd import CocoCdParams

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

SIZES = {"cat/indoor": 12, "cat/outdoor": 8, "dog/indoor": 8, "dog/outdoor": 12}
PARAMS = CocoCdParams(val_per_group=2, test_per_group=3, size=64)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("world")
    generate_demo_world(root, seed=3, group_sizes=SIZES)
    return root


@pytest.fixture
def world_copy(world, tmp_path) -> Path:
    return Path(shutil.copytree(world, tmp_path / "world"))


def build(world: Path, out: Path, params: CocoCdParams = PARAMS) -> dict:
    from segbench.flows.coco_cd.build import build_coco_cd

    return build_coco_cd(world, world, out, params)


@pytest.fixture(scope="module")
def built(world, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("built") / "coco_cd"
    return out, build(world, out)


def test_context_and_selection_follow_the_designed_oracle(world, built):
    out, _ = built
    oracle = {r["image_id"]: r for r in json.loads((world / "demo_world.json").read_text())["images"]}
    rows = {r["image_id"]: r for r in map(json.loads, (out / "context.jsonl").read_text().splitlines())}
    kept = {i for i, r in oracle.items() if r["expected_kept"]}
    assert set(rows) == kept
    for image_id, row in rows.items():
        assert row["context"] == oracle[image_id]["expected_context"], oracle[image_id]["edge_case"]
        assert row["class"] == oracle[image_id]["classes"][0]
        assert set(row) >= {"image_id", "split", "file_name", "class", "indoor_area", "outdoor_area",
                            "indoor_share", "context"}


def test_splits_load_with_pycocotools_and_carry_groups(built):
    out, summary = built
    for rho in ("rho_0.5", "rho_0.95"):
        for split in ("train", "val", "test"):
            coco = COCO(str(out / "splits" / rho / f"{split}.json"))
            assert {c["name"] for c in coco.loadCats(coco.getCatIds())} == {"cat", "dog"}
            for image in coco.dataset["images"]:
                y, a = ("cat", "dog").index(image["class"]), ("indoor", "outdoor").index(image["context"])
                assert image["group_id"] == 2 * y + a
                assert (out / image["mask_file"]).is_file() and (out / image["image_file"]).is_file()
                anns = coco.loadAnns(coco.getAnnIds(imgIds=image["id"]))
                assert anns and {a["category_id"] for a in anns} == {1 + y}
    counts = summary.counts.splits
    assert counts["rho_0.5"]["val"] == [2, 2, 2, 2] and counts["rho_0.5"]["test"] == [3, 3, 3, 3]
    n = counts["rho_0.5"]["train"][0]
    assert counts["rho_0.5"]["train"] == [n] * 4
    aligned = int(0.95 * 2 * n)
    assert counts["rho_0.95"]["train"] == [aligned, 2 * n - aligned, 2 * n - aligned, aligned]


def test_label_masks_match_the_classes(built):
    out, _ = built
    test = json.loads((out / "splits" / "rho_0.95" / "test.json").read_text())
    for image in test["images"]:
        mask = np.asarray(Image.open(out / image["mask_file"]))
        assert mask.shape == (64, 64) and mask.dtype == np.uint8
        values = set(np.unique(mask).tolist())
        assert values == {0, 1 if image["class"] == "cat" else 2}
        assert Image.open(out / image["image_file"]).size == (64, 64)


def test_tables_and_manifest(built, world):
    out, _ = built
    coverage = json.loads((out / "tables" / "context_coverage.json").read_text())
    assert coverage["all"]["images"] == coverage["cat"]["images"] + coverage["dog"]["images"]
    assert "| cat |" in (out / "tables" / "context_coverage.md").read_text()
    assert "rho_0.95 | train" in (out / "tables" / "group_counts.md").read_text()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["outputs"] == sha256_tree(out, exclude=["manifest.json"])
    assert set(manifest["inputs"]) == {"instances_train2017", "instances_val2017", "stuff_train2017",
                                       "stuff_val2017"}
    assert manifest["seed"] == 13 and manifest["params"]["val_per_group"] == 2


def test_rebuild_is_byte_identical_except_the_manifest_timestamp(world, built, tmp_path):
    out, _ = built
    again = tmp_path / "again"
    build(world, again)
    assert sha256_tree(again) .keys() == sha256_tree(out).keys()
    assert sha256_tree(again, exclude=["manifest.json"]) == sha256_tree(out, exclude=["manifest.json"])
    first, second = (json.loads((d / "manifest.json").read_text()) for d in (out, again))
    first.pop("created_at"), second.pop("created_at")
    assert first == second


def test_another_seed_changes_the_splits(world, built, tmp_path):
    out, _ = built
    other = tmp_path / "other"
    build(world, other, PARAMS.model_copy(update={"seed": 14}))
    same = (out / "splits/rho_0.95/test.json").read_bytes() == (other / "splits/rho_0.95/test.json").read_bytes()
    assert not same
    assert (out / "context.jsonl").read_bytes() == (other / "context.jsonl").read_bytes()


# --- bad input: a clear typed error (or a skip report), and never a partial output ---------------

def _previous_output(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    (out / "previous.txt").write_text("the last good build")
    return out


def _assert_untouched(out: Path) -> None:
    assert sorted(p.name for p in out.iterdir()) == ["previous.txt"]
    # Only the resumable stage of the failed build may stay beside it (DVC ignores it; see core.resume).
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".out.") and not p.name.endswith(".partial")]


def _edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def _first_cat_annotation(data: dict) -> dict:
    return next(a for a in data["annotations"] if a["category_id"] == 17 and not a["iscrowd"])


def test_missing_instances_file(world_copy, tmp_path):
    (world_copy / "annotations" / "instances_val2017.json").unlink()
    out = _previous_output(tmp_path)
    with pytest.raises(InputError, match="instances_val2017.json: COCO instances file not found"):
        build(world_copy, out)
    _assert_untouched(out)


def test_malformed_stuff_json(world_copy, tmp_path):
    (world_copy / "annotations" / "stuff_train2017.json").write_text('{"images": [')
    out = _previous_output(tmp_path)
    with pytest.raises(InputError, match="stuff_train2017.json: not valid JSON"):
        build(world_copy, out)
    _assert_untouched(out)


def test_annotation_on_unknown_image_fails_or_is_skipped(world_copy, tmp_path):
    path = world_copy / "annotations" / "instances_train2017.json"
    _edit_json(path, lambda d: _first_cat_annotation(d).update(image_id=999_999_999))
    out = _previous_output(tmp_path)
    with pytest.raises(AnnotationError, match="refers to unknown image 999999999"):
        build(world_copy, out)
    _assert_untouched(out)

    summary = build(world_copy, out, PARAMS.model_copy(update={"on_error": OnError.SKIP}))
    report = json.loads((out / "skipped.json").read_text())
    assert summary.skipped == {"AnnotationError": 1} and report["count"] == 1
    assert "unknown image 999999999" in report["items"][0]["message"]


def test_annotation_on_unknown_category(world_copy, tmp_path):
    _edit_json(world_copy / "annotations" / "stuff_val2017.json",
               lambda d: d["annotations"][0].update(category_id=4242))
    with pytest.raises(AnnotationError, match="stuff_val2017.json: annotation .*unknown category 4242"):
        build(world_copy, _previous_output(tmp_path))


def test_invalid_polygon_and_rle(world_copy, tmp_path):
    path = world_copy / "annotations" / "instances_train2017.json"
    _edit_json(path, lambda d: _first_cat_annotation(d).update(segmentation=[[1, 1, 5, 5]]))
    out = _previous_output(tmp_path)
    with pytest.raises(AnnotationError, match="invalid segmentation: polygon 0 has 2 points; a polygon needs at least 3"):
        build(world_copy, out)
    _assert_untouched(out)

    def corrupt_crowd_cat(data):
        for ann in data["annotations"]:
            if ann["iscrowd"] and ann["category_id"] == 17:
                ann["segmentation"]["counts"] = ann["segmentation"]["counts"][:-3]

    _edit_json(path, lambda d: _first_cat_annotation(d).update(segmentation=[[1, 1, 5, 1, 5, 5]]))
    for split in ("train", "val"):
        _edit_json(world_copy / "annotations" / f"instances_{split}2017.json", corrupt_crowd_cat)
    with pytest.raises(AnnotationError, match="RLE counts"):
        build(world_copy, out)
    summary = build(world_copy, out, PARAMS.model_copy(update={"on_error": OnError.SKIP}))
    assert summary.counts.invalid_segmentation == 1 and summary.skipped == {"AnnotationError": 1}


def test_missing_and_unreadable_images(world_copy, tmp_path, built):
    built_out, _ = built
    test = json.loads((built_out / "splits" / "rho_0.95" / "test.json").read_text())
    missing, unreadable = test["images"][0], test["images"][1]
    (world_copy / missing["file_name"]).unlink()
    (world_copy / unreadable["file_name"]).write_bytes(b"not a jpeg")
    out = _previous_output(tmp_path)
    with pytest.raises(AnnotationError, match=f"{missing['file_name']}: image {missing['id']}: image file not found"):
        build(world_copy, out)
    _assert_untouched(out)

    summary = build(world_copy, out, PARAMS.model_copy(update={"on_error": OnError.SKIP}))
    items = {r["item"]: r["message"] for r in json.loads((out / "skipped.json").read_text())["items"]}
    assert items[f"image {missing['id']}"] == "image file not found"
    assert items[f"image {unreadable['id']}"].startswith("image file cannot be read")
    assert summary.counts.usable == summary.counts.context["indoor"] + summary.counts.context["outdoor"] - 2


def test_group_too_small_for_the_requested_sizes(world, tmp_path):
    out = _previous_output(tmp_path)
    with pytest.raises(InsufficientDataError, match=r"^group cat indoors has \d+ items; val \+ test need 40"):
        build(world, out, PARAMS.model_copy(update={"val_per_group": 10, "test_per_group": 30}))
    _assert_untouched(out)


GOLDEN = Path(__file__).parent.parent / "golden" / "coco_cd_world_seed3"


def test_outputs_match_the_golden_files(built):
    """Tables and evidence of a fixed world and params, pinned. Regenerate deliberately with
    SEGBENCH_UPDATE_GOLDEN=1 when a change of output is intended (and bump tasks/coco_cd/versions.py)."""
    import os

    out, _ = built
    for name in ("context.jsonl", "tables/context_coverage.json", "tables/group_counts.json",
                 "splits/rho_0.95/train.json"):
        golden = GOLDEN / name
        if os.environ.get("SEGBENCH_UPDATE_GOLDEN"):
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_bytes((out / name).read_bytes())
        assert (out / name).read_bytes() == golden.read_bytes(), name
