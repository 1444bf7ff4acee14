"""Statistical signals of careless or dishonest crowd work, one pure function each.

Every signal compares a worker's labels with a *reference*: the known label on gold items, the
aggregated label on work items. A judgment is one (item, choice control) pair with a defined
reference; labels of different controls are kept apart by prefixing the control
(``"context=indoor"``), so one worker's judgments over several questions pool into one sample.
:mod:`segbench.core.worker_quality` turns the signals into reasons under its :class:`QualityRules`.

The tests are scipy's (``binomtest`` for the Wilson interval and the collusion test,
``fisher_exact`` for the drop in accuracy) and scikit-learn's Cohen's κ: nothing here re-derives a
statistic a maintained library already has. Undefined values are ``None``, never NaN.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Judgment = tuple[str, str]  # (worker's label, reference label), both control-prefixed


def kappa_with_reference(judgments: Sequence[Judgment], min_minority: int = 3) -> float | None:
    """Cohen's κ between a worker's labels and the reference: agreement beyond chance.

    A worker who gives one label to everything, clicks at random or copies a random answer sheet
    agrees with the reference only by chance (κ ≈ 0), however imbalanced the labels are; raw
    agreement would credit an always-majority worker with the majority's share.

    κ is computed per control and averaged, weighted by judgments. A control counts only when at
    least ``min_minority`` of its references differ from its most common one: on a control whose
    answers are (nearly) all one label, κ says nothing about the worker (prevalence makes one
    honest slip look like chance).

    Returns:
        The weighted κ, or None when no control counts (or κ is undefined on each).
    """
    from segbench.core.agreement import cohen_kappa  # scikit-learn: imported only when scoring

    by_control: dict[str, list[Judgment]] = defaultdict(list)
    for mine, ref in judgments:
        by_control[ref.split("=", 1)[0]].append((mine, ref))
    total = weight = 0.0
    for _, pairs in sorted(by_control.items()):
        references = Counter(ref for _, ref in pairs)
        if len(pairs) - references.most_common(1)[0][1] < min_minority:
            continue
        kappa = cohen_kappa([mine for mine, _ in pairs], [ref for _, ref in pairs])
        if kappa is not None:
            total += kappa * len(pairs)
            weight += len(pairs)
    return None if weight == 0 else total / weight


def label_distance(judgments: Sequence[Judgment]) -> float | None:
    """Total variation distance between the worker's label distribution and the reference's on
    the same items, 0 (same shares) to 1. One label for nearly everything on items whose labels
    are mixed scores high (an always-``indoor`` worker on 80/20 items: 0.2)."""
    if not judgments:
        return None
    mine, ref = Counter(m for m, _ in judgments), Counter(r for _, r in judgments)
    return round(sum(abs(mine[k] - ref[k]) for k in mine.keys() | ref.keys()) / (2 * len(judgments)), 4)


def informative_labels(judgments: Sequence[Judgment], *, min_said: int, min_precision: float,
                       max_p: float) -> list[str]:
    """The labels a worker gives that carry evidence of the class: said at least ``min_said`` times,
    right (equal to the reference) at least ``min_precision`` of the time, and said far more often
    where it is the reference than where it is not (one-sided Fisher exact p below ``max_p``).

    A specialist (sure on one class, guessing on the others) has one: whatever they say of the class
    they know, or against it, is reliable, which a per-class confusion model (Dawid–Skene) uses. A
    random clicker, a one-label worker or a copied random sheet has none: each label they give is
    right at about its base rate, whatever the reference.
    """
    from scipy.stats import fisher_exact

    said = Counter(m for m, _ in judgments)
    out = []
    for label, n in sorted(said.items()):
        right = sum(1 for m, r in judgments if m == label and r == label)
        if n < min_said or right / n < min_precision:
            continue
        # Against the judgments of the same question only (labels are ``control=label``).
        same = [(m, r) for m, r in judgments if r.split("=", 1)[0] == label.split("=", 1)[0]]
        elsewhere = sum(1 for m, r in same if m != label and r == label)
        wrong_elsewhere = len(same) - n - elsewhere
        table = [[right, n - right], [elsewhere, wrong_elsewhere]]
        if fisher_exact(table, alternative="greater").pvalue < max_p:
            out.append(label)
    return out


def gold_interval(right: int, total: int, confidence: float) -> tuple[float, float] | None:
    """The Wilson interval of a gold accuracy of ``right`` / ``total`` at ``confidence`` (two-sided)."""
    if total == 0:
        return None
    from scipy.stats import binomtest

    interval = binomtest(right, total).proportion_ci(confidence_level=confidence, method="wilson")
    return round(float(interval.low), 4), round(float(interval.high), 4)


@dataclass(frozen=True)
class Drop:
    """Accuracy in the first and second half of a worker's judgments (in answer order) and the
    one-sided Fisher exact p-value that the first half is more accurate."""

    early: float
    late: float
    p_value: float


def accuracy_drop(right: Sequence[bool]) -> Drop | None:
    """How accuracy changed over a worker's judgments, in the order they were answered; None with
    fewer than 2 judgments per half."""
    half = len(right) // 2
    if half < 2:
        return None
    from scipy.stats import fisher_exact

    early, late = right[:half], right[len(right) - half:]
    table = [[sum(early), half - sum(early)], [sum(late), half - sum(late)]]
    p_value = float(fisher_exact(table, alternative="greater").pvalue)
    return Drop(round(sum(early) / half, 4), round(sum(late) / half, 4), round(p_value, 6))


@dataclass(frozen=True)
class PairAgreement:
    """Two workers on the items both answered that have a reference."""

    workers: tuple[str, str]
    shared: int
    agreed: int
    expected: float
    p_value: float


def pair_agreements(labels: Mapping[str, Mapping[str, str]], reference: Mapping[str, str],
                    min_shared: int) -> list[PairAgreement]:
    """How far beyond chance each pair of workers agrees, for pairs sharing ``min_shared`` judgments.

    Honest workers err independently given the true label, so two of them agree about as often as
    their own confusion with the reference predicts; workers copying one answer sheet agree far
    more. Per worker, P(label c | reference r) is estimated from all their judgments (add-one
    smoothing over the labels seen with r); the pair's expected agreement on its shared judgments
    is Σ_i Σ_c P₁(c|r_i)·P₂(c|r_i), and the p-value is the binomial test of the observed agreements
    against that mean rate (one-sided, greater).

    Args:
        labels: worker → judgment key (``item|control``) → the worker's label.
        reference: judgment key → reference label.

    Returns:
        Pairs sorted by p-value, then by names.
    """
    from scipy.stats import binomtest

    confusion = {worker: _confusion(mine, reference) for worker, mine in labels.items()}
    by_key: dict[str, list[str]] = defaultdict(list)
    for worker in sorted(labels):
        for key in labels[worker]:
            if key in reference:
                by_key[key].append(worker)
    shared: dict[tuple[str, str], list[str]] = defaultdict(list)
    for key, workers in sorted(by_key.items()):
        for i, first in enumerate(workers):
            for second in workers[i + 1:]:
                shared[(first, second)].append(key)
    out = []
    for (first, second), keys in sorted(shared.items()):
        if len(keys) < min_shared:
            continue
        agreed = sum(labels[first][k] == labels[second][k] for k in keys)
        expected = sum(_chance(confusion[first], confusion[second], reference[k]) for k in keys)
        rate = min(max(expected / len(keys), 1e-9), 1.0)
        p_value = 1.0 if rate >= 1.0 else float(binomtest(agreed, len(keys), rate, alternative="greater").pvalue)
        out.append(PairAgreement((first, second), len(keys), agreed, round(expected, 4), p_value))
    return sorted(out, key=lambda p: (p.p_value, p.workers))


def _confusion(mine: Mapping[str, str], reference: Mapping[str, str]) -> dict[str, dict[str, float]]:
    """reference label → the worker's label → probability (add-one smoothed over the labels seen)."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    seen: set[str] = set()
    for key, label in mine.items():
        if key in reference:
            counts[reference[key]][label] += 1
            seen.update((label, reference[key]))
    out = {}
    for ref, row in counts.items():
        options = {label for label in seen if label.split("=", 1)[0] == ref.split("=", 1)[0]}
        total = sum(row.values()) + len(options)
        out[ref] = {label: (row[label] + 1) / total for label in options}
    return out


def _chance(first: Mapping[str, Mapping[str, float]], second: Mapping[str, Mapping[str, float]], ref: str) -> float:
    a, b = first.get(ref, {}), second.get(ref, {})
    return sum(p * b.get(label, 0.0) for label, p in a.items())
