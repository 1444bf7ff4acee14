"""PQ / SQ / RQ on hand-computed tiny segment maps, accumulator sums, panoptic ground-truth parsing."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from segbench.core.errors import InputError
from segbench.tasks.vocab import panoptic_quality as pqm

CLASSES = ("a", "b", "c")
# segment 1 (class a) left half, 2 and 3 (class b) right top / bottom; 0 is not listed → void
SEGS = np.array([[1, 1, 2, 2], [1, 1, 2, 2], [1, 1, 3, 3], [0, 0, 3, 3]])
GT_CLASSES = {1: 0, 2: 1, 3: 1}


def _summary(pred_classes, gt=SEGS, gt_classes=GT_CLASSES, pred=SEGS, crowd=()):
    acc = pqm.PQAccumulator(3)
    acc.update(gt, gt_classes, pred, pred_classes, crowd=crowd)
    return acc, acc.summarize(CLASSES, "exact").model_dump()


def test_perfect_prediction_is_one():
    before = SEGS.copy()
    acc, s = _summary(dict(GT_CLASSES))
    assert np.array_equal(SEGS, before)  # inputs untouched
    assert (s["pq"], s["sq"], s["rq"], s["num_classes"]) == (1.0, 1.0, 1.0, 2)
    assert acc.tp.tolist() == [1, 2, 0] and acc.fp.tolist() == [0, 0, 0] and acc.fn.tolist() == [0, 0, 0]
    assert s["per_class"]["c"] == {"pq": None, "sq": None, "rq": None, "tp": 0, "fp": 0, "fn": 0}


def test_one_wrong_class():
    # segment 3 (gt b) predicted a: FP for a, FN for b
    acc, s = _summary({1: 0, 2: 1, 3: 0})
    assert acc.tp.tolist() == [1, 1, 0] and acc.fp.tolist() == [1, 0, 0] and acc.fn.tolist() == [0, 1, 0]
    # a: 1 / (1 + 0.5) ; b: 1 / (1 + 0.5)
    assert s["per_class"]["a"]["pq"] == pytest.approx(2 / 3) and s["per_class"]["b"]["rq"] == pytest.approx(2 / 3)
    assert s["pq"] == pytest.approx(2 / 3) and s["sq"] == 1.0 and s["rq"] == pytest.approx(2 / 3)


def test_unmatched_segment_is_a_false_negative_only():
    acc, s = _summary({1: 0, 2: 1})  # segment 3's description mapped to nothing
    assert acc.fp.sum() == 0 and acc.fn.tolist() == [0, 1, 0]
    assert s["pq"] == pytest.approx((1 + 2 / 3) / 2)


def test_prediction_on_gt_void_is_no_false_positive():
    pred = SEGS.copy()
    pred[3, :2] = 9  # a predicted segment lying on the void pixels only
    acc, _ = _summary({1: 0, 2: 1, 3: 1, 9: 2}, pred=pred)
    assert acc.fp.sum() == 0 and acc.tp.tolist() == [1, 2, 0]


def test_no_counts_gives_none():
    s = pqm.PQAccumulator(3).summarize(CLASSES, "exact").model_dump()
    assert (s["pq"], s["sq"], s["rq"], s["num_classes"]) == (None, None, None, 0)


ROW = np.array([[1, 1, 1, 1, 0, 0, 0, 0]])  # gt segment 1 (class a) on 4 px, then 4 void px


@pytest.mark.parametrize(
    ("pred_row", "tp", "iou"),
    [([5, 5, 0, 0, 7, 7, 7, 7], 0, None),   # IoU 2 / 4 = 0.5: not > 0.5, not matched
     ([5, 5, 5, 0, 0, 0, 0, 0], 1, 0.75),   # IoU 3 / 4
     # 3 px on gt + 3 px on void: union 4 + 6 - 3 - 3 (void part of the prediction left out) = 4
     ([5, 5, 5, 0, 5, 5, 5, 0], 1, 0.75)],
)
def test_matching_with_different_pixels(pred_row, tp, iou):
    acc, s = _summary({5: 0, 7: 0}, gt=ROW, gt_classes={1: 0}, pred=np.array([pred_row]))
    assert acc.tp[0] == tp
    if tp:
        assert acc.iou_sum[0] == pytest.approx(iou) and s["pq"] == pytest.approx(iou) and acc.fp[0] == 0
    else:
        # segment 5 overlaps gt by half: a FP; segment 7 lies on void only: ignored
        assert acc.fn[0] == 1 and acc.fp[0] == 1 and s["pq"] == 0.0


def test_same_pixels_wrong_class_not_matched():
    pred = np.array([[5, 5, 5, 5, 0, 0, 0, 0]])
    acc, _ = _summary({5: 1}, gt=ROW, gt_classes={1: 0}, pred=pred)  # IoU 1 but classes differ
    assert acc.tp.sum() == 0 and acc.fn[0] == 1 and acc.fp[1] == 1


def test_crowd_is_neither_missed_nor_false_positive():
    acc, _ = _summary({1: 0, 2: 1, 3: 1}, crowd={3})
    assert acc.tp.tolist() == [1, 1, 0] and acc.fn.sum() == 0 and acc.fp.sum() == 0


def test_accumulators_add_like_one_pass():
    preds = [{1: 0, 2: 1, 3: 0}, {1: 0, 2: 1}, dict(GT_CLASSES)]
    one = pqm.PQAccumulator(3)
    shards = [pqm.PQAccumulator(3) for _ in preds]
    for shard, pred in zip(shards, preds, strict=True):
        one.update(SEGS, GT_CLASSES, SEGS, pred)
        shard.update(SEGS, GT_CLASSES, SEGS, pred)
    total = pqm.PQAccumulator(3)
    for shard in shards:
        total += shard
    assert total.summarize(CLASSES, "exact") == one.summarize(CLASSES, "exact")
    with pytest.raises(ValueError, match="different vocabularies"):
        total += pqm.PQAccumulator(2)


def test_update_rejects_bad_input():
    with pytest.raises(ValueError, match="shape"):
        pqm.PQAccumulator(3).update(SEGS, GT_CLASSES, SEGS[:2], {})
    with pytest.raises(ValueError, match="class indices"):
        pqm.PQAccumulator(3).update(SEGS, GT_CLASSES, SEGS, {1: 3})


def _png(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def test_decode_rgb_ids():
    rgb = np.zeros((1, 2, 3), np.uint8)
    rgb[0, 0] = (1, 2, 3)
    rgb[0, 1] = (255, 0, 0)
    assert pqm.decode_segment_ids(_png(rgb), source="x.png").tolist() == [[1 + 2 * 256 + 3 * 65536, 255]]


def test_decode_grayscale_16_bit_ids():
    ids = np.array([[0, 300], [65535, 7]], np.uint16)
    assert pqm.decode_segment_ids(_png(ids), source="x.png").tolist() == ids.tolist()


def test_decode_rejects_garbage_and_rgba():
    with pytest.raises(InputError, match="readable"):
        pqm.decode_segment_ids(b"nope", source="x.png")
    with pytest.raises(InputError, match="one channel or RGB"):
        pqm.decode_segment_ids(_png(np.zeros((2, 2, 4), np.uint8)), source="x.png")


def test_parse_segments():
    data = [{"id": 4, "category_id": 1}, {"id": 5, "category_id": 2, "iscrowd": 1}]
    expected = {4: pqm.Segment(1, False), 5: pqm.Segment(2, True)}
    assert pqm.parse_segments(data) == expected
    assert pqm.parse_segments({"image_id": 1, "segments_info": data}) == expected


@pytest.mark.parametrize(
    ("data", "item"),
    [({"id": 1}, None), ([{"id": 1}], "segment 0"), ([{"id": "1", "category_id": 0}], "segment 0"),
     ([{"id": 1, "category_id": 0}, {"id": 1, "category_id": 2}], "segment 1")],
)
def test_bad_segments_name_the_entry(data, item):
    with pytest.raises(InputError) as err:
        pqm.parse_segments(data, source="s.json")
    assert err.value.path == "s.json" and err.value.item == item


def test_attach_pq_adds_rows_and_curve():
    from segbench.schemas.vocab_metrics import LevelPQ, VocabMetrics

    names = ("exact", "synonyms", "hyponyms", "meronyms")
    curve = {"values": [0.5] * 4, "area": 0.5}
    metrics = VocabMetrics.model_validate({
        "num_images": 1, "num_regions": 1, "undescribed_regions": 0, "absent_segments": 0, "baseline": None,
        "pq": None, "levels": [{"level": n, "miou": 0.5, "macc": 0.5, "pacc": 0.5, "class_iou": {}, "region_acc": 1.0}
                               for n in names],
        "lac": {"miou": curve, "macc": curve, "pacc": curve, "region_acc": curve}})
    per_level = [LevelPQ(level=n, pq=v, sq=1.0, rq=v, num_classes=1, per_class={})
                 for n, v in zip(names, (0.0, 0.5, 0.5, 1.0), strict=True)]
    out = pqm.attach_pq(metrics, per_level).model_dump(mode="json")
    before = metrics.model_dump(mode="json")
    assert before["pq"] is None and "pq" not in before["levels"][0] and "pq" not in before["lac"]  # input untouched
    assert [lv["pq"] for lv in out["levels"]] == [0.0, 0.5, 0.5, 1.0]
    assert out["lac"]["pq"] == {"values": [0.0, 0.5, 0.5, 1.0], "area": pytest.approx(0.5)}
    assert [p["level"] for p in out["pq"]] == list(names)
