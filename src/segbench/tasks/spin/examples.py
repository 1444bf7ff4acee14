"""The report's examples (the SPIN paper's qualitative figures): a few images with their ground truth
and the model's masks side by side at each level, each category in its own colour.

The images shown are those with the most subparts in the ground truth that the model answered, so
the finest level has the most to show; ties go to the smaller id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from segbench.core.integrity import data_source
from segbench.core.io import png_bytes
from segbench.core.masks import rle_to_bitmap
from segbench.core.release import gallery
from segbench.tasks.spin.inputs import SpinTruth
from segbench.tasks.spin.metrics import LEVELS, ImageTruth, Prediction

IMAGES = 4


def chosen(truth: SpinTruth, by_image: Mapping[int, Sequence[Prediction]], prompt: str,
           count: int = IMAGES) -> list[int]:
    """The ids of the ``count`` answered images with the most subpart entities, ties by id."""
    answered = [image for image in truth.images.values() if any(p.prompt == prompt for p in by_image.get(image.image_id, []))]
    ranked = sorted(answered, key=lambda image: (-len(image.entities.get("subparts", {})), image.image_id))
    return [image.image_id for image in ranked[:count]]


def draw(repo: str, rev: str | None, dataset_dir: str, split: str, truth: SpinTruth,
         by_image: Mapping[int, Sequence[Prediction]], prompt: str) -> bytes | None:
    """The examples' sheet as PNG bytes (None when the model answered no image): a row per image, for
    each level its ground truth, then the predictions. An image the build does not hold is drawn as
    a grey canvas under its masks."""
    ids = chosen(truth, by_image, prompt)
    if not ids:
        return None
    tiles: list[tuple[Any, str]] = []
    with data_source(repo, rev) as source:
        names = {Path(name).stem: name for name in source.listdir(f"{dataset_dir}/dataset/images/{split}")}
        files = {int(image["id"]): image["file_name"] for image in source.read_json(truth.files["wholes"])["images"]}
        for image_id in ids:
            image = truth.images[image_id]
            name = names.get(Path(files.get(image_id, "")).stem)
            picture = (gallery.decode(source.read_bytes(f"{dataset_dir}/dataset/images/{split}/{name}")) if name
                       else gallery.withheld_canvas(image.width, image.height))
            predicted = [p for p in by_image.get(image_id, []) if p.prompt == prompt]
            for level in LEVELS:
                truth_masks = _truth(image, level)
                tiles.append((gallery.overlay(picture, truth_masks),
                              f"{image.object_class or image.supercategory} {image_id}\n{level}: truth"))
                tiles.append((gallery.overlay(picture, _predicted(predicted, level)), f"{level}: {prompt} prompt"))
    return png_bytes(gallery.sheet(f"Ground truth and predictions ({prompt} prompts), a colour per category",
                                   tiles, columns=2 * len(LEVELS)), compress_level=1)


def _colour(category_id: int) -> tuple[int, int, int]:
    return gallery.PALETTE[category_id % len(gallery.PALETTE)]


def _truth(image: ImageTruth, level: str) -> list[tuple[np.ndarray, tuple[int, int, int]]]:
    out = []
    for category_id, (rles, _) in sorted(image.entities.get(level, {}).items()):
        mask = np.zeros((image.height, image.width), dtype=bool)
        for rle in rles:
            mask |= rle_to_bitmap(rle).astype(bool)
        out.append((mask, _colour(category_id)))
    return out


def _predicted(predictions: Sequence[Prediction], level: str) -> list[tuple[np.ndarray, tuple[int, int, int]]]:
    return [(rle_to_bitmap(p.rle).astype(bool), _colour(p.category_id))
            for p in sorted(predictions, key=lambda p: (p.score, -p.category_id)) if p.level == level]
