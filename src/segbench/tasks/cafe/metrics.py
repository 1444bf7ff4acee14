"""CAFE evaluation: the target-aware table, the cgF1 family per subset, the τ sweep, calibration.

Seed 000, "Target-aware Classification": each pair is a positive image (q+, one target mask M) and
its misleading twin (q-, ``fp_source_id`` = the positive's id, no mask). With score threshold t and
alignment threshold τ (IoU with M, ``>=``), over *all* predictions of an image (any category):

- positive side: TA-TP if some prediction has s ≥ t and IoU ≥ τ; else TA-FN if some prediction is
  aligned (necessarily with s < t); else UA-FN. TA-FN + UA-FN is the "TA-FN" column of CAFE's public
  ``eval_cafe_metrics.py``, which does not split it;
- negative side: TA-FP if some prediction with s ≥ t is aligned; else UA-FP if some prediction with
  s ≥ t is not; else TN. AFPR = TA-FP/N, UFPR = UA-FP/N, IL-FPR = AFPR + UFPR;
  ACSR = mean[q+ ∉ TA-TP ∧ q- ∈ TA-FP], UCSR likewise with UA-FP, CSR = ACSR + UCSR;
- SoftSwap (CAFE's public toolkit, not in the paper): the share of pairs whose q-'s highest score is
  strictly greater than q+'s, over all predictions whatever their score or IoU; a prompt without
  predictions has highest score 0, and equal highest scores do not count. It depends on neither t
  nor τ, so it is the same at every τ of the sweep.

Pairs are the negatives (images carrying ``fp_source_id``) whose positive has an annotation; M is
the positive's first annotation in file order, the subset is the negative's ``edit_type`` — all as
CAFE's script reads them. cgF1, IL_MCC and pmF1 (:mod:`segbench.tasks.cafe.cgf1`) are computed per subset
on the images whose own ``edit_type`` is that subset: what SAM3's evaluator gives on the per-subset
file. Rates of an empty subset are ``None``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from segbench.core.errors import InputError
from segbench.core.gc_pause import collection_paused
from segbench.schemas.cafe import TAU_SWEEP
from segbench.schemas.cafe_metrics import (
    CafeMetrics,
    CafeParamsUsed,
    CafeSubset,
    Calibration,
    CgF1Summary,
    TargetAwareRates,
    TauSweep,
)
from segbench.schemas.edits import EditType
from segbench.tasks.cafe.cgf1 import TargetIous, accumulate, evaluate_counts, evaluation_image_ids, summarize
from segbench.tasks.cafe.cgf1_inputs import GroundTruth, Predictions
from segbench.tasks.cafe.mask_ious import grouped_ious

if TYPE_CHECKING:
    from segbench.core.masks import PycocoRle

SUBSETS = tuple(e.abbr for e in EditType)
OVERALL = "Overall"
COUNT_KEYS = ("N", "TA-TP", "TA-FN", "UA-FN", "TN", "TA-FP", "UA-FP")
CGF1_KEYS = ("cgF1", "cgF1@0.5", "cgF1@0.75", "IL_MCC", "pmF1")
CALIBRATION_GRID = tuple(round(0.01 * k, 2) for k in range(1, 100))
_ABBR = {e.value: e.abbr for e in EditType}


@dataclass
class CafePairs:
    """The pairs and every prediction's IoU with its pair's target mask, flattened.

    ``pos_id``, ``neg_id``, ``subset`` are ``(n_pairs,)``; ``pos_pair``/``pos_iou``/``pos_score``
    list the positives' predictions (pair index, IoU with M, score), ``neg_*`` the negatives'.
    ``pos_max``/``neg_max`` (``(n_pairs,)``) are each prompt's highest score, 0 without predictions.
    ``target_ious`` holds the positives' IoUs again, by prediction, for cgF1 to reuse.
    """

    pos_id: np.ndarray
    neg_id: np.ndarray
    subset: np.ndarray
    pos_pair: np.ndarray
    pos_iou: np.ndarray
    pos_score: np.ndarray
    neg_pair: np.ndarray
    neg_iou: np.ndarray
    neg_score: np.ndarray
    pos_max: np.ndarray
    neg_max: np.ndarray
    target_ious: TargetIous | None = None

    def __len__(self) -> int:
        return len(self.neg_id)


def _pair_columns(gt: GroundTruth, image_ids: set[int] | None) -> tuple[list[int], list[int], list[str], list[Any]]:
    """``(positive ids, negative ids, subsets, target annotations)`` of the pairs, in file order.

    Raises:
        InputError: see :func:`build_pairs`.
    """
    positives = {img["id"] for img in gt.entries if "fp_source_id" not in img}
    pos_ids, neg_ids, subsets, targets = [], [], [], []
    for neg in gt.entries:
        if "fp_source_id" not in neg or (image_ids is not None and neg["id"] not in image_ids):
            continue
        pos_id = neg["fp_source_id"]
        if pos_id not in positives:
            raise InputError(f"fp_source_id {pos_id!r} is not a positive image", path=gt.path,
                             item=f"image {neg['id']}",
                             hint="fp_source_id must be the id of the positive twin (an image without fp_source_id)")
        if pos_id not in gt.first_annotation:
            continue  # no target mask: CAFE's script skips the pair too
        if neg.get("edit_type") not in _ABBR:
            raise InputError(f"edit_type {neg.get('edit_type')!r} is not a CAFE edit type", path=gt.path,
                             item=f"image {neg['id']}",
                             hint=f"use one of {', '.join(_ABBR)}")
        target = gt.first_annotation[pos_id]
        size = gt.rle(target)["size"]
        if list(size) != [neg["height"], neg["width"]]:
            raise InputError(f"size {neg['height']}x{neg['width']} differs from its positive's mask "
                             f"{size}", path=gt.path, item=f"image {neg['id']}", hint="both twins share one image size")
        pos_ids.append(pos_id)
        neg_ids.append(neg["id"])
        subsets.append(_ABBR[neg["edit_type"]])
        targets.append(target)
    return pos_ids, neg_ids, subsets, targets


def _target_ious(preds: Predictions, pos_ids: list[int], neg_ids: list[int],
                 targets: list[PycocoRle]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(pair index, prediction index, on the positive, IoU with the pair's target)`` of every
    prediction of both images of each pair (pycocotools' numbers, :func:`grouped_ious`)."""
    pos = [preds.by_image.get(i, []) for i in pos_ids]
    neg = [preds.by_image.get(i, []) for i in neg_ids]
    members = [p + n for p, n in zip(pos, neg, strict=True)]
    sizes = np.fromiter(map(len, members), dtype=np.int64, count=len(members))
    positive = [flag for p, n in zip(pos, neg, strict=True) for flag in ([True] * len(p) + [False] * len(n))]
    return (np.repeat(np.arange(len(members), dtype=np.int64), sizes),
            np.asarray([i for m in members for i in m], dtype=np.int64), np.asarray(positive, dtype=bool),
            grouped_ious(preds.rles, members, targets))


