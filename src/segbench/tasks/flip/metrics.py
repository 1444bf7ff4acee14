"""COCO-CD label-flip metrics: evaluate one image, accumulate with ``+=``, summarize.

Follows the released COCO-CD evaluator (seed 002, section 3.1; ``ref/README.md`` "COCO-CD metrics").
Classes: 0 background, 1 cat, 2 dog. Groups: ``group_id = 2*y + a`` (y: cat 0, dog 1; a: indoor 0,
outdoor 1); cat indoors (0) and dog outdoors (3) are the aligned groups.

Arrays, per image:
    gt     (H, W) integer label map, values 0..2
    pred   (H, W) integer label map, values 0..2 (argmax of ``probs`` when there are probabilities)
    probs  (3, H, W) float softmax probabilities (background, cat, dog), optional

What changes from the released evaluator (on purpose): undefined values (0/0) are ``None`` instead of
NaN; images without ground-truth foreground are left out of the per-image flip mean (and counted)
instead of dividing by zero (and, having no per-image flip, get no flip-risk record either);
entropy guards 0·log 0 = 0 and a zero cat+dog denominator; risk ties sort by image id.

Metrics never mutate their inputs and never print; reading files is
:mod:`segbench.tasks.flip.inputs`' job.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from segbench.schemas.flip import Decile, FlipRisk, FlipSummary, summary_model

log = logging.getLogger(__name__)

CLASS_NAMES = ("background", "cat", "dog")
NUM_CLASSES = len(CLASS_NAMES)
NUM_DECILES = 10

# group_id -> (class, context, kind); aligned = the pairing that dominates a ρ=0.95 train split.
GROUPS: dict[int, tuple[str, str, str]] = {
    0: ("cat", "indoor", "aligned"),
    1: ("cat", "outdoor", "counterfactual"),
    2: ("dog", "indoor", "counterfactual"),
    3: ("dog", "outdoor", "aligned"),
}


@dataclass(frozen=True)
class FlipNames:
    """The names a flip evaluation reports under; the numbers do not depend on them.

    ``classes`` are y = 0, 1 (label values 1, 2) and ``contexts`` a = 0, 1. Group ``2·y + a`` is
    aligned when ``a == y`` (cat indoors, dog outdoors; landbird on land, waterbird on water).
    ``group_pattern`` names a group from its class and context.
    """

    dataset: str = "COCO-CD"
    classes: tuple[str, str] = ("cat", "dog")
    contexts: tuple[str, str] = ("indoor", "outdoor")
    group_pattern: str = "{cls} {context}s"  # cat indoors, dog outdoors

    @property
    def class_names(self) -> tuple[str, str, str]:
        return ("background", *self.classes)

    def group(self, group_id: int) -> tuple[str, str, str]:
        """(class, context, kind) of a group id."""
        y, a = divmod(group_id, 2)
        return self.classes[y], self.contexts[a], "aligned" if y == a else "counterfactual"

    def gap_groups(self) -> dict[str, tuple[int, int]]:
        """Per class: (aligned group, counterfactual group)."""
        return {self.classes[0]: (0, 1), self.classes[1]: (3, 2)}


COCO_CD_NAMES = FlipNames()
WATERBIRDS_NAMES = FlipNames("Waterbirds-seg", ("landbird", "waterbird"), ("land", "water"), "{cls} on {context}")


def group_name(group_id: int, names: FlipNames = COCO_CD_NAMES) -> str:
    """Display name of a group, e.g. ``"cat indoors (aligned)"``."""
    cls, context, kind = names.group(group_id)
    return f"{names.group_pattern.format(cls=cls, context=context)} ({kind})"


def labels_from_probs(probs: np.ndarray) -> np.ndarray:
    """(3, H, W) probabilities -> (H, W) uint8 label map (argmax; ties go to the lower class)."""
    return np.argmax(probs, axis=0).astype(np.uint8)


def _ratio(num: float, den: float) -> float | None:
    return float(num) / float(den) if den else None


def _xlogx(x: np.ndarray) -> np.ndarray:
    """x·log x with 0·log 0 = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0)), 0.0)


