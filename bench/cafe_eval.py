"""The data of the CAFE and cgF1 rows, and the check that segbench's numbers are SAM3's.

Generates a seeded CAFE-like export (10k pairs = 20k images of 256-640 px, one target mask per
positive, 0-4 predictions per image: jittered copies of the target, other blobs, scores around the
0.5 threshold). The rows themselves run SAM3's own evaluator as a process (``bench/commands.py``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from pycocotools import mask as mask_utils

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


def compare_cgf1(ours: dict[str, Any], ref: dict[str, Any]) -> None:
    """The cgF1 summaries agree (SAM3's evaluator's numbers)."""
    for key, ref_key in CGF1_KEYS.items():
        assert math.isclose(ours[key], ref[ref_key], abs_tol=1e-9), key
