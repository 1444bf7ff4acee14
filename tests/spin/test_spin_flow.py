"""The build-spin flow on the demo PartImageNet world, with a resolved file made from its truth."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import yaml
from pycocotools.coco import COCO

from segbench.core.errors import AnnotationError, ImportPolicy
from segbench.core.io import atomic_write_text, sha256_tree, write_json
from segbench.core.masks import rle_to_bitmap, segmentation_to_rle
from segbench.demo.spin.world import demo_taxonomy, generate_demo_spin, read_truth, truth_resolved
from segbench.flows.spin.build import build_spin, spin_round_items
from segbench.schemas.spin import SpinBuildParams
from segbench.tasks.spin.partimagenet import read_partimagenet

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]
PARAMS = SpinBuildParams(cap_per_supercategory=8, seed=0)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    demo = generate_demo_spin(tmp_path_factory.mktemp("pin"), seed=0)
    source = read_partimagenet(demo.root, policy=ImportPolicy())
    sizes = {i: (im.height, im.width) for i, im in source.images.items()}
    return demo, truth_resolved(read_truth(demo.truth_path), sizes)


def data_root(tmp_path, resolved):
    root = tmp_path / "data"
    atomic_write_text(root / "spin" / "taxonomy.yaml",
                      yaml.safe_dump(demo_taxonomy().model_dump(mode="json"), sort_keys=False))
    write_json(root / "spin" / "crowd" / "resolved.json", resolved)
    return root


def test_build_is_byte_reproducible_and_the_subparts_are_the_truth(world, tmp_path):
    demo, resolved = world
    first = build_spin(demo.root, data_root(tmp_path / "a", resolved), PARAMS)
    build_spin(demo.root, data_root(tmp_path / "b", resolved), PARAMS)
    a, b = (tmp_path / x / "data" / "spin" / "dataset" for x in "ab")
    assert sha256_tree(a, exclude=["manifest.json"]) == sha256_tree(b, exclude=["manifest.json"])
    manifests = [json.loads((d / "manifest.json").read_text()) for d in (a, b)]
    for manifest in manifests:
        manifest.pop("created_at")
    assert manifests[0] == manifests[1]
    assert (tmp_path / "a" / "data" / "spin" / "taxonomy.yaml").is_file()  # spin/ itself is never replaced

    counts = first.counts
    assert counts.per_supercategory == {"Bird": 8, "Bottle": 8, "Car": 8, "Quadruped": 8}
    assert counts.over_cap == 8 and counts.without_parts == {"train": 1, "val": 1, "test": 1}
    filters = counts.filters  # §8.3, in order
    assert filters.background_only_total == 3 and filters.over_cap_total == 8 and filters.kept_images == 32
    assert filters.over_cap["Car"] == {"train": 1, "val": 1}
    ambiguous = filters.ambiguous_part_annotations
    assert ambiguous["Bird-Wing"] > 0 and ambiguous["Quadruped-Tail"] > 0 and ambiguous["Bicycle-Seat"] == 0
    assert json.loads((a / "manifest.json").read_text())["counts"]["filters"] == filters.model_dump()
    kept = {split: [img["id"] for img in json.loads((a / f"spin_{split}_wholes.json").read_text())["images"]]
            for split in ("train", "val", "test")}
    assert [len(v) for v in kept.values()] == [20, 4, 8]  # 5 / 1 / 2 of 6 / 2 / 2 per super-category, x 4

    truth = {(r["part_ann_id"], r["category"]): r for r in read_truth(demo.truth_path)}
    checked = 0
    for split in ("train", "val", "test"):
        subparts = COCO(str(a / f"spin_{split}_subparts.json"))
        for ann in subparts.loadAnns(subparts.getAnnIds()):
            name = subparts.loadCats(ann["category_id"])[0]["name"]
            row = truth[(ann["parent_id"], name)]
            image = subparts.loadImgs(ann["image_id"])[0]
            expected = rle_to_bitmap(segmentation_to_rle(row["polygons"], image["height"], image["width"]))
            assert np.array_equal(subparts.annToMask(ann), expected)
            assert (a / "images" / split / f"{image['file_name']}.JPEG").is_file()
            checked += 1
    assert checked == counts.composition.overall.subparts.annotations > 0
    assert counts.resolved_outside_selection == len(resolved) - checked
    for name in ("composition.json", "composition.md", "subparts.json", "subparts.md", "subpart_boxplots.png",
                 "subpart_shapes.png", "subparts_per_part_category.png"):
        assert (a / "stats" / name).stat().st_size > 0
    stats = json.loads((a / "stats" / "subparts.json").read_text())
    assert stats["subparts_per_object"]["Overall"]["n"] == counts.composition.overall.wholes.annotations
    assert {"Rigid", "Non-rigid"} <= set(stats["shapes"])  # the demo has cars and bottles, birds and quadrupeds


def test_bad_record_fails_and_keeps_the_previous_build(world, tmp_path):
    demo, resolved = world
    root = data_root(tmp_path, resolved)
    build_spin(demo.root, root, PARAMS)
    before = sha256_tree(root / "spin" / "dataset")
    bad = [dict(resolved[0], category="Car-Body-Roll Cage"), *resolved[1:]]
    kept_image = json.loads((root / "spin" / "dataset" / "spin_train_wholes.json").read_text())["images"][0]["id"]
    bad[0]["image_id"] = kept_image
    write_json(root / "spin" / "crowd" / "resolved.json", bad)
    with pytest.raises(AnnotationError):
        build_spin(demo.root, root, PARAMS)
    assert sha256_tree(root / "spin" / "dataset") == before


def test_round_items_cover_the_selected_decomposable_parts(world, tmp_path):
    demo, resolved = world
    root = data_root(tmp_path, resolved)
    items = spin_round_items(demo.root, root, PARAMS)
    assert ("Quadruped", "Tail") not in items and ("Bird", "Wing") not in items
    assert ("Quadruped", "Head") in items and ("Car", "Tire") in items
    for item in (i for group in items.values() for i in group):
        assert (root / item.image).is_file()
    # The crowd's answers (here the truth) name exactly these items' parts, for the selected images.
    asked = {i.data["part_ann_id"] for group in items.values() for i in group}
    built = build_spin(demo.root, root, PARAMS)
    assert built.counts.composition.overall.subparts.annotations == sum(
        r["part_ann_id"] in asked for r in resolved)


def test_cli_builds_spin(world, tmp_path):
    demo, resolved = world
    root = data_root(tmp_path, resolved)
    env = {**os.environ, "HOME": str(tmp_path), "COLUMNS": "160"}
    for key in ("PREFECT_HOME", "PREFECT_LOCAL_STORAGE_PATH", "MPLCONFIGDIR"):
        env.pop(key, None)
    result = subprocess.run([sys.executable, "-m", "segbench", "--data-root", str(root), "--work-dir",
                             str(tmp_path / "work"), "build", "spin", "--partimagenet", str(demo.root), "--cap", "8"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "SPIN" in result.stdout and "skipped records" in result.stdout
    assert (root / "spin" / "dataset" / "spin_val_subparts.json").is_file()
    (tmp_path / "empty").mkdir()
    for where, said in (("nowhere", "input not found (given to --partimagenet)"), ("empty", "not a PartImageNet root")):
        wrong = subprocess.run([sys.executable, "-m", "segbench", "--data-root", str(root), "--work-dir",
                                str(tmp_path / "work"), "build", "spin", "--partimagenet", str(tmp_path / where)],
                               cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert wrong.returncode == 2 and said in wrong.stderr, wrong.stderr
