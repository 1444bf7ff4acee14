"""Prefect flows for label-flip evaluation: ``evaluate-coco-cd`` and ``evaluate-waterbirds``. Both
compute the same metrics; only the names differ.

Orchestration only. The work is done by pure functions in ``segbench.tasks.flip.inputs``
(reading), ``segbench.tasks.flip.metrics`` and ``segbench.tasks.flip.report``; the tasks here are
thin wrappers around one coarse unit each (a shard of a few hundred images, the report).

An evaluation is skipped when its report is up to date (same logic version, split, predictions and
ground truth; :mod:`segbench.core.evaluation_keys`), and a killed one resumes: the report is written
in a resumable stage and each scored shard is a unit Prefect remembers (:mod:`segbench.flows.units`).

Usage::

    from segbench.flows.coco_cd.baseline import predict_baseline
    from segbench.flows.flip import evaluate_coco_cd
    predict_baseline(repo=".", rev=None, out="preds/baseline")
    result = evaluate_coco_cd(repo=".", rev=None, predictions="preds/baseline",
                              out="reports/coco_cd/baseline")
    result.summary["fg_decomposition"]["flip"], result.paths["report"]
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from segbench import progress, registry
from segbench.core.build import Build, Built, Stage
from segbench.core.evaluation_keys import PREDICTIONS, ground_truth_hashes, local_hashes, run_evaluation
from segbench.core.reports import fmt, portable_paths
from segbench.core.versioning import DatasetSource
from segbench.flows.prefect_ui import publish_evaluation, run_name, shard_name, task_name
from segbench.flows.units import UNIT, count_units
from segbench.schemas.flip import FlipEvaluation
from segbench.schemas.results import EvaluationResult
from segbench.tasks.flip import versions
from segbench.tasks.flip.inputs import evaluate_images, prediction_paths, read_split, split_relpath
from segbench.tasks.flip.metrics import COCO_CD_NAMES, WATERBIRDS_NAMES, FlipAccumulator, FlipNames
from segbench.tasks.flip.report import write_report

if TYPE_CHECKING:
    from segbench.flows.rebuild import RebuildRun

DEFAULT_SHARD_SIZE = 256
# Bump when the report of the same inputs changes (metrics, report text, plots, manifest).


def shards(items: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    if size < 1:
        raise ValueError(f"shard_size must be at least 1, got {size}")
    return [items[i : i + size] for i in range(0, len(items), size)]


@task(**task_name("load-coco-cd-split"), cache_policy=NO_CACHE)
def load_split(repo: str, rev: str | None, relpath: str) -> list[dict[str, Any]]:
    """The split's image entries, sorted by id (:func:`segbench.tasks.flip.inputs.read_split`)."""
    with DatasetSource(repo, rev) as source:
        return read_split(source, relpath)


@task(**task_name("hash-flip-ground-truth"), cache_policy=NO_CACHE)
def hash_ground_truth(repo: str, rev: str | None, dataset_dir: str, relpaths: list[str]) -> dict[str, str]:
    """sha256 standing for the split file and its masks (``evaluation_keys.ground_truth_hashes``)."""
    with DatasetSource(repo, rev) as source:
        return ground_truth_hashes(source, relpaths, dataset_dir)


# Images scored inside evaluation shards advance the "Evaluating" progress as they finish.
SCORE_CHANNEL = "flip.score"


@task(**shard_name("evaluate-shard", lambda p: [image["id"] for image in p["images"]]), **UNIT)
def evaluate_shard(
    unit_key: str,
    repo: str,
    rev: str | None,
    dataset_dir: str,
    images: list[dict[str, Any]],
    predictions: dict[int, str],
) -> FlipAccumulator:
    """Evaluate one shard of images; the flow adds the shards' accumulators with ``+=``.

    A unit: cached under ``unit_key``, so a rerun after a crash replays the shards that finished.
    """
    with DatasetSource(repo, rev) as source:
        return evaluate_images(source, dataset_dir, progress.each(images, SCORE_CHANNEL), predictions)


@task(**task_name("write-coco-cd-report"), cache_policy=NO_CACHE)
def write_report_task(
    out: str, summary: dict[str, Any], evaluated: dict[str, Any], names: FlipNames = COCO_CD_NAMES
) -> dict[str, str]:
    """Write metrics.json, report.md and the plots (:func:`segbench.tasks.flip.report.write_report`)."""
    return {name: str(path) for name, path in write_report(out, summary, evaluated, names).items()}


@flow(name="evaluate-coco-cd", flow_run_name=run_name("evaluate-coco-cd", ("rho", "split", "predictions", "rev")))
def evaluate_coco_cd(repo: str | Path, rev: str | None, predictions: str | Path, out: str | Path, rho: float = 0.95,
                     split: str = "test", dataset_dir: str = "data/coco_cd", shard_size: int = DEFAULT_SHARD_SIZE,
                     force: bool = False) -> EvaluationResult:
    """Evaluate a predictions directory on a COCO-CD split and write the report.

    Args:
        repo: project root holding ``dataset_dir``. rev: git revision, ``None`` = working tree.
        predictions: directory of ``{id:012d}.npz`` (``probs``, (3, 512, 512)) or ``.png`` files.
        out: report directory (metrics.json, report.md, per_group_iou.png, flip_by_risk_decile.png,
            manifest.json).
        rho, split: which split file: ``{dataset_dir}/splits/rho_{rho:g}/{split}.json``.
        shard_size: images per evaluation task (the report does not depend on it).
        force: evaluate again even when the report is up to date.

    Returns:
        The result: ``units`` count shards, ``summary`` is the metrics dict and ``paths`` names
        ``metrics``, ``report``, ``per_group_iou`` and ``flip_by_risk_decile``. An up-to-date
        summary is read back from metrics.json.

    Raises:
        InputError: split or masks missing/malformed; predictions missing (names the directory,
            the count and the first ids), of the wrong shape or with labels outside 0..2.
    """
    return _evaluate(repo, rev, predictions, out, rho, split, dataset_dir, shard_size, COCO_CD_NAMES, force)


