"""The SPIN evaluation, whole: localization, hierarchical consistency and recognition, on any :class:`Steps`.

``evaluate spin`` typed by hand calls :func:`evaluate_spin` with
:class:`~segbench.core.steps.InProcess` (no Prefect engine); the flow ``evaluate-spin``
(:mod:`segbench.flows.spin.evaluate`) calls it with its task runs. File formats and validation are in
:mod:`segbench.tasks.spin.inputs`, the metrics (definitions in its docstring) in
:mod:`segbench.tasks.spin.metrics`, the report in :mod:`segbench.tasks.spin.report`. The ground truth
is read through :class:`~segbench.core.versioning.DatasetSource`, so ``rev`` evaluates on a published
version; the predictions are local files.

An evaluation is skipped when its report is up to date (same logic version, split, prompt kinds,
policy, ground truth, predictions and answers; :mod:`segbench.core.evaluation_keys`); the report is
written in a resumable stage, and images are scored in shards, each a unit.

Usage::

    from segbench.tasks.spin.evaluation import evaluate_spin
    result = evaluate_spin(repo=".", rev="v1", predictions={"parts": "preds/spin_test_parts_results.json"},
                           out="reports/spin/run1")
    result.summary.prompts["general"].spcs.mean, result.paths["report"]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from segbench import progress
from segbench.core.build import Build, Built, Stage
from segbench.core.errors import ImportPolicy, OnError
from segbench.core.evaluation_keys import PREDICTIONS, ground_truth_hashes, local_hashes, run_evaluation
from segbench.core.integrity import data_source
from segbench.core.io import write_json
from segbench.core.reports import fmt, portable_paths
from segbench.core.steps import InProcess, Steps
from segbench.core.versioning import DatasetSource
from segbench.schemas.results import EvaluationResult
from segbench.schemas.spin_metrics import LevelAccuracy, SkippedCount, SpinMetrics
from segbench.tasks.spin import examples, versions
from segbench.tasks.spin.inputs import SpinTruth, gt_relpath, read_answers, read_ground_truth, read_predictions
from segbench.tasks.spin.metrics import LEVELS, PROMPTS, Hierarchy, ImageTruth, Prediction, SpinAccumulator
from segbench.tasks.spin.recognition import DEFAULT_YES_RULE, recognition_accuracy
from segbench.tasks.spin.report import write_report

DEFAULT_SHARD_SIZE = 128
SKIPPED_NAME = "skipped.json"


def hash_ground_truth(repo: str, rev: str | None, dataset_dir: str, split: str) -> dict[str, str]:
    """sha256 standing for the split's three files (the built dataset's manifest) and the taxonomy."""
    with data_source(repo, rev) as source:
        hashes = ground_truth_hashes(source, [gt_relpath(dataset_dir, split, level) for level in LEVELS],
                                     f"{dataset_dir}/dataset")
        taxonomy = f"{dataset_dir}/taxonomy.yaml"  # read when present: it restricts subparts to objects
        if source.exists(taxonomy):
            hashes |= ground_truth_hashes(source, [taxonomy])
    return hashes


def load_truth(repo: str, rev: str | None, dataset_dir: str, split: str) -> SpinTruth:
    """The split's validated ground truth (``spin_inputs.read_ground_truth``)."""
    with data_source(repo, rev) as source:
        return read_ground_truth(source, dataset_dir, split)


def load_predictions(paths: dict[str, str], truth: SpinTruth, policy: ImportPolicy) -> dict[int, list[Prediction]]:
    """Validated predictions grouped by image (``spin_inputs.read_predictions``)."""
    return read_predictions(paths, truth, policy)


# Images scored inside evaluation shards advance the "Evaluating" progress as they finish.
SCORE_CHANNEL = "spin.score"


def evaluate_shard(unit_key: str, images: list[ImageTruth], predictions: dict[int, list[Prediction]],
                   hierarchy: Hierarchy, prompts: tuple[str, ...]) -> SpinAccumulator:
    """Score one shard of images; the shards' accumulators are added with ``+=``.

    A unit: a flow replays the shards that finished before a crash.
    """
    acc = SpinAccumulator()
    for image in progress.each(images, SCORE_CHANNEL):
        acc.update(image, predictions.get(image.image_id, []), hierarchy, prompts)
    return acc


