"""The SPIN files: cap and selection, hierarchy ids and parents, category names, splits, crowd records."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from pycocotools import mask as mask_utils
from pycocotools.coco import COCO

from segbench.core.errors import AnnotationError, ImportPolicy, OnError
from segbench.core.io import write_json
from segbench.demo.spin.world import demo_taxonomy, generate_demo_spin, read_truth, truth_resolved
from segbench.schemas.spin import ResolvedSubpart
from segbench.tasks.spin.dataset import (
    BACKGROUND,
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
        # Wholes are the 158 ImageNet classes, each with its super-category (both granularities).
        cab = next(c for c in levels["wholes"]["categories"] if c["wnid"] == "n02930766")
        assert (cab["name"], cab["supercategory"], cab["supercategory_id"]) == ("cab", "Car", 6)
        assert len(names["wholes"]) == 158 and levels["wholes"]["supercategories"][6] == {"id": 6, "name": "Car"}
        for ann in wholes.values():
            image = next(i for i in levels["wholes"]["images"] if i["id"] == ann["image_id"])
            category = levels["wholes"]["categories"][ann["category_id"]]
            assert category["wnid"] == image["wnid"] and ann["supercategory_id"] == category["supercategory_id"]
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


def rasterise_like_spin_api(coco: COCO, image_id: int, background: int) -> np.ndarray:
    """spin-api's ``rasterize_coco_segmentations``: one uint8 map, later annotations painted over earlier."""
    info = coco.loadImgs(image_id)[0]
    out = np.full((info["height"], info["width"]), background, dtype=np.uint8)
    for ann in coco.loadAnns(coco.getAnnIds(imgIds=image_id)):
        out[mask_utils.decode(ann["segmentation"]) > 0] = ann["category_id"]
    return out


def test_spin_api_rasterises_every_level_into_8_bit_maps_with_its_background_ids(world, tmp_path):
    from segbench.tasks.spin import taxonomy as st
    from segbench.tasks.spin import taxonomy_edits as se

    source, resolved = world
    paper = se.apply_edits(st.load_catalog(), {}, "none", se.load_edits(se.default_edits_path(), st.load_catalog())[0])
    categories = subpart_categories(st.build_taxonomy(paper.parts, provider="p", model="m", edits_file="e",
                                                      edits_sha256="0" * 64))
    assert len(categories) == 203 and max(c.id for c in categories) == 203
    demo = subpart_categories(demo_taxonomy())
    subparts, _ = subpart_annotations(resolved, source.images, demo, policy=ImportPolicy(), path="r")
    # The paper's 203 categories declared, the demo's records renumbered into them by name.
    by_name = {c.name: c.id for c in categories}
    demo_name = {c.id: c.name for c in demo}
    subparts = [a | {"category_id": by_name[demo_name[a["category_id"]]]} for a in subparts]
    cocos = spin_cocos(source.images, subparts, categories)
    for split, levels in cocos.items():
        loaded = {level: COCO(str(write_json(tmp_path / coco_name(split, level), coco)))
                  for level, coco in levels.items()}
        for level, background in BACKGROUND.items():
            ids = {c["id"] for c in levels[level]["categories"]}
            assert background not in ids and max(ids) <= 255
            for image_id in loaded["subparts"].getImgIds():
                raster = rasterise_like_spin_api(loaded[level], image_id, background)
                painted = set(np.unique(raster).tolist()) - {background}
                anns = loaded[level].loadAnns(loaded[level].getAnnIds(imgIds=image_id))
                assert painted <= {a["category_id"] for a in anns} and (painted or not anns)


def test_a_taxonomy_too_big_for_8_bit_maps_is_refused():
    from segbench.core.errors import InputError
    from segbench.schemas.spin import Taxonomy

    taxonomy = demo_taxonomy().model_dump()
    head = next(p for p in taxonomy["parts"] if p["part"] == "Head")
    head["subparts"] = [dict(head["subparts"][0], name=f"Spot {i}", category=f"X-Head-Spot {i}") for i in range(300)]
    with pytest.raises(InputError, match="8-bit"):
        subpart_categories(Taxonomy.model_validate(taxonomy))