@collection_paused()
def build_pairs(gt: GroundTruth, preds: Predictions, image_ids: set[int] | None = None) -> CafePairs:
    """Pair every negative (restricted to ``image_ids`` if given) with its positive and target.

    The IoUs with the target are computed once per prediction; the positives' ones are kept in
    ``target_ious`` for cgF1, whose ground truth on a positive image is usually that target alone.

    Raises:
        InputError: a negative names an unknown positive, has no valid ``edit_type``, or its size
            differs from its positive's target mask.
    """
    pos_ids, neg_ids, subsets, targets = _pair_columns(gt, image_ids)
    pair, index, positive, ious = _target_ious(preds, pos_ids, neg_ids, [gt.rle(t) for t in targets])
    pos_pair, pos_index, pos_iou = pair[positive], index[positive], ious[positive]
    neg_pair, neg_index, neg_iou = pair[~positive], index[~positive], ious[~positive]
    shared = np.full(len(preds), np.nan)
    shared[pos_index] = pos_iou
    n = len(neg_ids)
    pos_score, neg_score = preds.score[pos_index], preds.score[neg_index]
    return CafePairs(pos_id=np.asarray(pos_ids, dtype=np.int64), neg_id=np.asarray(neg_ids, dtype=np.int64),
                     subset=np.asarray(subsets, dtype=object), pos_pair=pos_pair, pos_iou=pos_iou,
                     pos_score=pos_score, neg_pair=neg_pair, neg_iou=neg_iou, neg_score=neg_score,
                     pos_max=highest_scores(pos_pair, pos_score, n), neg_max=highest_scores(neg_pair, neg_score, n),
                     target_ious=TargetIous(shared, dict(zip(pos_ids, targets, strict=True))))


