"""The usual files are read column by column, others item by item: both readings give the same evaluation."""

from __future__ import annotations

import copy
import gc

import numpy as np
from pycocotools import mask as mask_utils
from support.cafe_eval_data import HAND_PAIRS, HAND_PREDS, cafe_gt

from segbench.core.gc_pause import collection_paused
from segbench.tasks.cafe.cgf1_inputs import load_ground_truth, load_predictions
from segbench.tasks.cafe.metrics import evaluate_cafe


def _uncompressed(rle: dict) -> dict:
    """The same mask as an uncompressed RLE (a list of run lengths), which the column reading leaves to the loop."""
    bitmap = mask_utils.decode({"size": rle["size"], "counts": rle["counts"].encode()})
    flat = bitmap.ravel(order="F")
    edges = np.flatnonzero(np.diff(np.concatenate(([0], flat, [1 - flat[-1]]))))
    return {"size": rle["size"], "counts": np.diff(np.concatenate(([0], edges))).tolist()}


def _evaluate(gt: dict, preds: list[dict]) -> dict:
    truth = load_ground_truth(gt, "gt.json")
    return evaluate_cafe(truth, load_predictions(preds, "p.json", truth)).model_dump(mode="json")


def test_an_uncompressed_mask_in_either_file_changes_no_number():
    gt, preds = cafe_gt(HAND_PAIRS), copy.deepcopy(HAND_PREDS)
    usual = _evaluate(gt, preds)
    preds[0]["segmentation"] = _uncompressed(preds[0]["segmentation"])
    gt["annotations"][1]["segmentation"] = _uncompressed(gt["annotations"][1]["segmentation"])
    assert _evaluate(gt, preds) == usual
    assert usual["Overall"]["TA-TP"] == 2 and usual["Overall"]["TA-FP"] == 2  # the hand-computed case


def test_a_prediction_for_an_unknown_image_is_ignored_by_both_readings():
    gt, preds = cafe_gt(HAND_PAIRS), copy.deepcopy(HAND_PREDS)
    extra = {**preds[0], "image_id": 99}
    truth = load_ground_truth(gt, "gt.json")
    usual = load_predictions([*preds, extra], "p.json", truth)
    preds[0]["segmentation"] = _uncompressed(preds[0]["segmentation"])
    itemwise = load_predictions([*preds, extra], "p.json", truth)
    assert usual.ignored == itemwise.ignored == {99: 1}
    assert usual.by_image == itemwise.by_image and np.array_equal(usual.score, itemwise.score)


def test_collection_pauses_nest_and_restore_the_collector():
    assert gc.isenabled()
    with collection_paused():
        assert not gc.isenabled()
        with collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
