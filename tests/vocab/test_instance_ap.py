"""Mask AP per level (COCOeval) on hand-computed tiny segment maps; shards add up to the whole."""

from __future__ import annotations

import numpy as np
import pytest

from segbench.tasks.vocab.instance_ap import APAccumulator

pytestmark = pytest.mark.unit

CLASSES = ("a", "b", "c")
# gt: segment 1 (a) left half, 2 and 3 (b) right top / bottom; 0 void
SEGS = np.array([[1, 1, 2, 2], [1, 1, 2, 2], [1, 1, 3, 3], [0, 0, 3, 3]])
GT = {1: 0, 2: 1, 3: 1}
RECALL_POINTS = 101  # COCOeval interpolates precision at recall 0, 0.01, ..., 1


def _levels(acc, over="all"):
    return [lv.model_dump() for lv in acc.summarize(CLASSES, ["exact", "meronyms"], over)]


def test_gt_segments_as_predictions_score_by_their_mapped_class():
    acc = APAccumulator(frozenset({0, 1, 2}), 2)
    # exact: nothing mapped. meronyms: 1 → a (right), 2 → b (right), 3 → c (wrong: FP of c, b misses one)
    acc.update("img", SEGS, GT, SEGS, [{}, {1: 0, 2: 1, 3: 2}], {})
    exact, meronyms = _levels(acc)
    assert (exact["ap"], exact["num_classes"]) == (0.0, 2)  # a and b have gt and no detection; c has no gt
    assert exact["per_class"] == {"a": 0.0, "b": 0.0, "c": None}
    # a: 1 / 1 → AP 1. b: one of two found at precision 1 → precision 1 at recall 0..0.5 (51 points), 0 after.
    b = 51 / RECALL_POINTS
    assert meronyms["per_class"] == pytest.approx({"a": 1.0, "b": b, "c": None})
    assert meronyms["ap"] == pytest.approx((1 + b) / 2)
    assert meronyms["ap50"] == meronyms["ap75"] == pytest.approx((1 + b) / 2)  # masks identical: IoU 1
    assert meronyms["classes"] == "all"


def test_scores_rank_detections():
    # two images, one gt of class a each; the wrong (non-overlapping) detection has the higher score
    gt = np.array([[1, 1, 0, 0]])
    pred = np.array([[5, 5, 6, 6]])
    acc = APAccumulator(frozenset({0}), 1)
    acc.update("x", gt, {1: 0}, pred, [{5: 0, 6: 0}], {5: 0.4, 6: 0.9})
    [level] = [lv.model_dump() for lv in acc.summarize(("a",), ["exact"], "things")]
    # ranked: FP (0.9) then TP (0.4): precision 1/2 at recall 1 → interpolated 0.5 at every recall point
    assert level["ap"] == pytest.approx(0.5)
    acc = APAccumulator(frozenset({0}), 1)
    acc.update("x", gt, {1: 0}, pred, [{5: 0, 6: 0}], {5: 0.9, 6: 0.4})
    assert acc.summarize(("a",), ["exact"], "things")[0].ap == pytest.approx(1.0)


def test_iou_thresholds():
    # gt 4 px; the detection covers 3 of them and 1 more: IoU 3/5 = 0.6 → found at 0.50..0.60 (3 of 10 thresholds)
    gt = np.array([[1, 1, 1, 1, 0]])
    pred = np.array([[0, 7, 7, 7, 7]])
    acc = APAccumulator(frozenset({0}), 1)
    acc.update("x", gt, {1: 0}, pred, [{7: 0}], {})
    [level] = acc.summarize(("a",), ["exact"], "things")
    assert (level.ap50, level.ap75, level.ap) == pytest.approx((1.0, 0.0, 0.3))


def test_only_ap_classes_count_and_crowd_is_neither_right_nor_wrong():
    acc = APAccumulator(frozenset({0}), 1)  # class b is stuff: left out
    # segment 3 (b) marked crowd would not matter; make segment 1 (a) crowd: a detection on it is ignored
    acc.update("img", SEGS, GT, SEGS, [{1: 0, 2: 1}], {}, crowd={1})
    [level] = acc.summarize(CLASSES, ["exact"], "things")
    assert level.per_class == {"a": None} and level.ap is None and level.num_classes == 0


def test_shards_add_up_to_one_pass():
    def add(acc, n):
        segs = np.roll(SEGS, n, axis=1)
        acc.update(f"img{n}", segs, GT, segs, [{1: 0, 2: 1, 3: 0}], {1: 0.1 * n, 2: 0.5, 3: 0.9})

    whole = APAccumulator(frozenset({0, 1}), 1)
    for n in range(4):
        add(whole, n)
    left, right = APAccumulator(frozenset({0, 1}), 1), APAccumulator(frozenset({0, 1}), 1)
    for n in range(2):
        add(left, n)
    for n in range(2, 4):
        add(right, n)
    left += right
    assert left.summarize(CLASSES, ["exact"], "all") == whole.summarize(CLASSES, ["exact"], "all")
    with pytest.raises(ValueError, match="different classes"):
        left += APAccumulator(frozenset({0}), 1)


def test_no_ground_truth_gives_none(capsys):
    acc = APAccumulator(frozenset({0}), 1)
    acc.update("img", np.zeros((2, 2), int), {}, np.ones((2, 2), int), [{1: 0}], {})
    assert acc.summarize(("a",), ["exact"], "things")[0].ap is None
    assert capsys.readouterr().out == ""  # pycocotools' progress lines do not leak
