"""The parent-mask baseline: each entity predicted with its parent's ground-truth mask."""

from __future__ import annotations

import pytest

from segbench.core.errors import InputError
from segbench.core.io import read_json, write_json
from segbench.demo.spin.baseline import parent_mask_predictions, write_parent_mask_predictions

WHOLE, PART, SUB = ({"size": [4, 4], "counts": c} for c in ("0<", "04<", "05;"))


def _cocos(sub_parent: int = 20) -> dict:
    return {"wholes": {"annotations": [{"id": 10, "image_id": 1, "category_id": 0, "segmentation": WHOLE}]},
            "parts": {"annotations": [{"id": 20, "image_id": 1, "category_id": 3, "parent_id": 10,
                                       "segmentation": PART}]},
            "subparts": {"annotations": [{"id": 30, "image_id": 1, "category_id": 7, "parent_id": sub_parent,
                                          "segmentation": SUB}]}}


def test_each_level_gets_its_parents_mask(tmp_path):
    for level, coco in _cocos().items():
        write_json(tmp_path / "ds" / f"spin_test_{level}.json", {"images": [], "categories": [], **coco})
    paths = write_parent_mask_predictions(tmp_path / "ds", "test", tmp_path / "preds")
    assert sorted(p.name for p in paths.values()) == ["spin_test_parts_results.json",
                                                      "spin_test_subparts_results.json",
                                                      "spin_test_wholes_results.json"]
    got = {level: read_json(path) for level, path in paths.items()}
    assert got["wholes"] == [{"image_id": 1, "category_id": 0, "gt_id": 10, "segmentation": WHOLE, "score": 1.0,
                              "prompt": "general"}]
    assert [(e["gt_id"], e["category_id"], e["segmentation"]) for e in got["parts"]] == [(20, 3, WHOLE)]
    assert [(e["gt_id"], e["category_id"], e["segmentation"]) for e in got["subparts"]] == [(30, 7, PART)]


def test_a_dangling_parent_id_names_the_annotation():
    with pytest.raises(InputError, match="subparts annotation 30 names parent 99") as info:
        parent_mask_predictions(_cocos(sub_parent=99))
    assert info.value.item == "annotation 30"


def test_a_missing_ground_truth_file_names_it(tmp_path):
    with pytest.raises(InputError, match="file not found") as info:
        write_parent_mask_predictions(tmp_path, "test", tmp_path / "preds")
    assert "spin_test_wholes.json" in str(info.value)
