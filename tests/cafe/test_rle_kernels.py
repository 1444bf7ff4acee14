"""The compiled passes over compressed RLEs give pycocotools' IoUs to the bit, and a CAFE evaluation
large enough to use them gives the same numbers as the numpy and pycocotools path."""

from __future__ import annotations

import numpy as np
import pytest
from pycocotools import mask as mask_utils

from segbench.tasks.cafe import rle_checks
from segbench.tasks.cafe.cgf1_inputs import load_ground_truth, load_predictions
from segbench.tasks.cafe.metrics import evaluate_cafe
from segbench.tasks.cafe.rle_kernels import corrupt_counts, target_ious

EDIT_TYPES = ("Superficial Mimicry", "Context Conflict", "Ontological Conflict")


def _mask(rng: np.random.Generator, h: int, w: int) -> dict:
    """A random blob, sometimes empty or full: runs of every length, zero-length first runs included."""
    kind = rng.random()
    if kind < 0.05:
        bitmap = np.zeros((h, w), np.uint8)
    elif kind < 0.1:
        bitmap = np.ones((h, w), np.uint8)
    else:
        y0, x0 = (int(v) for v in rng.integers(0, [h, w]))
        y1, x1 = (int(v) for v in rng.integers([y0 + 1, x0 + 1], [h + 1, w + 1]))
        bitmap = np.zeros((h, w), np.uint8)
        bitmap[y0:y1, x0:x1] = rng.random((y1 - y0, x1 - x0)) < rng.uniform(0.3, 1)
    rle = mask_utils.encode(np.asfortranarray(bitmap))
    return {"size": [h, w], "counts": rle["counts"]}


def test_ious_are_pycocotools_to_the_bit():
    rng = np.random.default_rng(0)
    masks, targets, index, target_of = [], [], [], []
    for t in range(300):
        h, w = (int(v) for v in rng.integers(1, 90, 2))
        targets.append(_mask(rng, h, w))
        for _ in range(int(rng.integers(0, 6))):
            index.append(len(masks))
            target_of.append(t)
            masks.append(_mask(rng, h, w))
    ours = target_ious([m["counts"] for m in masks], np.asarray(index), [t["counts"] for t in targets],
                       np.asarray(target_of))
    theirs = [mask_utils.iou([masks[i]], [targets[t]], [0])[0][0] for i, t in zip(index, target_of, strict=True)]
    assert ours.tolist() == theirs
    assert 0 < np.count_nonzero((ours > 0) & (ours < 1)) and np.count_nonzero(ours == 0)


def _cafe(rng: np.random.Generator, pairs: int) -> tuple[dict, list[dict]]:
    """A CAFE export of small images with a target per positive and 0-5 predictions per image."""
    images, annotations, predictions = [], [], []
    for k in range(1, pairs + 1):
        h, w = (int(v) for v in rng.integers(8, 24, 2))
        common = {"height": h, "width": w, "edit_type": EDIT_TYPES[k % 3], "is_instance_exhaustive": 1}
        images += [{"id": k, **common}, {"id": k + 100_000, "fp_source_id": k, **common}]
        target = _mask(rng, h, w)
        annotations.append({"id": k, "image_id": k, "category_id": 1, "iscrowd": 0,
                            "segmentation": {"size": [h, w], "counts": target["counts"].decode()}})
        for image_id in (k, k + 100_000):
            for _ in range(int(rng.integers(0, 6))):
                mask = target if rng.random() < 0.3 else _mask(rng, h, w)
                predictions.append({"image_id": image_id, "category_id": 1, "score": round(float(rng.random()), 2),
                                    "segmentation": {"size": [h, w], "counts": mask["counts"].decode()}})
    return {"images": images, "annotations": annotations, "categories": [{"id": 1, "name": "object"}]}, predictions


def _evaluate(gt: dict, predictions: list[dict]) -> dict:
    truth = load_ground_truth(gt, "CAFE.json")
    return evaluate_cafe(truth, load_predictions(predictions, "preds.json", truth)).model_dump(mode="json")


def test_a_large_evaluation_gives_the_small_paths_numbers(monkeypatch):
    gt, predictions = _cafe(np.random.default_rng(1), 2200)
    monkeypatch.setattr(rle_checks, "use_compiled", lambda masks: True)  # every pass compiled
    compiled = _evaluate(gt, predictions)
    monkeypatch.setattr(rle_checks, "use_compiled", lambda masks: False)  # none
    assert _evaluate(gt, predictions) == compiled
    assert 0 < compiled["Overall"]["TA-TP"] < compiled["Overall"]["N"]


@pytest.mark.parametrize("pixels", [99, 101])
def test_runs_that_miss_the_image_size_are_corrupt_in_the_compiled_pass(pixels):
    assert corrupt_counts([b"0T3", b"0T3"], np.asarray([100, pixels])).tolist() == [False, True]
