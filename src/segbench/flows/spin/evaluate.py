"""Prefect flow ``evaluate-spin``: the evaluation of :mod:`segbench.tasks.spin.evaluation`, its steps
run as task runs and its report published.

Rebuild plans and ``segbench serve`` run it (and ``evaluate spin --track``); a command typed by hand
calls the same function in its own process. Each scored shard is a unit Prefect remembers
(:mod:`segbench.flows.units`), so a killed evaluation resumes.

Usage::

    from segbench.flows.spin.evaluate import evaluate_spin
    result = evaluate_spin(repo=".", rev="v1", predictions={"parts": "preds/spin_test_parts_results.json"},
                           out="reports/spin/run1")
    result.summary.prompts["general"].spcs.mean, result.paths["report"]
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from prefect import flow

from segbench.core.errors import OnError
from segbench.flows.prefect_ui import publish_evaluation, run_name
from segbench.flows.steps import PrefectSteps
from segbench.schemas.results import EvaluationResult
from segbench.schemas.spin import SpinEvaluation
from segbench.schemas.spin_metrics import SpinMetrics
from segbench.tasks.spin import evaluation
from segbench.tasks.spin.evaluation import DEFAULT_SHARD_SIZE
from segbench.tasks.spin.inputs import prediction_files
from segbench.tasks.spin.recognition import DEFAULT_YES_RULE

if TYPE_CHECKING:
    from segbench.flows.rebuild import RebuildRun


@flow(name="evaluate-spin", flow_run_name=run_name("evaluate-spin", ("split", "predictions", "rev")))
def evaluate_spin(repo: str | Path, rev: str | None, predictions: Mapping[str, str | Path], out: str | Path,
                  split: str = "test", dataset_dir: str = "data/spin", answers: str | Path | None = None,
                  on_error: OnError = OnError.FAIL, shard_size: int = DEFAULT_SHARD_SIZE, force: bool = False,
                  yes_rule: str = DEFAULT_YES_RULE) -> EvaluationResult[SpinMetrics]:
    """:func:`segbench.tasks.spin.evaluation.evaluate_spin` as a flow (same arguments and result)."""
    result = evaluation.evaluate_spin(repo, rev, predictions, out, split, dataset_dir, answers, on_error, shard_size,
                                      force, yes_rule, steps=PrefectSteps())
    publish_evaluation("spin", result)
    return result


# --- [[evaluate]] entries of a rebuild plan ----------------------------------------------------


def plan_evaluate(run: RebuildRun, entry: SpinEvaluation, dataset: Path, out: Path) -> EvaluationResult[SpinMetrics]:
    """Run one ``[[evaluate]]`` entry of a rebuild plan on the dataset built at ``dataset``."""
    # SPIN's evaluation reads <spin folder>/dataset/...: the folder above the built dataset.
    return run.call(evaluate_spin, repo=run.plan.repo, rev=None, out=out,
                    predictions=prediction_files(entry.predictions, entry.split), split=entry.split,
                    dataset_dir=run.relative(dataset.parent), answers=entry.answers, on_error=entry.on_error,
                    yes_rule=entry.yes_rule)
