"""The SPIN files: cap and selection, hierarchy ids and parents, category names, splits, crowd records."""

from __future__ import annotations

import copy
import json

import pytest
from pycocotools.coco import COCO

from segbench.core.errors import AnnotationError, ImportPolicy, OnError
from segbench.core.io import write_json
from segbench.demo.spin.world import demo_taxonomy, generate_demo_spin, read_truth, truth_resolved
from segbench.schemas.spin import ResolvedSubpart
from segbench.tasks.spin.dataset import (
    coco_name,
    select_images,
    spin_cocos,
    subpart_annotations,
    subpart_categories,
)
from segbench.tasks.spin.partimagenet import read_partimagenet


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    demo = generate_demo_spin(tmp_path_factory.mktemp("pin"), seed=3)
    source = read_partimagenet(demo.root, policy=ImportPolicy())
    sizes = {i: (im.height, im.width) for i, im in source.images.items()}
    resolved = [ResolvedSubpart.model_validate(r) for r in truth_resolved(read_truth(demo.truth_path), sizes)]
    return source, resolved


def test_cap_keeps_split_shares_prefers_more_parts_and_is_seeded(world):
    source, _ = world
    images = list(source.images.values())
    kept = select_images(images, cap=5, seed=0)
    assert kept == select_images(reversed(images), cap=5, seed=0)  # input order does not matter
    by_super: dict[str, list] = {}
    for i in kept:
        by_super.setdefault(source.images[i].supercategory, []).append(source.images[i])
    for members in by_super.values():
        # 6 / 2 / 2 images per split, cap 5: 3 / 1 / 1 by largest remainder.
        assert sorted(m.split for m in members) == ["test", "train", "train", "train", "val"]
    train_cars = [i for i in images if i.supercategory == "Car" and i.split == "train"]
    kept_cars = [i for i in train_cars if i.image_id in kept]
    assert min(len(i.parts) for i in kept_cars) >= max(len(i.parts) for i in train_cars if i not in kept_cars)
    assert len(select_images(images, cap=100, seed=0)) == len(images)
    seeds = {tuple(select_images(images, cap=3, seed=s)) for s in range(6)}
    assert len(seeds) > 1  # ties are broken by the seed


def test_hierarchy_ids_parents_category_names_and_splits(world, tmp_path):
    source, resolved = world
    categories = subpart_categories(demo_taxonomy())
    subparts, outside = subpart_annotations(resolved, source.images, categories, policy=ImportPolicy(), path="r")
    assert outside == 0 and len(subparts) == len(resolved)
    cocos = spin_cocos(source.images, subparts, categories)
    assert sorted(cocos) == ["test", "train", "val"]
    for split, levels in cocos.items():
        assert {img["split"] for img in levels["wholes"]["images"]} == {split}
        assert all(source.images[img["id"]].split == split for img in levels["wholes"]["images"])
        wholes = {a["id"]: a for a in levels["wholes"]["annotations"]}
        parts = {a["id"]: a for a in levels["parts"]["annotations"]}
        assert len(wholes) == len(levels["wholes"]["images"])  # one object per image
        for ann in parts.values():
            assert wholes[ann["parent_id"]]["image_id"] == ann["image_id"]
        for ann in levels["subparts"]["annotations"]:
            assert parts[ann["parent_id"]]["image_id"] == ann["image_id"]
        names = {level: {c["id"]: c["name"] for c in levels[level]["categories"]} for level in levels}
        assert names["wholes"][6] == "Car" and len(names["wholes"]) == 11
        assert names["parts"][1] == "Quadruped-Torso" and names["parts"][25] == "Car-Tire" and len(names["parts"]) == 40
        sub_names = list(names["subparts"].values())
        assert sub_names == sorted(sub_names) and min(names["subparts"]) == 1
        for ann in levels["subparts"]["annotations"]:
            part_name = names["parts"][parts[ann["parent_id"]]["category_id"]]
            assert names["subparts"][ann["category_id"]].startswith(part_name + "-")
        image = levels["wholes"]["images"][0]
        assert set(image) == {"id", "file_name", "width", "height", "supercategory", "object_class", "wnid", "split"}
        assert "." not in image["file_name"]  # spin-api appends .JPEG itself
        for level, coco in levels.items():
            path = write_json(tmp_path / coco_name(split, level), coco)
            loaded = COCO(str(path))
            assert len(loaded.getAnnIds()) == len(coco["annotations"])
            assert all(isinstance(a["segmentation"]["counts"], str) for a in coco["annotations"])


def _bad(resolved, **change):
    record = copy.deepcopy(resolved[0].model_dump(mode="json"))
    record.update(change)
    return [ResolvedSubpart.model_validate(record)]


@pytest.mark.parametrize(("change", "match"), [
    ({"part_ann_id": 999999}, "is not a part of image"),
    ({"part": "Tail"}, "but the part is"),
    ({"category": "Bird-Head-Crest"}, "is not in the taxonomy"),
    ({"segmentation": {"size": [5, 5], "counts": "05"}}, "does not match the image size"),
])
def test_each_bad_crowd_record_is_named(world, change, match):
    source, resolved = world
    categories = subpart_categories(demo_taxonomy())
    with pytest.raises(AnnotationError, match=match):
        subpart_annotations(_bad(resolved, **change), source.images, categories, policy=ImportPolicy(), path="r")
    policy = ImportPolicy(on_error=OnError.SKIP)
    subparts, _ = subpart_annotations(_bad(resolved, **change) + resolved[1:], source.images, categories,
                                      policy=policy, path="r")
    assert len(subparts) == len(resolved) - 1 and len(policy.report) == 1


def test_repeated_record_and_records_outside_the_selection(world):
    source, resolved = world
    categories = subpart_categories(demo_taxonomy())
    with pytest.raises(AnnotationError, match="a second record for the same part and category"):
        subpart_annotations([resolved[0], resolved[0]], source.images, categories, policy=ImportPolicy(), path="r")
    first_image = resolved[0].image_id
    selection = {i: img for i, img in source.images.items() if i != first_image}
    subparts, outside = subpart_annotations(resolved, selection, categories, policy=ImportPolicy(), path="r")
    assert outside == sum(r.image_id == first_image for r in resolved) > 0
    assert [a["id"] for a in subparts] == list(range(1, len(subparts) + 1))
    assert json.dumps(subparts) == json.dumps(
        subpart_annotations(list(reversed(resolved)), selection, categories, policy=ImportPolicy(), path="r")[0])
