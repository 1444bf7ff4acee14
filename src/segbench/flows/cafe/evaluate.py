"""Prefect flows ``evaluate-cafe`` and ``evaluate-cgf1``: the evaluations of
:mod:`segbench.tasks.cafe.evaluation`, their steps run as task runs and their report published.

Rebuild plans and ``segbench serve`` run these (and ``evaluate … --track``); a command typed by
hand calls the same evaluation functions in its own process. Scoring is a unit Prefect remembers,
so a run killed while writing the report does not score again.

Usage::

    from segbench.flows.cafe.evaluate import evaluate_cafe, evaluate_cgf1
    result = evaluate_cafe(repo=".", rev="v1", gt=None, predictions="sam3.json", out="reports/cafe/sam3")
    result.summary.Overall.cgF1, result.paths["report"]
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from prefect import flow

from segbench.flows.prefect_ui import publish_evaluation, run_name
from segbench.flows.steps import PrefectSteps
from segbench.schemas.cafe import CafeEvalParams, CafeEvaluation
from segbench.schemas.cafe_metrics import CafeMetrics, CgF1Each, CgF1Summary
from segbench.schemas.results import EvaluationResult
from segbench.tasks.cafe import evaluation

if TYPE_CHECKING:
    from segbench.flows.rebuild import RebuildRun


@flow(name="evaluate-cafe", flow_run_name=run_name("evaluate-cafe", ("predictions", "gt", "rev")))
def evaluate_cafe(repo: str | Path, rev: str | None, gt: str | Path | None, predictions: str | Path,
                  out: str | Path, dataset_dir: str = "data/cafe", params: CafeEvalParams | None = None,
                  calibration_gt: str | Path | None = None,
                  calibration_predictions: str | Path | None = None,
                  force: bool = False) -> EvaluationResult[CafeMetrics]:
    """:func:`segbench.tasks.cafe.evaluation.evaluate_cafe` as a flow (same arguments and result)."""
    result = evaluation.evaluate_cafe(repo, rev, gt, predictions, out, dataset_dir, params, calibration_gt,
                                      calibration_predictions, force, steps=PrefectSteps())
    publish_evaluation("cafe", result)
    return result


@flow(name="evaluate-cgf1", flow_run_name=run_name("evaluate-cgf1", ("predictions", "gts")))
def evaluate_cgf1(gts: list[str | Path], predictions: str | Path, out: str | Path,
                  score_threshold: float = 0.5, force: bool = False,
                  each: bool = False) -> EvaluationResult[CgF1Summary | CgF1Each]:
    """:func:`segbench.tasks.cafe.evaluation.evaluate_cgf1` as a flow (same arguments and result)."""
    result = evaluation.evaluate_cgf1(gts, predictions, out, score_threshold, force, each, steps=PrefectSteps())
    publish_evaluation("cgf1", result)
    return result


# --- [[evaluate]] entries of a rebuild plan ----------------------------------------------------


def plan_evaluate(run: RebuildRun, entry: CafeEvaluation, dataset: Path, out: Path) -> EvaluationResult[CafeMetrics]:
    """Run one ``[[evaluate]]`` entry of a rebuild plan on the dataset built at ``dataset``."""
    return run.call(evaluate_cafe, repo=run.plan.repo, rev=None, out=out, gt=None, predictions=entry.predictions,
                    dataset_dir=run.relative(dataset), params=entry.params)
