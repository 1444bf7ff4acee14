"""The context-biased baseline: deterministic, valid probabilities, flips where context misleads."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image

from segbench.core.versioning import DatasetSource
from segbench.demo.coco_cd.baseline import baseline_probs, npz_bytes, write_baseline_predictions
from segbench.tasks.flip.inputs import evaluate_images, prediction_paths, read_split

SIZE = 64


def _mask(image_id: int, group_id: int) -> np.ndarray:
    rng = np.random.default_rng(image_id)
    mask = np.zeros((SIZE, SIZE), np.uint8)
    y, x = rng.integers(4, 24, 2)
    h, w = rng.integers(16, 36, 2)
    mask[y : y + h, x : x + w] = 1 + group_id // 2
    return mask


def _write_split(repo, n_per_group: int = 10) -> list[dict]:
    root = repo / "data" / "coco_cd"
    (root / "masks").mkdir(parents=True)
    images = []
    for image_id in range(1, 4 * n_per_group + 1):
        group_id = image_id % 4
        Image.fromarray(_mask(image_id, group_id), mode="L").save(
            root / "masks" / f"{image_id:012d}.png"
        )
        images.append(
            {"id": image_id, "group_id": group_id, "mask_file": f"masks/{image_id:012d}.png"}
        )
    split = root / "splits" / "rho_0.95" / "test.json"
    split.parent.mkdir(parents=True)
    split.write_text(json.dumps({"images": images, "annotations": [], "categories": []}))
    return images


def test_same_seed_gives_identical_bytes_and_other_seeds_differ():
    mask = _mask(5, 2)
    first = npz_bytes(baseline_probs(mask, group_id=2, image_id=5, seed=3))
    assert first == npz_bytes(baseline_probs(mask, group_id=2, image_id=5, seed=3))
    assert first != npz_bytes(baseline_probs(mask, group_id=2, image_id=5, seed=4))
    assert first != npz_bytes(baseline_probs(mask, group_id=2, image_id=6, seed=3))


def test_probabilities_are_valid_and_the_mask_is_untouched():
    mask = _mask(1, 0)
    before = mask.copy()
    probs = baseline_probs(mask, group_id=0, image_id=1)
    assert probs.shape == (3, SIZE, SIZE) and probs.dtype == np.float32
    assert np.allclose(probs.sum(axis=0), 1.0, atol=1e-6) and (probs >= 0).all()
    assert np.array_equal(mask, before)
    with np.load(io.BytesIO(npz_bytes(probs))) as archive:
        assert archive.files == ["probs"] and np.array_equal(archive["probs"], probs)
    with pytest.raises(ValueError, match="group_id"):
        baseline_probs(mask, group_id=7, image_id=1)


def test_written_predictions_are_deterministic(tmp_path):
    images = _write_split(tmp_path, n_per_group=2)
    source = DatasetSource(tmp_path)
    first = write_baseline_predictions(source, "data/coco_cd", images, tmp_path / "a", seed=1)
    second = write_baseline_predictions(source, "data/coco_cd", images, tmp_path / "b", seed=1)
    assert [p.name for p in first] == [f"{im['id']:012d}.npz" for im in images]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(first, second, strict=True))


def test_counterfactual_groups_flip_more_than_aligned_ones(tmp_path):
    _write_split(tmp_path)
    source = DatasetSource(tmp_path)
    images = read_split(source, "data/coco_cd/splits/rho_0.95/test.json")
    out = tmp_path / "preds"
    write_baseline_predictions(source, "data/coco_cd", images, out, seed=0)
    acc = evaluate_images(
        source, "data/coco_cd", images, prediction_paths(out, [im["id"] for im in images])
    )
    flip = {g: np.mean([r.flip for r in acc.images if r.group_id == g]) for g in range(4)}
    assert min(flip[1], flip[2]) > 2 * max(flip[0], flip[3])
    summary = acc.summarize().model_dump(mode="json")
    assert summary["gaps"]["cat"]["gap"] > 0.1 and summary["gaps"]["dog"]["gap"] > 0.1
    assert 0 < summary["fg_decomposition"]["miss"] < 0.1  # extent mostly kept
    deciles = summary["flip_risk"]["deciles"]
    assert deciles[-1]["mean_flip"] > deciles[0]["mean_flip"]
