"""Prefect flows ``evaluate-cafe`` and ``evaluate-cgf1``.

Orchestration only: reading is :mod:`segbench.tasks.cgf1_inputs`, the metrics are
:mod:`segbench.tasks.cafe_metrics` / :mod:`segbench.tasks.cgf1`, the report is
:mod:`segbench.tasks.cafe_eval_report`. Loading and scoring run in one task because the indexed
ground truth is a large object that Prefect would otherwise walk between tasks.

Usage::

    from segbench.flows.evaluate_cafe import evaluate_cafe, evaluate_cgf1
    result = evaluate_cafe(repo=".", rev="v1", gt=None, predictions="sam3.json", out="data/eval/cafe/sam3")
    result["metrics"]["Overall"]["cgF1"], result["paths"]["report"]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from segbench.errors import InputError
from segbench.schemas.cafe_eval import CafeEvalParams
from segbench.tasks.cafe_eval_report import write_cafe_report, write_cgf1_report
from segbench.tasks.cafe_metrics import calibrate, split_for_calibration
from segbench.tasks.cafe_metrics import evaluate_cafe as cafe_metrics
from segbench.tasks.cgf1 import evaluate_cgf1 as cgf1_summary
from segbench.tasks.cgf1_inputs import GroundTruth, read_ground_truth, read_predictions
from segbench.tasks.versioning import DatasetSource

CAFE_EXPORT = "CAFE.json"


def _cafe_ground_truth(repo: str, rev: str | None, gt: str | None, dataset_dir: str) -> tuple[GroundTruth, str]:
    if gt is not None:
        return read_ground_truth(gt), gt
    relpath = f"{dataset_dir}/{CAFE_EXPORT}"
    with DatasetSource(repo, rev) as source:
        return read_ground_truth(relpath, source.read_bytes(relpath)), f"{source.describe()}:{relpath}"


def _optional(path: str | Path | None) -> str | None:
    return None if path is None else str(path)


@task(name="score-cafe", cache_policy=NO_CACHE)
def score_cafe(repo: str, rev: str | None, gt: str | None, dataset_dir: str, predictions: str,
               params: CafeEvalParams, calibration_gt: str | None = None,
               calibration_predictions: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read the inputs, calibrate if asked, and compute the CAFE metrics; returns (metrics, evaluated)."""
    truth, source = _cafe_ground_truth(repo, rev, gt, dataset_dir)
    preds = read_predictions(predictions, truth)
    evaluated: dict[str, Any] = {"ground_truth": source, "predictions": predictions}
    threshold, calibration, keep = params.score_threshold, None, None
    if params.calibrate:
        if calibration_gt is not None:
            cal_truth = read_ground_truth(calibration_gt)
            calibration = calibrate(cal_truth, read_predictions(calibration_predictions, cal_truth))
            calibration["source"] = f"{calibration_gt} + {calibration_predictions}"
        else:
            cal_ids, keep = split_for_calibration(truth, params.calibration_fraction, params.seed)
            calibration = calibrate(truth, preds, image_ids=cal_ids)
            calibration["source"] = (f"{len(cal_ids) // 2} pairs ({params.calibration_fraction:g} of the pairs, "
                                     f"seed {params.seed}), left out of the numbers below")
        threshold = calibration["threshold"]
    metrics = cafe_metrics(truth, preds, score_threshold=threshold, iou_threshold=params.iou_threshold,
                           taus=params.taus, image_ids=keep)
    metrics["calibration"] = calibration
    return metrics, evaluated


@task(name="write-cafe-report", cache_policy=NO_CACHE)
def write_cafe_report_task(out: str, metrics: dict[str, Any], evaluated: dict[str, Any]) -> dict[str, str]:
    return {name: str(path) for name, path in write_cafe_report(out, metrics, evaluated).items()}