def write_report_files(out: str, summary: dict[str, Any], evaluated: dict[str, Any],
                       skipped: dict[str, Any] | None, pictures: bytes | None = None) -> dict[str, str]:
    """Write the report (and skipped.json when items were skipped) into ``out``, the evaluation's stage."""
    paths = {key: str(path) for key, path in write_report(out, summary, evaluated, pictures).items()}
    if skipped is not None:
        paths["skipped"] = str(write_json(Path(out) / SKIPPED_NAME, skipped, indent=2))
    return paths


def evaluate_spin(repo: str | Path, rev: str | None, predictions: Mapping[str, str | Path], out: str | Path,
                  split: str = "test", dataset_dir: str = "data/spin", answers: str | Path | None = None,
                  on_error: OnError = OnError.FAIL, shard_size: int = DEFAULT_SHARD_SIZE, force: bool = False,
                  yes_rule: str = DEFAULT_YES_RULE, steps: Steps | None = None) -> EvaluationResult[SpinMetrics]:
    """Evaluate SPIN predictions (and recognition answers) on a split and write the report.

    Args:
        repo: project root holding ``dataset_dir``. rev: git revision, ``None`` = working tree.
        predictions: level (``wholes`` / ``parts`` / ``subparts``) → COCO results file; a level without a
            file counts every entity of it as abstained.
        out: report folder (metrics.json, report.md, miou_by_level.png, consistency.png,
            per_supercategory.png, examples.png when an image was answered, and skipped.json when
            items were skipped).
        split: ``train`` / ``val`` / ``test``: reads ``{dataset_dir}/dataset/spin_{split}_{level}.json``.
        answers: optional recognition answers file (mACC).
        yes_rule: how an answer counts as "yes": ``substring`` (the seed's) or ``word``.
        on_error: a bad prediction or answer fails the run, or is skipped and listed in skipped.json.
        shard_size: images per evaluation task (the report does not depend on it).
        force: evaluate again even when the report is up to date.
        steps: who runs the steps (default: this process, :class:`InProcess`).

    Returns:
        The result; ``units`` count shards and ``summary`` is the metrics dict. An up-to-date summary
        is read back from metrics.json.

    Raises:
        InputError / AnnotationError: a ground-truth, results or answers file is missing or malformed
            (naming the file and the item). VersioningError: ``rev`` cannot be read.
    """
    if shard_size < 1:
        raise ValueError(f"shard_size must be at least 1, got {shard_size}")
    steps = steps or InProcess()
    repo, out = str(repo), str(out)
    files = {level: str(path) for level, path in predictions.items() if path is not None}
    answers = None if answers is None else str(answers)
    hashes = steps.call("hash-spin-ground-truth", hash_ground_truth, repo, rev, dataset_dir, split)
    hashes |= local_hashes(PREDICTIONS, files)
    if answers is not None:
        hashes |= local_hashes("answers", {"answers": answers})
    params = {"source": DatasetSource(repo, rev).describe(), "rev": rev, "split": split, "dataset_dir": dataset_dir,
              "predictions": files, "answers": answers, "on_error": on_error.value}
    if answers is not None:
        params["yes_rule"] = yes_rule
    # The manifest names paths relative to the project (it is versioned with the report); the key
    # still follows the predictions and answers through their content hashes.
    build = Build(out=Path(out), dataset="eval/spin", logic_version=versions.EVALUATION,
                  params=portable_paths(params, repo), input_hashes=hashes)
    policy = ImportPolicy(on_error)
    result = run_evaluation(build, lambda stage, loaded: _score(steps, stage, repo, loaded, shard_size, policy, params),
                            prepare=lambda: _load(steps, repo, rev, dataset_dir, split, files, answers, policy,
                                                  yes_rule),
                            metrics=SpinMetrics, force=force, logger=steps.logger)
    if not result.up_to_date:
        _log_summary(steps.logger, result)
    return result