@flow(name="evaluate-waterbirds", flow_run_name=run_name("evaluate-waterbirds", ("rho", "split", "predictions", "rev")))
def evaluate_waterbirds(repo: str | Path, rev: str | None, predictions: str | Path, out: str | Path,
                        rho: float = 0.95, split: str = "test", dataset_dir: str = "data/waterbirds_seg",
                        shard_size: int = DEFAULT_SHARD_SIZE, force: bool = False) -> EvaluationResult:
    """Evaluate a predictions directory on a Waterbirds-seg split: the COCO-CD metrics, with
    classes landbird/waterbird (label values 1/2) and contexts land/water.

    Predictions are ``{id:012d}.png`` label maps or ``.npz`` files with ``probs`` of shape
    (3, H, W) at each image's own size. Arguments, return value and errors as
    :func:`evaluate_coco_cd`.
    """
    return _evaluate(repo, rev, predictions, out, rho, split, dataset_dir, shard_size, WATERBIRDS_NAMES, force)


def _evaluate(repo: str | Path, rev: str | None, predictions: str | Path, out: str | Path, rho: float,
              split: str, dataset_dir: str, shard_size: int, names: FlipNames, force: bool) -> EvaluationResult:
    """The body of both evaluation flows (runs inside the calling flow)."""
    logger = get_run_logger()
    repo, predictions = str(repo), str(predictions)
    relpath = split_relpath(dataset_dir, rho, split)
    images = load_split(repo, rev, relpath)
    found = prediction_paths(predictions, [image["id"] for image in images])
    # Relative to the project: the report is versioned and must not name this machine's folders.
    evaluated = portable_paths({"source": DatasetSource(repo, rev).describe(), "rev": rev, "rho": rho, "split": split,
                                "split_file": relpath, "predictions": predictions}, repo)
    masks = [f"{dataset_dir.rstrip('/')}/{image['mask_file']}" for image in images]
    hashes = hash_ground_truth(repo, rev, dataset_dir, [relpath, *masks])
    hashes |= local_hashes(PREDICTIONS, {Path(path).name: path for path in found.values()})
    build = Build(out=Path(out), dataset=f"eval/{names.dataset}", logic_version=versions.EVALUATION,
                  params={"names": names.dataset, **evaluated},  # what the report prints is part of its bytes
                  input_hashes=hashes)
    result = run_evaluation(build, lambda stage: _score(stage, repo, rev, dataset_dir, images, found, shard_size,
                                                       names, evaluated),
                            force=force, logger=logger)
    if not result.up_to_date:
        summary = result.summary
        logger.info("evaluated %d images: mIoU %s, FG-Flip %s -> %s", summary["num_images"], fmt(summary["miou"]),
                    fmt(summary["fg_decomposition"]["flip"]), result.paths["report"])
    publish_evaluation(names.dataset, result)
    return result


def _score(stage: Stage, repo: str, rev: str | None, dataset_dir: str, images: list[dict[str, Any]],
           found: dict[int, str], shard_size: int, names: FlipNames, evaluated: dict[str, Any]) -> Built:
    """Score the images in shards of ``shard_size`` (units) and write the report into ``stage``.

    ``found`` maps each image id to its prediction file.
    """
    futures = [evaluate_shard.submit(stage.unit_key(f"score/{shard_size}/{n}"), repo, rev, dataset_dir, shard,
                                     {int(im["id"]): found[int(im["id"])] for im in shard})
               for n, shard in enumerate(shards(images, shard_size))]
    total = FlipAccumulator()
    for shard in progress.gather(futures, "Evaluating predictions", len(images), units=lambda a: len(a.images),
                                 channel=SCORE_CHANNEL):
        total += shard  # in shard order; the summary does not depend on it anyway
    summary = total.summarize(names)
    write_report_task(str(stage.path), summary, evaluated, names)
    return Built(counts={"images": summary["num_images"]}, units=count_units(futures), extras={"summary": summary})


# --- [[evaluate]] entries of a rebuild plan ----------------------------------------------------


def plan_evaluate(run: RebuildRun, entry: FlipEvaluation, dataset: Path, out: Path) -> EvaluationResult:
    """Run one ``[[evaluate]]`` entry of a rebuild plan on the dataset built at ``dataset``."""
    evaluate = registry.dataset(entry.dataset).load("evaluate_flow")
    return run.call(evaluate, repo=run.plan.repo, rev=None, out=out, predictions=entry.predictions, rho=entry.rho,
                    split=entry.split, dataset_dir=run.relative(dataset))
