"""The shipped published numbers, the model's place among them, and the toolkit-order summary table."""

from __future__ import annotations

import csv
import io

import pytest
from support.cafe_eval_data import HAND_PAIRS, HAND_PREDS, TARGET, cafe_gt, pred

from segbench.tasks.cafe.cgf1_inputs import load_ground_truth, load_predictions
from segbench.tasks.cafe.metrics import evaluate_cafe
from segbench.tasks.cafe.published import (
    SUMMARY_COLUMNS,
    THIS_MODEL,
    cafe_standing,
    cgf1_standing,
    published,
    published_context,
    summary_csv,
    summary_rows,
)

TOOLKIT_ORDER = ["Subset", "N", "TA-TP", "TA-FN", "TA-FP", "UA-FP", "TN", "AFPR", "UFPR", "IL-FPR", "ACSR", "UCSR",
                 "CSR", "SoftSwap"]


def _metrics(pairs=HAND_PAIRS, preds=HAND_PREDS) -> dict:
    truth = load_ground_truth(cafe_gt(pairs), "CAFE.json")
    return evaluate_cafe(truth, load_predictions(preds, "p.json", truth)).model_dump(mode="json")


def test_shipped_cafe_numbers_carry_source_and_date():
    data = published("cafe")
    sam3 = next(m for m in data["models"] if m["model"] == "SAM 3")["metrics"]
    assert sam3["cgF1"]["values"] == {"SM": 53.0, "CC": 61.4, "OC": -10.5, "Overall": 38.5}
    assert sam3["IL_MCC"]["values"]["OC"] == -0.241 and sam3["IL_MCC"]["source"] == "paper"
    assert data["split_sizes"] == {"SM": 1111, "CC": 593, "OC": 442, "total_pairs": 2146}
    assert len(data["models"]) == 6
    gold = published("saco_gold")
    assert next(m for m in gold["models"] if m["model"] == "SAM 3")["results"]["Average"]["cgF1"] == 54.06
    for table in (data, gold):
        for source in table["sources"].values():
            assert source["url"].startswith("https://") and len(source["date"]) == 10
        for model in table["models"]:
            assert all(m["source"] in table["sources"] for m in model.get("metrics", {}).values())


def test_the_model_is_ranked_among_the_leaderboard():
    # All pairs SM and perfect: cgF1 1.0 -> 100, first everywhere it has pairs; no CC/OC pairs -> not ranked.
    pairs = {1: "SM", 2: "SM"}
    standing = cafe_standing(_metrics(pairs, [pred(1, TARGET, 0.9), pred(2, TARGET, 0.9)]))
    assert standing["SM"][0] == {"model": THIS_MODEL, "type": "evaluated here", "cgF1": 100.0, "rank": 1}
    assert THIS_MODEL not in [r["model"] for r in standing["CC"] + standing["OC"]] and len(standing["CC"]) == 6
    assert THIS_MODEL not in [r["model"] for r in standing["Overall"]]  # one subset is not the Overall
    hand = cafe_standing(_metrics())["OC"]  # OC cgF1 0.2886 -> 28.9, second behind CAFE-SAM3's 44.7
    assert [(r["model"], r["rank"]) for r in hand[:2]] == [("CAFE-SAM3 (GPT-5.5)", 1), (THIS_MODEL, 2)]
    assert hand[1]["cgF1"] == 28.9


@pytest.mark.parametrize(("name", "expected"), [
    ("CAFE.json", ("cafe", "Overall")), ("data/CAFE_OC.json", ("cafe", "OC")),
    ("CAFEval2026_SM.json", ("cafe", "SM")), ("CAFEval2026_annotations.json", ("cafe", "Overall")),
    ("repo@v1:data/cafe/CAFE.json", ("cafe", "Overall")),
    ("gold_fg_food_merged_a_release_test.json", ("saco_gold", "fg_food")),
    ("gold_metaclip_merged_b_release_test.json", ("saco_gold", "metaclip_nps")),
    ("my_dataset.json", None), ("cafe_candidates.json", None),
])
def test_published_context_from_the_file_name(name, expected):
    assert published_context(name) == expected


def test_cgf1_standing_on_a_gold_subset():
    summary = {"cgF1": 0.5, "IL_MCC": 0.8, "pmF1": 0.625}
    standing = cgf1_standing(summary, "gold_crowded_merged_a_release_test.json")
    assert standing["subset"] == "crowded" and standing["rows"][0]["model"] == "SAM 3"  # 61.08 > 50
    assert standing["rows"][1] == {"model": THIS_MODEL, "cgF1": 50.0, "IL_MCC": 0.8, "pmF1": 62.5}
    assert cgf1_standing(summary, "other.json") is None


def test_summary_table_in_toolkit_order():
    metrics = _metrics()
    assert list(SUMMARY_COLUMNS[:14]) == TOOLKIT_ORDER and SUMMARY_COLUMNS[14] == "cgF1"
    rows = summary_rows(metrics)
    assert [r[0] for r in rows] == ["SM", "CC", "OC", "Overall"]
    overall = dict(zip(SUMMARY_COLUMNS, rows[-1], strict=True))
    # the toolkit's TA-FN is every q+ that is not TA-TP: 1 TA-FN + 2 UA-FN here
    assert (overall["N"], overall["TA-TP"], overall["TA-FN"], overall["TA-FP"], overall["UA-FP"], overall["TN"]) \
        == (5, 2, 3, 2, 1, 2)
    assert overall["SoftSwap"] == pytest.approx(0.4) and overall["cgF1"] == metrics["Overall"]["cgF1"]
    parsed = list(csv.reader(io.StringIO(summary_csv(metrics))))
    assert parsed[0] == list(SUMMARY_COLUMNS) and len(parsed) == 5 and float(parsed[4][10]) == pytest.approx(0.2)


def test_a_subset_without_pairs_is_left_out():
    rows = summary_rows(_metrics({1: "CC"}, []))
    assert [r[0] for r in rows] == ["CC", "Overall"]
