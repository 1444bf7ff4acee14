"""Evaluation and prediction shards report every image they finish, so a stage's progress moves item
by item within a shard (as the render shards do), not one jump per shard.

Each shard's work runs while its stage gathers (``progress.gather`` on the channel the flow uses),
the way a shard task runs in this process during a flow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from support.flip_eval_data import IMAGE_IDS, write_flip_dataset, write_label_predictions
from support.spin_eval_data import write_dataset

from segbench import progress
from segbench.core.versioning import DatasetSource
from segbench.flows.coco_cd import baseline
from segbench.tasks.flip import evaluation as flip
from segbench.tasks.flip.inputs import read_split, split_relpath
from segbench.tasks.spin import evaluation as spin_evaluate
from segbench.tasks.spin.inputs import read_ground_truth


class _Running:
    """A shard that runs when its result is asked for, as a task run finishing in this process."""

    def __init__(self, work: Callable[[], Any]) -> None:
        self.work = work

    def result(self) -> Any:
        return self.work()


class _Recorder:
    def __init__(self) -> None:
        self.advances: list[int] = []

    def start(self, description: str, total: int | None) -> object:
        return description

    def advance(self, handle: object, amount: int = 1) -> None:
        self.advances.append(amount)

    def finish(self, handle: object, completed: bool = True) -> None:
        return None


def _advances(work: Callable[[], Any], total: int, channel: str, units: Callable[[Any], int]) -> list[int]:
    recorder = _Recorder()
    with progress.listening(recorder):
        progress.gather([_Running(work)], "shard", total, units=units, channel=channel)
    return recorder.advances


def _flip_images(tmp_path):
    repo = tmp_path / "project"
    write_flip_dataset(repo / "data" / "coco_cd")
    with DatasetSource(repo, None) as source:
        return repo, read_split(source, split_relpath("data/coco_cd", 0.95, "test"))


def test_a_flip_evaluation_shard_advances_once_per_image(tmp_path):
    repo, images = _flip_images(tmp_path)
    preds = write_label_predictions(tmp_path / "preds")
    found = {i: str(preds / f"{i:012d}.png") for i in IMAGE_IDS}
    advances = _advances(lambda: flip.evaluate_shard("key", str(repo), None, "data/coco_cd", images, found),
                         len(images), flip.SCORE_CHANNEL, units=lambda acc: len(acc.images))
    assert advances == [1] * len(IMAGE_IDS)


def test_a_baseline_prediction_shard_advances_once_per_image(tmp_path):
    repo, images = _flip_images(tmp_path)
    advances = _advances(lambda: baseline.predict_shard.fn(str(repo), None, "data/coco_cd", images,
                                                           str(tmp_path / "preds"), 0),
                         len(images), baseline.PREDICT_CHANNEL, units=int)
    assert advances == [1] * len(IMAGE_IDS)


def test_a_spin_evaluation_shard_advances_once_per_image(tmp_path):
    write_dataset(tmp_path / "data" / "spin")
    with DatasetSource(tmp_path, None) as source:
        truth = read_ground_truth(source, "data/spin", "test")
    images = list(truth.images.values())
    advances = _advances(lambda: spin_evaluate.evaluate_shard("key", images, {}, truth.hierarchy, ("general",)),
                         len(images), spin_evaluate.SCORE_CHANNEL, units=lambda acc: acc.num_images)
    assert advances == [1] * len(images) and len(images) > 1
