"""CAFE evaluation speed: the data, segbench's side and the output checks of ``bench/run.py --only cafe``.

Generates a seeded CAFE-like export (10k pairs = 20k images of 256-640 px, one target mask per
positive, 0-4 predictions per image: jittered copies of the target, other blobs, scores around the
0.5 threshold), used by every CAFE and cgF1 row. ``bench/rows.py``'s ``cafe`` times the CAFE table
against CAFE's script's algorithm re-implemented (``segbench.tasks.cafe.reference``); the cgF1 rows
run SAM3's own evaluator (``bench/commands.py``). Run standalone, this prints the ``cafe`` rows:

    .venv/bin/python bench/cafe_eval.py                    # 2,146 and 10k pairs, as bench/run.py
    .venv/bin/python bench/cafe_eval.py --pairs 1000       # a quick check
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import numpy as np
from pycocotools import mask as mask_utils

from segbench.schemas.cafe import TAU_SWEEP
from segbench.tasks.cafe.cgf1_inputs import load_ground_truth, load_predictions
from segbench.tasks.cafe.metrics import (
    OVERALL,
    SUBSETS,
    build_pairs,
    cgf1_by_subset,
    classify_pairs,
    evaluate_cafe,
    target_aware_table,
    tau_sweep,
)

EDIT_TYPES = ("Superficial Mimicry", "Context Conflict", "Ontological Conflict")
TABLE_KEYS = ("N", "TA-TP", "TA-FN", "UA-FN", "TN", "TA-FP", "UA-FP", "AFPR", "UFPR", "IL-FPR", "ACSR", "UCSR",
              "CSR", "SoftSwap")
CGF1_KEYS = {"cgF1": "cgF1", "cgF1@0.5": "cgF1@0.5", "cgF1@0.75": "cgF1@0.75", "IL_MCC": "IL_MCC",
             "pmF1": "positive_micro_F1"}


def _ellipse(rng: np.random.Generator, h: int, w: int, cx: float, cy: float, rx: float, ry: float) -> dict[str, Any]:
    """A 24-point ellipse polygon rasterised the COCO way, as a JSON-ready RLE."""
    angles = np.linspace(0, 2 * np.pi, 24, endpoint=False) + rng.uniform(0, 0.2)
    xs = np.clip(cx + rx * np.cos(angles), 0, w)
    ys = np.clip(cy + ry * np.sin(angles), 0, h)
    rle = mask_utils.merge(mask_utils.frPyObjects([np.stack([xs, ys], 1).ravel().tolist()], h, w))
    return {"size": [h, w], "counts": rle["counts"].decode("ascii")}


def generate(pairs: int, seed: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A CAFE export with ``pairs`` pairs and COCO results for both images of each pair."""
    rng = np.random.default_rng(seed)
    images, annotations, predictions = [], [], []
    for k in range(pairs):
        h, w = (int(v) for v in rng.integers(256, 641, size=2))
        pos_id, edit = k + 1, EDIT_TYPES[int(rng.integers(0, 3))]
        common = {"height": h, "width": w, "file_name": f"{pos_id:06d}.png", "edit_type": edit,
                  "is_instance_exhaustive": 1}
        images.append({"id": pos_id, "text_input": "object", **common})
        images.append({"id": pos_id + 1_000_000_000, "text_input": "decoy", "fp_source_id": pos_id, **common})
        cx, cy = rng.uniform(0.2 * w, 0.8 * w), rng.uniform(0.2 * h, 0.8 * h)
        rx, ry = rng.uniform(0.05 * w, 0.3 * w), rng.uniform(0.05 * h, 0.3 * h)
        annotations.append({"id": pos_id, "image_id": pos_id, "category_id": 1, "iscrowd": 0,
                            "segmentation": _ellipse(rng, h, w, cx, cy, rx, ry), "area": 0, "bbox": [0, 0, 1, 1]})
        for image_id, mean_score in ((pos_id, 0.65), (pos_id + 1_000_000_000, 0.4)):
            for _ in range(int(rng.integers(0, 5))):
                if rng.random() < 0.6:  # a jittered copy of the target
                    jitter = rng.normal(0, 0.15, size=4)
                    shape = (cx + jitter[0] * rx, cy + jitter[1] * ry, rx * (1 + jitter[2]), ry * (1 + jitter[3]))
                else:
                    shape = (rng.uniform(0, w), rng.uniform(0, h), rng.uniform(5, 0.3 * w), rng.uniform(5, 0.3 * h))
                predictions.append({"image_id": image_id, "category_id": 1, "bbox": [0, 0, 1, 1],
                                    "score": round(float(np.clip(rng.normal(mean_score, 0.25), 0, 1)), 3),
                                    "segmentation": _ellipse(rng, h, w, *shape)})
    gt = {"images": images, "annotations": annotations, "categories": [{"id": 1, "name": "object"}]}
    return gt, predictions


def fast(gt: dict[str, Any], predictions: list[dict[str, Any]]) -> dict[str, Any]:
    """segbench's CAFE table (target-aware counts, per-subset cgF1, τ sweep), validation and indexing included."""
    truth = load_ground_truth(gt, "bench-gt")
    return evaluate_cafe(truth, load_predictions(predictions, "bench-predictions", truth))


def fast_table(gt: dict[str, Any], predictions: list[dict[str, Any]]) -> dict[str, Any]:
    """segbench's target-aware table alone (what CAFE's script computes), validation and indexing included."""
    truth = load_ground_truth(gt, "bench-gt")
    pairs = build_pairs(truth, load_predictions(predictions, "bench-predictions", truth))
    flags = classify_pairs(pairs, 0.5, 0.3)
    return {name: target_aware_table(flags, np.ones(len(pairs), bool) if name == OVERALL else pairs.subset == name)
            for name in (*SUBSETS, OVERALL)}


def fast_steps(gt: dict[str, Any], predictions: list[dict[str, Any]]) -> dict[str, float]:
    """Seconds of each step of :func:`fast`, run again step by step: where the time goes."""
    seconds, start = {}, time.perf_counter()

    def lap(name: str) -> None:
        nonlocal start
        seconds[name] = round(time.perf_counter() - start, 3)
        start = time.perf_counter()

    truth = load_ground_truth(gt, "bench-gt")
    lap("read ground truth")
    preds = load_predictions(predictions, "bench-predictions", truth)
    lap("read predictions (RLE checks included)")
    pairs = build_pairs(truth, preds)
    lap("pairs and IoUs with the targets")
    cgf1_by_subset(truth, preds, [0.5], None, pairs.target_ious)
    lap("cgF1 per subset")
    tau_sweep(pairs, 0.5, TAU_SWEEP)
    lap("target-aware tables at every tau")
    return seconds


def compare_table(ours: dict[str, Any], ref: dict[str, Any]) -> None:
    """The target-aware counts and rates of every subset agree (CAFE's script's numbers)."""
    for subset in (*SUBSETS, OVERALL):
        for key in TABLE_KEYS:
            assert math.isclose(ours[subset][key], ref[subset][key], abs_tol=1e-9), (subset, key)


def compare_cgf1(ours: dict[str, Any], ref: dict[str, Any]) -> None:
    """The cgF1 summaries agree (SAM3's evaluator's numbers)."""
    for key, ref_key in CGF1_KEYS.items():
        assert math.isclose(ours[key], ref[ref_key], abs_tol=1e-9), key


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, nargs="+", default=[2146, 10_000])
    args = parser.parse_args()
    import rows
    import run

    print(run.text_table(rows.cafe(False, tuple(args.pairs))))


if __name__ == "__main__":
    main()
