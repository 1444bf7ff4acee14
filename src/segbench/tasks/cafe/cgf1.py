"""SAM3's class-gated F1 (cgF1) family: evaluate → accumulate → summarize, vectorised.

The numbers are those of SAM3's ``CGF1Evaluator`` (``sam3/eval/cgf1_eval.py``) on the same inputs;
what is seen, and in which order, follows :mod:`segbench.tasks.cafe.cgf1_inputs`. Per (image, phrase):

- predictions with ``score >= threshold`` are kept; crowd ground truths are ignored;
- no gt, no prediction → IL_TN (no F1); gt, no prediction → IL_FN (TP = 0, FN = #gt, local F1 = 0,
  counted in the positive sums); no gt, predictions → IL_FP (FP = #pred); both → IL_TP;
- one-to-one matching maximising total mask IoU (``scipy.optimize.linear_sum_assignment(-ious)`` on
  the (prediction × gt) matrix in the evaluator's order, since among tied optima the solver's pick
  decides which matches clear a threshold); at each IoU threshold 0.50:0.05:0.95
  TP = matches ≥ threshold, FP = #pred − TP, FN = #gt − TP.

Arrays: ``tps`` is ``(n_t, n_img, 10)`` (score thresholds × images × IoU thresholds), ``ndt`` and
``ngt`` are ``(n_t, n_img)`` (kept predictions, non-crowd ground truths). Several score thresholds
are evaluated in one pass for calibration. Accumulated arrays add, so shards combine by
concatenating images. With several ground-truth files (oracle protocol) each image keeps the file
with the best mean local F1, under SAM3's tie and missing-F1 rules (:func:`select_oracle`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pycocotools import mask as mask_utils

from segbench.core.errors import InputError
from segbench.core.gc_pause import collection_paused
from segbench.schemas.cafe_metrics import CgF1Summary
from segbench.tasks.cafe.cgf1_inputs import GroundTruth, Predictions, visible_predictions
from segbench.tasks.cafe.mask_ious import grouped_ious

# Built exactly as pycocotools' Params builds them: cgF1@0.75 is looked up by float equality.
IOU_THRESHOLDS = np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1, endpoint=True)
N_IOU = len(IOU_THRESHOLDS)
PER_IOU_METRICS = ("cgF1", "precision", "recall", "F1", "positive_macro_F1", "positive_micro_F1",
                   "positive_micro_precision")
SINGLE_METRICS = ("IL_precision", "IL_recall", "IL_F1", "IL_FPR", "IL_MCC")
IL_COUNTS = ("IL_TP", "IL_FP", "IL_TN", "IL_FN")


@dataclass
class ImageCounts:
    """Per-image match counts (shapes in the module docstring); ``image_ids`` is ``(n_img,)``."""

    image_ids: np.ndarray
    tps: np.ndarray
    ndt: np.ndarray
    ngt: np.ndarray

    def take(self, index: np.ndarray) -> ImageCounts:
        """The images at ``index`` (an integer index or boolean mask over images)."""
        return ImageCounts(self.image_ids[index], self.tps[:, index], self.ndt[:, index], self.ngt[:, index])


@dataclass
class TargetIous:
    """IoUs already computed: ``iou[i]`` is prediction ``i``'s IoU with ``target[image_id]`` (an
    annotation of the prediction's image), NaN where not computed. cgF1 reuses them on an image whose
    only non-crowd ground truth it sees is that annotation, instead of asking pycocotools again."""

    iou: np.ndarray
    target: dict[int, dict[str, Any]]


def evaluation_image_ids(gts: Sequence[GroundTruth]) -> list[int]:
    """Images evaluated: the first file's entries with a truthy ``is_instance_exhaustive``, minus ids
    that any other file marks non-exhaustive. File order; a repeated entry is evaluated again."""
    excluded = {img["id"] for gt in gts[1:] for img in gt.entries if not img["is_instance_exhaustive"]}
    return [img["id"] for img in gts[0].entries if img["is_instance_exhaustive"] and img["id"] not in excluded]


def _tps_of_matrix(ious: np.ndarray) -> np.ndarray:
    """TP count at each IoU threshold after one-to-one matching on ``ious`` (n_dt × n_gt, both > 0)."""
    if min(ious.shape) == 1:
        # A single match: its IoU is the maximum whichever tied cell the solver would pick.
        scores = np.array([ious.max()])
    else:
        # Imported here: scipy.optimize costs ~0.3 s of start-up and most evaluations never need it.
        from scipy.optimize import linear_sum_assignment

        rows, cols = linear_sum_assignment(-ious)
        scores = ious[rows, cols]
    return np.count_nonzero(scores[:, None] >= IOU_THRESHOLDS[None, :], axis=0)


def image_tps(ious: np.ndarray, scores: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TPs ``(n_t, 10)`` and kept-prediction counts ``(n_t,)`` of one image at each score threshold.

    ``ious`` is ``(n_dt, n_gt)`` over the visible predictions and non-crowd ground truths; kept sets
    are nested (score ≥ t), so each distinct count is matched once.
    """
    kept = scores[None, :] >= thresholds[:, None]
    ndt = kept.sum(axis=1)
    tps = np.zeros((len(thresholds), N_IOU), dtype=np.int64)
    if ious.shape[1] == 0 or not ndt.any():
        return tps, ndt
    if len(thresholds) == 1:
        tps[0] = _tps_of_matrix(ious[kept[0]])
        return tps, ndt
    for count in np.unique(ndt):
        if count:
            rows = np.flatnonzero(ndt == count)
            tps[rows] = _tps_of_matrix(ious[kept[rows[0]]])
    return tps, ndt


