"""segbench as a library: read a built dataset at any version and score predictions held in memory.

The commands write reports; these functions return the metrics models the reports are made of,
so a notebook or a training loop can score a model without writing prediction files::

    from segbench import api

    split = api.load_flip_split("coco_cd", rho=0.95, split="test")          # a published version: rev="v1"
    predictions = {image.id: my_model(split.image(image)) for image in split.images}
    metrics = api.evaluate_flip(split, predictions)                         # a FlipSummary
    metrics.fg_decomposition.flip, metrics.gaps["cat"].gap

    gt = api.load_cafe()                                                    # data/cafe/CAFE.json
    api.evaluate_cafe(gt, coco_results).Overall.cgF1                        # a CafeMetrics

Every reader goes through :class:`segbench.core.versioning.DatasetSource`: ``rev=None`` reads the
working tree, a git revision reads that version through DVC.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from segbench import registry
from segbench.core.errors import InputError
from segbench.core.integrity import data_source
from segbench.core.io import open_image
from segbench.core.versioning import DatasetSource
from segbench.schemas.cafe_metrics import CafeMetrics
from segbench.schemas.flip import FlipImage, FlipSummary
from segbench.tasks.cafe.cgf1_inputs import GroundTruth, load_predictions, read_ground_truth
from segbench.tasks.cafe.metrics import TAU_SWEEP
from segbench.tasks.cafe.metrics import evaluate_cafe as cafe_metrics
from segbench.tasks.flip.inputs import read_gt_mask, read_split, split_relpath
from segbench.tasks.flip.metrics import COCO_CD_NAMES, WATERBIRDS_NAMES, FlipAccumulator, FlipNames

FlipDataset = Literal["coco_cd", "waterbirds"]
_NAMES = {"coco_cd": COCO_CD_NAMES, "waterbirds": WATERBIRDS_NAMES}

__all__ = ["FlipSplit", "evaluate_cafe", "evaluate_flip", "load_cafe", "load_flip_split"]


@dataclass(frozen=True)
class FlipSplit:
    """One split of COCO-CD or Waterbirds-seg at one ρ: its images, and their masks and images on demand."""

    dataset: FlipDataset
    rho: float
    split: str
    images: list[FlipImage]
    source: DatasetSource
    dataset_dir: str

    def mask(self, image: FlipImage) -> np.ndarray:
        """The (H, W) uint8 label map: 0 background, 1 and 2 the two classes (cat, dog; landbird, waterbird)."""
        return read_gt_mask(self.source, self.dataset_dir, image.model_dump(by_alias=True))

    def image(self, image: FlipImage) -> np.ndarray:
        """The (H, W, 3) uint8 image the mask is drawn on.

        Raises:
            InputError: the build wrote no images (``build coco-cd --no-images``).
        """
        if image.image_file is None:
            raise InputError("this build has no images", item=f"image {image.id}",
                             hint="build without --no-images, or read the source image named by file_name")
        relpath = f"{self.dataset_dir}/{image.image_file}"
        return np.asarray(open_image(self.source.read_bytes(relpath), path=relpath, mode="RGB"))


def load_flip_split(dataset: FlipDataset, *, rho: float = 0.95, split: str = "test", repo: str | Path = ".",
                    rev: str | None = None, data_dir: str = "data") -> FlipSplit:
    """The images of ``<data_dir>/<dataset's folder>/splits/rho_<rho>/<split>.json`` in ``repo`` at ``rev``
    (None: the working tree).

    Raises:
        InputError: the split file is missing or malformed (naming it), or not built at this ρ.
    """
    dataset_dir = f"{data_dir}/{registry.dataset(dataset).default_out}"
    source = data_source(repo, rev)
    entries = read_split(source, split_relpath(dataset_dir, rho, split))
    return FlipSplit(dataset, rho, split, [FlipImage.model_validate(e) for e in entries], source, dataset_dir)


def evaluate_flip(split: FlipSplit, predictions: Mapping[int, np.ndarray],
                  probabilities: Mapping[int, np.ndarray] | None = None) -> FlipSummary:
    """The flip metrics (IoU, Fg-IoU, FG-Corr/Flip/Miss, group gaps, flip-risk deciles) of in-memory predictions.

    Args:
        predictions: image id → (H, W) label map with the mask's values (0, 1, 2), for every image of the split.
        probabilities: image id → (3, H, W) class probabilities, for the flip-risk deciles (optional).

    Raises:
        KeyError: an image of the split has no prediction.
        ValueError: a prediction's shape or values do not fit its mask.
    """
    names: FlipNames = _NAMES[split.dataset]
    accumulator = FlipAccumulator()
    for image in split.images:
        probs = probabilities.get(image.id) if probabilities is not None else None
        accumulator.update(split.mask(image), np.asarray(predictions[image.id]), probs, group_id=image.group_id,
                           image_id=image.id)
    return accumulator.summarize(names)


def load_cafe(*, repo: str | Path = ".", rev: str | None = None, file: str = "data/cafe/CAFE.json") -> GroundTruth:
    """CAFE's SA-Co ground truth (or any SA-Co file of the data: ``file``) at ``rev``."""
    with data_source(repo, rev) as source:
        return read_ground_truth(file, source.read_bytes(file))


def evaluate_cafe(gt: GroundTruth, predictions: Sequence[Mapping[str, Any]], *, score_threshold: float = 0.5,
                  iou_threshold: float = 0.3, taus: Sequence[float] = TAU_SWEEP) -> CafeMetrics:
    """CAFE's table per subset and Overall (target-aware counts and rates, cgF1 family) and the τ sweep.

    Args:
        predictions: COCO results as SAM3 writes them: ``{"image_id", "category_id", "segmentation"
            (RLE), "score"}`` per mask.

    Raises:
        InputError: a malformed prediction (naming its index) or nothing to evaluate.
    """
    preds = load_predictions(list(predictions), "predictions", gt)
    return cafe_metrics(gt, preds, score_threshold=score_threshold, iou_threshold=iou_threshold, taus=taus)