@flow(name="evaluate-cafe")
def evaluate_cafe(repo: str | Path, rev: str | None, gt: str | Path | None, predictions: str | Path,
                  out: str | Path, dataset_dir: str = "data/cafe", params: CafeEvalParams | None = None,
                  calibration_gt: str | Path | None = None,
                  calibration_predictions: str | Path | None = None) -> dict[str, Any]:
    """Score COCO results on CAFE and write the report.

    Args:
        repo, rev: the project and the git revision of the published dataset (``None`` = working tree),
            read as ``{dataset_dir}/CAFE.json`` when ``gt`` is not given.
        gt: a CAFE export to read instead of the published one.
        predictions: COCO results for both images of each pair.
        out: report folder (metrics.json, report.md, cgf1_by_subset.png, false_positive_rates.png, tau_sweep.png).
        params: thresholds, τ sweep and calibration (:class:`CafeEvalParams`).
        calibration_gt, calibration_predictions: a calibration set (both or neither).

    Returns:
        ``{"metrics": <metrics dict>, "paths": {name: str}}``.

    Raises:
        InputError: a malformed ground truth, predictions or pair, or half a calibration set.
    """
    logger = get_run_logger()
    params = params or CafeEvalParams()
    if (calibration_gt is None) != (calibration_predictions is None):
        raise InputError("a calibration set needs both --calibration-gt and --calibration-predictions",
                         hint="pass both, or neither to calibrate on a seeded fraction of the pairs")
    metrics, evaluated = score_cafe(str(repo), rev, _optional(gt), dataset_dir, str(predictions), params,
                                    _optional(calibration_gt), _optional(calibration_predictions))
    evaluated |= {"rev": rev, "score_threshold": metrics["params"]["score_threshold"],
                  "iou_threshold": params.iou_threshold}
    paths = write_cafe_report_task(str(out), metrics, evaluated)
    overall = metrics["Overall"]
    logger.info("CAFE: %d pairs, cgF1 %s, AFPR %s -> %s", overall["N"], overall["cgF1"], overall["AFPR"],
                paths["report"])
    return {"metrics": metrics, "paths": paths}


@task(name="score-cgf1", cache_policy=NO_CACHE)
def score_cgf1(gts: list[str], predictions: str, score_threshold: float) -> dict[str, Any]:
    """Read the ground truths and predictions and compute the cgF1 summary."""
    truths = [read_ground_truth(path) for path in gts]
    return cgf1_summary(truths, read_predictions(predictions, truths[0]), score_threshold)


@task(name="write-cgf1-report", cache_policy=NO_CACHE)
def write_cgf1_report_task(out: str, summary: dict[str, Any], evaluated: dict[str, Any]) -> dict[str, str]:
    return {name: str(path) for name, path in write_cgf1_report(out, summary, evaluated).items()}


@flow(name="evaluate-cgf1")
def evaluate_cgf1(gts: list[str | Path], predictions: str | Path, out: str | Path,
                  score_threshold: float = 0.5) -> dict[str, Any]:
    """cgF1, IL_MCC, pmF1 and the rest of SAM3's summary on SA-Co-format ground truth.

    Several ``gts`` evaluate the oracle protocol (each image keeps its best-matching ground truth).

    Returns:
        ``{"metrics": <summary>, "paths": {"metrics", "report", "cgf1_by_iou": str}}``.

    Raises:
        InputError: a malformed ground truth or predictions file, or no exhaustively annotated image.
    """
    logger = get_run_logger()
    gts = [str(p) for p in gts]
    summary = score_cgf1(gts, str(predictions), score_threshold)
    evaluated = {"ground_truth": gts, "predictions": str(predictions), "score_threshold": score_threshold,
                 "protocol": "oracle" if len(gts) > 1 else "single ground truth"}
    paths = write_cgf1_report_task(str(out), summary, evaluated)
    logger.info("cgF1 %s, IL_MCC %s, pmF1 %s -> %s", summary["cgF1"], summary["IL_MCC"], summary["pmF1"],
                paths["report"])
    return {"metrics": summary, "paths": paths}
