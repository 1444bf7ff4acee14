"""The report's examples (the label-flips paper's Fig. 2): per group, the images whose ground-truth
foreground the model labelled most as the other class, each shown three times: the image, its ground
truth and the prediction, with each class in its colour.

The region is right and the label wrong: the overlay makes that visible at a glance, where the flip
rate only counts it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from segbench.core.integrity import data_source
from segbench.core.io import png_bytes
from segbench.core.release import gallery
from segbench.tasks.flip.inputs import read_gt_mask, read_prediction
from segbench.tasks.flip.metrics import GROUPS, FlipNames, ImageRecord

PER_GROUP = 2
# Okabe–Ito blue and reddish purple: far from the orange and brown of cats and dogs (the release's masks too).
CLASS_COLOURS = [(0, 114, 178), (204, 121, 167)]


def most_flipped(records: Sequence[ImageRecord], per_group: int = PER_GROUP) -> list[tuple[int, float]]:
    """``(image id, flip)`` of the ``per_group`` most flipped images of each group, in group order, the
    most flipped first (then the smaller id); images with no flip are not examples of one."""
    chosen = []
    for group in sorted(GROUPS):
        flipped = sorted(((r.image_id, r.flip) for r in records if r.group_id == group and r.flip),
                         key=lambda pair: (-pair[1], pair[0]))
        chosen += flipped[:per_group]
    return chosen


def draw(repo: str, rev: str | None, dataset_dir: str, images: Sequence[Mapping[str, Any]],
         predictions: Mapping[int, str], chosen: Sequence[tuple[int, float]], names: FlipNames) -> bytes | None:
    """The examples' sheet as PNG bytes (None when no image flipped). An image the build does not hold
    (a masks-only build) is drawn as a grey canvas under its masks."""
    if not chosen:
        return None
    by_id = {int(image["id"]): image for image in images}
    tiles: list[tuple[Any, str]] = []
    with data_source(repo, rev) as source:
        for image_id, flip in chosen:
            image = by_id[image_id]
            truth = read_gt_mask(source, dataset_dir, image)
            predicted, _ = read_prediction(predictions[image_id], truth.shape)
            picture_path = f"{dataset_dir.rstrip('/')}/{image.get('image_file', '')}"
            picture = (gallery.decode(source.read_bytes(picture_path)) if image.get("image_file")
                       and source.exists(picture_path) else gallery.withheld_canvas(truth.shape[1], truth.shape[0]))
            cls, context, kind = names.group(int(image["group_id"]))
            where = names.group_pattern.format(cls=cls, context=context)
            tiles += [(gallery.overlay(picture, []), f"{where}\n{kind}, id {image_id}"),
                      (gallery.overlay(picture, _masks(truth)), "ground truth"),
                      (gallery.overlay(picture, _masks(predicted)), f"prediction: flip {flip:.0%}")]
    legend = ", ".join(f"{cls} {'blue' if n == 0 else 'purple'}" for n, cls in enumerate(names.classes))
    sheet = gallery.sheet(f"Most flipped images per group ({legend})", tiles, columns=3)
    return png_bytes(sheet, compress_level=1)


def _masks(labels: np.ndarray) -> list[tuple[np.ndarray, tuple[int, int, int]]]:
    return [(labels == value, colour) for value, colour in enumerate(CLASS_COLOURS, start=1)]
