"""The typed COCO reader accepts and refuses exactly what load_coco does, naming the JSON path."""

import json
import re

import pytest

from segbench.core.coco import load_coco
from segbench.core.coco_typed import as_dict, read_coco, valid_annotations, valid_images
from segbench.core.errors import AnnotationError, ImportPolicy, InputError, OnError

IMAGE = {"id": 1, "width": 10, "height": 8, "file_name": "a.jpg", "license": 3}
ANNOTATION = {"id": 5, "image_id": 1, "category_id": 17, "area": 4.0, "segmentation": [[0, 0, 2, 0, 2, 2, 0, 2]],
              "iscrowd": 0, "bbox": [0, 0, 2, 2]}
CATEGORIES = [{"id": 17, "name": "cat"}, {"id": 18, "name": "dog"}]


def write(tmp_path, data, name="c.json"):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
    return path


def coco(images=(), annotations=()):
    return {"images": [IMAGE, *images], "annotations": [ANNOTATION, *annotations], "categories": CATEGORIES}


def typed_read(path, policy):
    raw = read_coco(path)
    images = [image.id for image, _ in valid_images(raw, path, policy)]
    anns = list(valid_annotations(raw, path, policy, set(images), {17, 18}))
    return images, [(ann.id, ann.image_id, ann.category_id, ann.area) for ann, _ in anns], [as_dict(r) for _, r in anns]


def test_records_decode_in_full_only_on_request_and_unchanged(tmp_path):
    path = write(tmp_path, coco())
    images, fields, full = typed_read(path, ImportPolicy())
    assert images == [1] and fields == [(5, 1, 17, 4.0)]
    assert full == [ANNOTATION] and list(full[0]) == list(ANNOTATION)  # every field, in the file's order


def test_values_plain_json_rules_accept_are_accepted_like_load_coco(tmp_path):
    # 1.0 is a valid image id for load_coco (1.0 == 1) and an int area is valid: the typed path must agree.
    quirky = [{**ANNOTATION, "id": 6, "image_id": 1.0}, {**ANNOTATION, "id": 7, "area": 3}]
    path = write(tmp_path, coco(annotations=quirky))
    _, fields, _ = typed_read(path, ImportPolicy())
    assert [f[0] for f in fields] == [a["id"] for a in load_coco(path, policy=ImportPolicy()).annotations] == [5, 6, 7]
    assert fields[2][3] == 3.0


@pytest.mark.parametrize(
    ("annotation", "message", "where"),
    [
        ({"image_id": 99}, "unknown image 99", r"\$\.annotations\[1\]\)"),
        ({"category_id": 3}, "unknown category 3", r"\$\.annotations\[1\]\)"),
        ({"area": -1}, "no valid 'area'", r"\$\.annotations\[1\]\.area: Expected `float` >= 0"),
        ({"area": "big"}, "no valid 'area'", r"\$\.annotations\[1\]\.area: Expected `float`, got `str`"),
        ({"image_id": "1"}, "unknown image '1'", r"\$\.annotations\[1\]\.image_id: Expected `int`"),
        ({"segmentation": None}, "no 'segmentation'", r"\$\.annotations\[1\]: Object missing required field"),
        ({"id": 5}, "id appears twice", r"\$\.annotations\[1\]\)"),
    ],
)
def test_a_bad_annotation_names_file_item_rule_and_json_path(tmp_path, annotation, message, where):
    bad = {**ANNOTATION, "id": 6, **annotation}
    if annotation.get("segmentation", "") is None:
        del bad["segmentation"]
    path = write(tmp_path, coco(annotations=[bad]))
    with pytest.raises(AnnotationError, match=message) as info:
        typed_read(path, ImportPolicy())
    assert info.value.path == str(path) and info.value.item == f"annotation {bad['id']}" and info.value.hint
    assert re.search(where, str(info.value)), str(info.value)
    with pytest.raises(AnnotationError, match=message):  # the rule load_coco enforces too
        load_coco(path, policy=ImportPolicy())


def test_under_skip_the_bad_records_are_reported_and_the_rest_kept(tmp_path):
    path = write(tmp_path, coco(images=[{**IMAGE, "id": 2, "width": 0}],
                                annotations=[{**ANNOTATION, "id": 6, "image_id": 2}, {**ANNOTATION, "id": 7}]))
    policy = ImportPolicy(on_error=OnError.SKIP)
    images, fields, _ = typed_read(path, policy)
    assert images == [1] and [f[0] for f in fields] == [5, 7]
    assert [s["item"] for s in policy.report.skipped] == ["image 2", "annotation 6"]
    assert "$.images[1].width" in policy.report.skipped[0]["message"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"images": [', "not valid JSON"),
        (b"[]", "must hold a JSON object"),
        (b'{"images": {}, "annotations": [], "categories": []}', r"non-list key 'images' \(.*\$\.images"),
        (b'{"images": [], "categories": []}', "missing or non-list key 'annotations'"),
        (b'{"images": [], "annotations": [], "categories": [], "info": "\xff"}', "not UTF-8"),
    ],
)
def test_a_malformed_file_is_an_input_error_naming_it(tmp_path, content, message):
    path = write(tmp_path, content)
    with pytest.raises(InputError, match=message) as info:
        read_coco(path)
    assert info.value.path == str(path) and type(info.value) is InputError


def test_a_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="not found"):
        read_coco(tmp_path / "nope.json")
