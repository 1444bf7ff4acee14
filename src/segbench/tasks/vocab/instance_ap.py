"""Mask AP per lexical level, COCO-style through pycocotools' ``COCOeval`` (seed 003, "Main results":
PQ, mIoU and AP at each level of the Lexical Alignment Curve).

At each level every predicted segment whose description maps to an AP class is a detection of that
class, with its own pixels and the model's ``score`` (1 when the descriptions give none). The
ground-truth instances are the panoptic segments of the AP classes; crowd segments are COCO crowd
regions (a detection on one is neither right nor wrong). The AP classes are the thing classes when
the vocabulary says which classes are things (instance AP, as detectron2 scores panoptic datasets),
else every class, and the report says which.

Numbers are ``COCOeval``'s own: AP is the mean over classes with ground truth of the precision
interpolated at 101 recall points and IoU 0.50:0.05:0.95, over all areas, with at most 100
detections per image (COCO's default); AP50 and AP75 fix the IoU; a class with detections but no
ground truth does not count. Equal scores keep their input order (images in id order, segments in id
order), which is COCOeval's stable sort, so a report is the same on every run.

Masks are kept as compressed RLE; accumulators add with ``+=`` so shards combine. Metrics never
print (pycocotools' progress lines are swallowed).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Self

import numpy as np

from segbench.schemas.vocab_metrics import Curve, LevelAP, VocabMetrics

IOU_50, IOU_75 = 0, 5  # positions of 0.50 and 0.75 in COCOeval's IoU thresholds


@dataclass
class _Mask:
    rle: dict[str, Any]
    area: float
    bbox: list[float]


def _encode(segments: np.ndarray, ids: Sequence[int]) -> dict[int, _Mask]:
    """{segment id: its mask as COCO RLE} for ``ids`` of an (H, W) segment map."""
    from pycocotools import mask as mask_utils

    if not ids:
        return {}
    stack = np.asfortranarray(np.stack([segments == i for i in ids], axis=-1).astype(np.uint8))
    rles = mask_utils.encode(stack)
    areas, boxes = mask_utils.area(rles), mask_utils.toBbox(rles)
    return {i: _Mask(rle, float(area), [float(v) for v in box])
            for i, rle, area, box in zip(ids, rles, areas, boxes, strict=True)}


@dataclass
class APAccumulator:
    """Ground-truth instances and per-level detections over images, as RLE.

    ``classes``: the class indices AP is computed over. ``levels``: how many lexical levels.
    """

    classes: frozenset[int]
    levels: int
    images: list[tuple[str, int, int]] = field(default_factory=list)  # (image id, height, width)
    truths: list[tuple[int, int, _Mask, bool]] = field(default_factory=list)  # (image, class, mask, crowd)
    detections: list[list[tuple[int, int, _Mask, float]]] = field(init=False)  # per level: (image, class, mask, score)

    def __post_init__(self) -> None:
        self.detections = [[] for _ in range(self.levels)]

    def update(self, image_id: str, gt_segments: np.ndarray, gt_classes: Mapping[int, int],
               pred_segments: np.ndarray, level_classes: Sequence[Mapping[int, int]],
               scores: Mapping[int, float], *, crowd: Collection[int] = ()) -> None:
        """Add one image.

        Args:
            gt_segments, pred_segments: (H, W) int segment ids (the same array when the prediction is
                the ground-truth segments). gt_classes: {gt segment id: class index}; unlisted ids are
                void. level_classes: per level {predicted segment id: class index}. scores:
                {predicted segment id: confidence}; missing → 1. crowd: gt ids marked ``iscrowd``.
        """
        if len(level_classes) != self.levels:
            raise ValueError(f"expected {self.levels} levels of predictions, got {len(level_classes)}")
        index = len(self.images)
        height, width = gt_segments.shape
        self.images.append((str(image_id), height, width))
        truth_ids = sorted(s for s, c in gt_classes.items() if c in self.classes)
        for seg, mask in _encode(gt_segments, truth_ids).items():
            if mask.area:
                self.truths.append((index, gt_classes[seg], mask, seg in crowd))
        shown = sorted({s for classes in level_classes for s, c in classes.items() if c in self.classes})
        masks = _encode(pred_segments, shown)
        for level, classes in enumerate(level_classes):
            self.detections[level] += [(index, classes[s], masks[s], float(scores.get(s, 1.0)))
                                       for s in shown if classes.get(s) in self.classes and masks[s].area]

    def __iadd__(self, other: APAccumulator) -> Self:
        if (other.classes, other.levels) != (self.classes, self.levels):
            raise ValueError("AP accumulators over different classes or levels cannot be combined")
        offset = len(self.images)
        self.images += other.images
        self.truths += [(i + offset, c, m, crowd) for i, c, m, crowd in other.truths]
        for mine, theirs in zip(self.detections, other.detections, strict=True):
            mine += [(i + offset, c, m, s) for i, c, m, s in theirs]
        return self

    def summarize(self, class_names: Sequence[str], level_names: Sequence[str],
                  over: Literal["things", "all"]) -> list[LevelAP]:
        """AP, AP50 and AP75 per level, overall and per class (``None`` where a class has no ground truth)."""
        gt = _coco(self.images, [{"id": n + 1, "image_id": i, "category_id": c, "segmentation": m.rle,
                                  "area": m.area, "bbox": m.bbox, "iscrowd": int(crowd)}
                                 for n, (i, c, m, crowd) in enumerate(self.truths)], self.classes)
        return [self._level(gt, detections, class_names, name, over)
                for detections, name in zip(self.detections, level_names, strict=True)]

    def _level(self, gt: Any, detections: Sequence[tuple[int, int, _Mask, float]], class_names: Sequence[str],
               name: str, over: Literal["things", "all"]) -> LevelAP:
        from pycocotools.cocoeval import COCOeval

        classes = sorted(self.classes)
        per_class: dict[str, float | None] = {class_names[c]: None for c in classes}
        if not self.truths:
            return LevelAP(level=name, ap=None, ap50=None, ap75=None, classes=over, num_classes=0, per_class=per_class)
        dt = _coco(self.images, [{"id": n + 1, "image_id": i, "category_id": c, "segmentation": m.rle,
                                  "area": m.area, "bbox": m.bbox, "score": s, "iscrowd": 0}
                                 for n, (i, c, m, s) in enumerate(detections)], self.classes)
        with contextlib.redirect_stdout(io.StringIO()):
            evaluator = COCOeval(gt, dt, "segm")
            evaluator.params.imgIds = list(range(len(self.images)))
            evaluator.params.catIds = classes
            evaluator.evaluate()
            evaluator.accumulate()
        precision = evaluator.eval["precision"][:, :, :, 0, -1]  # (IoU, recall, class) at all areas, 100 dets

        def mean(values: np.ndarray) -> float | None:
            defined = values[values > -1]
            return float(defined.mean()) if defined.size else None

        for k, c in enumerate(classes):
            per_class[class_names[c]] = mean(precision[:, :, k])
        return LevelAP(level=name, ap=mean(precision), ap50=mean(precision[IOU_50]), ap75=mean(precision[IOU_75]),
                       classes=over, num_classes=sum(v is not None for v in per_class.values()), per_class=per_class)


def _coco(images: Sequence[tuple[str, int, int]], annotations: list[dict[str, Any]], classes: Collection[int]) -> Any:
    """A pycocotools ``COCO`` index over these images and annotations (built in memory, silently)."""
    from pycocotools.coco import COCO

    coco = COCO()
    coco.dataset = {"images": [{"id": n, "height": h, "width": w} for n, (_, h, w) in enumerate(images)],
                    "categories": [{"id": c} for c in sorted(classes)], "annotations": annotations}
    with contextlib.redirect_stdout(io.StringIO()):
        coco.createIndex()
    return coco


def attach_ap(metrics: VocabMetrics, per_level: Sequence[LevelAP]) -> VocabMetrics:
    """A copy of ``metrics`` with AP / AP50 / AP75 in each level row, an ``ap`` curve and per-class AP.

    ``per_level``: :meth:`APAccumulator.summarize`'s result, in level order.
    """
    from segbench.tasks.vocab.lac import lac_area

    levels = [row.model_copy(update={"ap": ap.ap, "ap50": ap.ap50, "ap75": ap.ap75})
              for row, ap in zip(metrics.levels, per_level, strict=True)]
    values = [ap.ap for ap in per_level]
    return metrics.model_copy(update={
        "levels": levels, "lac": metrics.lac.model_copy(update={"ap": Curve(values=values, area=lac_area(values))}),
        "ap": list(per_level)})
