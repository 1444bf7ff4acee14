"""Screened aggregation, the default of new rounds: Dawid–Skene anchored on the gold answers, fitted
again without the workers the worker report flags.

0. Find the blocs (:mod:`segbench.core.blocs`): accounts whose answers are near-identical wherever
   they meet count as one voter from here on, whatever the aggregate says of them.
1. Fit Dawid–Skene on every counted answer, gold items included with their known labels fixed
   (crowd-kit's ``true_labels``: each worker's confusion matrix starts from, and stays anchored on,
   their gold answers).
2. Score the workers against that aggregate (:func:`segbench.core.worker_quality.score_workers`).
3. Leave out the flagged workers and fit again; repeat while the new fit flags someone new (at most
   ``MAX_PASSES`` fits). A worker once left out stays out, with the reasons of the pass that
   flagged them. A bloc's voter is left out with more than half of its accounts.

Never more than half of the round's voters are left out: when the rules flag more, they say more
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
from segbench.core.blocs import Bloc, as_one_voter, find_blocs, judgments
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
        blocs: accounts that answered as one and counted as one voter (:mod:`segbench.core.blocs`).
    """

    items: list[ItemAnswer]
    report: WorkerReport
    left_out: dict[str, list[str]]
    passes: int
    capped: bool = False
    blocs: tuple[Bloc, ...] = ()


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
    blocs = find_blocs(judgments(counted, controls), min_shared=rules.bloc_min_shared,
                       min_agreement=rules.bloc_min_agreement, min_size=rules.bloc_min_size)
    votes = as_one_voter(counted, blocs, controls)
    voters = len({a.annotator for a in votes})
    left_out: dict[str, list[str]] = {}
    first: list[ItemAnswer] | None = None
    capped = False
    for passes in range(1, MAX_PASSES + 1):
        items = aggregate(votes, controls, method=DAWID_SKENE, gold=known,
                          exclude_workers=_voters_out(left_out, blocs))
        first = first if first is not None else items
        report = score_workers(scored, items, gold, qualified=qualified, rules=rules)
        new = {s["worker"]: s["reasons"] for s in report["suspicious"] if s["worker"] not in left_out}
        capped = len(_voters_out({**left_out, **new}, blocs)) > MAX_LEFT_OUT_SHARE * voters
        if not new or capped or passes == MAX_PASSES:
            break
        left_out.update(new)
    assert first is not None  # the loop ran at least once
    return Screened(items=_with_fallback(items, first), report=report, left_out=left_out, passes=passes,
                    capped=bool(new) and capped, blocs=tuple(blocs))


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


def _voters_out(left_out: Iterable[str], blocs: Sequence[Bloc]) -> set[str]:
    """The voters left out: workers in no bloc, and each bloc more than half of whose accounts are."""
    out = set(left_out)
    members = {m for bloc in blocs for m in bloc.members}
    voters = {w for w in out if w not in members}
    return voters | {b.voter for b in blocs if 2 * len(out & set(b.members)) > len(b.members)}


def _with_fallback(items: Iterable[ItemAnswer], first: Iterable[ItemAnswer]) -> list[ItemAnswer]:
    """``items`` plus the first fit's answer for each item that only left-out workers answered."""
    out = {item.item_id: item for item in first}
    out.update({item.item_id: item for item in items})
    return [out[item_id] for item_id in sorted(out)]
