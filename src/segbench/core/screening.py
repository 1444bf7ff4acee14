"""Screened aggregation, the default of new rounds: Dawid–Skene anchored on the gold answers, fitted
again without the workers the worker report flags.

1. Fit Dawid–Skene on every counted answer, gold items included with their known labels fixed
   (crowd-kit's ``true_labels``: each worker's confusion matrix starts from, and stays anchored on,
   their gold answers).
2. Score the workers against that aggregate (:func:`segbench.core.worker_quality.score_workers`).
3. Leave out the flagged workers and fit again; repeat while the new fit flags someone new (at most
   ``MAX_PASSES`` fits). A worker once left out stays out, with the reasons of the pass that
   flagged them.

Never more than half of the round's workers are left out: when the rules flag more, they say more
about the round than about its workers (a SPIN part whose subparts are mostly absent makes every
careful worker "mark many parts absent"), so that pass leaves no one new out and ``capped`` says so.
An item that only left-out workers answered keeps the label of the first fit rather than losing
its answer. Pure: no files, no backend; the same answers give the same result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from segbench.core.aggregation import DAWID_SKENE, SCREENED
from segbench.core.agreement import aggregate
from segbench.core.worker_quality import POLYGONS, QualityRules, WorkerReport, score_workers
from segbench.schemas.rounds import Answer, ItemAnswer

MAX_PASSES = 4
MAX_LEFT_OUT_SHARE = 0.5


@dataclass(frozen=True)
class Screened:
    """The outcome of a screened aggregation.

    Attributes:
        items: the aggregated work items (gold items are not among them).
        report: the worker report of the last fit (``score_workers``'s dictionary).
        left_out: worker → the reasons they were left out, in the order they were left out.
        passes: how many fits were made.
        capped: a pass flagged so many workers that leaving them out would pass ``MAX_LEFT_OUT_SHARE``
            of the round's workers; none of that pass's were left out.
    """

    items: list[ItemAnswer]
    report: WorkerReport
    left_out: dict[str, list[str]]
    passes: int
    capped: bool = False


def screen(counted: Sequence[Answer], scored: Sequence[Answer], controls: Sequence[str],
           gold: Mapping[str, tuple[Mapping[str, Any], tuple[int, int]]], *, qualified: set[str] | None = None,
           rules: QualityRules = QualityRules()) -> Screened:
    """Aggregate ``counted`` with gold-anchored Dawid–Skene, leaving out the workers the report flags.

    Args:
        counted: the answers that count (work and gold items; a gated round's qualified workers only).
        scored: every answer of the round, for the worker report (gold and unqualified included).
        controls: the choice controls to aggregate.
        gold: gold item id → (known answer, (height, width)), as :func:`segbench.annotation_ui.gold.gold_index`.
        qualified: the gate's pass list (None: not gated).
    """
    known = {item: {c: label for c, label in answer.items() if c != POLYGONS} for item, (answer, _) in gold.items()}
    workers = len({a.annotator for a in counted})
    left_out: dict[str, list[str]] = {}
    first: list[ItemAnswer] | None = None
    capped = False
    for passes in range(1, MAX_PASSES + 1):
        items = aggregate(counted, controls, method=DAWID_SKENE, exclude_workers=left_out, gold=known)
        first = first if first is not None else items
        report = score_workers(scored, items, gold, qualified=qualified, rules=rules)
        new = {s["worker"]: s["reasons"] for s in report["suspicious"] if s["worker"] not in left_out}
        capped = len(left_out) + len(new) > MAX_LEFT_OUT_SHARE * workers
        if not new or capped or passes == MAX_PASSES:
            break
        left_out.update(new)
    assert first is not None  # the loop ran at least once
    return Screened(items=_with_fallback(items, first), report=report, left_out=left_out, passes=passes,
                    capped=bool(new) and capped)


def aggregate_round(method: str, counted: Sequence[Answer], scored: Sequence[Answer], controls: Sequence[str],
                    gold: Mapping[str, tuple[Mapping[str, Any], tuple[int, int]]], *,
                    qualified: set[str] | None = None, rules: QualityRules = QualityRules()) -> Screened:
    """A round's aggregation by ``method`` with its worker report: :func:`screen` for ``screened``;
    for a plain method (majority, dawid-skene, glad), that method on the counted work answers
    (no gold, no one left out) and the report scored against it.

    Args: as :func:`screen` (``counted`` may hold gold answers: plain methods leave them out).
    """
    if method == SCREENED:
        return screen(counted, scored, controls, gold, qualified=qualified, rules=rules)
    items = aggregate([a for a in counted if a.item_id not in gold], controls, method=method)
    return Screened(items=items, report=score_workers(scored, items, gold, qualified=qualified, rules=rules),
                    left_out={}, passes=1)


def _with_fallback(items: Iterable[ItemAnswer], first: Iterable[ItemAnswer]) -> list[ItemAnswer]:
    """``items`` plus the first fit's answer for each item that only left-out workers answered."""
    out = {item.item_id: item for item in first}
    out.update({item.item_id: item for item in items})
    return [out[item_id] for item_id in sorted(out)]
