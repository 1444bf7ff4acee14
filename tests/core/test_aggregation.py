"""Worker-aware aggregation (Dawid–Skene, GLAD, segmentation models), the gold filter, and the
library-backed agreement statistics checked against the formulas they replaced."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from segbench.core.aggregation import (
    aggregate_masks,
    aggregate_polygons,
    gold_accuracy,
    mask_iou,
    model_labels,
    workers_below,
)
from segbench.core.agreement import aggregate, agreement_summary, cohen_kappa, fleiss_kappa, krippendorff_alpha
from segbench.schemas.rounds import Answer


def _answer(item: str, annotator: str, label: str) -> Answer:
    return Answer(item_id=item, annotator=annotator, source_id=f"{annotator}/{item}", choices={"context": [label]})


def colluding_crowd(items: int = 12) -> tuple[list[Answer], dict[str, str]]:
    """Two careful workers, always right; three who always answer "no" whatever the item.

    Majority vote says "no" everywhere (3 against 2); a model of each worker's reliability sees that
    the three are uninformative and follows the careful two.
    """
    truth = {f"i{n:02d}": "yes" if n % 2 else "no" for n in range(items)}
    answers = [_answer(item, worker, label) for item, label in truth.items() for worker in ("good1", "good2")]
    answers += [_answer(item, worker, "no") for item in truth for worker in ("lazy1", "lazy2", "lazy3")]
    return answers, truth


# --- categorical models ----------------------------------------------------------------------------------

def random_crowd(items: int = 40, seed: int = 0) -> tuple[list[Answer], dict[str, str]]:
    """Two careful workers, always right; three spammers who answer at random."""
    rng = random.Random(seed)
    truth = {f"i{n:02d}": rng.choice(["yes", "no"]) for n in range(items)}
    answers = [_answer(item, worker, label) for item, label in truth.items() for worker in ("good1", "good2")]
    answers += [_answer(item, worker, rng.choice(["yes", "no"])) for item in truth for worker in ("s1", "s2", "s3")]
    return answers, truth


def _labels(items: list) -> dict[str, str | None]:
    return {i.item_id: i.majority["context"] for i in items}


def test_dawid_skene_recovers_what_the_majority_loses():
    answers, truth = colluding_crowd()
    assert _labels(aggregate(answers, ["context"])) == {item: "no" for item in truth}  # half of them wrong
    modelled = aggregate(answers, ["context"], method="dawid-skene")
    assert _labels(modelled) == truth
    # Agreement stays the share of the item's annotators who chose the aggregated label.
    assert all(i.agreement["context"] == pytest.approx(2 / 5) for i in modelled if truth[i.item_id] == "yes")


@pytest.mark.parametrize("method", ["dawid-skene", "glad"])
def test_models_see_through_random_spammers(method):
    answers, truth = random_crowd()
    majority = _labels(aggregate(answers, ["context"]))
    wrong = sum(majority[item] != label for item, label in truth.items())
    assert wrong >= 3  # the three spammers outvote the careful two now and then
    assert _labels(aggregate(answers, ["context"], method=method)) == truth


@pytest.mark.parametrize("method", ["dawid-skene", "glad"])
def test_model_aggregation_is_deterministic_and_order_free(method):
    answers, _ = colluding_crowd()
    first = [i.model_dump() for i in aggregate(answers, ["context"], method=method)]
    shuffled = random.Random(3).sample(answers, len(answers))
    assert [i.model_dump() for i in aggregate(shuffled, ["context"], method=method)] == first


def test_model_ties_and_single_label_rounds():
    # One item, two workers who disagree: the posteriors are equal, so no label (majority's tie rule).
    assert model_labels({"i": {"a": "x", "b": "y"}}, "dawid-skene") == {"i": None}
    # One label in the whole round: nothing to model, every item gets it.
    assert model_labels({"i": {"a": "x"}, "j": {"a": "x", "b": "x"}}, "glad") == {"i": "x", "j": "x"}
    assert model_labels({}, "dawid-skene") == {}
    with pytest.raises(ValueError, match="dawid-skene"):
        model_labels({"i": {"a": "x"}}, "mace")
    with pytest.raises(ValueError, match="majority"):
        aggregate([], ["context"], method="mean")


def test_excluded_workers_are_not_counted():
    answers, truth = colluding_crowd(items=4)
    answers.append(_answer("only-lazy", "lazy1", "no"))
    kept = aggregate(answers, ["context"], exclude_workers=["lazy1", "lazy2", "lazy3"])
    assert {i.item_id: i.majority["context"] for i in kept} == truth  # "only-lazy" is left out
    assert {tuple(i.annotators) for i in kept} == {("good1", "good2")}
    assert all(i.agreement["context"] == 1.0 for i in kept)


# --- gold ------------------------------------------------------------------------------------------------

def test_gold_accuracy_and_the_workers_to_drop():
    votes = {"g1": {"a": "x", "b": "y", "c": "x"}, "g2": {"a": "y", "b": "y"}, "i": {"a": "x", "d": "x"}}
    accuracy = gold_accuracy(votes, {"g1": "x", "g2": "y"})
    assert accuracy == {"a": 1.0, "b": 0.5, "c": 1.0, "d": None}
    assert workers_below(accuracy, 0.6) == ["b"]  # d answered no gold item: kept
    assert workers_below(accuracy, 0.5) == []


# --- masks -----------------------------------------------------------------------------------------------

def _disc(size: int, cx: float, cy: float, r: float) -> np.ndarray:
    yy, xx = np.mgrid[:size, :size]
    return ((xx - cx) ** 2 + (yy - cy) ** 2 <= r * r).astype(np.uint8)


@pytest.mark.parametrize("method", ["em", "majority", "rasa"])
def test_mask_aggregation_outvotes_a_random_mask(method):
    truth = _disc(40, 20, 20, 10)
    rng = np.random.default_rng(0)
    masks = {"w1": _disc(40, 21, 20, 10), "w2": _disc(40, 20, 19, 10), "w3": _disc(40, 19, 21, 9),
             "spam": (rng.random((40, 40)) < 0.5).astype(np.uint8)}
    out = aggregate_masks(masks, method)
    assert out.shape == (40, 40) and out.dtype == np.uint8
    assert mask_iou(out, truth) > 0.85
    assert mask_iou(masks["spam"], truth) < 0.4
    assert np.array_equal(aggregate_masks(dict(reversed(masks.items())), method), out)


def test_mask_aggregation_refuses_bad_input():
    with pytest.raises(ValueError, match="no masks"):
        aggregate_masks({})
    with pytest.raises(ValueError, match="one size"):
        aggregate_masks({"a": np.zeros((2, 2)), "b": np.zeros((3, 2))})
    with pytest.raises(ValueError, match="em, majority, rasa"):
        aggregate_masks({"a": np.zeros((2, 2))}, "staple")
    assert mask_iou(np.zeros((2, 2)), np.zeros((2, 2))) == 1.0


# --- agreement statistics against the formulas they replaced --------------------------------------------

def _previous_cohen(a: list[str], b: list[str]) -> float | None:
    """The hand-written Cohen's κ segbench used before scikit-learn's."""
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[k] * count_b[k] for k in count_a) / (n * n)
    return None if 1 - expected < 1e-12 else (observed - expected) / (1 - expected)


def test_cohen_agrees_with_the_previous_formula_on_random_ratings():
    rng = random.Random(7)
    for _ in range(200):
        labels = "abcd"[: rng.randint(1, 4)]
        n = rng.randint(1, 30)
        a, b = [rng.choice(labels) for _ in range(n)], [rng.choice(labels) for _ in range(n)]
        expected = _previous_cohen(a, b)
        assert cohen_kappa(a, b) == (None if expected is None else pytest.approx(expected, abs=1e-12))


def test_fleiss_agrees_with_the_krippendorff_package():
    """With n ratings on every item, both share the observed disagreement 1 − P̄: from α,
    1 − P̄ = (1 − α)·D_e with D_e = 1 − Σ n_c(n_c − 1) / (M(M − 1)) (M ratings in all), and
    κ = 1 − (1 − P̄) / (1 − Σ p_c²). The κ rebuilt from the package's α must equal ours."""
    rng = random.Random(11)
    for _ in range(100):
        n, items, labels = rng.randint(2, 6), rng.randint(2, 40), "abcde"[: rng.randint(2, 5)]
        ratings = [[rng.choice(labels) for _ in range(n)] for _ in range(items)]
        counts = Counter(label for item in ratings for label in item)
        if len(counts) < 2:
            continue
        total = n * items
        d_e = 1 - sum(c * (c - 1) for c in counts.values()) / (total * (total - 1))
        p_e = sum((c / total) ** 2 for c in counts.values())
        alpha = krippendorff_alpha(ratings)
        assert fleiss_kappa(ratings) == pytest.approx(1 - (1 - alpha) * d_e / (1 - p_e), abs=1e-9)


