"""Screened aggregation: Dawid–Skene anchored on gold over voters (blocs as one), with the flagged workers
left out of the masks, not of the labels."""

from __future__ import annotations

import random

from segbench.core.agreement import aggregate
from segbench.core.screening import screen
from segbench.core.worker_quality import QualityRules
from segbench.schemas.rounds import Answer

LABELS = ("indoor", "outdoor")


def crowd(seed: int = 0, items: int = 80, spammers: int = 3, honest: int = 5):
    rng = random.Random(seed)
    truth = {f"i{n:03d}": ("outdoor" if rng.random() < 0.2 else "indoor") for n in range(items)}
    gold = {item: ({"context": label}, (8, 8)) for item, label in list(truth.items())[:16]}
    answers = []
    for w in range(honest + spammers):
        for n, (item, label) in enumerate(truth.items()):
            said = (label if rng.random() < 0.9 else LABELS[label == "indoor"]) if w < honest else "indoor"
            answers.append(Answer(item_id=item, annotator=f"w{w}", source_id=f"w{w}-{item}",
                                  choices={"context": [said]}, updated_at=f"2026-01-01T00:00:{n % 60:02d}"))
    return truth, gold, answers


def test_the_one_label_spammers_are_left_out_and_the_labels_are_right():
    truth, gold, answers = crowd()
    result = screen(answers, answers, ["context"], gold)
    assert set(result.left_out) == {"w5", "w6", "w7"}
    assert all("Cohen's κ" in " ".join(reasons) for reasons in result.left_out.values())
    labels = {i.item_id: i.majority["context"] for i in result.items}
    assert set(labels) == set(truth) - set(gold)  # gold items are fitted, never returned
    assert sum(labels[i] == truth[i] for i in labels) / len(labels) >= 0.95


def test_the_same_answers_give_the_same_result():
    _, gold, answers = crowd(seed=3)
    first = screen(answers, answers, ["context"], gold)
    second = screen(list(reversed(answers)), answers, ["context"], gold)
    assert [i.model_dump() for i in first.items] == [i.model_dump() for i in second.items]
    assert first.left_out == second.left_out and first.report == second.report


def test_gold_anchors_dawid_skene_where_the_spammers_are_the_majority():
    # Five one-label spammers outvote three honest workers on every item; the known labels of the
    # gold items tell Dawid–Skene which workers to believe.
    truth, gold, answers = crowd(seed=1, spammers=5, honest=3)
    plain = {i.item_id: i.majority["context"] for i in aggregate(answers, ["context"], method="majority")}
    anchored = {i.item_id: i.majority["context"]
                for i in aggregate(answers, ["context"], method="dawid-skene", gold={k: v[0] for k, v in gold.items()})}
    work = [i for i in truth if i not in gold]
    assert sum(plain[i] == truth[i] for i in work) / len(work) <= 0.85
    assert sum(anchored[i] == truth[i] for i in work) / len(work) >= 0.95


def test_flagged_workers_still_count_in_the_labels():
    truth, gold, answers = crowd()
    lone = Answer(item_id="lonely", annotator="w7", source_id="w7-lonely", choices={"context": ["outdoor"]})
    result = screen([*answers, lone], [*answers, lone], ["context"], gold)
    assert "w7" in result.left_out  # flagged, so left out of masks …
    assert {i.item_id: i.majority["context"] for i in result.items}["lonely"] == "outdoor"  # … not of the labels


def test_rules_the_round_sets_decide_who_is_left_out():
    _, gold, answers = crowd()
    lenient = QualityRules(min_kappa=-1.0, min_agreement=0.0, max_label_distance=1.0)
    assert screen(answers, answers, ["context"], gold, rules=lenient).left_out == {}


def test_no_more_than_half_the_workers_are_ever_left_out():
    # Every worker marks most parts absent (they are): the rule flags them all, and none is left out.
    answers = [Answer(item_id=f"i{n}", annotator=f"w{w}", source_id=f"w{w}-{n}",
                      choices={"has_beak": ["no"], "has_eye": ["no" if n % 9 else "yes"]}) for w in range(3)
               for n in range(30)]
    result = screen(answers, answers, ["has_beak", "has_eye"], {})
    assert len(result.report["suspicious"]) == 3 and result.left_out == {} and result.capped
