"""Straightforward reference evaluators for cgF1 and the CAFE target-aware table.

Slow on purpose: one pycocotools ``COCOeval`` per (image, ground-truth file), results loaded with
``COCO.loadRes`` image by image, Python loops over images and pairs — the way SAM3's
``CGF1Evaluator`` and CAFE's ``eval_cafe_metrics.py`` compute them. It exists to check the fast
evaluator (:mod:`segbench.tasks.cafe.cgf1`, :mod:`segbench.tasks.cafe.metrics`) in randomized tests.
Inputs are parsed JSON (dicts and lists); they are copied
before pycocotools mutates them. It validates nothing: give it valid inputs.
"""

from __future__ import annotations

import contextlib
import copy
import io
from collections import defaultdict
from typing import Any

import numpy as np
from pycocotools import mask as mask_utils
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
from scipy.optimize import linear_sum_assignment

SUBSETS = {"Superficial Mimicry": "SM", "Context Conflict": "CC", "Ontological Conflict": "OC"}


def _quiet_coco(dataset: dict[str, Any] | None = None) -> COCO:
    coco = COCO()
    if dataset is not None:
        coco.dataset = dataset
        with contextlib.redirect_stdout(io.StringIO()):
            coco.createIndex()
    return coco


class ReferenceCGF1Eval(COCOeval):
    """COCOeval with cgF1's per-image evaluation (no category split, no score sorting)."""

    def __init__(self, coco_gt: COCO, threshold: float) -> None:
        super().__init__(coco_gt, None, "segm")
        self.threshold = threshold
        self.params.useCats = False

    def _all(self, store: dict, image_id: int) -> list[dict[str, Any]]:
        return [a for cat in self.params.catIds for a in store[image_id, cat]]

    def evaluate_image(self, image_id: int, results: list[dict[str, Any]]) -> dict[str, Any]:
        with contextlib.redirect_stdout(io.StringIO()):
            self.cocoDt = self.cocoGt.loadRes(results) if results else COCO()
        self.params.imgIds = [image_id]
        self._prepare()
        all_gts, all_dts = self._all(self._gts, image_id), self._all(self._dts, image_id)
        gts = [g for g in all_gts if not g["ignore"]]
        dts = [d for d in all_dts if d["score"] >= self.threshold]
        base = {"IL_TP": 0, "IL_FP": 0, "IL_TN": 0, "IL_FN": 0, "num_dt": len(dts)}
        if not gts and not dts:
            return base | {"IL_TN": 1}
        n = len(self.params.iouThrs)
        if gts and not dts:
            zeros = np.zeros(n, dtype=np.int64)
            return base | {"IL_FN": 1, "TPs": zeros, "FPs": zeros, "FNs": np.full(n, len(gts)),
                           "local_F1s": zeros, "local_positive_F1s": zeros}
        ious = np.zeros((len(dts), len(gts)))
        if all_gts and all_dts:
            full = np.asarray(mask_utils.iou([d["segmentation"] for d in all_dts],
                                             [g["segmentation"] for g in all_gts],
                                             [int(g["iscrowd"]) for g in all_gts]))
            keep_dt = [d["score"] >= self.threshold for d in all_dts]
            keep_gt = [not g["ignore"] for g in all_gts]
            ious = full[np.asarray(keep_dt), :][:, np.asarray(keep_gt)]
        rows, cols = linear_sum_assignment(-ious)
        matched = ious[rows, cols]
        tps = np.array([(matched >= t).sum() for t in self.params.iouThrs], dtype=np.int64)
        fps, fns = len(dts) - tps, len(gts) - tps
        precision = tps / (tps + fps + 1e-4)
        recall = tps / (tps + fns + 1e-4)
        f1 = 2 * precision * recall / (precision + recall + 1e-4)
        result = base | {"IL_TP": int(bool(gts)), "IL_FP": int(not gts), "TPs": tps, "FPs": fps, "FNs": fns,
                         "local_F1s": f1}
        if gts:
            result["local_positive_F1s"] = f1
        return result


def _pick_best(scorings: list[dict[str, Any]]) -> dict[str, Any]:
    best = scorings[0]
    for current in scorings[1:]:
        if "local_F1s" in best and "local_F1s" in current:
            if current["local_F1s"].mean() > best["local_F1s"].mean():
                best = current
        elif "local_F1s" not in current:
            best = current
    return best


