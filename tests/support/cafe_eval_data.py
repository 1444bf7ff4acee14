"""Small CAFE cases shared by the CAFE evaluation tests: 10 × 10 images, box masks built with pycocotools."""

from __future__ import annotations

import numpy as np

from segbench.core.masks import bitmap_to_rle

H = W = 10
EDIT = {"SM": "Superficial Mimicry", "CC": "Context Conflict", "OC": "Ontological Conflict"}


def box(y0: int, y1: int, x0: int, x1: int, h: int = H, w: int = W) -> dict:
    mask = np.zeros((h, w), np.uint8)
    mask[y0:y1, x0:x1] = 1
    return bitmap_to_rle(mask)


TARGET = box(0, 5, 0, 5)  # 25 px
ALIGNED = box(0, 5, 0, 4)  # IoU 0.8 with TARGET
ELSEWHERE = box(6, 10, 6, 10)  # IoU 0 with TARGET


def cafe_gt(pairs: dict[int, str]) -> dict:
    """Pairs id -> subset; positive id k has TARGET, its negative is k + 1000."""
    images, annotations = [], []
    for pid, subset in pairs.items():
        common = {"height": H, "width": W, "file_name": f"{pid}.png", "edit_type": EDIT[subset],
                  "is_instance_exhaustive": 1}
        images += [{"id": pid, "text_input": "q+", **common},
                   {"id": pid + 1000, "text_input": "q-", "fp_source_id": pid, **common}]
        annotations.append({"id": pid, "image_id": pid, "category_id": 1, "iscrowd": 0, "segmentation": TARGET,
                            "area": 25})
    return {"images": images, "annotations": annotations, "categories": [{"id": 1, "name": "object"}]}


def pred(image_id: int, rle: dict, score: float, category_id: int = 1) -> dict:
    return {"image_id": image_id, "category_id": category_id, "segmentation": rle, "score": score,
            "bbox": [0, 0, 1, 1]}



HAND_PAIRS = {1: "SM", 2: "SM", 3: "CC", 4: "OC", 5: "OC"}
HAND_PREDS = [
    pred(1, TARGET, 0.9), pred(1001, ALIGNED, 0.8),  # TA-TP / TA-FP
    pred(2, ALIGNED, 0.3), pred(1002, ELSEWHERE, 0.9),  # TA-FN (aligned, s < t) / UA-FP -> UCSR hit
    pred(3, ELSEWHERE, 0.9), pred(1003, ALIGNED, 0.9),  # UA-FN despite s >= t / TA-FP -> ACSR hit
    pred(1004, ALIGNED, 0.2),  # no positive prediction: UA-FN / below t: TN
    pred(5, TARGET, 0.9), pred(5, TARGET, 0.8),  # two aligned: TA-TP (one-to-one: 1 TP + 1 FP) / TN
]
