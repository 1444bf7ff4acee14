"""Lexical Alignment Curve (LAC) evaluation: region descriptions mapped per level, scored on ground truth.

Seed 003, "Lexical Alignment Curve"; ``ref/README.md`` "Lexical mapping". What is evaluated:

- **Ground truth**: one PNG label map per image, ``<gt dir>/<image_id>.png``; a pixel value is a
  vocabulary class ``id`` (the ``id`` field of the vocabulary JSON). Values that are no class id
  (e.g. 255) are ignored.
- **Descriptions** (the open-ended format): ``[{"image_id": str | int, "descriptions":
  [{"segment_id": int, "description": str}, ...]}, ...]`` (``region_id`` is accepted for
  ``segment_id``). A region is the set of pixels of one class in the gt map, and its ``segment_id`` is
  that pixel value, so each region of a gt map gets one description and its gt class is the class
  with that id. A gt region without a description counts as unmatched; a described segment absent
  from the gt map is skipped (both are counted and logged).
- **Relabelling**: per level, every pixel of a region takes the class its description maps to;
  regions keep their pixels, only the label changes. Unmatched regions are background: their pixels
  count as missed for their gt class and as predicted for no class.

Arrays: ``gt`` (H, W) int64 class *indices* (0..C-1 in vocabulary id order, -1 = ignore; see
:func:`to_class_index`); ``regions`` (H, W) int region ids; confusion matrices (C, C+1) int64, rows gt,
columns prediction, the last column "unmatched".

Metrics per level follow detectron2's ``SemSegEvaluator``: IoU per class with gt or prediction
pixels, mIoU their mean; mACC the mean recall over classes with gt pixels; pACC correct / gt pixels;
plus region accuracy (share of described regions mapped to their gt class). The LAC plots a metric
against the four levels at x = 0, 1/3, 2/3, 1; its area is the trapezoid rule over those points, so
a metric in [0, 1] gives an area in [0, 1]. PQ needs panoptic segments: with panoptic ground truth
(:mod:`segbench.tasks.vocab.panoptic_quality`) regions are its segments (``regions`` of
:meth:`LacAccumulator.update`) and the report gains PQ / SQ / RQ per level; otherwise PQ is ``null``.
Metrics never mutate their inputs and never print.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

from segbench.core.errors import InputError
from segbench.core.io import open_image
from segbench.schemas.vocab import LEVELS
from segbench.schemas.vocab_metrics import Baseline, Curve, Kinds, Lac, Level, VocabMetrics

log = logging.getLogger(__name__)

UNMATCHED = -1
METRICS = ("miou", "macc", "pacc", "region_acc")


def lac_area(values: Sequence[float | None]) -> float | None:
    """Normalised area under a curve sampled at equally spaced x in [0, 1] (trapezoid rule).

    ``None`` if any value is undefined or fewer than two points are given.
    """
    if len(values) < 2 or any(v is None for v in values):
        return None
    y = np.asarray(values, dtype=np.float64)
    step = 1.0 / (len(y) - 1)
    return float(step * (y[0] / 2 + y[1:-1].sum() + y[-1] / 2))


def to_class_index(label_map: np.ndarray, ids: Sequence[int]) -> np.ndarray:
    """(H, W) pixel values (vocabulary ids) → (H, W) int64 class indices, -1 for non-class values."""
    arr = np.asarray(label_map, dtype=np.int64)
    lut_size = max(int(arr.max(initial=0)), max(ids, default=0)) + 1
    lut = np.full(lut_size, -1, dtype=np.int64)
    lut[list(ids)] = np.arange(len(ids))
    return np.where(arr >= 0, lut[np.clip(arr, 0, None)], -1)


def relabel(regions: np.ndarray, labels: Mapping[int, int]) -> np.ndarray:
    """(H, W) region ids → (H, W) int64 class indices: each region takes its label; unlisted → -1."""
    out = np.full(regions.shape, UNMATCHED, dtype=np.int64)
    for region, label in labels.items():
        out[regions == region] = label
    return out


def confusion(gt: np.ndarray, pred: np.ndarray, num_classes: int) -> np.ndarray:
    """(C, C+1) int64 counts over pixels with ``gt >= 0``; prediction -1 goes to the last column."""
    keep = gt >= 0
    cols = np.where(pred[keep] >= 0, pred[keep], num_classes)
    idx = gt[keep].astype(np.int64) * (num_classes + 1) + cols
    return np.bincount(idx, minlength=num_classes * (num_classes + 1)).reshape(num_classes, num_classes + 1)


def _mean(values: np.ndarray, valid: np.ndarray) -> float | None:
    return float(values[valid].mean()) if valid.any() else None


class ConfusionScores(TypedDict):
    miou: float | None
    macc: float | None
    pacc: float | None
    class_iou: dict[str, float | None]


def confusion_metrics(cm: np.ndarray, class_names: Sequence[str]) -> ConfusionScores:
    """mIoU, mACC, pACC and per-class IoU from a (C, C+1) confusion matrix (undefined → ``None``)."""
    c = cm.shape[0]
    tp = np.diag(cm[:, :c]).astype(np.float64)
    pos_gt = cm.sum(axis=1).astype(np.float64)
    pos_pred = cm[:, :c].sum(axis=0).astype(np.float64)
    union = pos_gt + pos_pred - tp
    iou = np.divide(tp, union, out=np.zeros(c), where=union > 0)
    recall = np.divide(tp, pos_gt, out=np.zeros(c), where=pos_gt > 0)
    return {
        "miou": _mean(iou, union > 0),
        "macc": _mean(recall, pos_gt > 0),
        "pacc": float(tp.sum() / pos_gt.sum()) if pos_gt.sum() else None,
        "class_iou": {n: (float(iou[i]) if union[i] > 0 else None) for i, n in enumerate(class_names)},
    }


def mean_by_kind(scores: Mapping[str, float | None], things: Mapping[str, bool]) -> tuple[float | None, float | None]:
    """The mean of the defined per-class ``scores`` over the thing classes and over the stuff classes."""
    def mean(kind: bool) -> float | None:
        values = [v for name, v in scores.items() if v is not None and things.get(name) is kind]
        return float(np.mean(values)) if values else None

    return mean(True), mean(False)


@dataclass
class LacAccumulator:
    """Running LAC counts over images; shards combine with ``+=``.

    ``confusion`` (L, C, C+1) per level; ``baseline_confusion`` (C, C+1) for the forced-choice
    baseline; region counters are per level (L = 4).
    """

    num_classes: int
    confusion: np.ndarray = field(init=False)
    baseline_confusion: np.ndarray = field(init=False)
    regions: int = 0
    region_correct: np.ndarray = field(init=False)
    baseline_correct: int = 0
    agreement: np.ndarray = field(init=False)  # lexical class == baseline class, per level
    baseline_regions: int = 0
    undescribed_regions: int = 0
    absent_segments: int = 0
    image_ids: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        c, n = self.num_classes, len(LEVELS)
        self.confusion = np.zeros((n, c, c + 1), np.int64)
        self.baseline_confusion = np.zeros((c, c + 1), np.int64)
        self.region_correct = np.zeros(n, np.int64)
        self.agreement = np.zeros(n, np.int64)

    def update(
        self,
        gt: np.ndarray,
        labels: Mapping[int, Sequence[int]],
        baseline: Mapping[int, int] | None = None,
        *,
        image_id: str,
        regions: np.ndarray | None = None,
        region_class: Mapping[int, int] | None = None,
    ) -> None:
        """Add one image; its regions are its gt class regions unless ``regions`` is given.

        Args:
            gt: (H, W) int64 class indices, -1 = ignore. labels: {region id: (L,) predicted class
                index per level, -1 = unmatched}. baseline: {region: class index} from the
                forced-choice baseline, or ``None``. image_id: for bookkeeping. regions: (H, W) int
                region ids (e.g. panoptic segments), -1 = no region; default: ``gt`` itself, so a
                region id is its gt class index. region_class: {region id: gt class index}, needed
                with ``regions``.
        """
        if regions is None:
            regions, truth = gt, None
        elif region_class is None:
            raise ValueError("region_class is needed when regions are given")
        else:
            truth = region_class
        present = {int(v) for v in np.unique(regions) if v >= 0}
        described = {r: v for r, v in labels.items() if r in present}
        self.absent_segments += len(labels) - len(described)
        self.undescribed_regions += len(present - set(described))
        self.regions += len(present)

        def correct(r: int, v: int) -> bool:
            return (r if truth is None else truth.get(r)) == v

        for level in range(len(LEVELS)):
            level_labels = {r: int(v[level]) for r, v in described.items()}
            self.confusion[level] += confusion(gt, relabel(regions, level_labels), self.num_classes)
            self.region_correct[level] += sum(correct(r, v) for r, v in level_labels.items())
            if baseline is not None:
                self.agreement[level] += sum(baseline.get(r) == v for r, v in level_labels.items())
        if baseline is not None:
            chosen = {r: int(baseline[r]) for r in described if r in baseline}
            self.baseline_confusion += confusion(gt, relabel(regions, chosen), self.num_classes)
            self.baseline_correct += sum(correct(r, v) for r, v in chosen.items())
            self.baseline_regions += len(present)
        self.image_ids.append(str(image_id))

    def __iadd__(self, other: LacAccumulator) -> LacAccumulator:
        if other.num_classes != self.num_classes:
            raise ValueError("accumulators of different vocabularies cannot be combined")
        for name in ("confusion", "baseline_confusion", "region_correct", "agreement"):
            getattr(self, name).__iadd__(getattr(other, name))
        for name in ("regions", "baseline_correct", "baseline_regions", "undescribed_regions", "absent_segments"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.image_ids.extend(other.image_ids)
        return self

    def summarize(self, class_names: Sequence[str], kinds: Kinds | None = None) -> VocabMetrics:
        """Per-level metrics, the LAC (values and area per metric) and the baseline; with ``kinds``,
        each level's mIoU over things and over stuff too.

        Raises:
            ValueError: an image was added twice (shards overlapped).
        """
        if len(set(self.image_ids)) != len(self.image_ids):
            raise ValueError("an image was added more than once; shards must not overlap")
        levels = [Level(level=name, **confusion_metrics(self.confusion[i], class_names),
                        region_acc=float(self.region_correct[i] / self.regions) if self.regions else None)
                  for i, name in enumerate(LEVELS)]
        if kinds is not None:
            levels = [level.model_copy(update=dict(zip(("miou_things", "miou_stuff"),
                                                       mean_by_kind(level.class_iou, kinds.is_thing()), strict=True)))
                      for level in levels]

        def curve(metric: str) -> Curve:
            values = [getattr(level, metric) for level in levels]
            return Curve(values=values, area=lac_area(values))

        baseline = None
        if self.baseline_regions:
            baseline = Baseline(name="sentence-bert (all-MiniLM-L6-v2, forced choice)",
                                **confusion_metrics(self.baseline_confusion, class_names),
                                region_acc=float(self.baseline_correct / self.baseline_regions),
                                agreement={n: float(self.agreement[i] / self.baseline_regions)
                                           for i, n in enumerate(LEVELS)})
        # PQ needs panoptic segments: panoptic_quality.attach_pq adds it.
        return VocabMetrics(num_images=len(self.image_ids), num_regions=self.regions,
                            undescribed_regions=self.undescribed_regions, absent_segments=self.absent_segments,
                            levels=levels, lac=Lac(**{metric: curve(metric) for metric in METRICS}),
                            baseline=baseline, pq=None, kinds=kinds)


def parse_descriptions(data: Any, *, source: str = "<descriptions>") -> dict[str, dict[int, str]]:
    """The open-ended descriptions file → ``{image_id: {segment_id: description}}``.

    Raises:
        InputError: not a list, an entry without ``image_id``/``descriptions``, a description
            without an integer ``segment_id`` (or ``region_id``) or a string ``description``, or a
            repeated image or segment (names the file and the entry index).
    """
    if not isinstance(data, list):
        raise InputError("descriptions must be a JSON list of {image_id, descriptions}", path=source)
    if not data:  # a report of n/a everywhere would look like a model that described nothing right
        raise InputError("the descriptions file lists no image", path=source,
                         hint="give the model's descriptions: [{image_id, descriptions: [{segment_id, description}]}]")
    out: dict[str, dict[int, str]] = {}
    for index, entry in enumerate(data):
        where = f"entry {index}"
        if not isinstance(entry, dict) or "image_id" not in entry or not isinstance(entry.get("descriptions"), list):
            raise InputError("entry needs 'image_id' and a 'descriptions' list", path=source, item=where)
        image_id = str(entry["image_id"])
        if image_id in out:
            raise InputError(f"image {image_id!r} appears twice", path=source, item=where)
        regions: dict[int, str] = {}
        for j, desc in enumerate(entry["descriptions"]):
            seg = desc.get("segment_id", desc.get("region_id")) if isinstance(desc, dict) else None
            text = desc.get("description") if isinstance(desc, dict) else None
            if not isinstance(seg, int) or isinstance(seg, bool) or not isinstance(text, str):
                raise InputError("description needs an integer 'segment_id' and a 'description' string",
                                 path=source, item=f"{where}, description {j}")
            if seg in regions:
                raise InputError(f"segment {seg} is described twice", path=source, item=f"{where}, description {j}")
            regions[seg] = text
        out[image_id] = regions
    return out


def decode_label_map(data: bytes, *, source: str) -> np.ndarray:
    """PNG bytes → (H, W) int64 pixel values.

    Raises:
        InputError: not a readable single-channel image.
    """
    arr = np.asarray(open_image(data, path=source, hint="save it again as a PNG"))  # any Pillow failure: InputError
    if arr.ndim != 2:
        raise InputError(f"a label map must have one channel, got shape {arr.shape}", path=source,
                         hint="save class ids as an 8- or 16-bit grayscale / palette PNG")
    return arr.astype(np.int64)
