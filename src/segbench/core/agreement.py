"""Aggregation of annotators' answers and inter-annotator agreement (Cohen's and Fleiss' κ, Krippendorff's α).

Pure functions over :class:`~segbench.schemas.rounds.Answer` records: no files, no backend, no
Prefect. Reading answers and writing reports belong to the round flows; converting backend exports
belongs to ``segbench.annotation_ui.convert``.

Conventions shared by every function here:

* One vote per annotator and item. When an annotator answered an item more than once (two Label
  Studio annotations by the same user), the latest ``updated_at`` counts (then the largest
  ``source_id``), so duplicates never weigh twice.
* A choice answer with several labels counts as one category, the sorted labels joined by ``|``.
* The aggregation method is majority vote by default, or a worker-aware model (Dawid–Skene, GLAD:
  :mod:`segbench.core.aggregation`); workers can be left out (``exclude_workers``, e.g. the ones who
  failed gold items).
* Cohen's κ is scikit-learn's, Krippendorff's α the ``krippendorff`` package's; Fleiss' κ is the
  formula below (no maintained library in the project's dependencies computes it; the tests check it
  against the ``krippendorff`` package through the identity that links the two).
* Undefined statistics are ``None``, never NaN (canonical JSON has no NaN, and a NaN compares
  unequal to itself in tests).
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from segbench.core import clock
from segbench.core.aggregation import (
    DAWID_SKENE,
    MAJORITY,
    PLAIN_METHODS,
    check_method,
    model_posteriors,
    top_label,
)
from segbench.schemas.rounds import Agreement, Answer, ItemAnswer, Polygon

# Chance agreement this close to 1 makes kappa 0/0: every rating used the same category.
_DEGENERATE = 1e-12


@dataclass(frozen=True)
class Overrule:
    """When a model (``dawid-skene``, ``glad``) may overrule the people's majority on an item: only
    when its posterior for its own label reaches ``posterior``, and only on an item with at least
    ``min_answers`` answers. Where the people tied, the model always decides.

    ``answers``: item id → the answers it was given, where they are more than its votes (a bloc's
    accounts answer as one voter, whose confusion matrix is fitted on every item any of them answered)."""

    posterior: float = 0.0
    min_answers: int = 0
    answers: Mapping[str, int] = field(default_factory=dict)

    def allows(self, item_id: str, posterior: float, votes: int) -> bool:
        return posterior >= self.posterior and self.answers.get(item_id, votes) >= self.min_answers


def aggregate(answers: Iterable[Answer], controls: Sequence[str], *, method: str = MAJORITY,
              exclude_workers: Iterable[str] = (),
              gold: Mapping[str, Mapping[str, Any]] | None = None,
              overrule: Overrule | None = None) -> list[ItemAnswer]:
    """The aggregated label per item and choice control; polygons kept per annotator.

    Majority vote (the default): the label most of the item's annotators chose. Tie rule: when two
    or more labels share the highest number of votes, there is no majority (``None``); the agreement
    is still the top share. ``dawid-skene`` and ``glad`` instead take, per control, the label with the
    highest posterior of that model fitted on the whole round (:func:`~segbench.core.aggregation.model_labels`;
    a tie of posteriors is ``None`` too). The result is stored in ``majority`` either way; where the
    people tied and the model chose, ``model_settled`` says so with the model's posterior, so reports
    never count the model's choice as the people's agreement. A control
    nobody answered on an item is absent from that item's ``majority`` and ``agreement``.

    Agreement is the share of the item's annotators (everyone who answered the item, on any
    control) who chose the aggregated label (the top share on a tie); an annotator who left the
    control empty counts as not agreeing.

    Args:
        answers: answers of one round, any order.
        controls: the choice controls to aggregate.
        method: ``majority``, ``dawid-skene`` or ``glad``.
        exclude_workers: annotators whose answers are not counted (their answers stay in the
            answers file); an item only they answered is left out.
        gold: gold item id → its known answer (control → label). With ``dawid-skene`` the answers on
            gold items are fitted with their labels fixed (see :func:`~segbench.core.aggregation.model_labels`);
            gold items are never in the result, whatever the method.
        overrule: when a model (``dawid-skene``, ``glad``) overrules the people's majority; where it
            may not, the people's label stands. None: always.

    Returns:
        One ItemAnswer per answered item, sorted by item id; annotators sorted.

    Raises:
        ValueError: an unknown method.
    """
    check_method(method, PLAIN_METHODS)
    excluded = set(exclude_workers)
    by_item = {item: {ann: a for ann, a in by_annotator.items() if ann not in excluded}
               for item, by_annotator in _votes_by_item(answers).items()}
    by_item = {item: by_annotator for item, by_annotator in by_item.items() if by_annotator}
    gold = gold or {}
    if method not in (MAJORITY, DAWID_SKENE):  # only Dawid–Skene takes anchors: gold is not fitted
        by_item = {item: by_annotator for item, by_annotator in by_item.items() if item not in gold}
    modelled = {} if method == MAJORITY else {
        control: model_posteriors(_choice_votes(by_item, control), method,
                                  _known(gold, control) if method == DAWID_SKENE else None)
        for control in controls}
    out = []
    for item_id, by_annotator in sorted(by_item.items()):
        if item_id in gold:
            continue
        annotators = sorted(by_annotator)
        majority: dict[str, str | None] = {}
        agreement: dict[str, float] = {}
        settled: dict[str, float] = {}
        for control in controls:
            labels = [_category(a.choices[control]) for a in by_annotator.values() if a.choices.get(control)]
            if not labels:
                continue
            label, top = _majority(labels)
            people_tied = label is None
            if control in modelled and item_id in modelled[control]:
                posterior = modelled[control][item_id]
                chosen = top_label(posterior)
                overrules = not people_tied and chosen != label
                if not overrules or overrule is None or (chosen is not None
                                                         and overrule.allows(item_id, posterior[chosen], len(labels))):
                    label = chosen
                top = labels.count(label) if label is not None else top
                if people_tied and label is not None:  # the model, not the people, chose this label
                    settled[control] = round(posterior[label], 4)
            majority[control] = label
            agreement[control] = top / len(annotators)
        polygons: dict[str, dict[str, list[Polygon]]] = {}
        for annotator in annotators:
            for control, shapes in by_annotator[annotator].polygons.items():
                polygons.setdefault(control, {})[annotator] = list(shapes)
        out.append(ItemAnswer(item_id=item_id, annotators=annotators, majority=majority, agreement=agreement,
                              polygons=dict(sorted(polygons.items())), model_settled=settled))
    return out


def _known(gold: Mapping[str, Mapping[str, Any]], control: str) -> dict[str, str]:
    """Gold item id → its known category on ``control`` (a list of labels joined as answers are)."""
    return {item: _category(known[control]) if isinstance(known[control], list) else str(known[control])
            for item, known in gold.items() if control in known}


def _choice_votes(by_item: dict[str, dict[str, Answer]], control: str) -> dict[str, dict[str, str]]:
    """item → annotator → category on ``control``, for the annotators who answered it."""
    return {item: {ann: _category(a.choices[control]) for ann, a in by_annotator.items() if a.choices.get(control)}
            for item, by_annotator in by_item.items()}


def cohen_kappa(a: Sequence[str], b: Sequence[str]) -> float | None:
    """Cohen's kappa of two raters who labelled the same items (``a[i]`` and ``b[i]`` rate item i).

    κ = (p_o − p_e) / (1 − p_e), with p_o the share of items where they agree and p_e the chance
    agreement Σ_k p_a(k)·p_b(k) from each rater's own label frequencies (scikit-learn's
    ``cohen_kappa_score``).

    Returns:
        κ, or None when undefined: no items, or p_e = 1 (both raters used one and the same label).

    Raises:
        ValueError: the two sequences have different lengths.
    """
    if len(a) != len(b):
        raise ValueError(f"Cohen's kappa needs the same items for both raters; got {len(a)} and {len(b)} ratings")
    if not a:
        return None
    if len(set(a) | set(b)) == 1:  # p_e = 1; scikit-learn would return NaN with a warning
        return None
    from sklearn.metrics import cohen_kappa_score  # ~1 s to import: only when a kappa is asked for

    value = float(cohen_kappa_score(list(a), list(b)))
    return value if math.isfinite(value) else None


def fleiss_kappa(ratings: Sequence[Sequence[str]]) -> float | None:
    """Fleiss' kappa of items × ratings, each item rated by the same number n ≥ 2 of raters.

    The raters may differ from item to item (as on crowd platforms). Categories come from the
    data. With n_ij the number of ratings of item i in category j (N items):
    P_i = (Σ_j n_ij² − n) / (n(n − 1)), P̄ = mean P_i, p_j = Σ_i n_ij / (N n), P_e = Σ_j p_j²,
    κ = (P̄ − P_e) / (1 − P_e).

    Returns:
        κ, or None when undefined: no items, or P_e = 1 (every rating has the same label).

    Raises:
        ValueError: items have different numbers of ratings, or fewer than 2.
    """
    if not ratings:
        return None
    sizes = {len(r) for r in ratings}
    if len(sizes) != 1 or min(sizes) < 2:
        raise ValueError(f"Fleiss' kappa needs the same number (at least 2) of ratings per item; got {sorted(sizes)}")
    n = sizes.pop()
    categories = sorted({label for item in ratings for label in item})
    index = {label: j for j, label in enumerate(categories)}
    counts = np.zeros((len(ratings), len(categories)), dtype=np.int64)  # (N items, k categories)
    for i, item in enumerate(ratings):
        for label in item:
            counts[i, index[label]] += 1
    per_item = ((counts**2).sum(axis=1) - n) / (n * (n - 1))  # (N,)
    shares = counts.sum(axis=0) / (len(ratings) * n)  # (k,)
    return _kappa(float(per_item.mean()), float((shares**2).sum()))


def krippendorff_alpha(ratings: Sequence[Sequence[str]]) -> float | None:
    """Krippendorff's α (nominal) of items × ratings, with the ``krippendorff`` package.

    Items may have any number of ratings: α uses every pair of ratings of an item, so items rated by
    different numbers of people, or by one (no pair: left out), are fine, where kappa is not.

    Returns:
        α, or None when undefined: no item with two ratings, or a single label in the data (no
        disagreement is expected, α is 0/0).
    """
    ratings = [item for item in ratings if len(item) >= 2]  # a lone rating has no pair: α ignores it
    categories = sorted({label for item in ratings for label in item})
    if len(categories) < 2:
        return None
    import krippendorff

    index = {label: j for j, label in enumerate(categories)}
    counts = np.zeros((len(ratings), len(categories)), dtype=np.int64)  # (N items, k categories)
    for i, item in enumerate(ratings):
        for label in item:
            counts[i, index[label]] += 1
    value = float(krippendorff.alpha(value_counts=counts, level_of_measurement="nominal"))
    return value if math.isfinite(value) else None


def agreement_summary(answers: Iterable[Answer], control: str) -> Agreement:
    """Agreement on one choice control, with the kappa that fits how the round was rated.

    Choice rule:

    * Cohen's κ when every rated item has exactly two ratings and they come from the same two
      annotators everywhere; rater A is the one whose id sorts first, so pairs line up.
    * Fleiss' κ when every rated item has the same number n ≥ 2 of ratings (annotators may
      differ per item).
    * Otherwise no kappa, with the reason (items rated by different numbers of people, or by
      one person only).

    Krippendorff's α (nominal) is computed whatever the design: it handles items with different
    numbers of ratings, so it is defined where kappa is not.

    Returns:
        ``control``, ``method`` ("cohen", "fleiss" or None), ``kappa`` (None when not computed or
        undefined), ``reason`` (why there is no kappa, else None), ``alpha`` (Krippendorff's α, None
        when undefined: see :func:`krippendorff_alpha`), ``items`` (rated items),
        ``annotators`` (distinct), ``raters`` (the two ids, Cohen only), ``pairwise_agreement``
        (observed agreement: per item with at least two ratings, the share of its pairs of ratings
        that agree, averaged over items — Fleiss' P̄, the p_o of κ; None if there is no such item),
        ``mean_agreement`` (the modal share: per such item, the share of its ratings that chose its
        most frequent label, averaged; it credits a 1-of-2 split with 0.5, so it overstates
        agreement) and ``items_by_ratings`` (number of ratings → number of items, keys as strings
        for JSON).
    """
    rated: dict[str, dict[str, str]] = {}  # item → annotator → category
    for item_id, by_annotator in _votes_by_item(answers).items():
        votes = {ann: _category(a.choices[control]) for ann, a in by_annotator.items() if a.choices.get(control)}
        if votes:
            rated[item_id] = votes
    histogram = Counter(len(votes) for votes in rated.values())
    shares = [_majority(list(v.values()))[1] / len(v) for v in rated.values() if len(v) >= 2]
    pairs = [_agreeing_pairs(list(v.values())) for v in rated.values() if len(v) >= 2]
    summary: dict[str, Any] = {
        "control": control,
        "method": None,
        "kappa": None,
        "reason": None,
        "alpha": krippendorff_alpha([sorted(rated[i].values()) for i in sorted(rated)]),
        "items": len(rated),
        "annotators": len({ann for votes in rated.values() for ann in votes}),
        "raters": None,
        "pairwise_agreement": sum(pairs) / len(pairs) if pairs else None,
        "mean_agreement": sum(shares) / len(shares) if shares else None,
        "items_by_ratings": {str(k): histogram[k] for k in sorted(histogram)},
    }
    rater_sets = {tuple(sorted(votes)) for votes in rated.values()}
    if not rated:
        summary["reason"] = f"no answers for control {control!r}"
    elif set(histogram) == {2} and len(rater_sets) == 1:
        first, second = rater_sets.pop()
        items = sorted(rated)
        summary.update(method="cohen", raters=[first, second],
                       kappa=cohen_kappa([rated[i][first] for i in items], [rated[i][second] for i in items]))
    elif len(histogram) == 1 and min(histogram) >= 2:
        summary.update(method="fleiss", kappa=fleiss_kappa([sorted(rated[i].values()) for i in sorted(rated)]))
    elif len(histogram) == 1:
        summary["reason"] = "every item has one rating; agreement needs at least two per item"
    else:
        counts = ", ".join(f"{k} ratings: {histogram[k]} items" for k in sorted(histogram))
        summary["reason"] = f"items have different numbers of ratings ({counts}); kappa needs the same number"
    if summary["method"] and summary["kappa"] is None:
        summary["reason"] = "chance agreement is 1 (every rating has the same label); kappa is undefined"
    return Agreement.model_validate(summary)


def _agreeing_pairs(labels: Sequence[str]) -> float:
    """The share of an item's pairs of ratings that agree: Σ_k n_k(n_k − 1) / (n(n − 1))."""
    n = len(labels)
    return sum(c * (c - 1) for c in Counter(labels).values()) / (n * (n - 1))


def _kappa(observed: float, expected: float) -> float | None:
    if 1.0 - expected < _DEGENERATE:
        return None
    value = (observed - expected) / (1.0 - expected)
    return value if math.isfinite(value) else None


def _majority(labels: Sequence[str]) -> tuple[str | None, int]:
    """The most frequent label and its count; None as label when the top count is shared."""
    ranked = Counter(labels).most_common()
    top = ranked[0][1]
    tied = sum(1 for _, count in ranked if count == top) > 1
    return (None if tied else ranked[0][0]), top


def _category(labels: Sequence[str]) -> str:
    return "|".join(sorted(set(labels)))


def _votes_by_item(answers: Iterable[Answer]) -> dict[str, dict[str, Answer]]:
    """item id → annotator → that annotator's latest answer on the item."""
    out: dict[str, dict[str, Answer]] = {}
    for answer in answers:
        by_annotator = out.setdefault(answer.item_id, {})
        current = by_annotator.get(answer.annotator)
        if current is None or _recency(answer) > _recency(current):
            by_annotator[answer.annotator] = answer
    return out


def _recency(answer: Answer) -> tuple[dt.datetime, str]:
    """Later answers sort last; an unreadable time orders like a missing one, and source_id then decides."""
    return clock.time_order(answer.updated_at), answer.source_id