def _accumulate(results: list[dict[str, Any]], iou_thrs: np.ndarray) -> dict[str, Any]:
    n = len(iou_thrs)
    tp, fp, fn, pm_fp = (np.zeros(n, dtype=np.int64) for _ in range(4))
    local = np.zeros(n)
    il = dict.fromkeys(("IL_TP", "IL_FP", "IL_TN", "IL_FN"), 0)
    valid = 0
    for res in results:
        for key in il:
            il[key] += res[key]
        if "TPs" not in res:
            continue
        tp += res["TPs"]
        fp += res["FPs"]
        fn += res["FNs"]
        if "local_positive_F1s" in res:
            local += res["local_positive_F1s"]
            pm_fp += res["FPs"]
            valid += res["num_dt"] > 0
    precision = tp / (tp + fp + 1e-4)
    pm_precision = tp / (tp + pm_fp + 1e-4)
    recall = tp / (tp + fn + 1e-4)
    itp, ifp, itn, ifn = il["IL_TP"], il["IL_FP"], il["IL_TN"], il["IL_FN"]
    out = {"precision": precision, "positive_micro_precision": pm_precision, "recall": recall,
           "F1": 2 * precision * recall / (precision + recall + 1e-4),
           "positive_micro_F1": 2 * pm_precision * recall / (pm_precision + recall + 1e-4)}
    with np.errstate(invalid="ignore", divide="ignore"):
        out["positive_macro_F1"] = local / valid
    out["IL_recall"] = itp / (itp + ifn + 1e-6)
    out["IL_precision"] = itp / (itp + ifp + 1e-6)
    out["IL_F1"] = 2 * out["IL_precision"] * out["IL_recall"] / (out["IL_precision"] + out["IL_recall"] + 1e-6)
    out["IL_FPR"] = ifp / (ifp + itn + 1e-6)
    out["IL_MCC"] = float(itp * itn - ifp * ifn) / (
        (float(itp + ifp) * float(itp + ifn) * float(itn + ifp) * float(itn + ifn)) ** 0.5 + 1e-6)
    out["cgF1"] = out["positive_micro_F1"] * out["IL_MCC"]
    summary: dict[str, Any] = dict(il)
    for name in ("cgF1", "precision", "recall", "F1", "positive_macro_F1", "positive_micro_F1",
                 "positive_micro_precision"):
        for label, values in ((name, out[name]), (f"{name}@0.5", out[name][iou_thrs == 0.5]),
                              (f"{name}@0.75", out[name][iou_thrs == 0.75])):
            kept = values[values > -1]
            summary[label] = -1.0 if len(kept) == 0 else float(np.mean(kept))
    for name in ("IL_precision", "IL_recall", "IL_F1", "IL_FPR", "IL_MCC"):
        summary[name] = float(out[name])
    return summary


def _reference_results(gt_datasets: list[dict[str, Any]], predictions: list[dict[str, Any]],
                       threshold: float) -> tuple[list[tuple[int, dict[str, Any]]], np.ndarray, dict[int, Any]]:
    """Per evaluated image (in order): the chosen per-image result; also the IoU thresholds and the
    first file's images by id."""
    cocos = [_quiet_coco(copy.deepcopy(d)) for d in gt_datasets]
    evals = [ReferenceCGF1Eval(coco, threshold) for coco in cocos]
    excluded = {img["id"] for coco in cocos[1:] for img in coco.dataset["images"]
                if not img["is_instance_exhaustive"]}
    ids = [img["id"] for img in cocos[0].dataset["images"]
           if img["is_instance_exhaustive"] and img["id"] not in excluded]
    by_image: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for pred in predictions:
        by_image[pred["image_id"]].append(pred)
    results = [(i, _pick_best([ev.evaluate_image(i, copy.deepcopy(by_image[i])) for ev in evals])) for i in ids]
    return results, evals[0].params.iouThrs, cocos[0].imgs


def reference_cgf1(gt_datasets: list[dict[str, Any]], predictions: list[dict[str, Any]],
                   threshold: float = 0.5, image_ids: list[int] | None = None) -> dict[str, Any]:
    """cgF1 summary the SAM3 way (several ground truths = oracle); ``image_ids`` restricts the
    evaluated images (the per-subset files of CAFE)."""
    results, iou_thrs, _ = _reference_results(gt_datasets, predictions, threshold)
    wanted = None if image_ids is None else set(image_ids)
    return _accumulate([r for i, r in results if wanted is None or i in wanted], iou_thrs)


