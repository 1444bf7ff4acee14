"""Prefect flow ``evaluate-spin``: localization, hierarchical consistency and recognition on SPIN.

Orchestration only: file formats and validation are in :mod:`segbench.tasks.spin_inputs`, the metrics
(definitions in its docstring) in :mod:`segbench.tasks.spin_metrics`, the report in
:mod:`segbench.tasks.spin_report`. The ground truth is read through
:class:`~segbench.tasks.versioning.DatasetSource`, so ``rev`` evaluates on a published version; the
predictions are local files.

Usage::

    from segbench.flows.evaluate_spin import evaluate_spin
    result = evaluate_spin(repo=".", rev="v1", predictions={"parts": "preds/spin_test_parts_results.json"},
                           out="data/eval/spin/run1")
    result["summary"]["prompts"]["general"]["spcs"]["mean"], result["paths"]["report"]
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from segbench import progress
from segbench.errors import ImportPolicy, OnError
from segbench.tasks.io import staged_directory, write_json
from segbench.tasks.spin_inputs import SpinTruth, read_answers, read_ground_truth, read_predictions
from segbench.tasks.spin_metrics import (
    PROMPTS,
    Hierarchy,
    ImageTruth,
    Prediction,
    SpinAccumulator,
    recognition_accuracy,
)
from segbench.tasks.spin_report import write_report
from segbench.tasks.versioning import DatasetSource

DEFAULT_SHARD_SIZE = 128
SKIPPED_NAME = "skipped.json"


@task(name="load-spin-ground-truth", cache_policy=NO_CACHE)
def load_truth(repo: str, rev: str | None, dataset_dir: str, split: str) -> SpinTruth:
    """The split's validated ground truth (``spin_inputs.read_ground_truth``)."""
    with DatasetSource(repo, rev) as source:
        return read_ground_truth(source, dataset_dir, split)


@task(name="load-spin-predictions", cache_policy=NO_CACHE)
def load_predictions(paths: dict[str, str], truth: SpinTruth, policy: ImportPolicy) -> dict[int, list[Prediction]]:
    """Validated predictions grouped by image (``spin_inputs.read_predictions``)."""
    return read_predictions(paths, truth, policy)


@task(name="evaluate-spin-shard", cache_policy=NO_CACHE)
def evaluate_shard(images: list[ImageTruth], predictions: dict[int, list[Prediction]], hierarchy: Hierarchy,
                   prompts: tuple[str, ...]) -> SpinAccumulator:
    """Score one shard of images; the flow adds the shards' accumulators with ``+=``."""
    acc = SpinAccumulator()
    for image in images:
        acc.update(image, predictions.get(image.image_id, []), hierarchy, prompts)
    return acc


@task(name="write-spin-report", cache_policy=NO_CACHE)
def write_report_task(out: str, summary: dict[str, Any], evaluated: dict[str, Any],
                      skipped: dict[str, Any] | None) -> dict[str, str]:
    """Write the report into a staging folder that replaces ``out`` only when complete."""
    with staged_directory(out) as stage:
        names = {key: path.name for key, path in write_report(stage, summary, evaluated).items()}
        if skipped is not None:
            names["skipped"] = write_json(stage / SKIPPED_NAME, skipped, indent=2).name
    return {key: str(Path(out) / name) for key, name in names.items()}


@flow(name="evaluate-spin")
def evaluate_spin(
    repo: str | Path,
    rev: str | None,
    predictions: Mapping[str, str | Path],
    out: str | Path,
    split: str = "test",
    dataset_dir: str = "data/spin",
    answers: str | Path | None = None,
    on_error: OnError = OnError.FAIL,
    shard_size: int = DEFAULT_SHARD_SIZE,
) -> dict[str, Any]:
    """Evaluate SPIN predictions (and recognition answers) on a split and write the report.

    Args:
        repo: project root holding ``dataset_dir``. rev: git revision, ``None`` = working tree.
        predictions: level (``wholes`` / ``parts`` / ``subparts``) → COCO results file; a level without a
            file counts every entity of it as abstained.
        out: report folder (metrics.json, report.md, miou_by_level.png, consistency.png,
            per_supercategory.png, and skipped.json when items were skipped).
        split: ``train`` / ``val`` / ``test``: reads ``{dataset_dir}/dataset/spin_{split}_{level}.json``.
        answers: optional recognition answers file (mACC).
        on_error: a bad prediction or answer fails the run, or is skipped and listed in skipped.json.
        shard_size: images per evaluation task.

    Returns:
        ``{"summary": <metrics dict>, "paths": {name: str}}``.

    Raises:
        InputError / AnnotationError: a ground-truth, results or answers file is missing or malformed
            (naming the file and the item). VersioningError: ``rev`` cannot be read.
    """
    if shard_size < 1:
        raise ValueError(f"shard_size must be at least 1, got {shard_size}")
    logger = get_run_logger()
    repo, out = str(repo), str(out)
    files = {level: str(path) for level, path in predictions.items() if path is not None}
    policy = ImportPolicy(on_error)
    truth = load_truth(repo, rev, dataset_dir, split)
    by_image = load_predictions(files, truth, policy)
    recognition = recognition_accuracy(read_answers(answers, truth, policy), truth.hierarchy) if answers else None
    seen = {p.prompt for preds in by_image.values() for p in preds}
    # Without any results file there is no localization to score (an answers-only run).
    prompts = (tuple(p for p in PROMPTS if p in seen) or ("general",)) if files else ()

    images = list(truth.images.values()) if prompts else []
    futures = [evaluate_shard.submit(shard, {i.image_id: by_image.get(i.image_id, []) for i in shard},
                                     truth.hierarchy, prompts)
               for shard in (images[i : i + shard_size] for i in range(0, len(images), shard_size))]
    total = SpinAccumulator()
    for shard in progress.gather(futures, "Evaluating SPIN predictions", len(images), units=lambda a: a.num_images):
        total += shard
    total.num_images = len(truth.images)
    summary = total.summarize(truth.hierarchy)
    summary["recognition"] = recognition
    skipped = policy.report.to_json() if on_error is OnError.SKIP else None
    summary["skipped"] = None if skipped is None else {"count": skipped["count"], "by_error": skipped["by_error"]}
    evaluated = {"source": DatasetSource(repo, rev).describe(), "rev": rev, "split": split,
                 "ground_truth": truth.files, "predictions": files, "answers": str(answers) if answers else None}
    paths = write_report_task(out, summary, evaluated, skipped)
    general = summary["prompts"].get(prompts[0] if prompts else "", {})
    logger.info("evaluated %d images (%s prompts): subpart mIoU %s, SpCS %s -> %s", summary["num_images"],
                "/".join(prompts), general.get("levels", {}).get("subparts", {}).get("miou"),
                general.get("spcs", {}).get("mean"), paths["report"])
    return {"summary": summary, "paths": paths}
