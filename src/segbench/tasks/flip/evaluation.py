"""The label-flip evaluation of COCO-CD and Waterbirds-seg, whole, on any :class:`Steps`.

``evaluate coco-cd`` / ``evaluate waterbirds`` typed by hand call these with
:class:`~segbench.core.steps.InProcess` (no Prefect engine); the flows ``evaluate-coco-cd`` and
``evaluate-waterbirds`` (:mod:`segbench.flows.flip`) call them with their task runs. Reading is
:mod:`segbench.tasks.flip.inputs`, the metrics :mod:`segbench.tasks.flip.metrics`, the report
:mod:`segbench.tasks.flip.report`. Images are scored in shards of a few hundred, each a unit.

An evaluation is skipped when its report is up to date (same logic version, split, predictions and
ground truth; :mod:`segbench.core.evaluation_keys`); the report is written in a resumable stage.

Usage::

    from segbench.tasks.flip.evaluation import evaluate_coco_cd
    result = evaluate_coco_cd(repo=".", rev=None, predictions="preds/baseline", out="reports/coco_cd/baseline")
    result.summary.fg_decomposition.flip, result.paths["report"]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from segbench import progress
from segbench.core.build import Build, Built, Stage
from segbench.core.evaluation_keys import PREDICTIONS, ground_truth_hashes, local_hashes, run_evaluation
from segbench.core.integrity import data_source
from segbench.core.reports import fmt, portable_paths
from segbench.core.steps import InProcess, Steps
from segbench.core.versioning import DatasetSource
from segbench.schemas.flip import FlipSummary, summary_model
from segbench.schemas.results import EvaluationResult
from segbench.tasks.flip import qualitative, versions
from segbench.tasks.flip.inputs import evaluate_images, prediction_paths, read_split, split_relpath
from segbench.tasks.flip.metrics import COCO_CD_NAMES, WATERBIRDS_NAMES, FlipAccumulator, FlipNames
from segbench.tasks.flip.report import write_report

DEFAULT_SHARD_SIZE = 256
# Images scored inside evaluation shards advance the "Evaluating" progress as they finish.
SCORE_CHANNEL = "flip.score"


def shards(items: list[dict[str, Any]], size: int) -> list[list[dict[str, Any]]]:
    if size < 1:
        raise ValueError(f"shard_size must be at least 1, got {size}")
    return [items[i : i + size] for i in range(0, len(items), size)]


def load_split(repo: str, rev: str | None, relpath: str) -> list[dict[str, Any]]:
    """The split's image entries, sorted by id (:func:`segbench.tasks.flip.inputs.read_split`)."""
    with data_source(repo, rev) as source:
        return read_split(source, relpath)


def hash_ground_truth(repo: str, rev: str | None, dataset_dir: str, relpaths: list[str]) -> dict[str, str]:
    """sha256 standing for the split file and its masks (``evaluation_keys.ground_truth_hashes``)."""
    with data_source(repo, rev) as source:
        return ground_truth_hashes(source, relpaths, dataset_dir)


def evaluate_shard(unit_key: str, repo: str, rev: str | None, dataset_dir: str, images: list[dict[str, Any]],
                   predictions: dict[int, str]) -> FlipAccumulator:
    """Evaluate one shard of images (a unit); the shards' accumulators are added with ``+=``."""
    with data_source(repo, rev) as source:
        return evaluate_images(source, dataset_dir, progress.each(images, SCORE_CHANNEL), predictions)


def write_report_files(out: str, summary: dict[str, Any], evaluated: dict[str, Any],
                       names: FlipNames = COCO_CD_NAMES, examples: bytes | None = None) -> dict[str, str]:
    """Write metrics.json, report.md and the plots (:func:`segbench.tasks.flip.report.write_report`)."""
    return {name: str(path) for name, path in write_report(out, summary, evaluated, names, examples).items()}


def evaluate_coco_cd(repo: str | Path, rev: str | None, predictions: str | Path, out: str | Path, rho: float = 0.95,
                     split: str = "test", dataset_dir: str = "data/coco_cd", shard_size: int = DEFAULT_SHARD_SIZE,
                     force: bool = False, steps: Steps | None = None) -> EvaluationResult[FlipSummary]:
    """Evaluate a predictions directory on a COCO-CD split and write the report.

    Args:
        repo: project root holding ``dataset_dir``. rev: git revision, ``None`` = working tree.
        predictions: directory of ``{id:012d}.npz`` (``probs``, (3, 512, 512)) or ``.png`` files.
        out: report directory (metrics.json, report.md, per_group_iou.png, flip_by_risk_decile.png,
            examples.png when some image flipped, manifest.json).
        rho, split: which split file: ``{dataset_dir}/splits/rho_{rho:g}/{split}.json``.
        shard_size: images per unit of work (the report does not depend on it).
        force: evaluate again even when the report is up to date.
        steps: who runs the steps (default: this process, :class:`InProcess`).

    Returns:
        The result: ``units`` count shards, ``summary`` is the :class:`FlipSummary` and ``paths`` names
        ``metrics``, ``report``, ``per_group_iou`` and ``flip_by_risk_decile``. An up-to-date
        summary is read back from metrics.json.

    Raises:
        InputError: split or masks missing/malformed; predictions missing (names the directory,
            the count and the first ids), of the wrong shape or with labels outside 0..2.
    """
    return evaluate(repo, rev, predictions, out, rho, split, dataset_dir, shard_size, COCO_CD_NAMES, force, steps)


