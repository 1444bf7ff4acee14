"""COCO-CD flip metrics on hand-made label maps with hand-computed expectations."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from PIL import Image

from segbench.core.errors import InputError
from segbench.tasks.flip.inputs import prediction_paths, read_prediction
from segbench.tasks.flip.metrics import (
    FlipAccumulator,
    flip_risk,
    identity_entropy,
    labels_from_probs,
    risk_deciles,
)

# 4x4: 4 cat (top right), 4 dog (bottom left), 8 background.
GT = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 0, 0], [2, 2, 0, 0]], np.uint8)
# cat: 2 correct, 1 flipped, 1 missed; dog: 2 correct, 1 flipped, 1 missed; 1 background -> cat.
PRED = np.array([[0, 0, 1, 2], [0, 1, 0, 1], [2, 1, 0, 0], [0, 2, 0, 0]], np.uint8)


def one_hot(labels: np.ndarray, confidence: float = 0.8) -> np.ndarray:
    """(H, W) labels -> (3, H, W) probabilities peaked on the label."""
    probs = np.full((3, *labels.shape), (1 - confidence) / 2)
    np.put_along_axis(probs, labels[None].astype(np.int64), confidence, axis=0)
    return probs


def summarize(*images):
    acc = FlipAccumulator()
    for i, (gt, pred, group) in enumerate(images):
        acc.update(gt, pred, group_id=group, image_id=i)
    return acc.summarize().model_dump(mode="json")


def test_decomposition_iou_and_fg_iou_match_hand_computation():
    s = summarize((GT, PRED, 0))
    dec = s["fg_decomposition"]
    assert dec["gt_fg_pixels"] == 8
    assert (dec["corr"], dec["flip"], dec["miss"]) == (0.5, 0.25, 0.25)
    assert dec["corr"] + dec["flip"] + dec["miss"] == pytest.approx(1.0)
    assert s["confusion_matrix"] == [[7, 1, 0], [1, 2, 1], [1, 1, 2]]
    # background 7 / (8 + 9 - 7); cat 2 / (4 + 4 - 2); dog 2 / (4 + 3 - 2)
    assert s["class_iou"] == pytest.approx({"background": 0.7, "cat": 1 / 3, "dog": 0.4})
    assert s["miou"] == pytest.approx((1 / 3 + 0.4) / 2)
    assert s["fg_iou"] == pytest.approx(6 / 9)
    assert s["flip"]["global"] == 0.25 and s["flip"]["per_image_mean"] == 0.25


def test_perfect_prediction():
    s = summarize((GT, GT.copy(), 0))
    assert s["class_iou"] == {"background": 1.0, "cat": 1.0, "dog": 1.0}
    assert (s["miou"], s["fg_iou"]) == (1.0, 1.0)
    assert s["fg_decomposition"]["corr"] == 1.0 and s["flip"]["global"] == 0.0


def test_full_identity_swap_is_all_flip_with_perfect_foreground():
    swapped = np.where(GT == 1, 2, np.where(GT == 2, 1, 0)).astype(np.uint8)
    s = summarize((GT, swapped, 0))
    assert s["flip"]["global"] == 1.0 and s["flip"]["per_image_mean"] == 1.0
    assert s["fg_iou"] == 1.0
    assert s["miou"] == 0.0 and s["class_iou"]["background"] == 1.0
    assert s["fg_decomposition"]["miss"] == 0.0


def test_per_image_mean_differs_from_global_on_unequal_images():
    big = np.ones((4, 4), np.uint8)  # 16 cat pixels, 4 flipped
    big_pred = big.copy()
    big_pred[0] = 2
    small = np.zeros((8, 8), np.uint8)
    small[0, :4] = 2  # 4 dog pixels, all flipped
    small_pred = np.where(small == 2, 1, 0).astype(np.uint8)
    empty = np.zeros((4, 4), np.uint8)  # no gt foreground: skipped by the per-image mean
    s = summarize((big, big_pred, 0), (small, small_pred, 2), (empty, empty.copy(), 1))
    assert s["flip"]["global"] == pytest.approx(8 / 20)
    assert s["flip"]["per_image_mean"] == pytest.approx((0.25 + 1.0) / 2)
    assert s["flip"]["images_counted"] == 2 and s["flip"]["images_without_gt_fg"] == 1


def test_per_group_iou_and_gaps():
    cat = np.zeros((4, 4), np.uint8)
    cat[:2] = 1
    dog = np.where(cat == 1, 2, 0).astype(np.uint8)
    half_flipped = cat.copy()
    half_flipped[0] = 2
    s = summarize(
        (cat, cat.copy(), 0),  # cat indoors perfect
        (cat, half_flipped, 1),  # cat outdoors: 4 of 8 cat pixels -> dog
        (dog, np.where(dog == 2, 1, 0).astype(np.uint8), 2),  # dog indoors: all -> cat
        (dog, dog.copy(), 3),  # dog outdoors perfect
    )
    groups = {g["group_id"]: g for g in s["per_group"]}
    assert groups[0]["name"] == "cat indoors (aligned)" and groups[2]["kind"] == "counterfactual"
    assert groups[1]["iou"]["cat"] == 0.5 and groups[1]["iou"]["dog"] == 0.0
    assert groups[0]["iou"]["dog"] is None  # no dog in gt or prediction: undefined, not NaN
    assert s["gaps"]["cat"] == {
        "aligned_group": 0,
        "counterfactual_group": 1,
        "aligned_iou": 1.0,
        "counterfactual_iou": 0.5,
        "gap": 0.5,
    }
    assert s["gaps"]["dog"]["gap"] == 1.0 and s["gaps"]["dog"]["counterfactual_group"] == 2
    assert all(g["num_images"] == 1 for g in s["per_group"])


def test_deciles_on_twenty_records():
    # risk i/20; flips only at the lowest record (0.5) and the two highest (0.5, 1.0).
    records = [(i / 20, 100 + i, {0: 0.5, 18: 0.5, 19: 1.0}.get(i, 0.0)) for i in range(20)]
    random.Random(0).shuffle(records)
    out = risk_deciles(records)
    deciles = out.deciles
    assert [d.count for d in deciles] == [2] * 10 and out.num_records == 20
    assert deciles[0].mean_risk == pytest.approx(0.025) and deciles[0].mean_flip == 0.25
    assert deciles[4].mean_flip == 0.0 and deciles[4].mean_risk == pytest.approx(0.425)
    assert deciles[9].mean_flip == 0.75
    assert out.top_decile_share == pytest.approx(1.5 / 2.0)
    assert out.fewer_than_10_records is False


def test_deciles_with_ties_and_fewer_than_ten_records():
    out = risk_deciles([(0.3, 30, 1.0), (0.3, 10, 0.0), (0.3, 20, 0.0)])
    counts = [d.count for d in out.deciles]
    assert counts == [0, 0, 0, 1, 0, 0, 1, 0, 0, 1]  # boundaries d*3//10
    assert out.deciles[0].mean_risk is None and out.deciles[0].mean_flip is None
    assert out.deciles[9].mean_flip == 1.0  # ties broken by image id: id 30 is last
    assert out.top_decile_share == 1.0 and out.fewer_than_10_records is True
    empty = risk_deciles([])
    assert empty.top_decile_share is None and all(d.count == 0 for d in empty.deciles)
    assert risk_deciles([(0.1, 1, 0.0)] * 1).top_decile_share is None  # no flip at all


def test_entropy_guards_and_flip_risk():
    probs = np.array(
        [
            [[0.2, 0.0, 1.0, 0.9]],  # background
            [[0.4, 1.0, 0.0, 0.1]],  # cat
            [[0.4, 0.0, 0.0, 0.0]],  # dog
        ]
    )  # (3, 1, 4): even split, pure cat, zero cat+dog, pure cat under background
    entropy = identity_entropy(probs)
    assert entropy.shape == (1, 4) and not np.isnan(entropy).any()
    assert entropy[0].tolist() == pytest.approx([math.log(2), 0.0, 0.0, 0.0])
    pred = labels_from_probs(probs)
    assert pred.tolist() == [[1, 1, 0, 0]]
    assert flip_risk(probs, pred) == pytest.approx(math.log(2) / 2)
    assert flip_risk(probs, np.zeros((1, 4), np.uint8)) is None


def test_risk_records_skip_images_without_predicted_foreground():
    acc = FlipAccumulator()
    acc.update(GT, PRED, one_hot(PRED), group_id=0, image_id=1)
    background = np.zeros_like(GT)
    acc.update(GT, background, one_hot(background), group_id=0, image_id=2)
    risk = acc.summarize().model_dump(mode="json")["flip_risk"]
    assert risk["num_records"] == 1 and risk["images_without_pred_fg"] == 1
    assert risk["fewer_than_10_records"] is True


def _random_image(rng, size=8):
    gt = rng.integers(0, 3, (size, size)).astype(np.uint8)
    logits = rng.normal(size=(3, size, size))
    probs = np.exp(logits) / np.exp(logits).sum(axis=0)
    return gt, labels_from_probs(probs), probs


def test_shards_combined_with_iadd_equal_a_single_pass():
    rng = np.random.default_rng(7)
    images = [(*_random_image(rng), i % 4, 1000 + i) for i in range(12)]
    single = FlipAccumulator()
    for gt, pred, probs, group, image_id in images:
        single.update(gt, pred, probs, group_id=group, image_id=image_id)
    shard_a, shard_b = FlipAccumulator(), FlipAccumulator()
    for k, (gt, pred, probs, group, image_id) in enumerate(images):
        (shard_a if k % 3 else shard_b).update(gt, pred, probs, group_id=group, image_id=image_id)
    combined = FlipAccumulator()
    combined += shard_b  # the other order on purpose
    combined += shard_a
    assert combined.summarize() == single.summarize()
    assert single.summarize().model_dump(mode="json")["flip_risk"]["num_records"] == 12


def test_update_does_not_mutate_inputs():
    rng = np.random.default_rng(3)
    gt, pred, probs = _random_image(rng)
    copies = [gt.copy(), pred.copy(), probs.copy()]
    for array in (gt, pred, probs):
        array.flags.writeable = False  # an in-place write would raise
    acc = FlipAccumulator()
    acc.update(gt, pred, probs, group_id=1, image_id=5)
    acc.summarize()
    for array, copy in zip((gt, pred, probs), copies, strict=True):
        assert np.array_equal(array, copy)


def test_label_map_predictions_report_risk_unavailable():
    s = summarize((GT, PRED, 0), (GT, GT.copy(), 3))
    assert s["flip_risk"] is None
    assert "2 of 2" in s["flip_risk_unavailable"]
    acc = FlipAccumulator()  # mixed: one image with probabilities is not enough
    acc.update(GT, PRED, one_hot(PRED), group_id=0, image_id=1)
    acc.update(GT, PRED, group_id=0, image_id=2)
    assert acc.summarize().model_dump(mode="json")["flip_risk"] is None


def test_empty_accumulator_gives_none_not_nan():
    s = FlipAccumulator().summarize().model_dump(mode="json")
    assert s["num_images"] == 0 and s["miou"] is None and s["fg_iou"] is None
    assert s["flip"]["global"] is None and s["flip"]["per_image_mean"] is None


@pytest.mark.parametrize(
    ("pred", "group", "message"),
    [
        (np.zeros((4, 5), np.uint8), 0, "shape"),
        (np.full((4, 4), 3, np.uint8), 0, "values"),
        (PRED, 4, "group_id"),
    ],
)
def test_update_rejects_bad_arguments(pred, group, message):
    with pytest.raises(ValueError, match=message):
        FlipAccumulator().update(GT, pred, group_id=group, image_id=1)


def test_the_same_image_twice_is_rejected():
    acc = FlipAccumulator()
    acc.update(GT, PRED, group_id=0, image_id=1)
    acc.update(GT, PRED, group_id=0, image_id=1)
    with pytest.raises(ValueError, match="more than once"):
        acc.summarize()


def test_prediction_paths_prefer_npz_and_name_missing_ids(tmp_path):
    np.savez_compressed(tmp_path / "000000000001.npz", probs=one_hot(GT))
    Image.fromarray(GT).save(tmp_path / "000000000001.png")
    Image.fromarray(GT).save(tmp_path / "000000000002.png")
    found = prediction_paths(tmp_path, [1, 2])
    assert found[1].endswith(".npz") and found[2].endswith(".png")
    with pytest.raises(InputError) as info:
        prediction_paths(tmp_path, [1, 2, 7, 9])
    text = str(info.value)
    assert str(tmp_path) in text and "2 of 4" in text and "000000000007" in text and "fix:" in text
    with pytest.raises(InputError, match="not found"):
        prediction_paths(tmp_path / "absent", [1])


def test_read_prediction_checks_shape_and_labels(tmp_path):
    good = tmp_path / "000000000001.npz"
    np.savez_compressed(good, probs=one_hot(GT).astype(np.float32))
    pred, probs = read_prediction(good, (4, 4))
    assert np.array_equal(pred, GT) and probs.shape == (3, 4, 4)
    wrong = tmp_path / "000000000002.npz"
    np.savez_compressed(wrong, probs=np.zeros((3, 2, 2), np.float32))
    with pytest.raises(InputError, match="000000000002.npz"):
        read_prediction(wrong, (4, 4))
    bad_key = tmp_path / "000000000003.npz"
    np.savez_compressed(bad_key, logits=np.zeros((3, 4, 4), np.float32))
    with pytest.raises(InputError, match="no array 'probs'"):
        read_prediction(bad_key, (4, 4))
    labels = tmp_path / "000000000004.png"
    Image.fromarray(np.full((4, 4), 5, np.uint8)).save(labels)
    with pytest.raises(InputError, match="000000000004.png"):
        read_prediction(labels, (4, 4))
    ok_png = tmp_path / "000000000005.png"
    Image.fromarray(PRED).save(ok_png)
    pred, probs = read_prediction(ok_png, (4, 4))
    assert np.array_equal(pred, PRED) and probs is None


def test_risk_over_ground_truth_foreground_ranks_by_the_entropy_where_the_object_is():
    probs = np.array([[[0.2, 0.0, 1.0, 0.9]], [[0.4, 1.0, 0.0, 0.1]], [[0.4, 0.0, 0.0, 0.0]]])  # entropy ln2, 0, 0, 0
    pred = labels_from_probs(probs)  # [[1, 1, 0, 0]]
    acc = FlipAccumulator()
    acc.update(np.array([[0, 1, 1, 0]], np.uint8), pred, probs, group_id=0, image_id=1)
    acc.update(np.zeros((1, 4), np.uint8), pred, probs, group_id=0, image_id=2)  # no object in the ground truth
    summary = acc.summarize().model_dump(mode="json")
    deployable, by_gt = summary["flip_risk"], summary["flip_risk_gt_foreground"]
    # Over the predicted foreground (pixels 0, 1): ln2 / 2; over the ground truth's (pixels 1, 2): 0.
    assert [d["mean_risk"] for d in deployable["deciles"] if d["count"]] == [pytest.approx(math.log(2) / 2)]
    assert [d["mean_risk"] for d in by_gt["deciles"] if d["count"]] == [0.0]
    assert (by_gt["num_records"], by_gt["images_without_gt_fg"], by_gt["images_without_pred_fg"]) == (1, 1, 0)
    without_probs = FlipAccumulator()
    without_probs.update(np.array([[0, 1, 1, 0]], np.uint8), pred, group_id=0, image_id=1)
    assert without_probs.summarize().flip_risk_gt_foreground is None
