"""SPIN metrics on hand-computed masks, and the typed errors of bad prediction and answer files."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from support.spin_eval_data import RELEASE_STYLE, SIZE, box, gt_mask, perfect_predictions, rle, write_dataset

from segbench.core.errors import AnnotationError, ImportPolicy, InputError, OnError
from segbench.core.masks import rle_to_bitmap
from segbench.core.versioning import DatasetSource
from segbench.tasks.spin.inputs import read_answers, read_ground_truth, read_predictions
from segbench.tasks.spin.metrics import (
    Prediction,
    SpinAccumulator,
    containment,
    entailed_pixels,
    label_map,
)
from segbench.tasks.spin.recognition import Answer, recognition_accuracy, says_yes

FAIL = ImportPolicy()


@pytest.fixture
def truth(tmp_path):
    write_dataset(tmp_path / "data" / "spin")
    with DatasetSource(tmp_path, None) as source:
        return read_ground_truth(source, "data/spin", "test")


def pred(level, cat, mask, prompt="general", score=1.0):
    return Prediction(level, cat, prompt, rle(mask), score)


def evaluate(truth, by_image, prompts=("general",)):
    acc = SpinAccumulator()
    for image_id, image in truth.images.items():
        acc.update(image, by_image.get(image_id, []), truth.hierarchy, prompts)
    return acc.summarize(truth.hierarchy).model_dump(mode="json")


def perfect(truth, prompt="general"):
    files = perfect_predictions(prompt)
    out = {}
    for level, entries in files.items():
        for e in entries:
            prediction = Prediction(level, e["category_id"], prompt, e["segmentation"], 1.0)
            out.setdefault(e["image_id"], []).append(prediction)
    return out


def test_the_hierarchy_comes_from_parent_ids_not_names(tmp_path):
    write_dataset(tmp_path / "data" / "spin", taxonomy=False, categories=RELEASE_STYLE)
    with DatasetSource(tmp_path, None) as source:
        truth = read_ground_truth(source, "data/spin", "test")
    assert truth.hierarchy.part_of == {1: 0, 2: 1, 3: 2}  # Crest has no annotation: linked to nothing
    assert truth.hierarchy.supercategory("subparts", 3) == "Bird"
    summary = evaluate(truth, perfect(truth))["prompts"]["general"]
    assert summary["secs"]["score"] == 1.0 and summary["spcs"]["mean"] == 1.0
    assert {name: s["secs"]["score"] for name, s in summary["per_supercategory"].items()} == {"Bird": 1.0,
                                                                                               "Quadruped": 1.0}
    # A Beak (a Bird-Head subpart) painted inside the antelope's Eye is not entailed there.
    by_image = perfect(truth)
    by_image[10].append(pred("subparts", 3, gt_mask(1000), score=2.0))
    assert evaluate(truth, by_image)["prompts"]["general"]["per_supercategory"]["Quadruped"]["secs"]["score"] < 1


def test_parents_of_two_categories_are_refused(tmp_path):
    dataset = write_dataset(tmp_path / "data" / "spin", taxonomy=False, categories=RELEASE_STYLE)
    path = dataset / "dataset" / "spin_test_subparts.json"
    coco = json.loads(path.read_text())
    coco["annotations"].append(dict(coco["annotations"][0], id=5000, image_id=20, parent_id=102))
    path.write_text(json.dumps(coco))
    with DatasetSource(tmp_path, None) as source, pytest.raises(InputError, match="parents are of several"):
        read_ground_truth(source, "data/spin", "test")


def test_containment_of_hand_masks():
    child = box(0, 2, 0, 2)
    assert containment(child, box(0, 1, 0, 2)) == 0.5
    assert containment(child, box(0, 12, 0, 12)) == 1.0
    assert containment(np.zeros_like(child), child) is None


def test_a_subpart_half_outside_its_part_gives_spcs_half(truth):
    by_image = perfect(truth)
    eye = box(1, 3, 3, 5)  # cols 3-5 straddle the Head's edge (cols 0-4): 2 pixels in, 2 out
    by_image[10] = [p for p in by_image[10] if (p.level, p.category_id) != ("subparts", 1)]
    by_image[10].append(pred("subparts", 1, eye))
    spcs = evaluate(truth, by_image)["prompts"]["general"]["spcs"]
    # S2P pairs: Eye 0.5, Back 1, Beak 1 → 2.5 / 3; P2O pairs: all 1
    assert spcs["s2p"] == {"score": pytest.approx(2.5 / 3), "pairs": 3, "child_abstained": 0, "parent_abstained": 0}
    assert spcs["p2o"]["score"] == 1.0 and spcs["p2o"]["pairs"] == 3
    assert spcs["mean"] == pytest.approx((2.5 / 3 + 1) / 2)
    assert spcs["pooled"] == pytest.approx(5.5 / 6)
    quadruped = evaluate(truth, by_image)["prompts"]["general"]["per_supercategory"]["Quadruped"]["spcs"]
    assert quadruped["s2p"]["score"] == pytest.approx(0.75)  # Eye 0.5, Back 1


def test_single_pair_half_outside_is_exactly_half(truth):
    # Only the Eye and the Head are predicted: one S2P pair, containment 2/4.
    by_image = {10: [pred("subparts", 1, box(1, 3, 3, 5)), pred("parts", 0, gt_mask(100))]}
    spcs = evaluate(truth, by_image)["prompts"]["general"]["spcs"]
    assert spcs["s2p"]["score"] == 0.5 and spcs["s2p"]["pairs"] == 1
    assert spcs["s2p"]["child_abstained"] == 2  # Back and Beak: no prediction, skipped
    assert spcs["p2o"]["score"] is None and spcs["p2o"]["parent_abstained"] == 1  # Head without a whole
    assert spcs["mean"] is None and spcs["pooled"] == 0.5


def test_entailed_predictions_give_secs_one(truth):
    secs = evaluate(truth, perfect(truth))["prompts"]["general"]["secs"]
    assert secs == {"score": 1.0, "pixels": 4 + 24 + 4, "images": 2}


def test_a_pixel_whose_subpart_is_not_entailed_by_its_part_counts_against_secs(truth):
    by_image = perfect(truth)
    # An unprompted Bird-Head-Beak inside the quadruped's Head, one pixel outside the Eye: 1 bad pixel.
    by_image[10].append(pred("subparts", 3, box(0, 1, 0, 1)))
    summary = evaluate(truth, by_image)["prompts"]["general"]
    assert summary["secs"]["pixels"] == 33 and summary["secs"]["score"] == pytest.approx(32 / 33)
    assert summary["per_supercategory"]["Quadruped"]["secs"]["score"] == pytest.approx(28 / 29)
    assert summary["levels"]["subparts"]["unprompted_predictions"] == 1


def test_secs_needs_both_entailments():
    from support.spin_eval_data import PARTS, SUBPARTS, WHOLES

    from segbench.tasks.spin.hierarchy import build_hierarchy

    hierarchy = build_hierarchy({"wholes": WHOLES, "parts": PARTS, "subparts": SUBPARTS})
    shape = (1, 4)
    sub = np.array([[1, 1, 3, -1]])  # Eye, Eye, Beak, background
    part = np.array([[0, 0, 0, 0]])  # Quadruped-Head everywhere
    whole = np.array([[0, 1, 0, 0]])  # Quadruped, Bird, Quadruped, Quadruped
    # pixel 0: Eye⊂Head⊂Quadruped ✓; pixel 1: Head is not a Bird part ✗; pixel 2: Beak is no Quadruped-Head
    # subpart ✗; pixel 3: not in X.
    assert entailed_pixels(sub.reshape(shape), part, whole, hierarchy) == (3, 1)


def test_label_map_resolves_overlaps_by_score_then_category():
    a, b = box(0, 2, 0, 2), box(1, 3, 1, 3)
    assert label_map([(5, 0.2, a), (7, 0.9, b)], (SIZE, SIZE))[1, 1] == 7
    assert label_map([(5, 0.9, a), (7, 0.9, b)], (SIZE, SIZE))[1, 1] == 5
    assert label_map([(7, 0.9, b), (5, 0.9, a)], (SIZE, SIZE))[1, 1] == 5
    assert label_map([], (2, 2)).tolist() == [[-1, -1], [-1, -1]]


def test_specific_label_space_restricts_subparts_to_their_object_classes(truth):
    by_image = {p: [q for q in preds] for p, preds in perfect(truth, "specific").items()}
    for image_id, preds in perfect(truth, "general").items():
        by_image[image_id] += preds
    # A Crest (cockatoos only) on the goldfinch's Head, outside the Beak: 2 pixels.
    for prompt in ("general", "specific"):
        by_image[20].append(pred("subparts", 4, box(2, 3, 2, 4), prompt))
    summary = evaluate(truth, by_image, ("general", "specific"))["prompts"]
    assert summary["general"]["secs"]["score"] == 1.0
    assert summary["specific"]["secs"]["score"] == pytest.approx(32 / 34)


def test_miou_is_cumulative_per_category_and_abstention_counts(truth):
    by_image = {
        # Quadruped whole: predicted rows 0-5 → inter 60, union 120
        10: [pred("wholes", 0, box(0, 5, 0, 12))],
        # Bird whole predicted exactly; Bird-Head predicted empty (abstains)
        20: [pred("wholes", 1, gt_mask(2)), pred("parts", 2, np.zeros((SIZE, SIZE), bool))],
    }
    levels = evaluate(truth, by_image)["prompts"]["general"]["levels"]
    assert levels["wholes"]["miou"] == pytest.approx((0.5 + 1.0) / 2)
    assert levels["wholes"]["abstention_rate"] == 0.0
    assert levels["parts"] | {"categories": None} == {
        "miou": 0.0, "mean_entity_iou": 0.0, "entities": 3, "abstained": 3, "abstention_rate": 1.0,
        "unprompted_predictions": 0, "categories": None}
    assert levels["subparts"]["abstained"] == 3


def test_miou_accumulates_intersections_before_dividing(truth):
    by_image = {10: [pred("parts", 0, box(0, 2, 0, 4)),  # Head: 8 / 16
                     pred("parts", 1, gt_mask(101) | box(10, 12, 0, 12))]}  # Torso: 72 / 96
    levels = evaluate(truth, by_image)["prompts"]["general"]["levels"]
    cats = {c["name"]: c["iou"] for c in levels["parts"]["categories"]}
    assert cats == {"Quadruped-Head": 0.5, "Quadruped-Torso": 0.75, "Bird-Head": 0.0}
    assert levels["parts"]["miou"] == pytest.approx(1.25 / 3)


def test_shards_add_up_to_the_whole(truth):
    by_image = perfect(truth)
    by_image[10].append(pred("subparts", 3, box(0, 1, 0, 1)))
    whole = SpinAccumulator()
    shards = [SpinAccumulator(), SpinAccumulator()]
    for shard, (image_id, image) in zip(shards, truth.images.items(), strict=True):
        shard.update(image, by_image[image_id], truth.hierarchy, ("general",))
        whole.update(image, by_image[image_id], truth.hierarchy, ("general",))
    total = SpinAccumulator()
    for shard in shards:
        total += shard
    assert total.summarize(truth.hierarchy) == whole.summarize(truth.hierarchy)


def test_recognition_macc_is_a_mean_over_categories(truth):
    answers = [Answer("parts", 0, "general", True, True), Answer("parts", 0, "general", False, True),
               Answer("parts", 2, "general", True, True), Answer("parts", 2, "specific", False, True)]
    out = recognition_accuracy(answers, truth.hierarchy)
    assert out["general"]["parts"].macc == pytest.approx((0.5 + 1.0) / 2)
    assert out["general"]["parts"].accuracy == pytest.approx(2 / 3)
    assert out["general"]["parts"].yes_rate == pytest.approx(2 / 3)
    assert out["specific"]["parts"].macc == 0.0
    assert says_yes("Yes.") and says_yes("I think yes, it is") and says_yes("No, those are eyes")  # the paper's
    assert says_yes("YES", "word") and not says_yes("No, those are eyes", "word") and not says_yes("No.")


def _write(tmp_path, name, entries):
    path = tmp_path / name
    path.write_text(json.dumps(entries))
    return path


def test_answers_file_truth_defaults_to_presence(truth, tmp_path):
    path = _write(tmp_path, "answers.json", [
        {"image_id": 10, "category_id": 0, "level": "parts", "answer": "Yes"},  # present → correct
        {"image_id": 10, "category_id": 2, "level": "parts", "answer": "yes"},  # Bird-Head absent → wrong
        {"gt_id": 102, "level": "parts", "prompt": "specific", "answer": "no", "truth": "no"},
    ])
    answers = read_answers(path, truth, FAIL)
    assert [(a.category_id, a.answer, a.truth, a.prompt) for a in answers] == [
        (0, True, True, "general"), (2, True, False, "general"), (2, False, False, "specific")]


def test_predictions_with_gt_id_resolve_to_their_entity(truth, tmp_path):
    path = _write(tmp_path, "parts.json", [{"gt_id": 101, "segmentation": rle(gt_mask(101)), "prompt": "specific"}])
    by_image = read_predictions({"parts": path}, truth, FAIL)
    assert [(p.category_id, p.prompt, p.score) for p in by_image[10]] == [(1, "specific", 1.0)]


GOOD = {"image_id": 10, "category_id": 0, "prompt": "general"}


@pytest.mark.parametrize(("level", "entry", "message"), [
    ("parts", {**GOOD, "image_id": 99}, "unknown image_id 99"),
    ("parts", {**GOOD, "category_id": 7}, "category_id 7 is not a parts category"),
    ("subparts", {**GOOD, "category_id": 0}, "not a subparts category (the wholes category 'Quadruped'?)"),
    ("parts", {**GOOD, "segmentation": {"size": [5, 5], "counts": "0:"}}, "does not match the image size"),
    ("parts", {**GOOD, "segmentation": {"size": [SIZE, SIZE], "counts": "abc"}}, "invalid segmentation"),
    ("parts", {**GOOD, "prompt": "vague"}, "prompt 'vague'"),
    ("parts", {**GOOD, "score": "high"}, "score 'high'"),
    ("parts", {"gt_id": 555}, "gt_id 555 is no parts annotation"),
    ("parts", {"gt_id": 101, "category_id": 0}, "category_id 0 disagrees with gt_id 101"),
])
def test_bad_predictions_raise_errors_naming_file_and_item(truth, tmp_path, level, entry, message):
    valid = {**GOOD, "category_id": 1, "segmentation": rle(box(0, 1, 0, 1))}  # a category of both levels
    path = _write(tmp_path, f"{level}.json", [valid, {"segmentation": rle(box(0, 1, 0, 1)), **entry}])
    with pytest.raises(AnnotationError) as info:
        read_predictions({level: path}, truth, FAIL)
    assert message in info.value.message
    assert info.value.path == str(path) and info.value.item.endswith("prediction 1")


def test_duplicate_prediction_is_an_error_and_skip_policy_records_it(truth, tmp_path):
    entry = {**GOOD, "segmentation": rle(gt_mask(100))}
    path = _write(tmp_path, "parts.json", [entry, entry, {**entry, "prompt": "specific"}])
    with pytest.raises(AnnotationError, match="a second general prediction"):
        read_predictions({"parts": path}, truth, FAIL)
    policy = ImportPolicy(OnError.SKIP)
    by_image = read_predictions({"parts": path}, truth, policy)
    assert len(by_image[10]) == 2 and policy.report.counts() == {"AnnotationError": 1}


def test_a_results_file_must_be_a_list(truth, tmp_path):
    path = _write(tmp_path, "parts.json", {"annotations": []})
    with pytest.raises(InputError, match="JSON list"):
        read_predictions({"parts": path}, truth, FAIL)


def test_ground_truth_with_a_dangling_parent_is_refused(tmp_path):
    root = write_dataset(tmp_path / "data" / "spin")
    path = root / "dataset" / "spin_test_subparts.json"
    coco = json.loads(path.read_text())
    coco["annotations"][0]["parent_id"] = 4242
    path.write_text(json.dumps(coco))
    with DatasetSource(tmp_path, None) as source, pytest.raises(AnnotationError, match="parent_id 4242") as info:
        read_ground_truth(source, "data/spin", "test")
    assert info.value.path.endswith("spin_test_subparts.json") and info.value.item == "annotation 1000"


def test_a_box_models_detections_of_a_category_become_one_mask_their_union(truth, tmp_path):
    detections = [{**GOOD, "category_id": 1, "bbox": [0, 4, 6, 3], "score": 0.4},  # rows 4-6, cols 0-5
                  {**GOOD, "category_id": 1, "bbox": [6, 7, 6, 3], "score": 0.9},  # rows 7-9, cols 6-11
                  {"gt_id": 100, "bbox": [0, 0, 2, 2]}, {"gt_id": 100, "bbox": [2, 2, 2, 2]}]
    by_image = read_predictions({"parts": _write(tmp_path, "parts.json", detections)}, truth, FAIL)
    torso, head = sorted(by_image[10], key=lambda p: p.category_id, reverse=True)
    assert (torso.category_id, torso.score, torso.gt_id) == (1, 0.9, None)
    assert np.array_equal(rle_to_bitmap(torso.rle).astype(bool), box(4, 7, 0, 6) | box(7, 10, 6, 12))
    assert (head.category_id, head.gt_id) == (0, 100)
    assert np.array_equal(rle_to_bitmap(head.rle).astype(bool), box(0, 2, 0, 2) | box(2, 4, 2, 4))
    levels = evaluate(truth, {10: [torso]})["prompts"]["general"]["levels"]["parts"]
    assert next(c for c in levels["categories"] if c["id"] == 1)["iou"] == pytest.approx(36 / 72)


@pytest.mark.parametrize(("entries", "message"), [
    ([{**GOOD, "bbox": [0, 0, 2]}], "bbox [0, 0, 2] is not [x, y, width, height]"),
    ([{**GOOD, "bbox": [0, 0, -1, 2]}], "has a negative width or height"),
    ([{**GOOD, "bbox": [0, 0, 2, 2]}, {**GOOD, "segmentation": rle(box(0, 1, 0, 1))}], "beside its boxes"),
    ([{**GOOD, "segmentation": rle(box(0, 1, 0, 1))}, {**GOOD, "bbox": [0, 0, 2, 2]}], "beside its mask"),
], ids=["three-numbers", "negative-width", "mask-after-boxes", "box-after-mask"])
def test_bad_boxes_are_named(truth, tmp_path, entries, message):
    path = _write(tmp_path, "parts.json", entries)
    with pytest.raises(AnnotationError, match=re.escape(message)) as info:
        read_predictions({"parts": path}, truth, FAIL)
    assert info.value.path == str(path)


def test_table_5_regression_on_a_hand_computed_case():
    from segbench.tasks.spin.size_vs_iou import size_vs_iou

    # x = ln(size) = ln 10 · (0, 1, 2, 3): by hand, Σ(u−ū)(y−ȳ) = 1.25, Σ(u−ū)² = 5, Σ(y−ȳ)² = 0.4275
    fit = size_vs_iou([(1, 0.0), (10, 0.5), (100, 0.3), (1000, 0.9)])
    assert fit is not None and fit.entities == 4
    assert fit.slope == pytest.approx(0.25 / np.log(10))
    assert fit.intercept == pytest.approx(0.425 - 0.25 * 1.5)
    assert fit.r_squared == pytest.approx(1.25 ** 2 / (5 * 0.4275))
    t = (1.25 / (5 * 0.4275) ** 0.5) * (2 / (1 - 1.25 ** 2 / (5 * 0.4275))) ** 0.5
    assert fit.p_value == pytest.approx(1 - t / (2 + t * t) ** 0.5)  # Student's t with 2 degrees of freedom
    assert size_vs_iou([(5, 0.1), (5, 0.9), (5, 0.4)]) is None  # one size: no line
    assert size_vs_iou([(5, 0.1), (50, 0.9)]) is None  # two points: no test


def test_table_5_counts_every_entity_an_abstention_as_iou_0(truth):
    by_image = perfect(truth)
    summary = evaluate(truth, by_image)["prompts"]["general"]
    assert set(summary["size_vs_iou"]) == {"wholes", "parts", "subparts"}
    assert all(fit is None for fit in summary["size_vs_iou"].values())  # every IoU 1: nothing to explain
    kept = {image_id: [p for n, p in enumerate(preds) if p.level != "parts" or n % 2]
            for image_id, preds in by_image.items()}
    summary = evaluate(truth, kept)["prompts"]["general"]
    fit = summary["size_vs_iou"]["parts"]
    assert fit is not None and fit["entities"] == summary["levels"]["parts"]["entities"]
    assert 0 <= fit["r_squared"] <= 1 and 0 <= fit["p_value"] <= 1
