"""Screened aggregation, the default of new rounds: Dawid–Skene anchored on the gold answers, over
voters rather than accounts, with a worker report that screens every worker.

1. Find the blocs (:mod:`segbench.core.blocs`): accounts whose answers are identical wherever they
   meet, or that were worked through one after another (lockstep), count as one voter, whatever the
   aggregate says of them.
2. Fit Dawid–Skene on every counted answer, gold items included with their known labels fixed
   (crowd-kit's ``true_labels``: each voter's confusion matrix starts from, and stays anchored on,
   their gold answers). These are the labels, with two checks on the model: it overrules the
   voters' majority on an item only at a posterior of ``overrule_posterior`` or more, and only where
   the item has ``overrule_min_answers`` answers or more, a bloc's accounts each counted (at three
   answers per item an overrule is one voter's word against two, on confusion matrices fitted from
   some twenty answers each; a bloc's matrix is fitted on every item its accounts answered), and another
   model replaces it when the round's held-out gold says so (:mod:`segbench.core.model_choice`).
3. Score the workers against them (:func:`segbench.core.worker_quality.score_workers`); the
   suspicious workers are *left out* of what weighs no one: SPIN's masks (a medoid counts every
   polygon alike). The labels keep them: Dawid–Skene already weighs each voter by their confusion
   matrix (a random clicker's is flat and counts for nothing), and leaving workers out of it lost
   1 to 3 points of accuracy on every simulated crowd of ``bench/crowd.py`` (it cost the honest
   workers the rules flag by mistake: specialists, careful workers judged on few answers) and gained
   on none.

Never more than half of the round's voters are left out: when the rules flag more, they say more
about the round than about its workers (a SPIN part whose subparts are mostly absent makes every
careful worker "mark many parts absent"), so no one is left out and ``capped`` says so. A bloc is
left out when more than half of its accounts are. Pure: no files, no backend; the same answers give
the same result.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from segbench.core.aggregation import SCREENED
from segbench.core.agreement import Overrule, aggregate
from segbench.core.blocs import Bloc, Lockstep, as_one_voter, find_blocs, judgment_times, judgments
from segbench.core.model_choice import ModelChoice, choose_model
from segbench.core.worker_quality import POLYGONS, QualityRules, WorkerReport, score_workers
from segbench.schemas.rounds import Answer, ItemAnswer

MAX_LEFT_OUT_SHARE = 0.5


@dataclass(frozen=True)
class Screened:
    """The outcome of a screened aggregation.

    Attributes:
        items: the aggregated work items (gold items are not among them).
        report: the worker report (``score_workers``'s dictionary).
        left_out: worker → the reasons they are left out of SPIN's masks (the report's suspicious
            workers, unless capped).
        capped: the report flags so many workers that leaving them out would pass
            ``MAX_LEFT_OUT_SHARE`` of the round's voters; none is left out.
        blocs: accounts that answered as one and counted as one voter (:mod:`segbench.core.blocs`).
    """

    items: list[ItemAnswer]
    report: WorkerReport
    left_out: dict[str, list[str]]
    capped: bool = False
    blocs: tuple[Bloc, ...] = ()
    choice: ModelChoice | None = None


def screen(counted: Sequence[Answer], scored: Sequence[Answer], controls: Sequence[str],
           gold: Mapping[str, tuple[Mapping[str, Any], tuple[int, int]]], *, qualified: set[str] | None = None,
           rules: QualityRules = QualityRules()) -> Screened:
    """Aggregate ``counted`` with gold-anchored Dawid–Skene over voters (see the module docstring).

    Args:
        counted: the answers that count (work and gold items; a gated round's qualified workers only).
        scored: every answer of the round, for the worker report (gold and unqualified included).
        controls: the choice controls to aggregate.
        gold: gold item id → (known answer, (height, width)), as :func:`segbench.annotation_ui.gold.gold_index`.
        qualified: the gate's pass list (None: not gated).
    """
    known = {item: {c: label for c, label in answer.items() if c != POLYGONS} for item, (answer, _) in gold.items()}
    lockstep = Lockstep(rules.bloc_lockstep_seconds, rules.bloc_lockstep_share, rules.bloc_lockstep_agreement) \
        if rules.bloc_lockstep_seconds > 0 else None
    blocs = find_blocs(judgments(counted, controls), min_shared=rules.bloc_min_shared,
                       min_agreement=rules.bloc_min_agreement, min_size=rules.bloc_min_size,
                       times=judgment_times(counted, controls) if lockstep else None, lockstep=lockstep)
    votes = as_one_voter(counted, blocs, controls)
    accounts = Counter(item for item, _ in {(a.item_id, a.annotator) for a in counted})  # per item
    overrule = Overrule(rules.overrule_posterior, rules.overrule_min_answers, accounts)
    choice = choose_model(votes, controls, known, folds=rules.model_choice_folds, alpha=rules.model_choice_p,
                          overrule=overrule)
    items = aggregate(votes, controls, method=choice.method, gold=known, overrule=overrule)
    report = score_workers(scored, items, gold, qualified=qualified, rules=rules)
    flagged = {s["worker"]: s["reasons"] for s in report["suspicious"]}
    capped = len(_voters_out(flagged, blocs)) > MAX_LEFT_OUT_SHARE * len({a.annotator for a in votes})
    return Screened(items=items, report=report, left_out={} if capped else flagged, capped=capped,
                    blocs=tuple(blocs), choice=choice)


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
                    left_out={})


def _voters_out(left_out: Iterable[str], blocs: Sequence[Bloc]) -> set[str]:
    """The voters left out: workers in no bloc, and each bloc more than half of whose accounts are."""
    out = set(left_out)
    members = {m for bloc in blocs for m in bloc.members}
    voters = {w for w in out if w not in members}
    return voters | {b.voter for b in blocs if 2 * len(out & set(b.members)) > len(b.members)}