def _single_masks(gt: GroundTruth) -> dict[int, list[dict[str, Any]]] | None:
    """Each image's non-crowd annotations that COCOeval sees, when it sees each annotation of the file
    once under its own image (no category listed twice, unique annotation ids); ``None`` otherwise.
    Annotations of unlisted categories are never seen. Order within an image does not matter to the
    images that use this (at most one annotation)."""
    if gt.multiplicity_repeats or len(gt.ann_index) != sum(map(len, gt.ann_ids_by_image.values())):
        return None
    out: dict[int, list[dict[str, Any]]] = {}
    try:
        for ann in gt.ann_index.values():
            if not ann["iscrowd"] and ann["category_id"] in gt.multiplicity:
                out.setdefault(ann["image_id"], []).append(ann)
    except TypeError:  # an unhashable category id: left to the image-by-image path
        return None
    return out


def count_images(gt: GroundTruth, preds: Predictions, image_ids: Sequence[int], thresholds: np.ndarray,
                 target_ious: TargetIous | None = None) -> ImageCounts:
    """Evaluate each image of ``image_ids`` against one ground-truth file at every score threshold.

    Images with at most one non-crowd ground truth (CAFE's, and most of SA-Co's) are counted all at
    once (:func:`_count_single`); the others one by one, with the optimal matching.

    Raises:
        InputError: an image with predictions is not in this ground truth (``loadRes`` refuses it),
            or one of its annotations is malformed.
    """
    n_t, n_img = len(thresholds), len(image_ids)
    tps = np.zeros((n_t, n_img, N_IOU), dtype=np.int64)
    ndt = np.zeros((n_t, n_img), dtype=np.int64)
    ngt = np.zeros((n_t, n_img), dtype=np.int64)
    singles = _single_masks(gt)
    single_at: list[int] = []  # images counted by _count_single, and their one annotation (or None)
    single_ann: list[dict[str, Any] | None] = []
    for j, image_id in enumerate(image_ids):
        if preds.by_image.get(image_id) and image_id not in gt.images:
            raise InputError(f"image {image_id} has predictions but is not in this ground truth", path=gt.path,
                             item=f"image {image_id}", hint="every ground-truth file must list the evaluated images")
        if image_id not in gt.ann_ids_by_image and not preds.by_image.get(image_id):
            continue  # IL_TN: nothing to look at
        if singles is not None and len(anns := singles.get(image_id, ())) <= 1:
            if anns:
                gt.rle(anns[0])  # checks the segmentation, as the matching below would
            single_at.append(j)
            single_ann.append(anns[0] if anns else None)
            continue
        anns = [a for a in gt.visible_annotations(image_id) if not a["iscrowd"]]
        gt_rles = [gt.rle(a) for a in anns]
        ngt[:, j] = len(gt_rles)
        dt_index = visible_predictions(preds, gt, image_id)
        if not len(dt_index):
            continue
        scores = preds.score[dt_index]
        if not gt_rles:  # IL_FP: no match to make
            ndt[:, j] = np.count_nonzero(scores[None, :] >= thresholds[:, None], axis=1)
            continue
        ious = np.asarray(mask_utils.iou([preds.rles[i] for i in dt_index], gt_rles, [0] * len(gt_rles)))
        tps[:, j], ndt[:, j] = image_tps(ious, scores, thresholds)
    if single_at:
        at = np.asarray(single_at, dtype=np.int64)
        tps[:, at], ndt[:, at], ngt[:, at] = _count_single(gt, preds, [image_ids[j] for j in single_at], single_ann,
                                                           thresholds, target_ious)
    return ImageCounts(np.asarray(image_ids, dtype=np.int64), tps, ndt, ngt)


