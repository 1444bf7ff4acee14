"""Reading a PartImageNet root, and the annotation items made from it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from segbench.core.errors import AnnotationError, ImportPolicy, InputError, OnError
from segbench.core.io import write_json
from segbench.core.masks import rle_area, rle_to_bitmap
from segbench.tasks.spin.items import part_contexts, round_items
from segbench.tasks.spin.partimagenet import part_categories, read_partimagenet

CATEGORIES = [{"id": c.id, "name": c.source_name, "supercategory": c.supercategory}
              for c in sorted(part_categories().values(), key=lambda c: c.id)]


def _rect(x0, y0, x1, y1):
    return [[x0, y0, x1, y0, x1, y1, x0, y1]]


def make_root(tmp_path, splits, categories=CATEGORIES):
    """``splits``: split → (images, annotations); writes a JPEG for every image."""
    for split, (images, anns) in splits.items():
        write_json(tmp_path / "annotations" / f"{split}.json",
                   {"images": images, "annotations": anns, "categories": categories})
        for img in images:
            path = tmp_path / "images" / split / img["file_name"]
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (img["width"], img["height"]), (100, 120, 140)).save(path, format="JPEG")
    return tmp_path


def image(image_id, stem="n02930766_1", width=40, height=30):
    return {"id": image_id, "file_name": f"{stem}.JPEG", "width": width, "height": height}


def part(ann_id, image_id, category_id, box=(2, 2, 12, 12)):
    return {"id": ann_id, "image_id": image_id, "category_id": category_id, "segmentation": _rect(*box),
            "area": 100.0, "bbox": [0, 0, 1, 1], "iscrowd": 0}


@pytest.fixture
def root(tmp_path):
    # A cab (Car) with a body (24) and two tires in one annotation (25); a goose (Bird) with a body
    # (14, SPIN "Torso"); an image with no parts in val.
    cab, goose = image(1, "n02930766_1"), image(2, "n01855672_7")
    tires = part(11, 1, 25)
    tires["segmentation"] = _rect(2, 20, 8, 26) + _rect(20, 20, 26, 26)
    return make_root(tmp_path, {
        "train": ([cab], [part(10, 1, 24, (2, 2, 30, 18)), tires]),
        "val": ([goose, image(3, "n01855672_9")], [part(12, 2, 14)]),
        "test": ([], []),
    })


def test_reads_classes_supercategories_spin_part_names_and_object_union(root):
    source = read_partimagenet(root, policy=ImportPolicy())
    assert sorted(source.images) == [1, 2]
    assert source.without_parts == {"train": 0, "val": 1, "test": 0}
    cab, goose = source.images[1], source.images[2]
    assert (cab.wnid, cab.object_class, cab.supercategory, cab.split) == ("n02930766", "cab", "Car", "train")
    assert (goose.object_class, goose.supercategory) == ("goose", "Bird")
    assert [p.category.spin_name for p in cab.parts] == ["Body", "Tire"]
    assert goose.parts[0].category.spin_category == "Bird-Torso"
    union = rle_to_bitmap(cab.object_rle).astype(bool)
    parts = [rle_to_bitmap(p.rle).astype(bool) for p in cab.parts]
    assert np.array_equal(union, parts[0] | parts[1])
    assert int(rle_area([cab.object_rle])[0]) == sum(p.area for p in cab.parts)  # disjoint parts


def test_an_image_with_only_the_background_annotated_is_left_out_and_counted(tmp_path):
    background = {"id": 40, "name": "Background", "supercategory": "Background"}
    root = make_root(tmp_path, {"train": ([image(1), image(2, "n02930766_2")],
                                          [part(10, 1, 24), part(11, 1, 40), part(12, 2, 40)]),
                                "val": ([], []), "test": ([], [])}, categories=[*CATEGORIES, background])
    source = read_partimagenet(root, policy=ImportPolicy())
    assert sorted(source.images) == [1] and source.without_parts == {"train": 1, "val": 0, "test": 0}
    assert [p.ann_id for p in source.images[1].parts] == [10]  # the background is no part


def test_the_cap_prefers_images_with_more_parts_of_the_part_taxonomy(tmp_path):
    from segbench.tasks.spin.dataset import filter_counts, select_images

    # Three quadrupeds (n02419796 antelope): head+torso, head+tail (the tail is ambiguous), head only.
    images = [image(1, "n02419796_1"), image(2, "n02419796_2"), image(3, "n02419796_3")]
    anns = [part(10, 1, 0), part(11, 1, 1), part(12, 2, 0), part(13, 2, 3), part(14, 3, 0)]
    source = read_partimagenet(make_root(tmp_path, {"train": (images, anns), "val": ([], []), "test": ([], [])}),
                               policy=ImportPolicy())
    for seed in range(5):
        kept = select_images(source.images.values(), cap=1, seed=seed)
        assert kept == [1]  # two taxonomy parts; image 2's tail does not count, so it ties with image 3
    counts = filter_counts(source.images, source.without_parts, [1, 2])
    assert counts.ambiguous_part_annotations["Quadruped-Tail"] == 1 and counts.over_cap == {"Quadruped": {"train": 1}}
    assert (counts.over_cap_total, counts.kept_images, counts.background_only_total) == (1, 2, 0)


def test_unknown_wnid_keeps_the_wnid_and_takes_the_parts_supercategory(tmp_path):
    root = make_root(tmp_path, {"train": ([image(1, "n09999999_5")], [part(1, 1, 38)]), "val": ([], []),
                                "test": ([], [])})
    img = read_partimagenet(root, policy=ImportPolicy()).images[1]
    assert (img.object_class, img.supercategory) == ("n09999999", "Bottle")


def test_missing_split_file_is_an_input_error(root):
    (root / "annotations" / "test.json").unlink()
    with pytest.raises(InputError, match="no test annotation file"):
        read_partimagenet(root, policy=ImportPolicy())


def test_category_that_is_not_partimagenets_is_refused(root):
    path = root / "annotations" / "val.json"
    data = json.loads(path.read_text())
    data["categories"][14]["name"] = "Bird Torso"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="PartImageNet calls it 'Bird Body'"):
        read_partimagenet(root, policy=ImportPolicy())


@pytest.mark.parametrize(("stem", "category", "match"), [
    ("IMG_0001", 24, "is not <wnid>_<number>"),
    ("n02930766_3", 14, "is a Car but its parts are Bird parts"),
])
def test_bad_image_fails_or_is_skipped(tmp_path, stem, category, match):
    root = make_root(tmp_path, {"train": ([image(1, stem)], [part(1, 1, category)]), "val": ([], []),
                                "test": ([], [])})
    with pytest.raises(AnnotationError, match=match):
        read_partimagenet(root, policy=ImportPolicy())
    policy = ImportPolicy(on_error=OnError.SKIP)
    assert read_partimagenet(root, policy=policy).images == {}
    assert policy.report.counts() == {"AnnotationError": 1}


def test_parts_of_two_supercategories_are_refused(tmp_path):
    root = make_root(tmp_path, {"train": ([image(1)], [part(1, 1, 24), part(2, 1, 14)]), "val": ([], []),
                                "test": ([], [])})
    with pytest.raises(AnnotationError, match="several super-categories"):
        read_partimagenet(root, policy=ImportPolicy())


def test_missing_image_file_is_reported(root):
    (root / "images" / "train" / "n02930766_1.JPEG").unlink()
    with pytest.raises(AnnotationError, match="image file not found"):
        read_partimagenet(root, policy=ImportPolicy())


def test_ids_repeated_across_splits_are_refused(tmp_path):
    root = make_root(tmp_path, {"train": ([image(1)], [part(1, 1, 24)]),
                                "val": ([image(1, "n02930766_2")], [part(2, 1, 24)]), "test": ([], [])})
    with pytest.raises(InputError, match="image id 1 appears in both train and val"):
        read_partimagenet(root, policy=ImportPolicy())


def test_round_items_outline_each_part_and_carry_the_agreed_keys(root, tmp_path):
    images = read_partimagenet(root, policy=ImportPolicy()).images.values()
    data_root = tmp_path / "data"
    items = round_items(images, data_root, decomposable={("Car", "Body"), ("Car", "Tire")})
    assert list(items) == [("Car", "Body"), ("Car", "Tire")]  # the goose's torso is not asked about
    tire = items[("Car", "Tire")][0]
    assert tire.item_id == "n02930766_1-11" and tire.image == "spin/tasks/n02930766_1-11.png"
    cab = next(i for i in images if i.image_id == 1)
    assert tire.data == {"image_id": 1, "part_ann_id": 11, "object": "Car", "object_class": "cab", "part": "Tire",
                         "part_rle": {"size": [30, 40], "counts": cab.parts[1].rle["counts"]}}
    assert json.loads(json.dumps(tire.data)) == tire.data  # saved with the round record as plain JSON
    overlay = np.asarray(Image.open(data_root / tire.image))
    assert overlay.shape == (30, 40, 3)
    assert tuple(overlay[20, 5]) == (255, 215, 0)  # on the outline of the first tire
    assert tuple(overlay[23, 14]) != (255, 215, 0)  # between the tires, untouched

    contexts = part_contexts(images, decomposable={("Car", "Tire")})
    assert list(contexts) == ["n02930766_1-11"]
    context = contexts["n02930766_1-11"]
    assert (context.height, context.width, context.part, context.object_class) == (30, 40, "Tire", "cab")
    assert context.part_rle.model_dump() == {"size": (30, 40), "counts": cab.parts[1].rle["counts"]}
    assert rle_to_bitmap(tire.data["part_rle"]).sum() == cab.parts[1].area  # the item's mask is the part's
