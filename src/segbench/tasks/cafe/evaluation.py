"""The CAFE and cgF1 evaluations, whole: inputs → build key → scoring → report, on any :class:`Steps`.

``evaluate cafe`` / ``evaluate cgf1`` typed by hand call these with
:class:`~segbench.core.steps.InProcess` (no Prefect engine); the flows ``evaluate-cafe`` and
``evaluate-cgf1`` (:mod:`segbench.flows.cafe.evaluate`) call them with their task runs. Reading is
:mod:`segbench.tasks.cafe.cgf1_inputs`, the metrics :mod:`segbench.tasks.cafe.metrics` /
:mod:`segbench.tasks.cafe.cgf1`, the report :mod:`segbench.tasks.cafe.eval_report`. Loading and
scoring are one unit because the indexed ground truth is a large object a flow would otherwise
pass between tasks.

An evaluation is skipped when its report is up to date (same logic version, parameters, ground truth
and predictions; :mod:`segbench.core.evaluation_keys`). The report is written in a resumable stage.

Usage::

    from segbench.tasks.cafe.evaluation import evaluate_cafe
    result = evaluate_cafe(repo=".", rev="v1", gt=None, predictions="sam3.json", out="reports/cafe/sam3")
    result.summary.Overall.cgF1, result.paths["report"]
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from segbench.core.build import Build, Built, Stage
from segbench.core.errors import InputError
from segbench.core.evaluation_keys import GROUND_TRUTH, PREDICTIONS, ground_truth_hashes, local_hashes, run_evaluation
from segbench.core.integrity import data_source
from segbench.core.reports import cell, portable_paths
from segbench.core.steps import InProcess, Steps
from segbench.core.versioning import DatasetSource
from segbench.schemas.cafe import CafeEvalParams
from segbench.schemas.cafe_metrics import CafeMetrics, CgF1Each, CgF1Summary, Ignored
from segbench.schemas.results import EvaluationResult
from segbench.tasks.cafe import versions
from segbench.tasks.cafe.cgf1 import evaluate_cgf1 as cgf1_summary
from segbench.tasks.cafe.cgf1_inputs import (
    GroundTruth,
    ignored_summary,
    read_ground_truth,
    read_predictions,
)
from segbench.tasks.cafe.eval_report import write_cafe_report, write_cgf1_each_report, write_cgf1_report
from segbench.tasks.cafe.metrics import calibrate, split_for_calibration
from segbench.tasks.cafe.metrics import evaluate_cafe as cafe_metrics

CAFE_EXPORT = "CAFE.json"


def _cafe_ground_truth(repo: str, rev: str | None, gt: str | None, dataset_dir: str) -> tuple[GroundTruth, str]:
    if gt is not None:
        return read_ground_truth(gt), gt
    relpath = f"{dataset_dir}/{CAFE_EXPORT}"
    with data_source(repo, rev) as source:
        return read_ground_truth(relpath, source.read_bytes(relpath)), f"{source.describe()}:{relpath}"


def _optional(path: str | Path | None) -> str | None:
    return None if path is None else str(path)


def hash_published_export(repo: str, rev: str | None, dataset_dir: str) -> dict[str, str]:
    """sha256 standing for the published ``CAFE.json`` (``evaluation_keys.ground_truth_hashes``)."""
    with data_source(repo, rev) as source:
        return ground_truth_hashes(source, [f"{dataset_dir}/{CAFE_EXPORT}"], dataset_dir)


def score_cafe(unit_key: str, repo: str, rev: str | None, gt: str | None, dataset_dir: str, predictions: str,
               params: CafeEvalParams, calibration_gt: str | None = None,
               calibration_predictions: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read the inputs, calibrate if asked, and compute the CAFE metrics; returns (metrics, evaluated).

    A unit remembered under ``unit_key`` when a flow runs it.
    """
    truth, source = _cafe_ground_truth(repo, rev, gt, dataset_dir)
    preds = read_predictions(predictions, truth)
    ignored = ignored_summary(preds, truth, other_files=False)
    evaluated: dict[str, Any] = {"ground_truth": source, "predictions": predictions}
    threshold, calibration, keep = params.score_threshold, None, None
    if params.calibrate:
        if calibration_gt is not None and calibration_predictions is not None:  # both or neither
            cal_truth = read_ground_truth(calibration_gt)
            calibration = calibrate(cal_truth, read_predictions(calibration_predictions, cal_truth)).model_copy(
                update={"source": f"{calibration_gt} + {calibration_predictions}"})
        else:
            cal_ids, keep = split_for_calibration(truth, params.calibration_fraction, params.seed)
            calibration = calibrate(truth, preds, image_ids=cal_ids).model_copy(update={"source": (
                f"{len(cal_ids) // 2} pairs ({params.calibration_fraction:g} of the pairs, seed {params.seed}), "
                "left out of the numbers below")})
        threshold = calibration.threshold
    metrics = cafe_metrics(truth, preds, score_threshold=threshold, iou_threshold=params.iou_threshold,
                           taus=params.taus, image_ids=keep)
    metrics = metrics.model_copy(update={"calibration": calibration, "ignored": ignored})
    return metrics.model_dump(mode="json"), evaluated  # as the report writers read it


