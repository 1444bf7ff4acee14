"""The SA-Co export of CAFE: document layout, pycocotools load, and the schema check (one test per
kind of bad entry)."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest
from pycocotools.coco import COCO

from segbench.core.errors import AnnotationError, InputError
from segbench.core.io import write_json
from segbench.core.masks import bitmap_to_rle
from segbench.schemas.cafe import Candidate, Target
from segbench.schemas.edits import EditPlan, EditType
from segbench.tasks.cafe.export import NEGATIVE_ID_OFFSET, saco_document, subset_documents, validate_saco


def _candidate(number: int, edit_type: EditType, q_pos: str = "vase", q_neg: str = "watermelon") -> Candidate:
    bitmap = np.zeros((20, 30), np.uint8)
    bitmap[2:12, 5:9] = 1  # 40 pixels, bbox (5, 2, 4, 10)
    target = Target(key=f"coco:{number}:{number * 10}", source="coco", image_id=number, annotation_id=number * 10,
                    category_id=86, object_name="vase", file_name=f"{number:012d}.jpg", width=30, height=20,
                    area=40, area_fraction=40 / 600, bbox=(5, 2, 4, 10), segmentation=bitmap_to_rle(bitmap))
    plan = EditPlan(target_key=target.key, edit_type=edit_type, object_name="vase", q_pos=q_pos, q_neg=q_neg,
                    instruction="paint it", pattern="watermelon" if edit_type is EditType.SM else None)
    stem = f"coco_{number}_{number * 10}_{edit_type.abbr}"
    return Candidate(id=number, key=f"{target.key}:{edit_type.abbr}", target=target, plan=plan,
                     image=f"images/{stem}.jpg", review_image=f"review/{stem}.jpg", edit_seed=1)


CANDIDATES = [_candidate(1, EditType.SM), _candidate(2, EditType.CC, "vase", "toy vase"),
              _candidate(3, EditType.OC, "gold figurine", "vase")]


def _write(tmp_path, document) -> str:
    return str(write_json(tmp_path / "CAFE.json", document))


def test_positive_image_twin_and_mask(tmp_path):
    doc = saco_document(CANDIDATES, subset="CAFE", version="v")
    pos, neg = doc["images"][0], doc["images"][1]
    assert pos["text_input"] == "vase" and pos["edit_type"] == "Superficial Mimicry"
    assert pos["is_instance_exhaustive"] == 1 and "fp_source_id" not in pos
    assert (pos["source"], pos["source_image_id"], pos["source_annotation_id"]) == ("coco", 1, 10)
    assert pos["plan"]["q_neg"] == "watermelon" and pos["plan"]["pattern"] == "watermelon"
    assert neg == {"id": 1 + NEGATIVE_ID_OFFSET, "fp_source_id": 1, "file_name": "coco_1_10_SM.jpg", "width": 30,
                   "height": 20, "text_input": "watermelon", "edit_type": "Superficial Mimicry",
                   "is_instance_exhaustive": 1}
    assert doc["annotations"][0] | {"segmentation": None} == {
        "id": 1, "image_id": 1, "category_id": 1, "segmentation": None, "area": 40, "bbox": [5, 2, 4, 10],
        "iscrowd": 0}
    assert len(doc["categories"]) == 1 and len(doc["images"]) == 6 and len(doc["annotations"]) == 3


def test_the_export_loads_with_pycocotools_and_passes_the_check(tmp_path):
    path = _write(tmp_path, saco_document(CANDIDATES, subset="CAFE", version="v"))
    assert validate_saco(path) == []
    coco = COCO(path)
    assert len(coco.getImgIds()) == 6 and coco.getAnnIds(imgIds=[1 + NEGATIVE_ID_OFFSET]) == []
    mask = coco.annToMask(coco.loadAnns(coco.getAnnIds(imgIds=[1]))[0])
    assert mask.shape == (20, 30) and int(mask.sum()) == 40


def test_subsets_split_by_edit_type():
    docs = subset_documents(CANDIDATES, version="v")
    assert sorted(docs) == ["CAFE", "CAFE_CC", "CAFE_OC", "CAFE_SM"]
    assert [i["id"] for i in docs["CAFE_OC"]["images"]] == [3, 3 + NEGATIVE_ID_OFFSET]
    assert len(docs["CAFE"]["annotations"]) == 3


def _broken(tmp_path, change) -> list[AnnotationError]:
    doc = copy.deepcopy(saco_document(CANDIDATES, subset="CAFE", version="v"))
    change(doc)
    return validate_saco(_write(tmp_path, doc))


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["images"].pop(1), "exactly one misleading twin"),
    (lambda d: d["images"][1].update(id=5), "positive id \\+ 1000000000"),
    (lambda d: d["images"][1].update(fp_source_id=99), "not a positive image"),
    (lambda d: d["images"][1].update(file_name="other.jpg"), "file_name differs"),
    (lambda d: d["images"][1].update(text_input="vase"), "q- equals q\\+"),
    (lambda d: d["images"][0].update(edit_type="Mimicry"), "edit_type 'Mimicry'"),
    (lambda d: d["images"][0].update(is_instance_exhaustive=0), "is_instance_exhaustive must be 1"),
    (lambda d: d["images"][0].pop("text_input"), "no text_input"),
    (lambda d: d["annotations"].pop(0), "has 0 annotations"),
    (lambda d: d["annotations"].append({**d["annotations"][0], "id": 9, "image_id": 1 + NEGATIVE_ID_OFFSET}),
     "must have none"),
    (lambda d: d["annotations"][0].update(iscrowd=1), "iscrowd must be 0"),
    (lambda d: d["annotations"][0].update(area=41), "area 41"),
    (lambda d: d["annotations"][0].update(bbox=[0, 0, 4, 10]), "bbox"),
    (lambda d: d["annotations"][0].update(category_id=7), "category_id 7"),
    (lambda d: d["annotations"][0]["segmentation"].update(counts="0"), "RLE counts are invalid"),
    (lambda d: d["annotations"][0]["segmentation"].update(size=[10, 10]), "compressed RLE"),
    (lambda d: d["annotations"][1].update(id=1), "unique integer id"),
])
def test_each_kind_of_bad_entry_is_a_named_error(tmp_path, change, message):
    errors = _broken(tmp_path, change)
    assert errors and all(isinstance(e, AnnotationError) for e in errors)
    assert any(re.search(message, e.message) for e in errors), [e.message for e in errors]
    assert all(e.path.endswith("CAFE.json") and e.item for e in errors)


def test_a_file_without_the_coco_lists_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="'images', 'annotations' and 'categories'"):
        validate_saco(_write(tmp_path, {"images": []}))