def identity_entropy(probs: np.ndarray) -> np.ndarray:
    """(3, H, W) probabilities -> (H, W) entropy (nats) of the renormalised cat/dog distribution.

    Where p_cat + p_dog = 0 the two-way distribution is undefined; the entropy is set to 0 there.
    Such pixels cannot be predicted foreground (argmax picks background), so the risk never uses them.
    """
    p_cat = probs[1].astype(np.float64)
    p_dog = probs[2].astype(np.float64)
    den = p_cat + p_dog
    safe = np.where(den > 0, den, 1.0)
    return np.where(den > 0, -(_xlogx(p_cat / safe) + _xlogx(p_dog / safe)), 0.0)


def flip_risk(probs: np.ndarray, pred: np.ndarray) -> float | None:
    """Mean identity entropy over predicted-foreground pixels; ``None`` without predicted foreground.

    Args:
        probs: (3, H, W) probabilities. pred: (H, W) label map.
    """
    return _mean_over(identity_entropy(probs), pred > 0)


def _mean_over(entropy: np.ndarray, where: np.ndarray) -> float | None:
    """The mean entropy over the ``where`` pixels; ``None`` when there are none."""
    return float(entropy[where].mean()) if where.any() else None


def image_flip(gt: np.ndarray, pred: np.ndarray) -> float | None:
    """Flipped share of one image's gt-foreground pixels; ``None`` if it has no gt foreground.

    Args:
        gt, pred: (H, W) label maps.
    """
    gt_fg = gt > 0
    n = int(gt_fg.sum())
    if n == 0:
        return None
    flipped = int((gt_fg & (pred > 0) & (pred != gt)).sum())
    return flipped / n