def test_krippendorff_alpha_on_the_published_example():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 coders, 12 units, gaps;
    # nominal α = 0.743.
    coders = ["1 2 3 3 2 1 4 1 2 . . .", "1 2 3 3 2 2 4 1 2 5 . 3", ". 3 3 3 2 3 4 2 2 5 1 .",
              "1 2 3 3 2 4 4 1 2 5 1 ."]
    units = list(zip(*(c.split() for c in coders), strict=True))
    ratings = [[v for v in unit if v != "."] for unit in units]
    assert krippendorff_alpha(ratings) == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha([["a", "a"], ["a"]]) is None  # one label: α is 0/0
    assert krippendorff_alpha([["a"], ["b"]]) is None  # no pair of ratings


def test_alpha_is_reported_where_kappa_is_not():
    # Items rated by 2 and by 3 people: no kappa, but α.
    answers = [_answer("1", "A", "x"), _answer("1", "B", "x"), _answer("2", "A", "y"), _answer("2", "B", "y"),
               _answer("2", "C", "y"), _answer("3", "A", "x"), _answer("3", "C", "y")]
    summary = agreement_summary(answers, "context")
    assert summary.kappa is None and "different numbers" in summary.reason
    assert summary.alpha == pytest.approx(krippendorff_alpha([["x", "x"], ["y", "y", "y"], ["x", "y"]]))
    assert 0 < summary.alpha < 1


def test_polygons_are_merged_like_the_spin_kind_then_aggregated():
    from segbench.schemas.rounds import Polygon
    from segbench.tasks.spin.crowd import merge_polygons

    outer = Polygon(label="Rim", points=[(5, 5), (35, 5), (35, 35), (5, 35)])
    hole = Polygon(label="Rim", points=[(15, 15), (25, 15), (25, 25), (15, 25)])
    ring = merge_polygons([outer, hole], 40, 40)
    assert ring[20, 20] == 0 and ring[8, 8] == 1  # the inner polygon is a hole
    stray = Polygon(label="Rim", points=[(0, 0), (4, 0), (4, 4)])
    drawn = {"a": [outer, hole], "b": [outer, hole], "c": [stray], "d": []}
    assert np.array_equal(aggregate_polygons(drawn, 40, 40, "majority"), ring)
    with pytest.raises(ValueError, match="no masks"):
        aggregate_polygons({"d": []}, 40, 40)