def reference_cafe(gt_dataset: dict[str, Any], predictions: list[dict[str, Any]], score_threshold: float = 0.5,
                   iou_threshold: float = 0.3) -> dict[str, dict[str, Any]]:
    """The CAFE table: target-aware counts and rates, and cgF1 per subset (images by their own
    ``edit_type``), each image evaluated once."""
    table = reference_target_aware(gt_dataset, predictions, score_threshold, iou_threshold)
    results, iou_thrs, images = _reference_results([gt_dataset], predictions, score_threshold)
    for subset in table:
        chosen = [r for i, r in results if subset == "Overall" or SUBSETS.get(images[i].get("edit_type")) == subset]
        table[subset]["cgF1_summary"] = _accumulate(chosen, iou_thrs) if chosen else None
    return table


def reference_target_aware(gt_dataset: dict[str, Any], predictions: list[dict[str, Any]],
                           score_threshold: float = 0.5, iou_threshold: float = 0.3) -> dict[str, dict[str, Any]]:
    """The CAFE target-aware table, one pair at a time, with TA-FN split into TA-FN and UA-FN."""
    positives = {im["id"]: im for im in gt_dataset["images"] if "fp_source_id" not in im}
    targets: dict[int, Any] = {}
    for ann in gt_dataset.get("annotations", []):
        if ann["image_id"] in positives and ann["image_id"] not in targets:
            targets[ann["image_id"]] = ann["segmentation"]
    by_image: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for pred in predictions:
        by_image[int(pred["image_id"])].append(pred)

    def ious(preds: list[dict[str, Any]], target: Any) -> np.ndarray:
        if not preds:
            return np.zeros(0)
        rles = [{"size": p["segmentation"]["size"], "counts": p["segmentation"]["counts"].encode()} for p in preds]
        target = {"size": target["size"], "counts": target["counts"].encode()}
        return np.asarray(mask_utils.iou(rles, [target], [0])).reshape(-1)

    rows = []
    for neg in (im for im in gt_dataset["images"] if "fp_source_id" in im):
        pos_id = neg["fp_source_id"]
        if pos_id not in targets:
            continue
        pos_preds, neg_preds = by_image.get(pos_id, []), by_image.get(neg["id"], [])
        pos_iou, neg_iou = ious(pos_preds, targets[pos_id]), ious(neg_preds, targets[pos_id])
        pos_s = np.array([p["score"] for p in pos_preds], dtype=float)
        neg_s = np.array([p["score"] for p in neg_preds], dtype=float)
        ta_tp = bool(((pos_s >= score_threshold) & (pos_iou >= iou_threshold)).any())
        aligned_low = bool((pos_iou >= iou_threshold).any())
        a = bool(((neg_s >= score_threshold) & (neg_iou >= iou_threshold)).any())
        u = bool(((neg_s >= score_threshold) & (neg_iou < iou_threshold)).any())
        # SoftSwap as CAFE's eval_cafe_metrics.py computes it: highest score, 0.0 without predictions.
        pos_max = float(pos_s.max()) if pos_s.size else 0.0
        neg_max = float(neg_s.max()) if neg_s.size else 0.0
        rows.append({"subset": SUBSETS[neg["edit_type"]], "TA-TP": ta_tp, "TA-FN": not ta_tp and aligned_low,
                     "UA-FN": not ta_tp and not aligned_low, "TA-FP": a, "UA-FP": not a and u,
                     "TN": not a and not u, "ACSR": not ta_tp and a, "UCSR": not ta_tp and not a and u,
                     "SoftSwap": neg_max > pos_max})
    table = {}
    for subset in ("SM", "CC", "OC", "Overall"):
        chosen = [r for r in rows if subset == "Overall" or r["subset"] == subset]
        n = len(chosen)
        entry: dict[str, Any] = {"N": n}
        for key in ("TA-TP", "TA-FN", "UA-FN", "TN", "TA-FP", "UA-FP"):
            entry[key] = sum(r[key] for r in chosen)
        if n:
            entry["AFPR"], entry["UFPR"] = entry["TA-FP"] / n, entry["UA-FP"] / n
            entry["IL-FPR"] = entry["AFPR"] + entry["UFPR"]
            entry["ACSR"] = sum(r["ACSR"] for r in chosen) / n
            entry["UCSR"] = sum(r["UCSR"] for r in chosen) / n
            entry["CSR"] = entry["ACSR"] + entry["UCSR"]
            entry["SoftSwap"] = sum(r["SoftSwap"] for r in chosen) / n
        table[subset] = entry
    return table