def _log_summary(logger: Any, result: EvaluationResult[SpinMetrics]) -> None:
    summary = result.summary
    prompts = list(summary.prompts)
    first = summary.prompts[prompts[0]] if prompts else None
    logger.info("evaluated %d images (%s prompts): subpart mIoU %s, SpCS %s -> %s", summary.num_images,
                "/".join(prompts), fmt(first.levels.subparts.miou if first else None),
                fmt(first.spcs.mean if first else None), result.paths["report"])


@dataclass(frozen=True)
class _Loaded:
    """What a SPIN evaluation reads before it scores."""

    truth: SpinTruth
    by_image: dict[int, list[Prediction]]
    recognition: dict[str, dict[str, LevelAccuracy]] | None
    prompts: tuple[str, ...]


def _load(steps: Steps, repo: str, rev: str | None, dataset_dir: str, split: str, files: dict[str, str], answers: str | None,
          policy: ImportPolicy, yes_rule: str = DEFAULT_YES_RULE) -> _Loaded:
    """Read the ground truth, the predictions and the answers, and find the prompt kinds to score."""
    truth = steps.call("load-spin-ground-truth", load_truth, repo, rev, dataset_dir, split)
    by_image = steps.call("load-spin-predictions", load_predictions, files, truth, policy)
    recognition = (recognition_accuracy(read_answers(answers, truth, policy, yes_rule), truth.hierarchy)
                   if answers else None)
    seen = {p.prompt for preds in by_image.values() for p in preds}
    # Without any results file there is no localization to score (an answers-only run).
    prompts = (tuple(p for p in PROMPTS if p in seen) or ("general",)) if files else ()
    return _Loaded(truth, by_image, recognition, prompts)


def _score(steps: Steps, stage: Stage, repo: str, loaded: _Loaded, shard_size: int, policy: ImportPolicy,
           params: dict[str, Any]) -> Built:
    """Score the images in shards (units) and write the report (and skipped.json) into ``stage``."""
    truth, prompts = loaded.truth, loaded.prompts
    images = list(truth.images.values()) if prompts else []
    calls = [(stage.unit_key(f"score/{shard_size}/{n}"),
              (shard, {i.image_id: loaded.by_image.get(i.image_id, []) for i in shard}, truth.hierarchy, prompts))
             for n, shard in enumerate(images[i : i + shard_size] for i in range(0, len(images), shard_size))]
    total = SpinAccumulator()
    for shard in steps.shards("evaluate-spin-shard", evaluate_shard, calls, description="Evaluating SPIN predictions",
                              total=len(images), count=lambda a: a.num_images, channel=SCORE_CHANNEL,
                              ids=lambda p: [image.image_id for image in p["images"]]):
        total += shard
    total.num_images = len(truth.images)
    skipped = policy.report.to_json() if policy.on_error is OnError.SKIP else None
    metrics = total.summarize(truth.hierarchy).model_copy(update={
        "recognition": loaded.recognition,
        "skipped": None if skipped is None else SkippedCount(count=skipped["count"], by_error=skipped["by_error"])})
    summary = metrics.model_dump(mode="json")  # the report writers read the JSON
    # Relative to the project: the report is versioned and must not name this machine's folders.
    evaluated = portable_paths({"source": params["source"], "rev": params["rev"], "split": params["split"],
                                "ground_truth": truth.files, "predictions": params["predictions"],
                                "answers": params["answers"]}, params["source"].partition("@")[0])
    if "yes_rule" in params:
        evaluated["yes_rule"] = params["yes_rule"]
    pictures = (steps.call("draw-examples", examples.draw, repo, params["rev"], params["dataset_dir"], params["split"],
                           truth, loaded.by_image, prompts[0]) if prompts else None)
    steps.call("write-spin-report", write_report_files, str(stage.path), summary, evaluated, skipped, pictures)
    return Built(counts={"images": summary["num_images"]}, units=steps.unit_counts(),
                 skipped=0 if skipped is None else skipped["count"], extras={"summary": summary})
