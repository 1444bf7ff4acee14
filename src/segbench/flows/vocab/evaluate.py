"""Prefect flow ``evaluate-vocab``: the evaluation of :mod:`segbench.tasks.vocab.evaluation`, its steps
run as task runs and its report published.

Rebuild plans and ``segbench serve`` run it (and ``evaluate vocab --track``); a command typed by hand
calls the same function in its own process. The mapping, the baseline and each scored shard are
units Prefect remembers (:mod:`segbench.flows.units`), so a killed evaluation resumes.

Usage::

    from segbench.flows.vocab.evaluate import evaluate_vocab
    result = evaluate_vocab(repo=".", rev="v1", vocab="cityscapes", descriptions="out/desc.json",
                            gt="data/vocab/gt/cityscapes", out="reports/vocab/run1")
    result.summary.lac.miou.area, result.paths["report"]
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from segbench.flows.prefect_ui import publish_evaluation, run_name
from segbench.flows.steps import PrefectSteps
from segbench.schemas.results import EvaluationResult
from segbench.schemas.vocab_metrics import VocabMetrics
from segbench.tasks.vocab import evaluation


@flow(name="evaluate-vocab", flow_run_name=run_name("evaluate-vocab", ("vocab", "descriptions", "rev")))
def evaluate_vocab(repo: str | Path, rev: str | None, vocab: str, descriptions: str | Path, gt: str | None,
                   out: str | Path, baseline: bool = True, spacy_model: str = "en_core_web_sm",
                   shard_size: int = 64, panoptic: str | Path | None = None, force: bool = False,
                   target_blind: bool = False, coverage: float = 1.0, coverage_seed: int = 0,
                   predicted_segments: str | Path | None = None) -> EvaluationResult[VocabMetrics]:
    """:func:`segbench.tasks.vocab.evaluation.evaluate_vocab` as a flow (same arguments and result)."""
    result = evaluation.evaluate_vocab(repo, rev, vocab, descriptions, gt, out, baseline, spacy_model, shard_size,
                                       panoptic, force, target_blind, coverage, coverage_seed,
                                       predicted_segments=predicted_segments, steps=PrefectSteps())
    publish_evaluation("vocab", result)
    return result