def risk_deciles(records: list[tuple[float, int, float]], *, without_pred_fg: int = 0,
                 without_gt_fg: int = 0) -> FlipRisk:
    """Sort (risk, image_id, flip) records and split them into 10 deciles.

    Sorting is by risk, ties broken by image id, so the result does not depend on shard order.
    Decile d holds ``sorted[d*n//10 : (d+1)*n//10]``, as in the released evaluator; with fewer than
    10 records some deciles are empty (count 0, means ``None``). The top-decile share is ``None``
    when no record has any flip. ``without_pred_fg`` and ``without_gt_fg`` count the images that
    gave no record.
    """
    ordered = sorted(records, key=lambda r: (r[0], r[1]))
    n = len(ordered)
    deciles = []
    for d in range(NUM_DECILES):
        bucket = ordered[d * n // NUM_DECILES : (d + 1) * n // NUM_DECILES]
        count = len(bucket)
        deciles.append(Decile(decile=d + 1, count=count,
                              mean_risk=sum(r[0] for r in bucket) / count if count else None,
                              mean_flip=sum(r[2] for r in bucket) / count if count else None))
    total = sum(r[2] for r in ordered)
    top = sum(r[2] for r in ordered[(NUM_DECILES - 1) * n // NUM_DECILES :])
    return FlipRisk(num_records=n, images_without_pred_fg=without_pred_fg, images_without_gt_fg=without_gt_fg,
                    fewer_than_10_records=n < NUM_DECILES, deciles=deciles,
                    top_decile_share=top / total if total > 0 else None)


def _confusion(gt: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """(3, 3) int64 counts, rows gt and columns pred (detectron2-style np.bincount)."""
    idx = gt.astype(np.int64).ravel() * NUM_CLASSES + pred.astype(np.int64).ravel()
    return np.bincount(idx, minlength=NUM_CLASSES**2).reshape(NUM_CLASSES, NUM_CLASSES)


def _class_iou(cm: np.ndarray, names: FlipNames = COCO_CD_NAMES) -> dict[str, float | None]:
    out = {}
    for c, name in enumerate(names.class_names):
        union = int(cm[c, :].sum() + cm[:, c].sum() - cm[c, c])
        out[name] = _ratio(cm[c, c], union)
    return out


def _check_label_map(name: str, arr: np.ndarray, shape: tuple[int, ...] | None) -> None:
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a (H, W) label map, got shape {arr.shape}")
    if shape is not None and arr.shape != shape:
        raise ValueError(f"{name} has shape {arr.shape}, gt has {shape}")
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) >= NUM_CLASSES):
        raise ValueError(f"{name} values must be in 0..{NUM_CLASSES - 1}")


@dataclass
class ImageRecord:
    """What the summary needs of one image beyond the confusion counts."""

    image_id: int
    group_id: int
    flip: float | None  # None: no gt foreground
    risk: float | None  # None: no probabilities or no predicted foreground
    risk_gt: float | None = None  # over ground-truth foreground (App. G's analysis variant); None: none there


@dataclass
class FlipAccumulator:
    """Running COCO-CD counts over images; shards combine with ``+=`` (panopticapi ``PQStat`` style).

    ``confusion`` is (3, 3) int64 over all images; ``group_confusion`` (4, 3, 3) per group_id.
    Combining is exact: counts are integers and per-image values are kept, so any sharding of the
    same images gives the same summary.
    """

    confusion: np.ndarray = field(default_factory=lambda: np.zeros((NUM_CLASSES,) * 2, np.int64))
    group_confusion: np.ndarray = field(
        default_factory=lambda: np.zeros((len(GROUPS), NUM_CLASSES, NUM_CLASSES), np.int64)
    )
    images: list[ImageRecord] = field(default_factory=list)
    images_without_probs: int = 0

    def update(
        self,
        gt: np.ndarray,
        pred: np.ndarray,
        probs: np.ndarray | None = None,
        *,
        group_id: int,
        image_id: int,
    ) -> None:
        """Add one image.

        Args:
            gt: (H, W) integer gt label map, values 0..2.
            pred: (H, W) integer predicted label map, values 0..2.
            probs: (3, H, W) probabilities, or ``None`` for label-map-only predictions.
            group_id: 0..3 (``2*y + a``). image_id: the COCO image id.

        Raises:
            ValueError: shapes disagree, values outside 0..2, or an unknown group id.
        """
        _check_label_map("gt", gt, None)
        _check_label_map("pred", pred, gt.shape)
        if group_id not in GROUPS:
            raise ValueError(f"group_id must be one of {sorted(GROUPS)}, got {group_id}")
        if probs is not None and probs.shape != (NUM_CLASSES, *gt.shape):
            raise ValueError(f"probs must have shape {(NUM_CLASSES, *gt.shape)}, got {probs.shape}")
        cm = _confusion(gt, pred)
        self.confusion += cm
        self.group_confusion[group_id] += cm
        risk = risk_gt = None
        if probs is None:
            self.images_without_probs += 1
        else:
            entropy = identity_entropy(probs)
            risk, risk_gt = _mean_over(entropy, pred > 0), _mean_over(entropy, gt > 0)
        self.images.append(ImageRecord(int(image_id), int(group_id), image_flip(gt, pred), risk, risk_gt))

    def __iadd__(self, other: FlipAccumulator) -> FlipAccumulator:
        self.confusion += other.confusion
        self.group_confusion += other.group_confusion
        self.images.extend(other.images)
        self.images_without_probs += other.images_without_probs
        return self

    def summarize(self, names: FlipNames = COCO_CD_NAMES) -> FlipSummary:
        """The metrics as a :class:`FlipSummary` (with ``names``' class names: ``summary_model``).

        ``names`` only renames classes, contexts and groups (COCO-CD's by default).

        Raises:
            ValueError: an image id was added twice (shards overlapped).
        """
        ids = [r.image_id for r in self.images]
        if len(set(ids)) != len(ids):
            raise ValueError("an image was added more than once; shards must not overlap")
        images = sorted(self.images, key=lambda r: r.image_id)
        cm = self.confusion
        class_iou = _class_iou(cm, names)
        first, second = names.classes
        fg_total = int(cm[1:, :].sum())
        fg_union = int(cm.sum() - cm[0, 0])
        flips = [r.flip for r in images if r.flip is not None]
        summary = {
            "num_images": len(images),
            "confusion_matrix": cm.tolist(),
            "class_iou": class_iou,
            "miou": _mean_or_none(class_iou[first], class_iou[second]),
            "fg_iou": _ratio(cm[1:, 1:].sum(), fg_union),
            "fg_decomposition": {
                "gt_fg_pixels": fg_total,
                "corr": _ratio(cm[1, 1] + cm[2, 2], fg_total),
                "flip": _ratio(cm[1, 2] + cm[2, 1], fg_total),
                "miss": _ratio(cm[1:, 0].sum(), fg_total),
            },
            "flip": {
                "global": _ratio(cm[1, 2] + cm[2, 1], fg_total),
                "per_image_mean": sum(flips) / len(flips) if flips else None,
                "images_counted": len(flips),
                "images_without_gt_fg": len(images) - len(flips),
            },
            "per_group": self._per_group(images, names),
            "gaps": self._gaps(names),
        }
        summary["flip_risk"], summary["flip_risk_unavailable"] = self._risk(images)
        if summary["flip_risk"] is not None:
            by_gt = [(r.risk_gt, r.image_id, r.flip) for r in images if r.risk_gt is not None and r.flip is not None]
            summary["flip_risk_gt_foreground"] = risk_deciles(by_gt, without_gt_fg=len(images) - len(by_gt))
        return summary_model(names.classes).model_validate(summary)

    def _per_group(self, images: list[ImageRecord], names: FlipNames) -> list[dict[str, Any]]:
        return [
            {
                "group_id": g,
                "name": group_name(g, names),
                "kind": names.group(g)[2],
                "num_images": sum(1 for r in images if r.group_id == g),
                "iou": _class_iou(self.group_confusion[g], names),
            }
            for g in sorted(GROUPS)
        ]

    def _gaps(self, names: FlipNames) -> dict[str, dict[str, Any]]:
        out = {}
        for cls, (aligned, counter) in names.gap_groups().items():
            a = _class_iou(self.group_confusion[aligned], names)[cls]
            c = _class_iou(self.group_confusion[counter], names)[cls]
            out[cls] = {
                "aligned_group": aligned,
                "counterfactual_group": counter,
                "aligned_iou": a,
                "counterfactual_iou": c,
                "gap": a - c if a is not None and c is not None else None,
            }
        return out

    def _risk(self, images: list[ImageRecord]) -> tuple[FlipRisk | None, str | None]:
        """The flip-risk deciles, or why there are none."""
        # A risk ranking over only part of the images would look complete but not be; refuse it.
        if not images:
            return None, "no images were evaluated"
        if self.images_without_probs:
            return None, (f"{self.images_without_probs} of {len(images)} predictions are label maps without "
                          "probabilities; flip-risk needs (3, H, W) probabilities for every image")
        with_risk = [r for r in images if r.risk is not None]
        records = [(r.risk, r.image_id, r.flip) for r in with_risk if r.risk is not None and r.flip is not None]
        if len(records) < NUM_DECILES:
            log.warning("only %d flip-risk records; some deciles are empty", len(records))
        return risk_deciles(records, without_pred_fg=len(images) - len(with_risk),
                            without_gt_fg=len(with_risk) - len(records)), None


def _mean_or_none(*values: float | None) -> float | None:
    if any(v is None for v in values):
        return None
    return sum(values) / len(values)  # type: ignore[arg-type]
