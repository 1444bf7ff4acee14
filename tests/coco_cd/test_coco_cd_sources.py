"""COCO-CD's reduced sources hold exactly what the full COCO index gives for the images the build uses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from segbench.core.coco import areas_by_image, load_coco, merge_splits
from segbench.core.errors import ImportPolicy, InputError, OnError
from segbench.demo.world import generate_demo_world
from segbench.schemas.coco_cd import CocoCdParams
from segbench.tasks.coco_cd.context import evidence_slots
from segbench.tasks.coco_cd.selection import SOURCE_SPLITS, source_files
from segbench.tasks.coco_cd.sources import load_instances, stuff_evidence

PARAMS = CocoCdParams()


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("world")
    generate_demo_world(root, seed=5, group_sizes={"cat/indoor": 4, "cat/outdoor": 3, "dog/indoor": 3,
                                                   "dog/outdoor": 4})
    return root


def _full(files, name):
    return load_coco(files[name], policy=ImportPolicy())


def _evidence(index, image_ids):
    slots = evidence_slots(index.category_names(), exclude=PARAMS.classes, indoor=PARAMS.indoor,
                           outdoor=PARAMS.outdoor, neutral=PARAMS.neutral)
    return areas_by_image((a for a in index.annotations if a["image_id"] in image_ids), slots)


def test_reduced_instances_match_the_merged_index_on_cat_and_dog_images(world):
    files = source_files(world, world)
    full = merge_splits([(split, _full(files, f"instances_{split}")) for split in SOURCE_SPLITS])
    reduced = load_instances(files, SOURCE_SPLITS, PARAMS, ImportPolicy())
    targets = {full.category_id(name) for name in PARAMS.classes}
    kept = {a["image_id"] for a in full.annotations if a["category_id"] in targets}
    assert reduced.source_images == len(full.images) > len(reduced.images)
    assert reduced.images == {i: full.images[i] for i in full.images if i in kept}
    assert list(reduced.images) == [i for i in full.images if i in kept]
    assert reduced.annotations == [a for a in full.annotations if a["category_id"] in targets]
    assert reduced.categories == full.categories and reduced.licenses == full.licenses
    assert reduced.split_paths == full.split_paths and reduced.path == full.path
    assert reduced.evidence == _evidence(full, kept)
    assert reduced.evidence  # the world has thing evidence on cat/dog images, or this test shows nothing


def test_stuff_evidence_sums_the_areas_of_the_wanted_images_only(world):
    files = source_files(world, world)
    stuff = _full(files, "stuff_train2017")
    wanted = set(sorted(stuff.images)[::2])
    got = stuff_evidence(files["stuff_train2017"], wanted, PARAMS, ImportPolicy())
    assert got == _evidence(stuff, wanted) and got and set(got) <= wanted


def test_merge_rules_hold_for_the_reduced_read(world, tmp_path):
    files = source_files(world, world)
    val = json.loads(files["instances_val2017"].read_text())
    train = json.loads(files["instances_train2017"].read_text())
    val["images"].append({**train["images"][0]})
    edited = tmp_path / "instances_val2017.json"
    edited.write_text(json.dumps(val))
    image_id = train["images"][0]["id"]
    with pytest.raises(InputError, match=f"image id {image_id} appears in both train2017 and val2017"):
        load_instances({**files, "instances_val2017": edited}, SOURCE_SPLITS, PARAMS,
                       ImportPolicy(on_error=OnError.SKIP))
