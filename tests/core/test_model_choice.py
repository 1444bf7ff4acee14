"""Choosing the aggregation model by the round's held-out gold: the default stays unless another
model is significantly better on the gold it was not fitted on."""

from __future__ import annotations

import pytest

from segbench.core.model_choice import choose_model, gold_part
from segbench.schemas.rounds import Answer

pytestmark = pytest.mark.unit

FLIP = {"x": "y", "y": "x"}


def _answer(worker: str, item: str, label: str) -> Answer:
    return Answer(item_id=item, annotator=worker, source_id=f"{worker}/{item}", choices={"q": [label]})


def _gold_round(items: int = 30) -> tuple[list[Answer], dict[str, dict[str, str]], list[str]]:
    """Three workers; on the gold of part 0, A is right and B and C wrong; on part 1 the other way
    round. Fitted on part 0, Dawid–Skene believes A (and reads B and C inverted), so on part 1 it
    gives the wrong label where B and C, the majority, are right; fitted on part 1, it and the
    majority are both wrong on part 0. Ten work items everyone agrees on."""
    gold = {f"g{n:02d}": {"q": "x" if n % 3 else "y"} for n in range(items)}
    answers = []
    for item, known in gold.items():
        label = known["q"]
        a_right = gold_part(item, 2) == 0
        answers += [_answer("A", item, label if a_right else FLIP[label]),
                    _answer("B", item, FLIP[label] if a_right else label),
                    _answer("C", item, FLIP[label] if a_right else label)]
    for n in range(10):
        answers += [_answer(w, f"w{n}", "x") for w in "ABC"]
    part_one = [item for item in gold if gold_part(item, 2) == 1]
    return answers, gold, part_one


def test_the_model_the_held_out_gold_proves_better_replaces_the_default():
    answers, gold, part_one = _gold_round()
    assert len(part_one) >= 8  # enough discordant judgments for the test to have power
    choice = choose_model(answers, ["q"], gold)
    assert choice.method == "majority"
    assert choice.held_out["majority"] == (len(part_one), len(gold))
    assert choice.held_out["dawid-skene"] == (0, len(gold))
    assert choice.p_values["majority"] == pytest.approx(0.5 ** len(part_one), abs=1e-6)
    assert "significantly more than dawid-skene's 0" in choice.reason
    assert choice.row()["held_out"]["majority"] == [len(part_one), len(gold)]


def test_the_same_answers_in_another_order_give_the_same_choice():
    answers, gold, _ = _gold_round()
    assert choose_model(answers, ["q"], gold) == choose_model(list(reversed(answers)), ["q"], gold)


def test_a_small_lead_on_the_gold_keeps_the_default():
    # Four of part 1's gold items kept: majority leads 4 to 0, p = 1/16, above 0.05.
    answers, gold, part_one = _gold_round(items=30)
    keep = set(part_one[:4]) | {item for item in gold if item not in part_one}
    answers = [a for a in answers if not a.item_id.startswith("g") or a.item_id in keep]
    gold = {item: known for item, known in gold.items() if item in keep}
    choice = choose_model(answers, ["q"], gold, min_judgments=10)
    assert choice.held_out["majority"][0] == 4 and choice.p_values["majority"] == pytest.approx(1 / 16, abs=1e-6)
    assert choice.method == "dawid-skene" and "no other model was significantly better" in choice.reason


def test_too_little_gold_keeps_the_default_and_says_so():
    answers, gold, _ = _gold_round(items=12)
    choice = choose_model(answers, ["q"], gold)  # 12 judgments < 20
    assert choice.method == "dawid-skene" and choice.held_out == {} and "too little gold" in choice.reason
    assert choose_model(answers, ["q"], gold, folds=1).held_out == {}
