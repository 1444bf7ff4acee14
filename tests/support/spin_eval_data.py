"""A two-image SPIN split in the dataset's file format, with masks simple enough to score by hand.

12 × 12 images; boxes are (rows, cols) half-open ranges.

    image 10, Quadruped (antelope): whole rows 0-10 × all; Head rows 0-4 × cols 0-4 (16 px) with
        Eye rows 1-3 × cols 1-3 (4 px); Torso rows 4-10 × all (72 px) with Back rows 4-6 × all (24 px)
    image 20, Bird (goldfinch): whole rows 2-12 × cols 2-12; Head rows 2-6 × cols 2-6 (16 px) with
        Beak rows 4-6 × cols 4-6 (4 px)

Category ids start at 0 for wholes and parts, as in the built dataset. The taxonomy restricts the
subpart Bird-Head-Crest (no annotation) to cockatoos.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from segbench.core.masks import bitmap_to_rle

SIZE = 12
WHOLES = {0: "Quadruped", 1: "Bird"}
PARTS = {0: "Quadruped-Head", 1: "Quadruped-Torso", 2: "Bird-Head"}
SUBPARTS = {1: "Quadruped-Head-Eye", 2: "Quadruped-Torso-Back", 3: "Bird-Head-Beak", 4: "Bird-Head-Crest"}
BOXES = {  # annotation id: (level, image id, category id, parent annotation id, box)
    1: ("wholes", 10, 0, None, (0, 10, 0, 12)),
    2: ("wholes", 20, 1, None, (2, 12, 2, 12)),
    100: ("parts", 10, 0, 1, (0, 4, 0, 4)),
    101: ("parts", 10, 1, 1, (4, 10, 0, 12)),
    102: ("parts", 20, 2, 2, (2, 6, 2, 6)),
    1000: ("subparts", 10, 1, 100, (1, 3, 1, 3)),
    1001: ("subparts", 10, 2, 101, (4, 6, 0, 12)),
    1002: ("subparts", 20, 3, 102, (4, 6, 4, 6)),
}
TAXONOMY = """\
parts:
  - object: Bird
    part: Head
    partimagenet_id: 13
    subparts:
      - {name: Beak, category: Bird-Head-Beak, objects: null}
      - {name: Crest, category: Bird-Head-Crest, objects: [cockatoo]}
"""


def box(r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
    """A (SIZE, SIZE) bool mask with rows r0..r1-1 and cols c0..c1-1 set."""
    mask = np.zeros((SIZE, SIZE), dtype=bool)
    mask[r0:r1, c0:c1] = True
    return mask


def gt_mask(ann_id: int) -> np.ndarray:
    return box(*BOXES[ann_id][4])


def rle(mask: np.ndarray) -> dict[str, Any]:
    return bitmap_to_rle(mask)


# The same hierarchy named as PartImageNet and a release might: wholes are ImageNet classes, parts
# "Quadruped Head", subparts bare names; only parent_id and the supercategory fields link them.
RELEASE_STYLE = {
    "wholes": [{"id": 0, "name": "antelope", "supercategory": "Quadruped"},
               {"id": 1, "name": "goldfinch", "supercategory": "Bird"}],
    "parts": [{"id": 0, "name": "Quadruped Head", "supercategory": "Quadruped"},
              {"id": 1, "name": "Quadruped Body", "supercategory": "Quadruped"},
              {"id": 2, "name": "Bird Head", "supercategory": "Bird"}],
    "subparts": [{"id": 1, "name": "Eye"}, {"id": 2, "name": "Back"}, {"id": 3, "name": "Beak"},
                 {"id": 4, "name": "Crest"}],
}


# Two antelopes side by side in image 10 (cols 0-6 and 6-12), each with its Head and Eye; the goldfinch
# of image 20 as in BOXES. Per category the union of the two instances is what a union prediction answers.
TWO_QUADRUPEDS = {
    1: ("wholes", 10, 0, None, (0, 10, 0, 6)),
    3: ("wholes", 10, 0, None, (0, 10, 6, 12)),
    2: BOXES[2],
    100: ("parts", 10, 0, 1, (0, 4, 0, 4)),
    103: ("parts", 10, 0, 3, (0, 4, 6, 10)),
    102: BOXES[102],
    1000: ("subparts", 10, 1, 100, (1, 3, 1, 3)),
    1003: ("subparts", 10, 1, 103, (1, 3, 7, 9)),
    1002: BOXES[1002],
}


def write_dataset(dataset_dir: Path, split: str = "test", taxonomy: bool = True,
                  categories: dict[str, list[dict[str, Any]]] | None = None,
                  boxes: dict[int, tuple] | None = None) -> Path:
    """Write ``dataset/spin_{split}_{level}.json`` (and ``taxonomy.yaml``) under ``dataset_dir``.

    ``categories``: the category lists per level (default: ids and ``<Super>-<Part>-<Sub>`` names).
    """
    images = [
        {"id": 10, "file_name": "n02419796_1", "width": SIZE, "height": SIZE, "supercategory": "Quadruped",
         "object_class": "antelope", "wnid": "n02419796", "split": split},
        {"id": 20, "file_name": "n01531178_2", "width": SIZE, "height": SIZE, "supercategory": "Bird",
         "object_class": "goldfinch", "wnid": "n01531178", "split": split},
    ]
    names = {"wholes": WHOLES, "parts": PARTS, "subparts": SUBPARTS}
    (dataset_dir / "dataset").mkdir(parents=True, exist_ok=True)
    for level, cats in names.items():
        anns = []
        for ann_id, (lv, image_id, cat, parent, bounds) in (boxes or BOXES).items():
            if lv != level:
                continue
            ann = {"id": ann_id, "image_id": image_id, "category_id": cat, "segmentation": rle(box(*bounds)),
                   "area": int(box(*bounds).sum()), "iscrowd": 0}
            if parent is not None:
                ann["parent_id"] = parent
            anns.append(ann)
        coco = {"images": images, "annotations": anns,
                "categories": categories[level] if categories else [{"id": i, "name": n} for i, n in cats.items()]}
        (dataset_dir / "dataset" / f"spin_{split}_{level}.json").write_text(json.dumps(coco))
    if taxonomy:
        (dataset_dir / "taxonomy.yaml").write_text(TAXONOMY)
    return dataset_dir


def perfect_predictions(prompt: str = "general", boxes: dict[int, tuple] | None = None,
                        by_gt_id: bool = False) -> dict[str, list[dict[str, Any]]]:
    """One exact prediction per ground-truth annotation, per level (naming it by ``gt_id`` if asked)."""
    out: dict[str, list[dict[str, Any]]] = {"wholes": [], "parts": [], "subparts": []}
    for ann_id, (level, image_id, cat, _, bounds) in (boxes or BOXES).items():
        ids = {"gt_id": ann_id} if by_gt_id else {"image_id": image_id, "category_id": cat}
        out[level].append(ids | {"segmentation": rle(box(*bounds)), "score": 0.9, "prompt": prompt})
    return out