def evaluate_waterbirds(repo: str | Path, rev: str | None, predictions: str | Path, out: str | Path,
                        rho: float = 0.95, split: str = "test", dataset_dir: str = "data/waterbirds_seg",
                        shard_size: int = DEFAULT_SHARD_SIZE, force: bool = False,
                        steps: Steps | None = None) -> EvaluationResult[FlipSummary]:
    """Evaluate a predictions directory on a Waterbirds-seg split: the COCO-CD metrics, with
    classes landbird/waterbird (label values 1/2) and contexts land/water.

    Predictions are ``{id:012d}.png`` label maps or ``.npz`` files with ``probs`` of shape
    (3, H, W) at each image's own size. Arguments, return value and errors as
    :func:`evaluate_coco_cd`.
    """
    return evaluate(repo, rev, predictions, out, rho, split, dataset_dir, shard_size, WATERBIRDS_NAMES, force, steps)


def evaluate(repo: str | Path, rev: str | None, predictions: str | Path, out: str | Path, rho: float, split: str,
             dataset_dir: str, shard_size: int, names: FlipNames, force: bool,
             steps: Steps | None = None) -> EvaluationResult[FlipSummary]:
    """The body of both evaluations, ``names`` naming the dataset's classes and contexts."""
    steps = steps or InProcess()
    repo, predictions = str(repo), str(predictions)
    relpath = split_relpath(dataset_dir, rho, split)
    images = steps.call("load-coco-cd-split", load_split, repo, rev, relpath)
    found = prediction_paths(predictions, [image["id"] for image in images])
    # Relative to the project: the report is versioned and must not name this machine's folders.
    evaluated = portable_paths({"source": DatasetSource(repo, rev).describe(), "rev": rev, "rho": rho, "split": split,
                                "split_file": relpath, "predictions": predictions}, repo)
    masks = [f"{dataset_dir.rstrip('/')}/{image['mask_file']}" for image in images]
    hashes = steps.call("hash-flip-ground-truth", hash_ground_truth, repo, rev, dataset_dir, [relpath, *masks])
    hashes |= local_hashes(PREDICTIONS, {Path(path).name: path for path in found.values()})
    build = Build(out=Path(out), dataset=f"eval/{names.dataset}", logic_version=versions.EVALUATION,
                  params={"names": names.dataset, **evaluated},  # what the report prints is part of its bytes
                  input_hashes=hashes)
    result = run_evaluation(build, lambda stage: _score(steps, stage, repo, rev, dataset_dir, images, found,
                                                        shard_size, names, evaluated),
                            summary_model(names.classes), force=force, logger=steps.logger)
    if not result.up_to_date:
        summary = result.summary
        steps.logger.info("evaluated %d images: mIoU %s, FG-Flip %s -> %s", summary.num_images,
                          fmt(summary.miou), fmt(summary.fg_decomposition.flip), result.paths["report"])
    return result


def _score(steps: Steps, stage: Stage, repo: str, rev: str | None, dataset_dir: str, images: list[dict[str, Any]],
           found: dict[int, str], shard_size: int, names: FlipNames, evaluated: dict[str, Any]) -> Built:
    """Score the images in shards of ``shard_size`` (units) and write the report into ``stage``.

    ``found`` maps each image id to its prediction file.
    """
    calls = [(stage.unit_key(f"score/{shard_size}/{n}"),
              (repo, rev, dataset_dir, shard, {int(im["id"]): found[int(im["id"])] for im in shard}))
             for n, shard in enumerate(shards(images, shard_size))]
    total = FlipAccumulator()
    for shard in steps.shards("evaluate-shard", evaluate_shard, calls, description="Evaluating predictions",
                              total=len(images), count=lambda a: len(a.images), channel=SCORE_CHANNEL,
                              ids=lambda p: [image["id"] for image in p["images"]]):
        total += shard  # in shard order; the summary does not depend on it anyway
    summary = total.summarize(names).model_dump(mode="json")  # the report writers read the JSON
    examples = steps.call("draw-examples", qualitative.draw, repo, rev, dataset_dir, images, found,
                          qualitative.most_flipped(total.images), names)
    steps.call("write-coco-cd-report", write_report_files, str(stage.path), summary, evaluated, names, examples)
    return Built(counts={"images": summary["num_images"]}, units=steps.unit_counts(), extras={"summary": summary})
