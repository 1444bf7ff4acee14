"""LAC: area on hand-computed values, per-level metrics on a tiny label map, input parsing, report."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from segbench.core.errors import InputError
from segbench.tasks.vocab import lac, lac_report

CLASSES = ("a", "b", "c")
IDS = (0, 1, 2)
# gt pixel values = vocabulary ids; 255 is not a class id and is ignored
GT_IDS = np.array([[0, 0, 1, 1], [2, 2, 255, 1]])


@pytest.mark.parametrize(
    ("values", "area"),
    [([0, 0, 0, 0], 0.0), ([1, 1, 1, 1], 1.0), ([0, 0.3, 0.6, 0.9], 0.45),
     ([0.2, 0.2, 0.8, 0.8], 0.5), ([0, 1], 0.5), ([0.5, None, 1, 1], None), ([0.5], None)],
)
def test_lac_area(values, area):
    assert lac.lac_area(values) == (pytest.approx(area) if area is not None else None)


def test_to_class_index_ignores_unknown_values():
    idx = lac.to_class_index(GT_IDS, (0, 1, 2))
    assert idx.tolist() == [[0, 0, 1, 1], [2, 2, -1, 1]]
    assert lac.to_class_index(np.array([[10, 20]]), (20, 10)).tolist() == [[1, 0]]  # id order


def _gt():
    return lac.to_class_index(GT_IDS, IDS)


def test_per_level_metrics_on_tiny_map():
    gt = _gt()
    before = gt.copy()
    acc = lac.LacAccumulator(3)
    # region a: always right; region b: c at exact, right from synonyms; region c: unmatched, then b, then right
    labels = {0: [0, 0, 0, 0], 1: [2, 1, 1, 1], 2: [-1, -1, 1, 2]}
    acc.update(gt, labels, baseline={0: 0, 1: 2, 2: 2}, image_id="img")
    assert np.array_equal(gt, before)  # inputs untouched
    s = acc.summarize(CLASSES).model_dump(mode="json")
    exact, syn, hyp, mer = s["levels"]
    # exact: a 2/2 TP; b 3 px predicted c; c 2 px unmatched. IoU a=1, b=0, c=0/(2+3)=0
    assert exact["class_iou"] == {"a": 1.0, "b": 0.0, "c": 0.0}
    assert exact["miou"] == pytest.approx(1 / 3) and exact["macc"] == pytest.approx(1 / 3)
    assert exact["pacc"] == pytest.approx(2 / 7) and exact["region_acc"] == pytest.approx(1 / 3)
    # synonyms: b right; c unmatched → its IoU 0 (no false positive anywhere)
    assert syn["class_iou"] == {"a": 1.0, "b": 1.0, "c": 0.0} and syn["pacc"] == pytest.approx(5 / 7)
    # hyponyms: c predicted b → b IoU 3/5, c IoU 0
    assert hyp["class_iou"] == {"a": 1.0, "b": pytest.approx(0.6), "c": 0.0}
    assert hyp["macc"] == pytest.approx(2 / 3)
    assert mer["miou"] == 1.0 and mer["pacc"] == 1.0 and mer["region_acc"] == 1.0
    curve = s["lac"]["miou"]
    assert curve["values"] == pytest.approx([1 / 3, 2 / 3, 1.6 / 3, 1.0])
    assert curve["area"] == pytest.approx((1 / 6 + 2 / 3 + 1.6 / 3 + 0.5) / 3)
    base = s["baseline"]
    assert base["region_acc"] == pytest.approx(2 / 3)
    assert base["agreement"] == pytest.approx({"exact": 2 / 3, "synonyms": 1 / 3, "hyponyms": 1 / 3, "meronyms": 2 / 3})
    assert s["num_regions"] == 3 and s["undescribed_regions"] == 0 and s["pq"] is None


def test_undescribed_and_absent_regions_are_counted():
    acc = lac.LacAccumulator(3)
    acc.update(_gt(), {0: [0] * 4, -7: [1] * 4}, image_id="img")
    s = acc.summarize(CLASSES).model_dump(mode="json")
    assert s["undescribed_regions"] == 2 and s["absent_segments"] == 1
    assert s["levels"][0]["class_iou"] == {"a": 1.0, "b": 0.0, "c": 0.0}
    assert s["baseline"] is None


def test_shards_combine_like_one_pass():
    labels = {0: [0, 0, 0, 0], 1: [2, 1, 1, 1], 2: [-1, -1, 1, 2]}
    one = lac.LacAccumulator(3)
    one.update(_gt(), labels, image_id="x")
    one.update(_gt(), labels, image_id="y")
    left, right = lac.LacAccumulator(3), lac.LacAccumulator(3)
    left.update(_gt(), labels, image_id="x")
    right.update(_gt(), labels, image_id="y")
    left += right
    assert left.summarize(CLASSES) == one.summarize(CLASSES)
    left += right
    with pytest.raises(ValueError, match="more than once"):
        left.summarize(CLASSES)


def test_parse_descriptions():
    data = [{"image_id": 7, "descriptions": [{"segment_id": 1, "description": "a car"},
                                            {"region_id": 2, "description": "a road"}]}]
    assert lac.parse_descriptions(data) == {"7": {1: "a car", 2: "a road"}}


@pytest.mark.parametrize(
    ("data", "item"),
    [({"image_id": 1}, None),
     ([], None),  # nothing to evaluate
     ([{"image_id": 1}], "entry 0"),
     ([{"image_id": 1, "descriptions": [{"description": "x"}]}], "entry 0, description 0"),
     ([{"image_id": 1, "descriptions": [{"segment_id": 1, "description": "x"}, {"segment_id": 1, "description": "y"}]}],
      "entry 0, description 1"),
     ([{"image_id": 1, "descriptions": []}, {"image_id": 1, "descriptions": []}], "entry 1")],
)
def test_bad_descriptions_name_the_entry(data, item):
    with pytest.raises(InputError) as err:
        lac.parse_descriptions(data, source="d.json")
    assert err.value.path == "d.json" and err.value.item == item


def test_decode_label_map_rejects_rgb_and_garbage():
    buf = io.BytesIO()
    Image.fromarray(np.zeros((2, 2, 3), np.uint8)).save(buf, format="PNG")
    with pytest.raises(InputError, match="one channel"):
        lac.decode_label_map(buf.getvalue(), source="x.png")
    with pytest.raises(InputError, match="readable"):
        lac.decode_label_map(b"nope", source="x.png")


def test_report_files(tmp_path):
    acc = lac.LacAccumulator(3)
    acc.update(_gt(), {0: [0] * 4, 1: [1] * 4, 2: [2] * 4}, image_id="img")
    paths = lac_report.write_report(tmp_path, acc.summarize(CLASSES).model_dump(mode="json"),
                             {"vocab": "v.json", "baseline_note": "skipped"})
    assert paths["lac_plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = paths["report"].read_text()
    assert "| exact | 1.0000 | 1.0000 | 1.0000 | 1.0000 |" in text and "skipped" in text