def highest_scores(pair: np.ndarray, score: np.ndarray, n: int) -> np.ndarray:
    """Each pair's highest prediction score ``(n,)``; 0 for a prompt without predictions (CAFE's toolkit)."""
    out = np.full(n, -np.inf)
    np.maximum.at(out, pair, score)
    out[np.bincount(pair, minlength=n) == 0] = 0.0
    return out


def _any(pair: np.ndarray, hit: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(pair[hit], minlength=n) > 0


def classify_pairs(pairs: CafePairs, score_threshold: float, iou_threshold: float) -> dict[str, np.ndarray]:
    """Per-pair boolean flags ``(n_pairs,)``: TA-TP, TA-FN, UA-FN, TA-FP, UA-FP, TN, ACSR, UCSR, SoftSwap."""
    n = len(pairs)
    pos_aligned, neg_aligned = pairs.pos_iou >= iou_threshold, pairs.neg_iou >= iou_threshold
    neg_confident = pairs.neg_score >= score_threshold
    ta_tp = _any(pairs.pos_pair, pos_aligned & (pairs.pos_score >= score_threshold), n)
    any_aligned = _any(pairs.pos_pair, pos_aligned, n)
    ta_fp = _any(pairs.neg_pair, neg_confident & neg_aligned, n)
    ua_fp = ~ta_fp & _any(pairs.neg_pair, neg_confident & ~neg_aligned, n)
    return {"TA-TP": ta_tp, "TA-FN": ~ta_tp & any_aligned, "UA-FN": ~ta_tp & ~any_aligned,
            "TA-FP": ta_fp, "UA-FP": ua_fp, "TN": ~ta_fp & ~ua_fp,
            "ACSR": ~ta_tp & ta_fp, "UCSR": ~ta_tp & ua_fp, "SoftSwap": pairs.neg_max > pairs.pos_max}


def target_aware_table(flags: dict[str, np.ndarray], select: np.ndarray) -> TargetAwareRates:
    """Counts and rates over the pairs selected by the boolean mask ``select``."""
    n = int(select.sum())
    out: dict[str, Any] = {"N": n, **{k: int(flags[k][select].sum()) for k in COUNT_KEYS[1:]}}
    rates = {"AFPR": out["TA-FP"], "UFPR": out["UA-FP"], "ACSR": int(flags["ACSR"][select].sum()),
             "UCSR": int(flags["UCSR"][select].sum()), "SoftSwap": int(flags["SoftSwap"][select].sum())}
    out |= {k: (v / n if n else None) for k, v in rates.items()}
    out["IL-FPR"] = out["AFPR"] + out["UFPR"] if n else None
    out["CSR"] = out["ACSR"] + out["UCSR"] if n else None
    return TargetAwareRates.model_validate(out)


def subset_of_images(gt: GroundTruth, image_ids: np.ndarray) -> np.ndarray:
    """Each image's own subset abbreviation (``""`` when it has no CAFE ``edit_type``)."""
    return np.asarray([_ABBR.get(gt.images[i].get("edit_type") or "", "") for i in image_ids.tolist()], dtype=object)


def cgf1_by_subset(gt: GroundTruth, preds: Predictions, thresholds: Sequence[float],
                   image_ids: set[int] | None = None, target_ious: TargetIous | None = None,
                   ) -> dict[str, list[CgF1Summary | None]]:
    """cgF1 summaries per subset (and Overall), one per score threshold (``target_ious``: IoUs already known)."""
    ids = [i for i in evaluation_image_ids([gt]) if image_ids is None or i in image_ids]
    counts = evaluate_counts([gt], preds, thresholds, image_ids=ids, target_ious=target_ious)
    subsets = subset_of_images(gt, counts.image_ids)
    out: dict[str, list[CgF1Summary | None]] = {}
    for name in (*SUBSETS, OVERALL):
        select = np.ones(len(subsets), bool) if name == OVERALL else subsets == name
        if not select.any():
            out[name] = [None] * len(thresholds)
            continue
        acc = accumulate(counts.take(select))
        out[name] = [summarize(acc, k) for k in range(len(thresholds))]
    return out


def tau_sweep(pairs: CafePairs, score_threshold: float, taus: Sequence[float]) -> TauSweep:
    """Target-aware counts and rates per subset at each τ."""
    tables: dict[str, list[TargetAwareRates]] = {name: [] for name in (*SUBSETS, OVERALL)}
    for tau in taus:
        flags = classify_pairs(pairs, score_threshold, tau)
        for name in tables:
            select = np.ones(len(pairs), bool) if name == OVERALL else pairs.subset == name
            tables[name].append(target_aware_table(flags, select))
    return TauSweep(tau=list(taus), **tables)


@collection_paused()
def evaluate_cafe(gt: GroundTruth, preds: Predictions, *, score_threshold: float = 0.5, iou_threshold: float = 0.3,
                  taus: Sequence[float] = TAU_SWEEP, image_ids: set[int] | None = None) -> CafeMetrics:
    """The CAFE table per subset and Overall (target-aware counts, rates, cgF1 family) and the τ sweep.

    ``image_ids`` restricts the evaluation (pairs by their negative, cgF1 by image).

    Raises:
        InputError: a malformed pair (:func:`build_pairs`) or nothing to evaluate.
    """
    pairs = build_pairs(gt, preds, image_ids)
    flags = classify_pairs(pairs, score_threshold, iou_threshold)
    cg = cgf1_by_subset(gt, preds, [score_threshold], image_ids, pairs.target_ious)
    rows: dict[str, CafeSubset] = {}
    for name in (*SUBSETS, OVERALL):
        select = np.ones(len(pairs), bool) if name == OVERALL else pairs.subset == name
        summary = cg[name][0]
        family = summary.model_dump(by_alias=True) if summary else {}
        rows[name] = CafeSubset.model_validate(target_aware_table(flags, select).model_dump() | {
            k: family.get(k) for k in CGF1_KEYS} | {"cgF1_images": summary.num_images if summary else 0})
    return CafeMetrics(**rows, tau_sweep=tau_sweep(pairs, score_threshold, taus),
                       params=CafeParamsUsed(score_threshold=score_threshold, iou_threshold=iou_threshold))


@collection_paused()
def calibrate(gt: GroundTruth, preds: Predictions, *, grid: Sequence[float] = CALIBRATION_GRID,
              image_ids: set[int] | None = None) -> Calibration:
    """The score threshold maximising Overall cgF1 on ``image_ids`` (all images by default), with the
    curve it was read from; ties go to the threshold nearest SAM3's default 0.5 (then the lower one)."""
    summaries = cgf1_by_subset(gt, preds, grid, image_ids)[OVERALL]
    if summaries[0] is None:
        raise InputError("the calibration split has no exhaustively annotated image", path=gt.path,
                         hint="use a larger calibration fraction or another calibration set")
    values = [s.cgF1 for s in summaries if s is not None]  # one image set: all None or none
    top = max(values)
    best = min((k for k, v in enumerate(values) if v == top), key=lambda k: (abs(grid[k] - 0.5), grid[k]))
    return Calibration(threshold=float(grid[best]), cgF1=values[best],
                       curve=[(float(t), v) for t, v in zip(grid, values, strict=True)])


def split_for_calibration(gt: GroundTruth, fraction: float, seed: int) -> tuple[set[int], set[int]]:
    """A seeded split of the pairs: (calibration image ids, evaluation image ids).

    ``round(fraction × pairs)`` pairs, chosen with ``numpy.random.default_rng(seed)`` over the pairs
    sorted by negative id, give both their images to calibration; every other image is evaluated.

    Raises:
        InputError: the fraction leaves no pair on one side.
    """
    pairs = sorted((img["id"], img["fp_source_id"]) for img in gt.entries if "fp_source_id" in img)
    k = round(fraction * len(pairs))
    if not 0 < k < len(pairs):
        raise InputError(f"calibration fraction {fraction} of {len(pairs)} pairs leaves one side empty",
                         path=gt.path, hint="choose a fraction strictly between 0 and 1, or pass a calibration set")
    chosen = np.random.default_rng(seed).permutation(len(pairs))[:k]
    calibration = {i for j in chosen.tolist() for i in pairs[j]}
    return calibration, {img["id"] for img in gt.entries} - calibration
