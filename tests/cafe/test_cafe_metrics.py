"""CAFE target-aware table and SAM3's cgF1: hand-computed cases, oracle rules, calibration, bad
input, and a randomized equivalence test against the straightforward COCOeval-based reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
from support.cafe_eval_data import ALIGNED, EDIT, ELSEWHERE, HAND_PAIRS, HAND_PREDS, TARGET, H, W, box, cafe_gt, pred
from support.cafe_reference import reference_cafe, reference_cgf1

from segbench.core.errors import InputError
from segbench.core.masks import bitmap_to_rle
from segbench.tasks.cafe.cgf1 import evaluate_cgf1, evaluate_counts, local_f1
from segbench.tasks.cafe.cgf1_inputs import ignored_summary, load_ground_truth, load_predictions
from segbench.tasks.cafe.metrics import (
    CALIBRATION_GRID,
    calibrate,
    cgf1_by_subset,
    evaluate_cafe,
    split_for_calibration,
)


def run_cafe(gt: dict, preds: list[dict], **kwargs) -> dict:
    truth = load_ground_truth(gt, "gt.json")
    return evaluate_cafe(truth, load_predictions(preds, "preds.json", truth), **kwargs).model_dump(mode="json")


# --- target-aware table, hand-computed -------------------------------------------------------------

def test_every_class_of_the_target_aware_table():
    m = run_cafe(cafe_gt(HAND_PAIRS), HAND_PREDS)
    expected = {
        "SM": dict(N=2, **{"TA-TP": 1, "TA-FN": 1, "UA-FN": 0, "TN": 0, "TA-FP": 1, "UA-FP": 1},
                   AFPR=0.5, UFPR=0.5, ACSR=0.0, UCSR=0.5),
        "CC": dict(N=1, **{"TA-TP": 0, "TA-FN": 0, "UA-FN": 1, "TN": 0, "TA-FP": 1, "UA-FP": 0},
                   AFPR=1.0, UFPR=0.0, ACSR=1.0, UCSR=0.0),
        "OC": dict(N=2, **{"TA-TP": 1, "TA-FN": 0, "UA-FN": 1, "TN": 2, "TA-FP": 0, "UA-FP": 0},
                   AFPR=0.0, UFPR=0.0, ACSR=0.0, UCSR=0.0),
        "Overall": dict(N=5, **{"TA-TP": 2, "TA-FN": 1, "UA-FN": 2, "TN": 2, "TA-FP": 2, "UA-FP": 1},
                        AFPR=0.4, UFPR=0.2, ACSR=0.2, UCSR=0.2),
    }
    for subset, values in expected.items():
        for key, value in values.items():
            assert m[subset][key] == pytest.approx(value), (subset, key)
        assert m[subset]["IL-FPR"] == pytest.approx(values["AFPR"] + values["UFPR"])
        assert m[subset]["CSR"] == pytest.approx(values["ACSR"] + values["UCSR"])


def test_two_aligned_predictions_match_one_to_one():
    gt = cafe_gt({5: "OC"})
    m = run_cafe(gt, [pred(5, TARGET, 0.9), pred(5, TARGET, 0.8)])
    truth = load_ground_truth(gt, "gt.json")
    counts = evaluate_counts([truth], load_predictions([pred(5, TARGET, 0.9), pred(5, TARGET, 0.8)], "p", truth),
                             [0.5], image_ids=[5])
    assert counts.tps[0, 0].tolist() == [1] * 10 and counts.ndt[0, 0] == 2  # one TP, so one FP
    assert m["OC"]["TA-TP"] == 1


def test_no_predictions_at_all():
    m = run_cafe(cafe_gt(HAND_PAIRS), [])
    overall = m["Overall"]
    assert (overall["TA-TP"], overall["TA-FN"], overall["UA-FN"], overall["TN"]) == (0, 0, 5, 5)
    assert overall["AFPR"] == overall["UFPR"] == overall["CSR"] == 0.0
    assert overall["IL_MCC"] == 0.0 and overall["pmF1"] == 0.0 and overall["cgF1"] == 0.0


def test_predictions_only_on_negatives():
    preds = [pred(1001, ALIGNED, 0.9), pred(1002, ELSEWHERE, 0.7), pred(1003, ELSEWHERE, 0.1)]
    m = run_cafe(cafe_gt({1: "SM", 2: "SM", 3: "SM"}), preds)["SM"]
    assert (m["TA-TP"], m["UA-FN"], m["TA-FP"], m["UA-FP"], m["TN"]) == (0, 3, 1, 1, 1)
    assert m["ACSR"] == pytest.approx(1 / 3) and m["UCSR"] == pytest.approx(1 / 3)


def test_a_prediction_below_the_score_threshold_is_rejected():
    m = run_cafe(cafe_gt({1: "CC"}), [pred(1, TARGET, 0.49), pred(1001, TARGET, 0.49)])["CC"]
    assert (m["TA-TP"], m["TA-FN"], m["TN"]) == (0, 1, 1)
    at_lower_t = run_cafe(cafe_gt({1: "CC"}), [pred(1, TARGET, 0.49), pred(1001, TARGET, 0.49)],
                          score_threshold=0.49)["CC"]
    assert (at_lower_t["TA-TP"], at_lower_t["TA-FP"]) == (1, 1)  # s >= t counts


def test_tau_sweep_moves_a_prediction_from_aligned_to_unaligned():
    m = run_cafe(cafe_gt({1: "SM"}), [pred(1001, ALIGNED, 0.9)], taus=(0.5, 0.9))  # IoU 0.8
    rows = m["tau_sweep"]["SM"]
    assert (rows[0]["TA-FP"], rows[0]["UA-FP"]) == (1, 0)
    assert (rows[1]["TA-FP"], rows[1]["UA-FP"]) == (0, 1)


def test_empty_subset_has_no_rates():
    m = run_cafe(cafe_gt({1: "SM"}), [])
    assert m["OC"]["N"] == 0 and m["OC"]["AFPR"] is None and m["OC"]["cgF1"] is None


# --- SoftSwap, hand-computed ----------------------------------------------------------------------

def test_softswap_by_hand():
    # One pair per case (positive k, negative k + 1000), all SM; scores chosen so that only the
    # highest score of each prompt matters, whatever its IoU or the threshold t.
    pairs = {k: "SM" for k in range(1, 8)}
    preds = [
        pred(1, TARGET, 0.7), pred(1001, ALIGNED, 0.7),  # tie: not a swap
        # pair 2: no predictions at all: 0 vs 0, not a swap
        pred(1003, ELSEWHERE, 0.3),  # q- below t while q+ has none: 0.3 > 0, a swap
        pred(4, TARGET, 0.9), pred(1004, TARGET, 0.6), pred(1004, ELSEWHERE, 0.2),  # q+ higher: no swap
        pred(5, ELSEWHERE, 0.1), pred(5, TARGET, 0.4), pred(1005, ELSEWHERE, 0.45),  # 0.45 > 0.4: a swap
        pred(1006, ALIGNED, 0.0),  # q+ has none, q- scores 0: a tie at 0, not a swap
        pred(7, TARGET, 0.95), pred(1007, ELSEWHERE, 0.96),  # q+ is TA-TP, yet q- is higher: a swap
    ]
    m = run_cafe(cafe_gt(pairs), preds)
    assert m["SM"]["SoftSwap"] == pytest.approx(3 / 7) and m["Overall"]["SoftSwap"] == pytest.approx(3 / 7)
    assert m["CC"]["SoftSwap"] is None  # empty subset
    assert [row["SoftSwap"] for row in m["tau_sweep"]["SM"]] == [pytest.approx(3 / 7)] * 9  # no τ in it


def test_softswap_per_subset_and_with_no_predictions():
    m = run_cafe(cafe_gt(HAND_PAIRS), HAND_PREDS)
    # SM: pair 1 0.9 vs 0.8, pair 2 0.3 vs 0.9 (swap); CC: 0.9 vs 0.9 (tie); OC: 0 vs 0.2 (swap), 0.9 vs 0
    assert (m["SM"]["SoftSwap"], m["CC"]["SoftSwap"], m["OC"]["SoftSwap"]) == (0.5, 0.0, 0.5)
    assert m["Overall"]["SoftSwap"] == pytest.approx(2 / 5)
    assert run_cafe(cafe_gt(HAND_PAIRS), [])["Overall"]["SoftSwap"] == 0.0


# --- cgF1, hand-computed ---------------------------------------------------------------------------

def cgf1_gt(images: dict[int, list[dict]], exhaustive: dict[int, int] | None = None) -> dict:
    exhaustive = exhaustive or {}
    anns = [{"id": 100 * i + k, "image_id": i, "category_id": 1, "iscrowd": 0, "segmentation": rle}
            for i, rles in images.items() for k, rle in enumerate(rles)]
    return {"images": [{"id": i, "height": H, "width": W, "is_instance_exhaustive": exhaustive.get(i, 1)}
                       for i in images],
            "annotations": anns, "categories": [{"id": 1, "name": "object"}]}


def test_cgf1_tiny_case_by_hand():
    g1, g2 = box(0, 2, 0, 5), box(5, 7, 0, 4)  # 10 and 8 px
    gt = cgf1_gt({1: [g1, g2], 2: [box(0, 1, 0, 1)], 3: [], 4: [], 5: []})
    preds = [pred(1, g1, 0.9), pred(1, box(5, 6, 0, 4), 0.8), pred(1, box(6, 7, 0, 1), 0.8),
             pred(3, g1, 0.7), pred(4, g1, 0.1)]
    # image 1: the second and third predictions both overlap g2 (IoU 4/8 and 1/8); one-to-one gives
    # matches {1.0, 0.5}: 2 TPs at IoU 0.5, 1 TP above; 3 kept predictions.
    truth = load_ground_truth(gt, "gt.json")
    s = evaluate_cgf1([truth], load_predictions(preds, "p.json", truth)).model_dump(mode="json")
    tp = np.array([2] + [1] * 9)
    pm_fp, fn = 3 - tp, (2 - tp) + 1  # image 2 is an IL_FN with one gt
    p, r = tp / (tp + pm_fp + 1e-4), tp / (tp + fn + 1e-4)
    pmf1 = 2 * p * r / (p + r + 1e-4)
    mcc = (1 * 2 - 1 * 1) / (math.sqrt(2 * 2 * 3 * 3) + 1e-6)  # IL TP 1, FP 1 (img 3), TN 2 (4, 5), FN 1
    assert (s["IL_TP"], s["IL_FP"], s["IL_TN"], s["IL_FN"]) == (1, 1, 2, 1)
    assert s["IL_MCC"] == pytest.approx(mcc, abs=1e-12)
    assert s["pmF1"] == pytest.approx(pmf1.mean(), abs=1e-12)
    assert s["cgF1"] == pytest.approx((pmf1 * mcc).mean(), abs=1e-12)
    assert s["cgF1@0.5"] == pytest.approx(pmf1[0] * mcc, abs=1e-12)
    assert s["cgF1@0.75"] == pytest.approx(pmf1[5] * mcc, abs=1e-12)
    assert s["IL_FPR"] == pytest.approx(1 / (1 + 2 + 1e-6))
    assert s["positive_macro_F1"] == pytest.approx(local_f1(tp, np.array(3), np.array(2)).mean())


def test_no_true_positive_image_gives_macro_f1_minus_one():
    gt = cgf1_gt({1: [TARGET], 2: []})
    truth = load_ground_truth(gt, "gt.json")
    s = evaluate_cgf1([truth], load_predictions([pred(2, TARGET, 0.9)], "p", truth)).model_dump(mode="json")
    assert s["positive_macro_F1"] == -1.0  # NaN in SAM3's accumulate, -1 in its summary


def test_crowd_and_foreign_category_are_not_seen():
    gt = cgf1_gt({1: [TARGET]})
    gt["annotations"].append({"id": 7, "image_id": 1, "category_id": 1, "iscrowd": 1, "segmentation": ELSEWHERE})
    gt["annotations"].append({"id": 8, "image_id": 1, "category_id": 9, "iscrowd": 0, "segmentation": ELSEWHERE})
    truth = load_ground_truth(gt, "gt.json")
    s = evaluate_cgf1([truth], load_predictions([pred(1, TARGET, 0.9), pred(1, ELSEWHERE, 0.9, 9)], "p",
                                                truth)).model_dump(mode="json")
    assert s["per_iou"]["TPs"] == [1] * 10 and s["per_iou"]["FPs"] == [0] * 10 and s["per_iou"]["FNs"] == [0] * 10


def test_oracle_keeps_the_best_ground_truth_per_image():
    good = cgf1_gt({1: [TARGET], 2: [TARGET], 3: []})
    bad = cgf1_gt({1: [ELSEWHERE], 2: [], 3: [TARGET]}, exhaustive={3: 0})
    truths = [load_ground_truth(good, "a.json"), load_ground_truth(bad, "b.json")]
    preds = load_predictions([pred(1, TARGET, 0.9)], "p", truths[0])
    counts = evaluate_counts(truths, preds, [0.5])
    assert counts.image_ids.tolist() == [1, 2]  # image 3 is non-exhaustive in the second file
    # image 1: F1 1 vs 0 -> first file; image 2: IL_FN in the first, IL_TN (no F1) in the second -> second
    assert counts.ngt[0].tolist() == [1, 0] and counts.tps[0, 0].tolist() == [1] * 10
    s = evaluate_cgf1(truths, preds).model_dump(mode="json")
    assert (s["IL_TP"], s["IL_TN"], s["IL_FN"]) == (1, 1, 0)
    ref = reference_cgf1([good, bad], [pred(1, TARGET, 0.9)])
    assert all(_close(s[k], v) for k, v in ref.items())


# --- randomized equivalence with the reference ------------------------------------------------------

def random_mask(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    mask = np.zeros((h, w), np.uint8)
    kind = rng.random()
    if kind < 0.05:
        return mask
    if kind < 0.1:
        return mask + 1
    y0, x0 = rng.integers(0, h - 1), rng.integers(0, w - 1)
    mask[y0:rng.integers(y0 + 1, h + 1), x0:rng.integers(x0 + 1, w + 1)] = 1
    return mask


def random_case(seed: int, n_gts: int = 1) -> tuple[list[dict], list[dict]]:
    """Pairs, singles, crowd masks, foreign categories, repeated categories, copied masks (ties),
    scores on the threshold, empty images; extra ground truths for the oracle."""
    rng = np.random.default_rng(seed)
    cats = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}] + ([{"id": 1, "name": "a"}] if rng.random() < .2 else [])
    images, anns, preds, masks = [], [], [], {}
    for k in range(int(rng.integers(2, 8))):
        h, w, edit = int(rng.integers(4, 12)), int(rng.integers(4, 12)), list(EDIT.values())[k % 3]
        for image_id, extra in ((10 + k, {}), (1010 + k, {"fp_source_id": 10 + k})):
            images.append({"id": image_id, "height": h, "width": w, "edit_type": edit,
                           "is_instance_exhaustive": int(rng.random() < .9), **extra})
    for k in range(int(rng.integers(0, 3))):
        images.append({"id": 500 + k, "height": 6, "width": 7, "is_instance_exhaustive": 1})
    for img in images:
        n = int(rng.integers(0, 4)) if "fp_source_id" not in img else int(rng.random() < .2)
        for _ in range(n):
            m = random_mask(rng, img["height"], img["width"])
            masks.setdefault(img["id"], []).append(m)
            anns.append({"id": len(anns) + 1, "image_id": img["id"], "category_id": int(rng.choice([1, 1, 2, 3])),
                         "iscrowd": int(rng.random() < .15), "segmentation": bitmap_to_rle(m)})
    for img in images:
        sources = masks.get(img.get("fp_source_id", img["id"]), [])
        for _ in range(int(rng.integers(0, 5))):
            m = (sources[int(rng.integers(0, len(sources)))] if sources and rng.random() < .6
                 else random_mask(rng, img["height"], img["width"]))
            preds.append(pred(img["id"], bitmap_to_rle(m), float(rng.choice([.5, .3, .9, rng.random()])),
                              int(rng.choice([1, 1, 2, 3]))))
    gts = [{"images": images, "annotations": anns, "categories": cats}]
    for _ in range(1, n_gts):
        alt = [dict(a) for a in anns if rng.random() < .7]
        alt += [{"id": 10_000 + n, "image_id": img["id"], "category_id": 1, "iscrowd": 0,
                 "segmentation": bitmap_to_rle(random_mask(rng, img["height"], img["width"]))}
                for n, img in enumerate(images) if rng.random() < .3]
        gts.append({"images": [dict(i, is_instance_exhaustive=int(rng.random() < .9)) for i in images],
                    "annotations": alt, "categories": cats})
    return gts, preds


def _close(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or math.isclose(a, b, abs_tol=1e-9)


@pytest.mark.parametrize("seed", range(40))
def test_cgf1_matches_the_reference(seed):
    gts, preds = random_case(seed, n_gts=1 + seed % 3)
    truths = [load_ground_truth(g, f"gt{i}.json") for i, g in enumerate(gts)]
    loaded = load_predictions(preds, "p.json", truths[0])
    if not any(i["is_instance_exhaustive"] for i in gts[0]["images"]):
        pytest.skip("nothing to evaluate in this draw")
    for threshold in (0.5, 0.3):
        ours = evaluate_cgf1(truths, loaded, threshold).model_dump(mode="json")
        ref = reference_cgf1(gts, preds, threshold)
        assert all(_close(ours[k], v) for k, v in ref.items()), {k: (ours[k], v) for k, v in ref.items()}


@pytest.mark.parametrize("seed", range(40, 60))
def test_cafe_table_matches_the_reference(seed):
    gts, preds = random_case(seed)
    ours, ref = run_cafe(gts[0], preds), reference_cafe(gts[0], preds)
    for subset, row in ref.items():
        for key, value in row.items():
            if key != "cgF1_summary":
                assert _close(ours[subset][key], value), (subset, key)
        summary = row["cgF1_summary"]
        for key, ref_key in (("cgF1", "cgF1"), ("IL_MCC", "IL_MCC"), ("pmF1", "positive_micro_F1"),
                             ("cgF1@0.5", "cgF1@0.5"), ("cgF1@0.75", "cgF1@0.75")):
            assert _close(ours[subset][key], summary and summary[ref_key]), (subset, key)


def many_pairs_case(seed: int, n_pairs: int) -> tuple[dict, list[dict]]:
    """Many pairs, most sharing one of three image sizes, a few of their own size; predictions on
    both twins (copies of the target, other masks, foreign categories), positives with 1-2 masks."""
    rng = np.random.default_rng(seed)
    images, anns, preds = [], [], []
    for k in range(n_pairs):
        h, w = ((6, 7), (9, 5), (8, 8))[k % 3] if rng.random() < .8 else (int(rng.integers(4, 20)), 3 + k % 17)
        edit = list(EDIT.values())[int(rng.integers(0, 3))]
        for image_id, extra in ((k + 1, {}), (5000 + k, {"fp_source_id": k + 1})):
            images.append({"id": image_id, "height": h, "width": w, "edit_type": edit, "is_instance_exhaustive": 1,
                           **extra})
        target = random_mask(rng, h, w)
        masks = [target] + [random_mask(rng, h, w) for _ in range(int(rng.random() < .3))]
        for m in masks:
            anns.append({"id": len(anns) + 1, "image_id": k + 1, "category_id": 1, "iscrowd": 0,
                         "segmentation": bitmap_to_rle(m)})
        for image_id in (k + 1, 5000 + k):
            for _ in range(int(rng.integers(0, 4))):
                m = target if rng.random() < .4 else random_mask(rng, h, w)
                preds.append(pred(image_id, bitmap_to_rle(m), float(rng.choice([.5, .3, .9, rng.random()])),
                                  int(rng.choice([1, 1, 1, 2]))))
    return {"images": images, "annotations": anns, "categories": [{"id": 1}, {"id": 2}]}, preds


@pytest.mark.parametrize("seed", range(3))
def test_cafe_table_matches_the_reference_with_many_pairs_of_few_sizes(seed):
    # more pairs than one pycocotools call takes, many of one size: every pair must still be
    # compared with its own target only
    gt, preds = many_pairs_case(seed, 120)
    ours, ref = run_cafe(gt, preds), reference_cafe(gt, preds)
    for subset, row in ref.items():
        for key, value in row.items():
            if key != "cgF1_summary":
                assert _close(ours[subset][key], value), (subset, key)
        for key, ref_key in (("cgF1", "cgF1"), ("IL_MCC", "IL_MCC"), ("pmF1", "positive_micro_F1")):
            assert _close(ours[subset][key], row["cgF1_summary"][ref_key]), (subset, key)
    assert ours["Overall"]["N"] == 120 and ours["Overall"]["TA-TP"] > 0 and ours["Overall"]["TA-FP"] > 0


@pytest.mark.parametrize("seed", range(5))
def test_many_thresholds_in_one_pass_equal_one_at_a_time(seed):
    gts, preds = random_case(100 + seed)
    truth = load_ground_truth(gts[0], "gt.json")
    loaded = load_predictions(preds, "p.json", truth)
    grid = [0.2, 0.3, 0.5, 0.9]
    together = cgf1_by_subset(truth, loaded, grid)["Overall"]
    for k, t in enumerate(grid):
        assert together[k] == cgf1_by_subset(truth, loaded, [t])["Overall"][0]


def test_row_means_equal_per_row_means():
    # The oracle compares means computed row-wise; SAM3 takes them one image at a time.
    values = np.random.default_rng(0).random((500, 10))
    assert np.array_equal(values.mean(axis=-1), np.array([row.mean() for row in values]))


# --- calibration -----------------------------------------------------------------------------------

def test_calibration_picks_the_threshold_between_negative_and_positive_scores():
    pairs = {k: "SM" for k in range(1, 6)}
    preds = [p for k in pairs for p in (pred(k, TARGET, 0.34), pred(k + 1000, TARGET, 0.22))]
    truth = load_ground_truth(cafe_gt(pairs), "gt.json")
    result = calibrate(truth, load_predictions(preds, "p.json", truth)).model_dump(mode="json")
    assert result["threshold"] == 0.34  # every t in (0.22, 0.34] is perfect; nearest 0.5 wins
    assert result["cgF1"] > 0.99 and len(result["curve"]) == len(CALIBRATION_GRID)


def test_calibration_split_is_seeded_and_disjoint():
    truth = load_ground_truth(cafe_gt({k: "CC" for k in range(1, 11)}), "gt.json")
    cal, rest = split_for_calibration(truth, 0.3, seed=4)
    assert (cal, rest) == split_for_calibration(truth, 0.3, seed=4)
    assert len(cal) == 6 and not cal & rest and len(cal | rest) == 20
    assert all((i + 1000 in cal) == (i in cal) for i in range(1, 11))
    with pytest.raises(InputError, match="fraction"):
        split_for_calibration(truth, 0.01, seed=0)


# --- bad input -------------------------------------------------------------------------------------

def _load(gt: dict, preds) -> None:
    truth = load_ground_truth(gt, "gt.json")
    evaluate_cafe(truth, load_predictions(preds, "preds.json", truth))


@pytest.mark.parametrize(("preds", "message", "item"), [
    ({"image_id": 1}, "must be a JSON list", None),
    ([{"image_id": 1, "category_id": 1, "score": 0.5}], "lacks segmentation", "prediction 0"),
    ([pred("7", TARGET, 0.5)], "image_id '7' is not an integer", "prediction 0"),
    ([pred(1, [[0, 0, 5, 0, 5, 5]], 0.5)], "polygon", "prediction 0 (image 1)"),
    ([pred(1, box(0, 2, 0, 2, h=12, w=10), 0.5)], "RLE size [12, 10]", "prediction 0 (image 1)"),
    ([pred(1, TARGET, "high")], "not a finite number", "prediction 0"),
])
def test_bad_predictions_name_file_item_and_fix(preds, message, item):
    with pytest.raises(InputError) as info:
        _load(cafe_gt({1: "SM"}), preds)
    assert message in info.value.message and info.value.path == "preds.json" and info.value.item == item
    assert info.value.hint


def test_predictions_outside_the_ground_truth_are_ignored_and_counted():
    truth = load_ground_truth(cafe_gt({1: "SM"}), "gt.json")
    preds = load_predictions([pred(77, TARGET, 0.5), pred(1, TARGET, 0.9), pred(77, ALIGNED, 0.1),
                              pred(78, [[0, 0]], 0.3)], "p.json", truth)  # never checked further
    assert preds.ignored == {77: 2, 78: 1} and len(preds) == 1 and preds.by_image == {1: [0]}
    summary = ignored_summary(preds, truth, other_files=False)
    assert (summary.predictions, summary.images, summary.expected) == (3, 2, True)  # a subset file
    mixed = load_ground_truth(cafe_gt({1: "SM", 2: "CC"}), "all.json")
    unexpected = ignored_summary(load_predictions([pred(77, TARGET, 0.5)], "p.json", mixed), mixed,
                                 other_files=False)
    assert not unexpected.expected and "all.json" in unexpected.reason
    with pytest.raises(InputError, match="none of the ground-truth files") as info:
        load_predictions([pred(1, TARGET, 0.9), pred(77, TARGET, 0.5)], "p.json", truth, known_image_ids={1, 1001})
    assert info.value.item == "prediction 1"


def test_ground_truth_image_without_exhaustive_flag():
    gt = cafe_gt({1: "SM"})
    del gt["images"][1]["is_instance_exhaustive"]
    with pytest.raises(InputError, match="is_instance_exhaustive") as info:
        load_ground_truth(gt, "gt.json")
    assert info.value.item == "image 1001" and info.value.path == "gt.json"


def test_negative_with_unknown_positive_or_edit_type():
    gt = cafe_gt({1: "SM"})
    gt["images"][1]["fp_source_id"] = 5
    with pytest.raises(InputError, match="fp_source_id 5"):
        _load(gt, [])
    gt = cafe_gt({1: "SM"})
    gt["images"][1]["edit_type"] = "Style Transfer"
    with pytest.raises(InputError, match="edit_type 'Style Transfer'"):
        _load(gt, [])


def test_nothing_exhaustive_is_an_error():
    gt = cgf1_gt({1: [TARGET]}, exhaustive={1: 0})
    truth = load_ground_truth(gt, "gt.json")
    with pytest.raises(InputError, match="is_instance_exhaustive"):
        evaluate_cgf1([truth], load_predictions([], "p", truth))
