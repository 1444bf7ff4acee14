"""Panoptic quality (PQ = SQ × RQ) per lexical level, and the panoptic ground truth it reads.

Seed 003 ("Main results"): PQ is one of the recognition scores computed at each lexical level of
the Lexical Alignment Curve. Counting follows panopticapi ``evaluation.py`` (``PQStat``,
``pq_compute_single_core``); accumulators add with ``+=`` so shards combine.

What changes meaning in the open-ended setting: the prediction at a level is the ground-truth
segment itself (same pixels) carrying the class its description maps to; a segment whose
description maps to nothing (or that has no description) predicts nothing, so it is a false
negative of its gt class. With identical pixels a correctly mapped segment matches with IoU 1 (TP),
a wrongly mapped one is a FP of the predicted class and a FN of the gt class. The matching below is
the general panopticapi one, so it stays right if predicted segments ever differ from gt ones.

Arrays and ignore rules (:meth:`PQAccumulator.update`):

- ``gt_segments``, ``pred_segments``: (H, W) integer segment ids. A pixel whose id is not a key of
  ``gt_classes`` (``pred_classes``) is void; segments without pixels are not segments.
- A gt/pred pair matches when the classes agree and IoU > 0.5, where the union leaves out the
  predicted pixels that fall on gt void (panopticapi's ``VOID`` rule). IoU > 0.5 makes matches unique.
- Crowd gt segments are never matched nor missed; a predicted segment whose pixels lie more than
  half on gt void or on crowd segments of its class is no false positive.
- PQ/SQ/RQ overall are the mean over classes with TP + FP + FN > 0; per class SQ is 0 when TP = 0
  and enters the mean as 0 (as panopticapi). No class counted → ``None``.

Panoptic ground truth (``--panoptic DIR``), per image:

- ``<image_id>.png``: segment ids, either a single-channel 8/16/32-bit PNG whose pixel value is the
  id, or a COCO-panoptic RGB PNG with ``id = R + 256·G + 256²·B``.
- ``<image_id>.json``: a list ``[{"id": segment id, "category_id": vocabulary id, "iscrowd": 0|1}]``
  (``iscrowd`` optional), or a COCO-panoptic annotation object holding that list as
  ``segments_info``. Ids not listed are void; a ``category_id`` that is no vocabulary id makes the
  segment void too.

Metrics never mutate their inputs and never print. Loading files and orchestration live in
:mod:`segbench.tasks.vocab.evaluation`.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

import numpy as np

from segbench.core.errors import InputError
from segbench.core.io import open_image
from segbench.schemas.vocab_metrics import ClassPQ, Curve, LevelPQ, VocabMetrics

log = logging.getLogger(__name__)

MATCH_IOU = 0.5  # panopticapi: strictly greater, which makes every match unique


def _compact(segments: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """(H, W) segment ids → (H, W) positions in sorted ``ids``; ``len(ids)`` for void pixels."""
    if ids.size == 0:
        return np.zeros(segments.shape, np.int64)
    pos = np.searchsorted(ids, segments)
    hit = ids[np.clip(pos, 0, ids.size - 1)] == segments
    return np.where(hit, pos, ids.size).astype(np.int64)


def _intersections(gt_segments: np.ndarray, gt_ids: np.ndarray, pred_segments: np.ndarray, pred_ids: np.ndarray
                   ) -> np.ndarray:
    """(G + 1, P + 1) pixel counts of every (gt, predicted) segment pair, in sorted id order; the last row
    and column collect void pixels. One bincount over the pairs."""
    ng, npr = gt_ids.size, pred_ids.size
    pairs = _compact(gt_segments, gt_ids) * (npr + 1) + _compact(pred_segments, pred_ids)
    return np.bincount(pairs.ravel(), minlength=(ng + 1) * (npr + 1)).reshape(ng + 1, npr + 1)


def _iou(inter: np.ndarray, g: int, p: int) -> float:
    """IoU of gt ``g`` and prediction ``p``; the union leaves out the predicted pixels on gt void."""
    void = inter.shape[0] - 1
    union = inter[:, p].sum() + inter[g].sum() - inter[g, p] - inter[void, p]
    return float(inter[g, p] / union)


def matched_segments(gt_segments: np.ndarray, gt_ids: Collection[int], pred_segments: np.ndarray,
                     pred_ids: Collection[int]) -> dict[int, int]:
    """{predicted segment id: gt segment id} for the pairs with IoU > 0.5, whatever their classes (the
    match is unique, as in :meth:`PQAccumulator.update`)."""
    gts, preds = np.array(sorted(gt_ids), dtype=np.int64), np.array(sorted(pred_ids), dtype=np.int64)
    inter = _intersections(np.asarray(gt_segments), gts, np.asarray(pred_segments), preds)
    return {int(preds[p]): int(gts[g]) for g, p in zip(*np.nonzero(inter[:gts.size, :preds.size]), strict=True)
            if _iou(inter, g, p) > MATCH_IOU}


@dataclass
class PQAccumulator:
    """Per-class panoptic counts over images: ``tp``, ``fp``, ``fn`` (C,) int64, ``iou_sum`` (C,) float64."""

    num_classes: int
    tp: np.ndarray = field(init=False)
    fp: np.ndarray = field(init=False)
    fn: np.ndarray = field(init=False)
    iou_sum: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        c = self.num_classes
        self.tp, self.fp, self.fn = (np.zeros(c, np.int64) for _ in range(3))
        self.iou_sum = np.zeros(c, np.float64)

    def update(
        self,
        gt_segments: np.ndarray,
        gt_classes: Mapping[int, int],
        pred_segments: np.ndarray,
        pred_classes: Mapping[int, int],
        *,
        crowd: Collection[int] = (),
    ) -> None:
        """Match the segments of one image and add TP / FP / FN / IoU per class.

        Args:
            gt_segments: (H, W) int gt segment ids. gt_classes: {gt segment id: class index 0..C-1};
                unlisted ids are void. pred_segments: (H, W) int predicted segment ids (may be the
                gt array itself). pred_classes: {predicted segment id: class index}; unlisted ids
                predict nothing. crowd: gt segment ids marked ``iscrowd``.

        Raises:
            ValueError: the two maps differ in shape, or a class index is out of range.
        """
        gt_arr, pred_arr = np.asarray(gt_segments), np.asarray(pred_segments)
        if gt_arr.shape != pred_arr.shape:
            raise ValueError(f"gt {gt_arr.shape} and prediction {pred_arr.shape} differ in shape")
        gt_ids = np.array(sorted(gt_classes), dtype=np.int64)
        pred_ids = np.array(sorted(pred_classes), dtype=np.int64)
        g_cls = np.array([gt_classes[int(i)] for i in gt_ids], dtype=np.int64)
        p_cls = np.array([pred_classes[int(i)] for i in pred_ids], dtype=np.int64)
        if ((g_cls < 0) | (g_cls >= self.num_classes)).any() or ((p_cls < 0) | (p_cls >= self.num_classes)).any():
            raise ValueError(f"class indices must lie in 0..{self.num_classes - 1}")
        ng, npr = gt_ids.size, pred_ids.size
        inter = _intersections(gt_arr, gt_ids, pred_arr, pred_ids)
        gt_area, pred_area = inter[:ng].sum(axis=1), inter[:, :npr].sum(axis=0)
        is_crowd = np.isin(gt_ids, np.array(list(crowd), dtype=np.int64))
        gt_matched, pred_matched = np.zeros(ng, bool), np.zeros(npr, bool)
        for g, p in zip(*np.nonzero(inter[:ng, :npr]), strict=True):
            if is_crowd[g] or g_cls[g] != p_cls[p]:
                continue
            iou = _iou(inter, g, p)
            if iou > MATCH_IOU:
                self.tp[g_cls[g]] += 1
                self.iou_sum[g_cls[g]] += iou
                gt_matched[g] = pred_matched[p] = True
        for g in np.nonzero(~gt_matched & ~is_crowd & (gt_area > 0))[0]:
            self.fn[g_cls[g]] += 1
        for p in np.nonzero(~pred_matched & (pred_area > 0))[0]:
            same_crowd = is_crowd & (g_cls == p_cls[p])
            ignored = inter[ng, p] + inter[:ng, p][same_crowd].sum()
            if ignored / pred_area[p] <= 0.5:
                self.fp[p_cls[p]] += 1

    def __iadd__(self, other: PQAccumulator) -> Self:
        if other.num_classes != self.num_classes:
            raise ValueError("accumulators of different vocabularies cannot be combined")
        for name in ("tp", "fp", "fn", "iou_sum"):
            getattr(self, name).__iadd__(getattr(other, name))
        return self

    def summarize(self, class_names: Sequence[str], level: str) -> LevelPQ:
        """PQ, SQ and RQ of the lexical ``level``, overall and per class (with TP, FP, FN).

        Overall values are means over the ``num_classes`` classes with TP + FP + FN > 0 (``None`` if
        there are none); a class without any count has ``None`` scores.
        """
        per_class: dict[str, ClassPQ] = {}
        for i, name in enumerate(class_names):
            tp, fp, fn = int(self.tp[i]), int(self.fp[i]), int(self.fn[i])
            denom = tp + 0.5 * fp + 0.5 * fn
            per_class[name] = ClassPQ(pq=float(self.iou_sum[i] / denom) if denom else None,
                                      sq=(float(self.iou_sum[i] / tp) if tp else 0.0) if denom else None,
                                      rq=tp / denom if denom else None, tp=tp, fp=fp, fn=fn)
        scored = [c for c in per_class.values() if c.tp + c.fp + c.fn]

        def mean(metric: str) -> float | None:
            return float(np.mean([getattr(c, metric) for c in scored])) if scored else None

        return LevelPQ(level=level, pq=mean("pq"), sq=mean("sq"), rq=mean("rq"), num_classes=len(scored),
                       per_class=per_class)


def level_predictions(labels: Mapping[int, Sequence[int]], level: int) -> dict[int, int]:
    """{segment id: (L,) class index per level, -1 = unmatched} → {segment id: class} at ``level``."""
    return {seg: int(v[level]) for seg, v in labels.items() if v[level] >= 0}


def attach_pq(metrics: VocabMetrics, per_level: Sequence[LevelPQ]) -> VocabMetrics:
    """A copy of ``metrics`` with PQ/SQ/RQ in each level row, a ``pq`` curve and per-class PQ; PQ over
    things and over stuff too when ``metrics.kinds`` says which classes are which.

    ``per_level``: one :meth:`PQAccumulator.summarize` result per lexical level, in level order.
    """
    from segbench.tasks.vocab.lac import lac_area, mean_by_kind

    kinds = metrics.kinds

    def row_scores(pq: LevelPQ) -> dict[str, float | None]:
        scores: dict[str, float | None] = {"pq": pq.pq, "sq": pq.sq, "rq": pq.rq}
        if kinds is not None:
            per_class = {name: c.pq for name, c in pq.per_class.items()}
            scores["pq_things"], scores["pq_stuff"] = mean_by_kind(per_class, kinds.is_thing())
        return scores

    levels = [row.model_copy(update=row_scores(pq)) for row, pq in zip(metrics.levels, per_level, strict=True)]
    values = [pq.pq for pq in per_level]
    return metrics.model_copy(update={
        "levels": levels, "lac": metrics.lac.model_copy(update={"pq": Curve(values=values, area=lac_area(values))}),
        "pq": list(per_level)})


# --- panoptic ground truth ------------------------------------------------------------------------


def decode_segment_ids(data: bytes, *, source: str) -> np.ndarray:
    """PNG bytes → (H, W) int64 segment ids (single channel as is; RGB as R + 256·G + 256²·B).

    Raises:
        InputError: not a readable image, or neither one channel nor RGB.
    """
    arr = np.asarray(open_image(data, path=source, hint="save it again as a PNG"))  # any Pillow failure: InputError
    if arr.ndim == 2:
        return arr.astype(np.int64)
    if arr.ndim == 3 and arr.shape[2] == 3:
        rgb = arr.astype(np.int64)
        return rgb[..., 0] + 256 * rgb[..., 1] + 256 * 256 * rgb[..., 2]
    raise InputError(f"a segment map must have one channel or RGB, got shape {arr.shape}", path=source,
                     hint="save ids as a 16/32-bit grayscale PNG or as COCO-panoptic RGB")


@dataclass(frozen=True)
class Segment:
    category_id: int
    iscrowd: bool = False


def parse_segments(data: Any, *, source: str = "<segments>") -> dict[int, Segment]:
    """A ``<image_id>.json`` segment list (or ``{"segments_info": [...]}``) → ``{segment id: Segment}``.

    Raises:
        InputError: not a list, a segment without integer ``id`` and ``category_id``, or a repeated id.
    """
    if isinstance(data, dict) and "segments_info" in data:
        data = data["segments_info"]
    if not isinstance(data, list):
        raise InputError("segments must be a JSON list of {id, category_id}", path=source)
    out: dict[int, Segment] = {}
    for index, seg in enumerate(data):
        ok = isinstance(seg, dict) and all(
            isinstance(seg.get(k), int) and not isinstance(seg.get(k), bool) for k in ("id", "category_id"))
        if not ok:
            raise InputError("segment needs integer 'id' and 'category_id'", path=source, item=f"segment {index}")
        if seg["id"] in out:
            raise InputError(f"segment id {seg['id']} is listed twice", path=source, item=f"segment {index}")
        out[seg["id"]] = Segment(seg["category_id"], bool(seg.get("iscrowd", 0)))
    return out
