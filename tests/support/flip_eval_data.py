"""A tiny COCO-CD-shaped dataset for the flip evaluations: masks and one split, no images.

Eight 512 × 512 masks, two per group (group = index % 4), each a 128 × 128 square of its class.
Waterbirds-seg has the same layout (label values 1/2 = landbird/waterbird), so both flows read it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

SIZE = 512
IMAGE_IDS = [139, 285, 632, 724, 776, 785, 802, 872]


def gt_mask(index: int) -> np.ndarray:
    """The index-th image's mask: a 128 × 128 square of its group's class at an index-dependent place."""
    mask = np.zeros((SIZE, SIZE), np.uint8)
    top = 40 * index
    mask[top : top + 128, 100:228] = 1 + (index % 4) // 2
    return mask


def write_flip_dataset(root: Path, rhos: tuple[str, ...] = ("rho_0.95",), split: str = "test") -> Path:
    """Write ``masks/`` and ``splits/<rho>/<split>.json`` (the same images for every ρ) under ``root``."""
    (root / "masks").mkdir(parents=True)
    images = []
    for index, image_id in enumerate(IMAGE_IDS):
        group_id = index % 4
        Image.fromarray(gt_mask(index)).save(root / "masks" / f"{image_id:012d}.png")
        images.append({"id": image_id, "file_name": f"val2017/{image_id:012d}.jpg", "width": 640, "height": 480,
                       "group_id": group_id, "class": "dog" if group_id // 2 else "cat",
                       "context": "outdoor" if group_id % 2 else "indoor",
                       "image_file": f"images/{image_id:012d}.png", "mask_file": f"masks/{image_id:012d}.png"})
    categories = [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}]
    for rho in rhos:
        split_file = root / "splits" / rho / f"{split}.json"
        split_file.parent.mkdir(parents=True)
        split_file.write_text(json.dumps({"images": images, "annotations": [], "categories": categories}))
    return root


def write_label_predictions(folder: Path, swapped: set[int] = frozenset({1, 2})) -> Path:
    """``{id:012d}.png`` label maps: exact, with cat and dog swapped in the groups listed in ``swapped``."""
    folder.mkdir(parents=True, exist_ok=True)
    for index, image_id in enumerate(IMAGE_IDS):
        mask = gt_mask(index)
        if index % 4 in swapped:
            mask = np.where(mask == 1, 2, np.where(mask == 2, 1, 0)).astype(np.uint8)
        Image.fromarray(mask).save(folder / f"{image_id:012d}.png")
    return folder
