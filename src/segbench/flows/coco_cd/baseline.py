"""The ``predict-baseline-coco-cd`` flow: the context-biased baseline's predictions for a published
COCO-CD split, which the demo (and the evaluation tests) score with the flip metrics.

The predictor itself is pure (:mod:`segbench.demo.coco_cd.baseline`); this flow shards the split.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from segbench import progress
from segbench.core.integrity import data_source
from segbench.demo.coco_cd.baseline import write_baseline_predictions
from segbench.flows.flip import DEFAULT_SHARD_SIZE, load_split, shards
from segbench.flows.prefect_ui import run_name, shard_name
from segbench.tasks.flip.inputs import split_relpath

# Images predicted inside shards advance the "Predicting" progress as they finish.
PREDICT_CHANNEL = "coco_cd.baseline"


@task(**shard_name("predict-baseline-shard", lambda p: [image["id"] for image in p["images"]]), cache_policy=NO_CACHE)
def predict_shard(
    repo: str, rev: str | None, dataset_dir: str, images: list[dict[str, Any]], out: str, seed: int
) -> int:
    """Write baseline predictions for one shard; returns how many were written."""
    with data_source(repo, rev) as source:
        return len(write_baseline_predictions(source, dataset_dir, progress.each(images, PREDICT_CHANNEL), out,
                                              seed=seed))


class BaselinePredictions(TypedDict):
    out: str
    num_images: int


@flow(name="predict-baseline-coco-cd", flow_run_name=run_name("predict-baseline-coco-cd", ("rho", "split", "seed")))
def predict_baseline(
    repo: str | Path,
    rev: str | None,
    out: str | Path,
    rho: float = 0.95,
    split: str = "test",
    dataset_dir: str = "data/coco_cd",
    seed: int = 0,
    shard_size: int = DEFAULT_SHARD_SIZE,
) -> BaselinePredictions:
    """Write context-biased baseline predictions (``{id:012d}.npz``) for every image of a split.

    Raises:
        InputError: the split or a gt mask is missing or malformed.
    """
    logger = get_run_logger()
    repo, out = str(repo), str(out)
    images = load_split(repo, rev, split_relpath(dataset_dir, rho, split))
    futures = [
        predict_shard.submit(repo, rev, dataset_dir, shard, out, seed)
        for shard in shards(images, shard_size)
    ]
    written = sum(progress.gather(futures, "Predicting with the baseline", len(images), units=int,
                                  channel=PREDICT_CHANNEL))
    logger.info("wrote %d baseline predictions to %s", written, out)
    return {"out": out, "num_images": written}
