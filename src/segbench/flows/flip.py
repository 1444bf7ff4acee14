"""Prefect flows ``evaluate-coco-cd`` and ``evaluate-waterbirds``: the evaluations of
:mod:`segbench.tasks.flip.evaluation`, their steps run as task runs and their report published.

Rebuild plans and ``segbench serve`` run these (and ``evaluate … --track``); a command typed by
hand calls the same evaluation functions in its own process. Each scored shard is a unit Prefect
remembers (:mod:`segbench.flows.units`), so a killed evaluation resumes.

Usage::

    from segbench.flows.coco_cd.baseline import predict_baseline
    from segbench.flows.flip import evaluate_coco_cd
    predict_baseline(repo=".", rev=None, out="preds/baseline")
    result = evaluate_coco_cd(repo=".", rev=None, predictions="preds/baseline",
                              out="reports/coco_cd/baseline")
    result.summary.fg_decomposition.flip, result.paths["report"]
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from prefect import Task, flow
from prefect.cache_policies import NO_CACHE

from segbench import registry
from segbench.flows.prefect_ui import publish_evaluation, run_name, task_name
from segbench.flows.steps import PrefectSteps
from segbench.schemas.flip import FlipEvaluation, FlipSummary
from segbench.schemas.results import EvaluationResult
from segbench.tasks.flip import evaluation
from segbench.tasks.flip.evaluation import DEFAULT_SHARD_SIZE, shards
from segbench.tasks.flip.metrics import COCO_CD_NAMES, WATERBIRDS_NAMES

if TYPE_CHECKING:
    from segbench.flows.rebuild import RebuildRun

__all__ = ["DEFAULT_SHARD_SIZE", "evaluate_coco_cd", "evaluate_waterbirds", "load_split", "shards"]

load_split = Task(evaluation.load_split, **task_name("load-coco-cd-split"), cache_policy=NO_CACHE)


@flow(name="evaluate-coco-cd", flow_run_name=run_name("evaluate-coco-cd", ("rho", "split", "predictions", "rev")))
def evaluate_coco_cd(repo: str | Path, rev: str | None, predictions: str | Path, out: str | Path, rho: float = 0.95,
                     split: str = "test", dataset_dir: str = "data/coco_cd", shard_size: int = DEFAULT_SHARD_SIZE,
                     force: bool = False) -> EvaluationResult[FlipSummary]:
    """:func:`segbench.tasks.flip.evaluation.evaluate_coco_cd` as a flow (same arguments and result)."""
    result = evaluation.evaluate(repo, rev, predictions, out, rho, split, dataset_dir, shard_size, COCO_CD_NAMES,
                                 force, steps=PrefectSteps())
    publish_evaluation(COCO_CD_NAMES.dataset, result)
    return result


@flow(name="evaluate-waterbirds", flow_run_name=run_name("evaluate-waterbirds", ("rho", "split", "predictions", "rev")))
def evaluate_waterbirds(repo: str | Path, rev: str | None, predictions: str | Path, out: str | Path,
                        rho: float = 0.95, split: str = "test", dataset_dir: str = "data/waterbirds_seg",
                        shard_size: int = DEFAULT_SHARD_SIZE, force: bool = False) -> EvaluationResult[FlipSummary]:
    """:func:`segbench.tasks.flip.evaluation.evaluate_waterbirds` as a flow (same arguments and result)."""
    result = evaluation.evaluate(repo, rev, predictions, out, rho, split, dataset_dir, shard_size, WATERBIRDS_NAMES,
                                 force, steps=PrefectSteps())
    publish_evaluation(WATERBIRDS_NAMES.dataset, result)
    return result


# --- [[evaluate]] entries of a rebuild plan ----------------------------------------------------


def plan_evaluate(run: RebuildRun, entry: FlipEvaluation, dataset: Path, out: Path) -> EvaluationResult[FlipSummary]:
    """Run one ``[[evaluate]]`` entry of a rebuild plan on the dataset built at ``dataset``."""
    evaluate = (spec := registry.dataset(entry.dataset)).need(spec.evaluate_flow, "evaluation flow")
    return run.call(evaluate, repo=run.plan.repo, rev=None, out=out, predictions=entry.predictions, rho=entry.rho,
                    split=entry.split, dataset_dir=run.relative(dataset))