def write_cafe_files(out: str, metrics: dict[str, Any], evaluated: dict[str, Any]) -> dict[str, str]:
    return {name: str(path) for name, path in write_cafe_report(out, metrics, evaluated).items()}


def evaluate_cafe(repo: str | Path, rev: str | None, gt: str | Path | None, predictions: str | Path,
                  out: str | Path, dataset_dir: str = "data/cafe", params: CafeEvalParams | None = None,
                  calibration_gt: str | Path | None = None, calibration_predictions: str | Path | None = None,
                  force: bool = False, steps: Steps | None = None) -> EvaluationResult[CafeMetrics]:
    """Score COCO results on CAFE and write the report.

    Args:
        repo, rev: the project and the git revision of the published dataset (``None`` = working tree),
            read as ``{dataset_dir}/CAFE.json`` when ``gt`` is not given.
        gt: a CAFE export to read instead of the published one.
        predictions: COCO results for both images of each pair.
        out: report folder (metrics.json, report.md, cgf1_by_subset.png, false_positive_rates.png, tau_sweep.png,
            manifest.json).
        params: thresholds, τ sweep and calibration (:class:`CafeEvalParams`).
        calibration_gt, calibration_predictions: a calibration set (both or neither).
        force: evaluate again even when the report is up to date.
        steps: who runs the steps (default: this process, :class:`InProcess`).

    Returns:
        The result, whose ``summary`` is the metrics dict; an up-to-date run reads the metrics back
        from metrics.json.

    Raises:
        InputError: a malformed ground truth, predictions or pair, or half a calibration set.
    """
    steps = steps or InProcess()
    params = params or CafeEvalParams()
    if (calibration_gt is None) != (calibration_predictions is None):
        raise InputError("a calibration set needs both --calibration-gt and --calibration-predictions",
                         hint="pass both, or neither to calibrate on a seeded fraction of the pairs")
    repo, predictions = str(repo), str(predictions)
    gt, calibration_gt, calibration_predictions = map(_optional, (gt, calibration_gt, calibration_predictions))
    hashes = (local_hashes(GROUND_TRUTH, {"CAFE": gt}) if gt is not None
              else steps.call("hash-cafe-ground-truth", hash_published_export, repo, rev, dataset_dir))
    hashes |= local_hashes(PREDICTIONS, {"predictions": predictions})
    if calibration_gt is not None and calibration_predictions is not None:
        hashes |= local_hashes("calibration", {"gt": calibration_gt, "predictions": calibration_predictions})
    inputs = {"source": DatasetSource(repo, rev).describe(), "rev": rev, "gt": gt, "dataset_dir": dataset_dir,
              "predictions": predictions, "calibration_gt": calibration_gt,
              "calibration_predictions": calibration_predictions}
    build = Build(out=Path(out), dataset="eval/cafe", logic_version=versions.EVALUATION,
                  params={**inputs, **params.model_dump(mode="json")}, input_hashes=hashes)
    result = run_evaluation(build, lambda stage: _score_cafe(steps, stage, repo, inputs, params), CafeMetrics,
                            force=force, logger=steps.logger)
    log_ignored(steps.logger, result.summary.ignored, predictions)
    if not result.up_to_date:
        overall = result.summary.Overall
        steps.logger.info("CAFE: %d pairs, cgF1 %s, AFPR %s -> %s", overall.N, cell(overall.cgF1),
                          cell(overall.AFPR), result.paths["report"])
    return result


def _score_cafe(steps: Steps, stage: Stage, repo: str, inputs: dict[str, Any], params: CafeEvalParams) -> Built:
    """Score (a unit) and write the report into ``stage``; ``inputs`` names what is read."""
    metrics, evaluated = steps.unit("score-cafe", score_cafe, stage.unit_key("score"), repo, inputs["rev"],
                                    inputs["gt"], inputs["dataset_dir"], inputs["predictions"], params,
                                    inputs["calibration_gt"], inputs["calibration_predictions"])
    # Relative to the project: the report is versioned and must not name this machine's folders.
    evaluated = portable_paths(evaluated | {"rev": inputs["rev"], "score_threshold": metrics["params"]["score_threshold"],
                                            "iou_threshold": params.iou_threshold}, repo)
    steps.call("write-cafe-report", write_cafe_files, str(stage.path), metrics, evaluated)
    return Built(counts={"pairs": metrics["Overall"]["N"]}, units=steps.unit_counts(), extras={"summary": metrics})


