"""Choosing the aggregation model by the round's own gold, held out.

No aggregation model wins on every crowd: gold-anchored Dawid–Skene sees through spammers and
specialists but fits a confusion matrix per voter, which a thin round (three answers per item,
twenty per worker) pins down poorly, where majority vote may do better. The round's gold
says which holds here: the gold items are split into ``folds`` parts by a hash of their ids; each
part in turn is held out, every candidate is fitted with the rest of the gold as its anchors (the
models that take anchors), and its labels on the held-out items are compared with their known
answers.

The default (Dawid–Skene) is left only on evidence: a candidate replaces it when, on the held-out
judgments where exactly one of the two is right, the candidate is right significantly more often
(a one-sided exact binomial test, scipy's ``binomtest``, at ``alpha`` divided by the number of
challengers). Thirty-odd gold items rarely give such evidence, and choosing on a count without it
cost accuracy on the simulated crowds of ``bench/crowd.py`` (the count is noise at that size);
rounds with more gold (``--gold``, ``--gold-from``) can.

Pure: the same answers and gold give the same choice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from segbench.core.aggregation_methods import DAWID_SKENE, MAJORITY
from segbench.core.agreement import Overrule, aggregate
from segbench.schemas.rounds import Answer

# GLAD is no candidate: crowd-kit's takes about 25 times Dawid–Skene's time to fit (4.5 s against
# 0.19 s on 21,000 answers), and on the simulated crowds of bench/crowd.py crowd-kit's GLAD was at most
# 0.1 points above the better of these two.
CANDIDATES = (DAWID_SKENE, MAJORITY)


class ChoiceRow(TypedDict):
    """A choice as the answers file and the worker report record it."""

    method: str
    folds: int
    held_out: dict[str, list[int]]
    p_values: dict[str, float]
    reason: str


@dataclass(frozen=True)
class ModelChoice:
    """The model a round's labels come from, and the held-out gold that chose it.

    Attributes:
        method: the chosen model.
        held_out: candidate → (held-out gold judgments it got right, judgments held out); empty
            when the round has too little gold to choose (then ``method`` is the default).
        folds: the parts the gold was split into.
        p_values: candidate → the one-sided p that it beats the default on the held-out gold.
    """

    method: str
    held_out: Mapping[str, tuple[int, int]]
    folds: int
    p_values: Mapping[str, float]

    @property
    def reason(self) -> str:
        if not self.held_out:
            return f"{self.method}, the default: too little gold to choose by"
        right, judged = self.held_out[self.method]
        if self.method == CANDIDATES[0]:
            best = min(self.p_values, key=lambda m: self.p_values[m])
            return (f"{self.method}, the default, got {right} of {judged} held-out gold judgments right; no other "
                    f"model was significantly better (the closest, {best}, at p = {self.p_values[best]:.3g})")
        return (f"{self.method} got {right} of {judged} held-out gold judgments right, significantly more than "
                f"{CANDIDATES[0]}'s {self.held_out[CANDIDATES[0]][0]} (p = {self.p_values[self.method]:.3g})")

    def row(self) -> ChoiceRow:
        return {"method": self.method, "folds": self.folds,
                "held_out": {m: list(v) for m, v in self.held_out.items()}, "p_values": dict(self.p_values),
                "reason": self.reason}


def choose_model(votes: Sequence[Answer], controls: Sequence[str], known: Mapping[str, Mapping[str, Any]], *,
                 folds: int = 2, min_judgments: int = 20, alpha: float = 0.05,
                 overrule: Overrule | None = None) -> ModelChoice:
    """The default of :data:`CANDIDATES`, unless another is significantly more often right on the
    held-out gold (see the module docstring).

    Args:
        votes: the counted answers (blocs already one voter), gold items included.
        controls: the choice controls.
        known: gold item id → control → known label.
        folds: the parts the gold is split into (each held out once).
        min_judgments: fewer known gold judgments among ``votes`` than this: no choice, the default.
        alpha: the significance a challenger needs to replace the default (Bonferroni over the challengers).
        overrule: passed to every fit (:func:`segbench.core.agreement.aggregate`).
    """
    answered = {a.item_id for a in votes}
    judged = {item: {c: label for c, label in answer.items() if c in controls and label is not None}
              for item, answer in known.items() if item in answered}
    judged = {item: answer for item, answer in judged.items() if answer}
    if sum(len(a) for a in judged.values()) < min_judgments or folds < 2:
        return ModelChoice(method=CANDIDATES[0], held_out={}, folds=folds, p_values={})
    part = {item: gold_part(item, folds) for item in judged}
    score = {method: [0, 0] for method in CANDIDATES}
    wins = dict.fromkeys(CANDIDATES[1:], 0)  # held-out judgments the candidate gets right and the default wrong
    losses = dict.fromkeys(CANDIDATES[1:], 0)
    for fold in range(folds):
        held = {item for item, p in part.items() if p == fold}
        anchors = {item: answer for item, answer in known.items() if item not in held}
        right: dict[str, dict[tuple[str, str], bool]] = {}
        for method in CANDIDATES:
            labels = {i.item_id: i.majority for i in aggregate(votes, controls, method=method, gold=anchors,
                                                               overrule=overrule) if i.item_id in held}
            right[method] = {(item, control): labels.get(item, {}).get(control) == label
                             for item in sorted(held) for control, label in judged[item].items()}
            score[method][0] += sum(right[method].values())
            score[method][1] += len(right[method])
        for method in CANDIDATES[1:]:
            for key, ok in right[method].items():
                wins[method] += ok and not right[CANDIDATES[0]][key]
                losses[method] += right[CANDIDATES[0]][key] and not ok
    default = CANDIDATES[0]
    tests = {m: _binomial_p(wins[m], losses[m]) for m in CANDIDATES[1:]}
    best = min(tests, key=lambda m: (tests[m], CANDIDATES.index(m)))
    chosen = best if tests[best] < alpha / len(tests) else default
    return ModelChoice(method=chosen, held_out={m: (r, n) for m, (r, n) in score.items()}, folds=folds,
                       p_values={m: round(p, 6) for m, p in tests.items()})


def gold_part(item_id: str, folds: int) -> int:
    """The part of the gold an item is held out with: a hash of its id, so the split needs no seed."""
    return int(hashlib.sha256(item_id.encode()).hexdigest(), 16) % folds


def _binomial_p(wins: int, losses: int) -> float:
    """One-sided exact binomial p of ``wins`` or more in ``wins + losses`` fair coin flips (1 when none)."""
    if wins + losses == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(wins, wins + losses, 0.5, alternative="greater").pvalue)