def _count_single(gt: GroundTruth, preds: Predictions, image_ids: list[int], anns: list[dict[str, Any] | None],
                  thresholds: np.ndarray, target_ious: TargetIous | None,
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``tps``, ``ndt``, ``ngt`` of images with at most one non-crowd ground truth (``anns``), at once.

    With one ground truth the matching keeps the best kept IoU, whichever tied cell the solver would
    pick; predictions of categories COCOeval does not see are dropped (each seen category is listed once).
    """
    n_t, n = len(thresholds), len(image_ids)
    members = [[i for i in preds.by_image.get(image_id, ()) if preds.category_id[i] in gt.multiplicity]
               if preds.by_image.get(image_id) else [] for image_id in image_ids]
    sizes = np.fromiter(map(len, members), dtype=np.int64, count=n)
    index = np.asarray([i for m in members for i in m], dtype=np.int64)
    owner = np.repeat(np.arange(n), sizes)
    ngt = np.asarray([0 if a is None else 1 for a in anns], dtype=np.int64)
    iou = np.zeros(len(index))
    known = np.zeros(n, dtype=bool) if target_ious is None else np.asarray(
        [a is not None and target_ious.target.get(image_id) is a for image_id, a in zip(image_ids, anns, strict=True)])
    from_target = known[owner]
    if target_ious is not None and from_target.any():
        iou[from_target] = target_ious.iou[index[from_target]]
    ask = [k for k in range(n) if anns[k] is not None and sizes[k] and not known[k]]
    if ask:
        asked = np.isin(owner, ask)
        iou[asked] = grouped_ious(preds.rles, [members[k] for k in ask], [gt.rle(ann) for k in ask if (ann := anns[k])])
    kept = preds.score[index][None, :] >= thresholds[:, None]  # (n_t, n_preds), grouped by image
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    has = sizes > 0
    ndt = np.zeros((n_t, n), dtype=np.int64)
    best = np.full((n_t, n), -1.0)
    if len(index):
        ndt[:, has] = np.add.reduceat(kept, starts[has], axis=1, dtype=np.int64)
        best[:, has] = np.maximum.reduceat(np.where(kept, iou[None, :], -1.0), starts[has], axis=1)
    matched = (ngt > 0)[None, :] & (ndt > 0)
    tps = np.where(matched[..., None], best[..., None] >= IOU_THRESHOLDS, False).astype(np.int64)
    return tps, ndt, np.broadcast_to(ngt, (n_t, n))


def local_f1(tps: np.ndarray, ndt: np.ndarray, ngt: np.ndarray) -> np.ndarray:
    """Per-image F1 at each IoU threshold, SAM3's formula with its 1e-4 epsilons."""
    fps, fns = ndt[..., None] - tps, ngt[..., None] - tps
    precision = tps / (tps + fps + 1e-4)
    recall = tps / (tps + fns + 1e-4)
    return 2 * precision * recall / (precision + recall + 1e-4)


def select_oracle(per_gt: Sequence[ImageCounts]) -> ImageCounts:
    """Per (threshold, image), keep the ground truth SAM3's ``_select_best_scoring`` keeps.

    Start from the first file; a later file replaces the current choice when both have a local F1
    (not IL_TN) and its mean local F1 is strictly higher, or when the later file has none.
    """
    if len(per_gt) == 1:
        return per_gt[0]
    has_f1 = np.stack([(c.ndt > 0) | (c.ngt > 0) for c in per_gt])
    means = np.stack([local_f1(c.tps, c.ndt, c.ngt).mean(axis=-1) for c in per_gt])
    best = np.zeros(per_gt[0].ndt.shape, dtype=np.int64)
    for g in range(1, len(per_gt)):
        best_has = np.take_along_axis(has_f1, best[None], axis=0)[0]
        best_mean = np.take_along_axis(means, best[None], axis=0)[0]
        both = best_has & has_f1[g]
        take = (both & (means[g] > best_mean)) | (~both & ~has_f1[g])
        best = np.where(take, g, best)

    def pick(arrays: list[np.ndarray]) -> np.ndarray:
        stacked = np.stack(arrays)
        index = best[None] if stacked.ndim == best.ndim + 1 else best[None, ..., None]
        return np.take_along_axis(stacked, index, axis=0)[0]

    return ImageCounts(per_gt[0].image_ids, pick([c.tps for c in per_gt]), pick([c.ndt for c in per_gt]),
                       pick([c.ngt for c in per_gt]))


@collection_paused()
def evaluate_counts(gts: Sequence[GroundTruth], preds: Predictions, thresholds: Sequence[float],
                    image_ids: Sequence[int] | None = None, target_ious: TargetIous | None = None) -> ImageCounts:
    """Counts of every evaluated image (:func:`evaluation_image_ids`, or ``image_ids``) at each
    score threshold, the oracle choice made when several ground truths are given. ``target_ious``
    (IoUs already known, one ground truth only) spares pycocotools those IoUs.

    Raises:
        InputError: no image is evaluated, or an input rule is broken (see :func:`count_images`).
    """
    ids = evaluation_image_ids(gts) if image_ids is None else list(image_ids)
    if not ids:
        raise InputError("no image is marked is_instance_exhaustive, so nothing can be evaluated",
                         path=gts[0].path, hint="cgF1 counts only images with is_instance_exhaustive: 1")
    unique, inverse = np.unique(np.asarray(ids, dtype=np.int64), return_inverse=True)
    thr = np.asarray(thresholds, dtype=np.float64)
    known = target_ious if len(gts) == 1 else None
    chosen = select_oracle([count_images(gt, preds, unique.tolist(), thr, known) for gt in gts])
    return chosen.take(inverse.reshape(-1))


def accumulate(counts: ImageCounts) -> dict[str, np.ndarray]:
    """SAM3's ``CGF1Eval.accumulate`` for every score threshold at once.

    Returns arrays with a leading score-threshold axis: ``(n_t, 10)`` for the per-IoU metrics,
    ``(n_t,)`` for the image-level ones and the counts.
    """
    tps, ndt, ngt = counts.tps, counts.ndt, counts.ngt
    fps, fns = ndt[..., None] - tps, ngt[..., None] - tps
    il = {"IL_TP": (ngt > 0) & (ndt > 0), "IL_FP": (ngt == 0) & (ndt > 0),
          "IL_TN": (ngt == 0) & (ndt == 0), "IL_FN": (ngt > 0) & (ndt == 0)}
    n = {k: v.sum(axis=1).astype(np.int64) for k, v in il.items()}
    positive = il["IL_TP"][..., None]
    tp, fp, fn = tps.sum(axis=1), fps.sum(axis=1), fns.sum(axis=1)
    pm_fp = np.where(positive, fps, 0).sum(axis=1)
    local_sum = np.where(positive, local_f1(tps, ndt, ngt), 0.0).sum(axis=1)

    precision = tp / (tp + fp + 1e-4)
    pm_precision = tp / (tp + pm_fp + 1e-4)
    recall = tp / (tp + fn + 1e-4)
    with np.errstate(invalid="ignore", divide="ignore"):  # no IL_TP image: macro F1 is NaN, as in SAM3
        macro = local_sum / n["IL_TP"][:, None]
    itp, ifp, itn, ifn = (n[k] for k in IL_COUNTS)
    mcc_den = np.power((itp + ifp).astype(float) * (itp + ifn).astype(float) * (itn + ifp).astype(float)
                       * (itn + ifn).astype(float), 0.5)
    out = {
        "TPs": tp, "FPs": fp, "FNs": fn, "positive_micro_FPs": pm_fp,
        "precision": precision, "positive_micro_precision": pm_precision, "recall": recall,
        "F1": 2 * precision * recall / (precision + recall + 1e-4),
        "positive_micro_F1": 2 * pm_precision * recall / (pm_precision + recall + 1e-4),
        "positive_macro_F1": macro,
        "IL_recall": itp / (itp + ifn + 1e-6), "IL_precision": itp / (itp + ifp + 1e-6),
        "IL_FPR": ifp / (ifp + itn + 1e-6),
        "IL_MCC": (itp * itn - ifp * ifn).astype(float) / (mcc_den + 1e-6),
        **n, "num_images": np.full(len(itp), tps.shape[1], dtype=np.int64),
    }
    out["IL_F1"] = 2 * out["IL_precision"] * out["IL_recall"] / (out["IL_precision"] + out["IL_recall"] + 1e-6)
    out["cgF1"] = out["positive_micro_F1"] * out["IL_MCC"][:, None]
    return out


def _mean_valid(values: np.ndarray) -> float:
    """SAM3's summary of a per-IoU array: the mean of the values > -1, or -1 when there are none."""
    valid = values[values > -1]
    return -1.0 if valid.size == 0 else float(np.mean(valid))


def summarize(acc: dict[str, np.ndarray], t_index: int = 0) -> CgF1Summary:
    """The summary SAM3's ``summarize`` prints, for score threshold ``t_index``.

    Per-IoU metrics are averaged over the 10 IoU thresholds (``name``) and read at 0.5 / 0.75
    (``name@0.5``, ``name@0.75``); ``pmF1`` is ``positive_micro_F1``. ``per_iou`` keeps the arrays.
    """
    out: dict[str, Any] = {}
    for name in PER_IOU_METRICS:
        values = acc[name][t_index]
        out[name] = _mean_valid(values)
        for thr in (0.5, 0.75):
            out[f"{name}@{thr:g}"] = _mean_valid(values[np.where(thr == IOU_THRESHOLDS)[0]])
    for name in SINGLE_METRICS:
        out[name] = float(acc[name][t_index])
    for suffix in ("", "@0.5", "@0.75"):
        out[f"pmF1{suffix}"] = out[f"positive_micro_F1{suffix}"]
    for name in (*IL_COUNTS, "num_images"):
        out[name] = int(acc[name][t_index])
    out["per_iou"] = {"iou_thresholds": IOU_THRESHOLDS.tolist(),
                      **{name: acc[name][t_index].tolist() for name in ("cgF1", "positive_micro_F1", "F1")},
                      **{name: acc[name][t_index].astype(int).tolist() for name in ("TPs", "FPs", "FNs")}}
    return CgF1Summary.model_validate(out)


def evaluate_cgf1(gts: Sequence[GroundTruth], preds: Predictions, score_threshold: float = 0.5) -> CgF1Summary:
    """The cgF1 summary of ``preds`` on one ground truth, or several (oracle protocol).

    Raises:
        InputError: see :func:`evaluate_counts`.
    """
    return summarize(accumulate(evaluate_counts(gts, preds, [score_threshold])))
