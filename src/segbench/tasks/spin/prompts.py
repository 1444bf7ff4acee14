"""Prompts for promptable segmenters (SAM-style upper bounds): a box and a point per ground-truth entity.

SPIN's supplementary evaluates box models by what their boxes cover, and promptable models need a box
or a point of the thing to segment. Given the ground truth's prompts, a promptable model's masks come
back as predictions with the entity's ``gt_id``, which ``evaluate spin`` scores instance by instance:
the upper bound of a model that is told where each object, part and subpart is.

The box is the annotation's COCO box (pycocotools ``toBbox``: ``[x, y, w, h]``); the point is the
centre of the mask's pixel farthest from its outline (the maximum of the Euclidean distance
transform, the first in row-major order on a tie), so it lies inside the mask even when the mask is
not convex. Pure functions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pycocotools import mask as mask_utils
from scipy import ndimage

from segbench.core.masks import rle_to_bitmap
from segbench.tasks.spin.inputs import SpinTruth
from segbench.tasks.spin.metrics import LEVELS


def inner_point(mask: np.ndarray) -> list[float] | None:
    """``[x, y]``: the centre of the pixel farthest from the mask's outline; None for an empty mask."""
    if not mask.any():
        return None
    distance = ndimage.distance_transform_edt(np.pad(mask.astype(bool), 1))[1:-1, 1:-1]
    row, col = np.unravel_index(int(np.argmax(distance)), distance.shape)
    return [float(col) + 0.5, float(row) + 0.5]


def entity_prompts(truth: SpinTruth) -> list[dict[str, Any]]:
    """One ``{gt_id, image_id, level, category_id, category, bbox, point}`` per ground-truth annotation,
    by image, level (wholes, parts, subparts) and annotation id."""
    out = []
    for image_id in sorted(truth.images):
        image = truth.images[image_id]
        for level in LEVELS:
            for ann_id, instance in sorted(image.instances.get(level, {}).items()):
                box = [round(float(v), 2) for v in mask_utils.toBbox(instance.rle)]
                out.append({"gt_id": ann_id, "image_id": image_id, "level": level,
                            "category_id": instance.category_id,
                            "category": truth.hierarchy.names[level][instance.category_id],
                            "bbox": box, "point": inner_point(rle_to_bitmap(instance.rle))})
    return out
