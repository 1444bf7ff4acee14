"""Majority aggregation and inter-annotator agreement, on hand-computed cases."""

from __future__ import annotations

import random

import pytest

from segbench.core.agreement import Overrule, aggregate, agreement_summary, cohen_kappa, fleiss_kappa
from segbench.schemas.rounds import Answer, Polygon


def _answer(item: str, annotator: str, label: str | None = None, *, at: str = "2026-01-01T00:00:00Z",
            polygons: dict | None = None, source: str | None = None) -> Answer:
    return Answer(item_id=item, annotator=annotator, source_id=source or f"{annotator}/{item}", updated_at=at,
                  choices={"context": [label]} if label else {}, polygons=polygons or {})


# --- Cohen ---------------------------------------------------------------------------------------------

# The textbook 2×2 table: both yes 20, A yes / B no 5, A no / B yes 10, both no 15 (n = 50).
# p_o = (20 + 15) / 50 = 0.7; A says yes 25/50, B 30/50; p_e = 0.5·0.6 + 0.5·0.4 = 0.5;
# κ = (0.7 − 0.5) / (1 − 0.5) = 0.4.
TABLE = [("yes", "yes")] * 20 + [("yes", "no")] * 5 + [("no", "yes")] * 10 + [("no", "no")] * 15


def test_cohen_textbook_table():
    a, b = zip(*TABLE, strict=True)
    assert cohen_kappa(list(a), list(b)) == pytest.approx(0.4)


def test_cohen_perfect_chance_and_undefined():
    assert cohen_kappa(["x", "y", "z"], ["x", "y", "z"]) == 1.0
    # p_o = 0.5, p_e = 0.5·0.5 + 0.5·0.5 = 0.5 → κ = 0.
    assert cohen_kappa(["x", "x", "y", "y"], ["x", "y", "y", "x"]) == 0.0
    assert cohen_kappa(["x", "x"], ["x", "x"]) is None  # p_e = 1: undefined, not NaN
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError, match="same items"):
        cohen_kappa(["x"], ["x", "y"])


# --- Fleiss --------------------------------------------------------------------------------------------

# Wikipedia's example: 10 items, 14 raters, 5 categories (counts per category); κ ≈ 0.210.
WIKIPEDIA = [
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
]


def test_fleiss_wikipedia_example():
    ratings = [[str(j) for j, n in enumerate(row) for _ in range(n)] for row in WIKIPEDIA]
    assert fleiss_kappa(ratings) == pytest.approx(0.20993, abs=5e-5)


def test_fleiss_small_hand_computed_case():
    # 3 items × 3 ratings: (a a a), (a a b), (b b b).
    # P_i = (Σ n_ij² − 3) / (3·2): (9 − 3)/6 = 1, (4 + 1 − 3)/6 = 1/3, 1 → P̄ = 7/9.
    # p_a = 5/9, p_b = 4/9 → P_e = 25/81 + 16/81 = 41/81.
    # κ = (63/81 − 41/81) / (40/81) = 22/40 = 0.55.
    assert fleiss_kappa([["a", "a", "a"], ["a", "b", "a"], ["b", "b", "b"]]) == pytest.approx(0.55)


def test_fleiss_undefined_and_invalid():
    assert fleiss_kappa([["a", "a"], ["a", "a"]]) is None
    assert fleiss_kappa([]) is None
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([["a", "a"], ["a", "b", "a"]])
    with pytest.raises(ValueError, match="at least 2"):
        fleiss_kappa([["a"], ["b"]])


# --- aggregate -----------------------------------------------------------------------------------------

def test_majority_ties_and_missing_answers():
    square = [Polygon(label="cat", points=[(0, 0), (1, 0), (1, 1)])]
    answers = [
        _answer("1", "A", "dog", at="2026-01-01T00:00:00Z", source="s1"),
        _answer("1", "A", "cat", at="2026-01-02T00:00:00Z", source="s2"),  # A's later answer counts
        _answer("1", "B", "cat"),
        _answer("1", "C", "dog"),
        _answer("2", "B", "dog"),
        _answer("2", "A", "cat"),
        _answer("3", "A", "cat"),
        _answer("3", "B", None, polygons={"mask": square}),  # answered the item, not the control
        _answer("4", "A", None),
    ]
    random.Random(0).shuffle(answers)
    items = {i.item_id: i for i in aggregate(answers, ["context"])}
    assert list(items) == ["1", "2", "3", "4"]
    assert (items["1"].annotators, items["1"].majority, items["1"].agreement["context"]) == (
        ["A", "B", "C"], {"context": "cat"}, pytest.approx(2 / 3))
    assert (items["2"].majority, items["2"].agreement) == ({"context": None}, {"context": 0.5})  # 1–1 tie
    assert (items["3"].majority, items["3"].agreement) == ({"context": "cat"}, {"context": 0.5})
    assert items["3"].polygons == {"mask": {"B": square}}
    assert (items["4"].majority, items["4"].agreement) == ({}, {})  # nobody answered the control


def test_aggregate_is_order_independent():
    answers = [_answer(str(i % 5), f"w{i % 3}", "ab"[i % 2], source=f"s{i}") for i in range(15)]
    shuffled = answers[:]
    random.Random(1).shuffle(shuffled)
    assert aggregate(answers, ["context"]) == aggregate(shuffled, ["context"])


# --- agreement_summary -----------------------------------------------------------------------------------