def log_ignored(logger: logging.Logger | logging.LoggerAdapter, ignored: Ignored | None, predictions: str) -> None:
    if ignored and ignored.predictions:
        log = logger.info if ignored.expected else logger.warning
        log("%d predictions of %s on %d images are not in the ground truth and were ignored: %s",
            ignored.predictions, predictions, ignored.images, ignored.reason)


def score_cgf1(unit_key: str, gts: list[str], predictions: str, score_threshold: float,
               each: bool = False) -> dict[str, Any]:
    """Read the ground truths and predictions and compute the cgF1 summary (oracle over ``gts``), or
    with ``each`` one summary per ground truth: ``{"files": [{"ground_truth", "ignored", ...summary}]}``."""
    truths = [read_ground_truth(path) for path in gts]
    known = {i for truth in truths for i in truth.images} if len(truths) > 1 else None
    if not each:
        preds = read_predictions(predictions, truths[0], known)
        return cgf1_summary(truths, preds, score_threshold).model_copy(update={
            "ignored": ignored_summary(preds, truths[0], other_files=len(truths) > 1)}).model_dump(mode="json")
    files = []
    for truth in truths:  # the file is read once per ground truth: only one index is in memory at a time
        preds = read_predictions(predictions, truth, known)
        files.append({"ground_truth": truth.path, **cgf1_summary([truth], preds, score_threshold).model_copy(update={
            "ignored": ignored_summary(preds, truth, other_files=len(truths) > 1)}).model_dump(mode="json")})
    return {"files": files}


def write_cgf1_files(out: str, summary: dict[str, Any], evaluated: dict[str, Any]) -> dict[str, str]:
    write = write_cgf1_each_report if "files" in summary else write_cgf1_report
    return {name: str(path) for name, path in write(out, summary, evaluated).items()}


def evaluate_cgf1(gts: list[str | Path], predictions: str | Path, out: str | Path, score_threshold: float = 0.5,
                  force: bool = False, each: bool = False,
                  steps: Steps | None = None) -> EvaluationResult[CgF1Summary | CgF1Each]:
    """cgF1, IL_MCC, pmF1 and the rest of SAM3's summary on SA-Co-format ground truth.

    Several ``gts`` evaluate the oracle protocol (each image keeps its best-matching ground truth);
    with ``each``, the predictions are scored against each file in turn (CAFE's ``run_eval.sh`` on
    CAFE_SM/CC/OC.json) and the summary is a :class:`CgF1Each`. Predictions for images outside a
    file are ignored and counted (``summary.ignored``); with several files, an image in none of
    them is an error.

    Skipped when the report is up to date with these files and threshold, unless ``force``.

    Returns:
        The result, whose ``summary`` is the :class:`CgF1Summary` (a :class:`CgF1Each` with ``each``)
        and ``paths`` names ``metrics``, ``report`` and ``cgf1_by_iou``.

    Raises:
        InputError: a malformed ground truth or predictions file, or no exhaustively annotated image.
    """
    if not 0 <= score_threshold <= 1:  # NaN fails too
        raise InputError(f"the score threshold must lie in [0, 1], got {score_threshold}", item="--score-threshold",
                         hint="pass a presence score such as 0.5 (SAM3's default)")
    steps = steps or InProcess()
    gts, predictions, out = [str(p) for p in gts], str(predictions), str(out)
    protocol = "each ground truth in turn" if each else "oracle" if len(gts) > 1 else "single ground truth"
    evaluated = {"ground_truth": gts, "predictions": predictions, "score_threshold": score_threshold,
                 "protocol": protocol}
    # Indexed labels: with several ground truths their order is part of the oracle protocol's input.
    hashes = local_hashes(GROUND_TRUTH, {f"{n}:{Path(path).name}": path for n, path in enumerate(gts)})
    hashes |= local_hashes(PREDICTIONS, {"predictions": predictions})
    build = Build(out=Path(out), dataset="eval/cgf1", logic_version=versions.CGF1, params=evaluated,
                  input_hashes=hashes)

    def score(stage: Stage) -> Built:
        summary = steps.unit("score-cgf1", score_cgf1, stage.unit_key("score"), gts, predictions, score_threshold,
                             each)
        steps.call("write-cgf1-report", write_cgf1_files, str(stage.path), summary, evaluated)
        images = sum(f["num_images"] for f in summary["files"]) if each else summary["num_images"]
        return Built(counts={"images": images}, units=steps.unit_counts(), extras={"summary": summary})

    result: EvaluationResult[CgF1Summary | CgF1Each] = run_evaluation(
        build, score, CgF1Each if each else CgF1Summary, force=force, logger=steps.logger)
    summary = result.summary
    for one in summary.files if isinstance(summary, CgF1Each) else [summary]:
        log_ignored(steps.logger, one.ignored, predictions)
    if isinstance(summary, CgF1Summary) and not result.up_to_date:
        steps.logger.info("cgF1 %s, IL_MCC %s, pmF1 %s -> %s", cell(summary.cgF1), cell(summary.IL_MCC),
                          cell(summary.pmF1), result.paths["report"])
    return result
