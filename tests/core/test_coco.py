"""COCO loading, validation, merging and the import policy: one test per kind of bad input."""

import json

import pytest

from segbench.core.coco import annotation_rle, areas_by_image, load_coco, merge_splits
from segbench.core.errors import AnnotationError, ImportPolicy, InputError, OnError


def coco(images=None, annotations=None, categories=None):
    return {
        "images": images if images is not None else [{"id": 1, "width": 10, "height": 8, "file_name": "a.jpg"}],
        "annotations": annotations if annotations is not None else [
            {"id": 5, "image_id": 1, "category_id": 17, "area": 4.0, "segmentation": [[0, 0, 2, 0, 2, 2, 0, 2]],
             "iscrowd": 0}],
        "categories": categories if categories is not None else [{"id": 17, "name": "cat"}, {"id": 18, "name": "dog"}],
    }


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_load_indexes_images_annotations_and_categories(tmp_path):
    index = load_coco(write(tmp_path, "c.json", coco()), policy=ImportPolicy())
    assert list(index.images) == [1]
    assert [a["id"] for a in index.anns_by_image[1]] == [5]
    assert index.category_id("dog") == 18


def test_unknown_category_name_lists_the_known_ones(tmp_path):
    index = load_coco(write(tmp_path, "c.json", coco()), policy=ImportPolicy())
    with pytest.raises(InputError, match="no category named 'horse' \\(has: cat, dog\\)"):
        index.category_id("horse")


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        load_coco(tmp_path / "nope.json", policy=ImportPolicy())


def test_malformed_json(tmp_path):
    with pytest.raises(InputError, match="not valid JSON"):
        load_coco(write(tmp_path, "c.json", '{"images": ['), policy=ImportPolicy())


def test_missing_top_level_key(tmp_path):
    data = coco()
    del data["annotations"]
    with pytest.raises(InputError, match="missing or non-list key 'annotations'"):
        load_coco(write(tmp_path, "c.json", data), policy=ImportPolicy())


def test_duplicate_category(tmp_path):
    data = coco(categories=[{"id": 17, "name": "cat"}, {"id": 17, "name": "cat"}])
    with pytest.raises(InputError, match="category id 17 appears twice"):
        load_coco(write(tmp_path, "c.json", data), policy=ImportPolicy())


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        ({"id": 6, "image_id": 99, "category_id": 17, "area": 1, "segmentation": []}, "unknown image 99"),
        ({"id": 6, "image_id": 1, "category_id": 3, "area": 1, "segmentation": []}, "unknown category 3"),
        ({"id": 6, "image_id": 1, "category_id": 17, "area": -1, "segmentation": []}, "no valid 'area'"),
        ({"id": 6, "image_id": 1, "category_id": 17, "area": 1}, "no 'segmentation'"),
        ({"id": 5, "image_id": 1, "category_id": 17, "area": 1, "segmentation": []}, "id appears twice"),
    ],
)
def test_bad_annotation_fails_fast_naming_file_and_item(tmp_path, annotation, message):
    data = coco()
    data["annotations"].append(annotation)
    path = write(tmp_path, "c.json", data)
    with pytest.raises(AnnotationError, match=message) as info:
        load_coco(path, policy=ImportPolicy())
    assert info.value.path == str(path) and info.value.item == f"annotation {annotation['id']}"


def test_bad_annotation_is_skipped_and_reported_under_skip_policy(tmp_path):
    data = coco()
    data["annotations"].append({"id": 6, "image_id": 99, "category_id": 17, "area": 1, "segmentation": []})
    policy = ImportPolicy(on_error=OnError.SKIP)
    index = load_coco(write(tmp_path, "c.json", data), policy=policy)
    assert [a["id"] for a in index.annotations] == [5]
    assert policy.report.counts() == {"AnnotationError": 1}
    assert policy.report.skipped[0]["item"] == "annotation 6"


def test_bad_image_record(tmp_path):
    data = coco(images=[{"id": 1, "width": 10, "height": 8, "file_name": "a.jpg"},
                        {"id": 2, "width": 0, "height": 8, "file_name": "b.jpg"}])
    with pytest.raises(AnnotationError, match="image 2 has no positive integer 'width'"):
        load_coco(write(tmp_path, "c.json", data), policy=ImportPolicy())


def test_merge_prefixes_split_and_keeps_inputs(tmp_path):
    train = load_coco(write(tmp_path, "t.json", coco()), policy=ImportPolicy())
    val_data = coco(images=[{"id": 2, "width": 4, "height": 4, "file_name": "b.jpg"}],
                    annotations=[{"id": 7, "image_id": 2, "category_id": 18, "area": 1.0, "segmentation": []}])
    val = load_coco(write(tmp_path, "v.json", val_data), policy=ImportPolicy())
    merged = merge_splits([("train2017", train), ("val2017", val)])
    assert merged.images[1]["file_name"] == "train2017/a.jpg" and merged.images[2]["split"] == "val2017"
    assert train.images[1]["file_name"] == "a.jpg"
    assert sorted(a["id"] for a in merged.annotations) == [5, 7]


def test_merge_refuses_duplicate_image_ids_and_different_categories(tmp_path):
    a = load_coco(write(tmp_path, "a.json", coco()), policy=ImportPolicy())
    b = load_coco(write(tmp_path, "b.json", coco(annotations=[])), policy=ImportPolicy())
    with pytest.raises(InputError, match="image id 1 appears in both train2017 and val2017"):
        merge_splits([("train2017", a), ("val2017", b)])
    c = load_coco(write(tmp_path, "c.json", coco(annotations=[], categories=[{"id": 17, "name": "kitten"}])),
                  policy=ImportPolicy())
    with pytest.raises(InputError, match="categories differ"):
        merge_splits([("train2017", a), ("val2017", c)])


def test_annotation_rle_names_image_and_annotation(tmp_path):
    image = {"id": 1, "width": 10, "height": 8}
    with pytest.raises(AnnotationError, match="image 1 / annotation 9: invalid segmentation: polygon 0 has 2 points"):
        annotation_rle({"id": 9, "segmentation": [[0, 0, 1, 1]]}, image, path="x.json")


def test_areas_by_image_sums_into_slots():
    anns = [{"image_id": 1, "category_id": 3, "area": 2.0}, {"image_id": 1, "category_id": 4, "area": 5.0},
            {"image_id": 1, "category_id": 3, "area": 1.5}, {"image_id": 2, "category_id": 9, "area": 7.0}]
    assert areas_by_image(anns, {3: 0, 4: 1}) == {1: [3.5, 5.0]}