def test_summary_uses_cohen_for_one_fixed_pair():
    # Rater ids sort as "ann:10" < "ann:2": the pairing must follow the ids, not the answer order.
    answers = [_answer(f"i{n}", "ann:2", a) for n, (a, _) in enumerate(TABLE)]
    answers += [_answer(f"i{n}", "ann:10", b) for n, (_, b) in enumerate(TABLE)]
    random.Random(2).shuffle(answers)
    summary = agreement_summary(answers, "context")
    assert (summary.method, summary.raters, summary.reason) == ("cohen", ["ann:10", "ann:2"], None)
    assert summary.kappa == pytest.approx(0.4)
    assert summary.items_by_ratings == {"2": 50} and summary.annotators == 2
    assert summary.mean_agreement == pytest.approx(0.85)  # 35 of 50 items agree: (35·1 + 15·0.5) / 50
    assert summary.pairwise_agreement == pytest.approx(0.7)  # two raters: the share of items they agree on


def test_summary_uses_fleiss_when_raters_differ_per_item():
    rows = {"x": ["a", "a", "a"], "y": ["a", "b", "a"], "z": ["b", "b", "b"]}
    workers = {"x": ["w1", "w2", "w3"], "y": ["w2", "w4", "w5"], "z": ["w1", "w5", "w6"]}
    answers = [_answer(item, w, label) for item in rows for w, label in zip(workers[item], rows[item], strict=True)]
    summary = agreement_summary(answers, "context")
    assert (summary.method, summary.items, summary.annotators) == ("fleiss", 3, 6)
    assert summary.kappa == pytest.approx(0.55)
    assert summary.mean_agreement == pytest.approx((1 + 2 / 3 + 1) / 3)
    assert summary.pairwise_agreement == pytest.approx((1 + 1 / 3 + 1) / 3)  # 1 of the 3 pairs agrees


def test_summary_two_ratings_from_changing_pairs_is_fleiss():
    answers = [_answer("1", "A", "a"), _answer("1", "B", "a"), _answer("2", "A", "b"), _answer("2", "C", "a")]
    # P_i: 1 and 0 → P̄ = 0.5; p_a = 3/4, p_b = 1/4 → P_e = 10/16; κ = (8/16 − 10/16) / (6/16) = −1/3.
    summary = agreement_summary(answers, "context")
    assert summary.method == "fleiss" and summary.kappa == pytest.approx(-1 / 3)


def test_summary_without_kappa_says_why():
    mixed = [_answer("1", "A", "a"), _answer("1", "B", "a"), _answer("2", "A", "b")]
    summary = agreement_summary(mixed, "context")
    assert (summary.method, summary.kappa) == (None, None)
    assert summary.reason == ("items have different numbers of ratings (1 ratings: 1 items, 2 ratings: 1 items); "
                                 "kappa needs the same number")
    assert summary.items_by_ratings == {"1": 1, "2": 1} and summary.mean_agreement == 1.0
    single = agreement_summary([_answer("1", "A", "a"), _answer("2", "B", "a")], "context")
    assert single.method is None and "one rating" in single.reason and single.mean_agreement is None
    none = agreement_summary([_answer("1", "A", None)], "context")
    assert none.reason == "no answers for control 'context'" and none.items == 0
    same = agreement_summary([_answer("1", "A", "a"), _answer("1", "B", "a")], "context")
    assert (same.method, same.kappa) == ("cohen", None) and "undefined" in same.reason


# --- a model overruling the people --------------------------------------------------------------------

def _overrule_round() -> tuple[list[Answer], dict[str, dict[str, str]]]:
    """Twelve gold items: A right on 9, B and C on 7. Work item ``w`` (B and C say indoor,
    A outdoor) and ``t`` (A and B split, C silent)."""
    rng = random.Random(5)
    gold, answers = {}, []
    for n in range(12):
        label = rng.choice(["indoor", "outdoor"])
        other = "outdoor" if label == "indoor" else "indoor"
        gold[f"g{n}"] = {"context": label}
        answers += [_answer(f"g{n}", "A", label if n < 9 else other), _answer(f"g{n}", "B", label if n < 7 else other),
                    _answer(f"g{n}", "C", label if n % 2 or n < 2 else other)]
    answers += [_answer("w", "A", "outdoor"), _answer("w", "B", "indoor"), _answer("w", "C", "indoor"),
                _answer("t", "A", "outdoor"), _answer("t", "B", "indoor")]
    return answers, gold


def test_a_model_overrules_the_peoples_majority_only_at_the_posterior_and_answers_asked_for():
    from segbench.core.aggregation import model_posteriors

    answers, gold = _overrule_round()
    votes: dict[str, dict[str, str]] = {}
    for a in answers:
        votes.setdefault(a.item_id, {})[a.annotator] = a.choices["context"][0]
    posterior = model_posteriors(votes, "dawid-skene", {k: v["context"] for k, v in gold.items()})["w"]["outdoor"]
    assert 0.5 < posterior < 0.99  # the model sides with A against the two, but not beyond doubt

    def labels(overrule: Overrule | None) -> dict[str, str | None]:
        return {i.item_id: i.majority["context"]
                for i in aggregate(answers, ["context"], method="dawid-skene", gold=gold, overrule=overrule)}

    assert labels(None)["w"] == labels(Overrule(posterior - 0.001))["w"] == "outdoor"
    assert labels(Overrule(posterior + 0.001))["w"] == "indoor"  # the people's majority stands
    assert labels(Overrule(posterior + 0.001))["t"] == labels(None)["t"] is not None  # a tie is still settled
    # Three answers on w: an overrule asked to need four lets the people's majority stand, not the tie.
    assert labels(Overrule(0.0, min_answers=3))["w"] == "outdoor"
    assert labels(Overrule(0.0, min_answers=4))["w"] == "indoor"
    assert labels(Overrule(0.0, min_answers=4))["t"] == labels(None)["t"]
    # Five accounts answered w, three of them as one voter (a bloc): the item has the answers asked for.
    assert labels(Overrule(0.0, min_answers=4, answers={"w": 5}))["w"] == "outdoor"
