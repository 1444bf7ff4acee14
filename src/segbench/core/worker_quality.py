"""How well each worker of a round did: gold accuracy, agreement with the aggregate, time per task and
the SPIN paper's signals of careless work (seed 001, Sec. 9.2), ending in a list of suspicious workers.

Pure functions over :class:`~segbench.schemas.rounds.Answer` records: no files, no backend. Writing
the report belongs to :mod:`segbench.annotation_ui.worker_report`.

Rules (:class:`QualityRules`, defaults shown; a round can set any of them), each a reason to call a
worker suspicious. A *judgment* is one (item, choice control) pair; its reference is the known label
on a gold item and the aggregated label on a work item (see :mod:`segbench.core.worker_signals`):

* low gold accuracy: over at least 5 gold judgments, the upper end of the 80% Wilson interval of
  the gold accuracy is below 0.7 (a gold judgment is one (gold item, choice control) pair, right when
  the worker's label equals the known one, or one reference polygon label, right when the worker's
  polygons of that label reach IoU 0.5 with the reference, see :func:`polygon_iou`); a worker with
  fewer gold judgments is *too sparse to judge* on gold: reported as such, never passed;
* agreement with the aggregate below 0.5, over at least 5 judgments (work items whose aggregate is
  defined);
* chance-level agreement: Cohen's κ with the reference below 0.4, over at least 10 judgments (random
  clickers, one-label workers and copied random sheets all sit near 0; honest workers of the
  simulated adversarial crowd stay above it, ``bench/crowd.py``); per control, on controls whose
  references are not (nearly) all one label (:func:`~segbench.core.worker_signals.kappa_with_reference`);
* one label for nearly everything: the total variation distance between the worker's labels and the
  references on the same judgments above 0.25, over at least 20 judgments;
* collusion: with another worker, on at least 8 shared judgments, agreement far beyond what each
  one's own confusion predicts (binomial p < 0.001; :func:`~segbench.core.worker_signals.pair_agreements`);
* falling accuracy: between the first and second half of the worker's judgments in answer order,
  accuracy falls by more than 0.3 with a one-sided Fisher p < 0.01 (at least 10 judgments);
* many parts marked absent: more than 75% of the worker's ``has_*`` answers are "no", over at least
  5 of them;
* missing segmentations: more than half of the worker's ``has_<subpart>`` "yes" answers come without
  a polygon of that subpart, over at least 5 of them;
* outlying task time: the robust z-score of the worker's median seconds per task among the round's
  workers (0.6745 · (x − median) / MAD, Iglewicz and Hoaglin) beyond ±3.5; undefined (never raised)
  with fewer than 3 timed workers or a MAD of 0;
* not qualified: the round is gated by a qualification round and the worker is not on its pass list.

Specialists are kept: a worker with a label that carries evidence of its class (said at least 5
times, right at least 85% of the time, and said where it is the reference far more than where it is
not: one-sided Fisher p < 0.01; :func:`~segbench.core.worker_signals.informative_labels`) is
informative on that class, so
the four accuracy rules above (low gold accuracy, low agreement, chance agreement, one label for
nearly everything) are not raised against them; the report lists the labels under
``flags.informative_on``. The other rules still apply.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypedDict

import numpy as np
from pycocotools import mask as mask_utils

from segbench.core import clock
from segbench.core.worker_signals import (
    Drop,
    accuracy_drop,
    gold_interval,
    informative_labels,
    kappa_with_reference,
    label_distance,
    pair_agreements,
)
from segbench.schemas.rounds import Answer, ItemAnswer, Polygon, slugify

POLYGONS = "polygons"  # the gold key (and answer control) of reference polygons
PRESENCE_PREFIX = "has_"


@dataclass(frozen=True)
class QualityRules:
    """The thresholds of the worker report (see the module docstring); a round may override any."""

    min_gold_accuracy: float = 0.7
    gold_confidence: float = 0.8
    min_gold_answers: int = 5
    gold_iou: float = 0.5
    min_agreement: float = 0.5
    min_judgments: int = 5
    min_kappa: float = 0.4
    min_kappa_judgments: int = 10
    max_label_distance: float = 0.25
    min_label_judgments: int = 20
    collusion_p: float = 0.001
    min_shared_judgments: int = 8
    max_accuracy_drop: float = 0.3
    accuracy_drop_p: float = 0.01
    min_drop_judgments: int = 10
    max_absent_rate: float = 0.75
    max_missing_rate: float = 0.5
    max_time_z: float = 3.5
    specialist_min_said: int = 5
    specialist_precision: float = 0.85
    specialist_p: float = 0.01
    bloc_min_shared: int = 8
    bloc_min_agreement: float = 1.0
    bloc_min_size: int = 3
    bloc_lockstep_seconds: float = 180.0
    bloc_lockstep_share: float = 0.8
    bloc_lockstep_agreement: float = 0.7
    model_choice_folds: int = 2
    model_choice_p: float = 0.05
    overrule_posterior: float = 0.8
    overrule_min_answers: int = 4

    @classmethod
    def with_overrides(cls, overrides: Mapping[str, float] | None) -> QualityRules:
        """The default rules with ``overrides`` (rule name → value) applied.

        Raises:
            ValueError: an unknown rule name (the message lists them) or a value of the wrong kind.
        """
        names = {f.name: f.type for f in fields(cls)}
        values: dict[str, Any] = {}
        for name, value in (overrides or {}).items():
            if name not in names:
                raise ValueError(f"unknown quality rule {name!r}; rules: {', '.join(names)}")
            values[name] = int(value) if names[name] == "int" and float(value).is_integer() else float(value)
            if names[name] == "int" and not isinstance(values[name], int):
                raise ValueError(f"quality rule {name} is a count; got {value!r}")
        return cls(**values)


def category(labels: Sequence[str]) -> str:
    """Several labels count as one category, sorted and joined by ``|`` (as aggregation counts them)."""
    return "|".join(sorted(labels))


def latest_per_worker(answers: Iterable[Answer]) -> list[Answer]:
    """One answer per (item, worker): the latest ``updated_at``, then the largest source id."""
    best: dict[tuple[str, str], Answer] = {}
    for answer in sorted(answers, key=lambda a: (clock.time_order(a.updated_at), a.source_id)):
        best[(answer.item_id, answer.annotator)] = answer
    return [best[k] for k in sorted(best)]


def polygon_iou(drawn: Sequence[Polygon], reference: Sequence[Polygon], height: int, width: int) -> float:
    """IoU of the union of ``drawn`` with the union of ``reference`` (pixels, pycocotools rasterising).

    Polygons with fewer than 3 points cover nothing. Both empty: 1.0 (nothing to draw, nothing drawn).
    """
    a, b = _union(drawn, height, width), _union(reference, height, width)
    union = int(np.logical_or(a, b).sum())
    return 1.0 if union == 0 else float(np.logical_and(a, b).sum()) / union


def _union(polygons: Sequence[Polygon], height: int, width: int) -> np.ndarray:
    flat = [[float(v) for point in p.points for v in point] for p in polygons if len(p.points) >= 3]
    if not flat:
        return np.zeros((height, width), dtype=bool)
    rle = mask_utils.merge(mask_utils.frPyObjects(flat, height, width))
    return mask_utils.decode(rle).astype(bool)


def gold_judgments(answer: Answer, gold: Mapping[str, Any], size: tuple[int, int], rules: QualityRules) -> list[bool]:
    """Right or wrong, per judgment of one answer on a gold item (``size`` is its (height, width))."""
    out = []
    for control, known in sorted(gold.items()):
        if control == POLYGONS:
            references: dict[str, list[Polygon]] = defaultdict(list)
            for polygon in known:
                references[polygon["label"]].append(Polygon.model_validate(polygon))
            drawn = answer.polygons.get(POLYGONS, [])
            for label, reference in sorted(references.items()):
                mine = [p for p in drawn if p.label == label]
                out.append(polygon_iou(mine, reference, *size) >= rules.gold_iou)
        else:
            expected = category(known) if isinstance(known, list) else str(known)
            out.append(category(answer.choices.get(control, [])) == expected)
    return out


def robust_z(values: Mapping[str, float]) -> dict[str, float | None]:
    """Modified z-score of each value (0.6745 · (x − median) / MAD); None when it is undefined."""
    from scipy.stats import median_abs_deviation  # scipy.stats takes 0.5 s to import: only when scoring

    if len(values) < 3:
        return {key: None for key in values}
    data = np.array(list(values.values()), dtype=float)
    mad = float(median_abs_deviation(data))
    if mad == 0:
        return {key: None for key in values}
    centre = float(np.median(data))
    return {key: round(0.6745 * (value - centre) / mad, 4) for key, value in values.items()}


def presence_signals(answers: Sequence[Answer]) -> tuple[int, int, int, int]:
    """(``has_*`` answers, of them "no", "yes" answers, of them without a polygon of that subpart)."""
    asked = absent = said_yes = missing = 0
    for answer in answers:
        drawn = {slugify(p.label) for shapes in answer.polygons.values() for p in shapes}
        for control, labels in answer.choices.items():
            if not control.startswith(PRESENCE_PREFIX) or not labels:
                continue
            asked += 1
            absent += labels == ["no"]
            if labels == ["yes"]:
                said_yes += 1
                missing += control[len(PRESENCE_PREFIX):] not in drawn
    return asked, absent, said_yes, missing


class WorkerFlags(TypedDict):
    absent_rate: float | None
    missing_segmentation_rate: float | None
    time_z: float | None
    qualified: bool | None
    colluding_with: list[str]
    informative_on: list[str]  # labels right far above their base rate: a specialist is not judged on accuracy
    raised: list[str]


class WorkerRow(TypedDict):
    """One worker of the worker report (see :func:`score_workers`)."""

    worker: str
    answers: int
    gold_answers: int
    gold_accuracy: float | None
    gold_interval: tuple[float, float] | None
    agreement_judgments: int
    agreement_with_aggregate: float | None
    undecided_judgments: int
    judgments: int
    kappa: float | None
    label_distance: float | None
    accuracy_early_late: list[float] | None
    median_seconds: float | None
    flags: WorkerFlags


class SuspiciousWorker(TypedDict):
    worker: str
    reasons: list[str]


class ColludingPair(TypedDict):
    workers: list[str]
    shared: int
    agreed: int
    expected: float
    p_value: float


class WorkerReport(TypedDict):
    """The worker report of a round (``<key>.workers.json``)."""

    workers: list[WorkerRow]
    suspicious: list[SuspiciousWorker]
    too_sparse: list[str]
    colluding_pairs: list[ColludingPair]
    rules: dict[str, float]


def score_workers(
    answers: Iterable[Answer],
    items: Sequence[ItemAnswer],
    gold: Mapping[str, tuple[Mapping[str, Any], tuple[int, int]]],
    *,
    qualified: set[str] | None = None,
    rules: QualityRules = QualityRules(),
) -> WorkerReport:
    """The worker report of a round: one row per worker and the suspicious workers with their reasons.

    Args:
        answers: every answer of the round (gold items included, unqualified workers included).
        items: the aggregated answers of the work items.
        gold: gold item id → (known answer, (height, width) of its image).
        qualified: the pass list of the qualification round gating this round (None: not gated).

    Returns:
        ``{"workers": [...], "suspicious": [{"worker", "reasons"}], "too_sparse": [...],
        "colluding_pairs": [...], "rules": {...}}``, workers sorted. ``too_sparse`` lists the
        workers with too few gold judgments to judge on gold.
    """
    latest = latest_per_worker(answers)
    majority = {i.item_id: i.majority for i in items}
    by_worker: dict[str, list[Answer]] = defaultdict(list)
    for answer in latest:
        by_worker[answer.annotator].append(answer)
    medians = {w: statistics.median(s) for w, mine in by_worker.items()
               if (s := [a.seconds for a in mine if a.seconds is not None])}
    time_z = robust_z(medians)
    reference = _references(majority, gold)
    timelines = {w: _timeline(mine, reference) for w, mine in by_worker.items()}
    pairs = [p for p in pair_agreements({w: dict(t) for w, t in timelines.items()}, reference,
                                        rules.min_shared_judgments) if p.p_value < rules.collusion_p]
    colluders: dict[str, list[str]] = defaultdict(list)
    for pair in pairs:
        colluders[pair.workers[0]].append(pair.workers[1])
        colluders[pair.workers[1]].append(pair.workers[0])
    workers: list[WorkerRow] = []
    suspicious: list[SuspiciousWorker] = []
    for worker, mine in sorted(by_worker.items()):
        right = [ok for a in mine if a.item_id in gold for ok in gold_judgments(a, *gold[a.item_id], rules)]
        judged_items = [(majority[a.item_id].get(control), labels) for a in mine if a.item_id in majority
                        for control, labels in a.choices.items() if labels]
        # An item whose aggregate is a tie decides nothing: it is counted apart, not as agreement.
        agree = [category(labels) == decided for decided, labels in judged_items if decided is not None]
        judged = [(mine_label, reference[key]) for key, mine_label in timelines[worker]]
        drop = accuracy_drop([m == r for m, r in judged])
        asked, absent, said_yes, missing = presence_signals(mine)
        row: WorkerRow = {"worker": worker, "answers": len(mine), "gold_answers": len(right),
               "gold_accuracy": _share(sum(right), len(right)),
               "gold_interval": gold_interval(sum(right), len(right), rules.gold_confidence),
               "agreement_judgments": len(agree), "agreement_with_aggregate": _share(sum(agree), len(agree)),
               "undecided_judgments": len(judged_items) - len(agree),
               "judgments": len(judged), "kappa": _rounded(kappa_with_reference(judged)),
               "label_distance": label_distance(judged),
               "accuracy_early_late": None if drop is None else [drop.early, drop.late],
               "median_seconds": None if worker not in medians else round(medians[worker], 4),
               "flags": {"absent_rate": _share(absent, asked), "missing_segmentation_rate": _share(missing, said_yes),
                         "time_z": time_z.get(worker), "qualified": None if qualified is None else worker in qualified,
                         "colluding_with": sorted(colluders.get(worker, [])),
                         "informative_on": informative_labels(judged, min_said=rules.specialist_min_said,
                                                              min_precision=rules.specialist_precision,
                                                              max_p=rules.specialist_p),
                         "raised": []}}
        reasons = _reasons(row, asked, said_yes, drop, rules)
        row["flags"]["raised"] = [name for name, _ in reasons]
        workers.append(row)
        if reasons:
            suspicious.append({"worker": worker, "reasons": [text for _, text in reasons]})
    sparse = [w["worker"] for w in workers if w["gold_answers"] < rules.min_gold_answers] if gold else []
    return {"workers": workers, "suspicious": suspicious, "too_sparse": sparse,
            "colluding_pairs": [{"workers": list(p.workers), "shared": p.shared, "agreed": p.agreed,
                                 "expected": p.expected, "p_value": float(f"{p.p_value:.3g}")} for p in pairs],
            "rules": rules.__dict__.copy()}


def _references(majority: Mapping[str, Mapping[str, str | None]],
                gold: Mapping[str, tuple[Mapping[str, Any], tuple[int, int]]]) -> dict[str, str]:
    """Judgment key (``item|control``) → reference label (``control=label``): known on gold, else aggregated."""
    out = {f"{item}|{control}": f"{control}={label}" for item, by_control in majority.items()
           for control, label in by_control.items() if label is not None}
    for item, (known, _) in gold.items():
        for control, label in known.items():
            if control != POLYGONS:
                out[f"{item}|{control}"] = f"{control}={category(label) if isinstance(label, list) else label}"
    return out


def _timeline(mine: Sequence[Answer], reference: Mapping[str, str]) -> list[tuple[str, str]]:
    """The worker's judgments that have a reference, as (key, ``control=label``), in answer order."""
    ordered = sorted(mine, key=lambda a: (clock.time_order(a.updated_at), a.source_id))
    return [(key, f"{control}={category(labels)}") for a in ordered for control, labels in sorted(a.choices.items())
            if labels and (key := f"{a.item_id}|{control}") in reference]


# The rules about how often a worker is right: a specialist, right far above chance on one class and
# guessing on the others, is useful to a per-class confusion model and is not judged by them.
ACCURACY_RULES = frozenset({"low_gold_accuracy", "low_agreement", "chance_agreement", "one_sided_labels"})


def _reasons(row: WorkerRow, asked: int, said_yes: int, drop: Drop | None,
             rules: QualityRules) -> list[tuple[str, str]]:
    reasons = _all_reasons(row, asked, said_yes, drop, rules)
    if row["flags"]["informative_on"]:
        return [(name, text) for name, text in reasons if name not in ACCURACY_RULES]
    return reasons


def _all_reasons(row: WorkerRow, asked: int, said_yes: int, drop: Drop | None,
                 rules: QualityRules) -> list[tuple[str, str]]:
    flags, out = row["flags"], []
    interval = row["gold_interval"]
    if interval is not None and row["gold_answers"] >= rules.min_gold_answers and interval[1] < rules.min_gold_accuracy:
        out.append(("low_gold_accuracy", f"gold accuracy {row['gold_accuracy']:.2f} over {row['gold_answers']} "
                                         f"gold judgments: {rules.gold_confidence:.0%} interval up to {interval[1]:.2f} "
                                         f"< {rules.min_gold_accuracy:.2f}"))
    agreement = row["agreement_with_aggregate"]
    if agreement is not None and row["agreement_judgments"] >= rules.min_judgments and agreement < rules.min_agreement:
        out.append(("low_agreement", f"agreement with the aggregate {agreement:.2f} < {rules.min_agreement:.2f} "
                                     f"over {row['agreement_judgments']} judgments"))
    kappa, judged = row["kappa"], row["judgments"]
    if judged >= rules.min_kappa_judgments and kappa is not None and kappa < rules.min_kappa:
        out.append(("chance_agreement", f"Cohen's κ with the reference {kappa:.2f} < {rules.min_kappa:.2f} "
                                        f"over {judged} judgments"))
    distance = row["label_distance"]
    if judged >= rules.min_label_judgments and distance is not None and distance > rules.max_label_distance:
        out.append(("one_sided_labels", f"label shares {distance:.2f} from the references' (total variation) "
                                        f"> {rules.max_label_distance:.2f} over {judged} judgments"))
    if flags["colluding_with"]:
        out.append(("collusion", f"agrees far beyond chance (p < {rules.collusion_p:g}) with "
                                 f"{', '.join(flags['colluding_with'])}"))
    if (drop is not None and judged >= rules.min_drop_judgments and drop.early - drop.late > rules.max_accuracy_drop
            and drop.p_value < rules.accuracy_drop_p):
        out.append(("falling_accuracy", f"accuracy fell from {drop.early:.2f} to {drop.late:.2f} between the first "
                                        f"and second half of the round (Fisher p {drop.p_value:.3f})"))
    absent, missing = flags["absent_rate"], flags["missing_segmentation_rate"]  # None when nothing was asked
    if asked >= rules.min_judgments and absent is not None and absent > rules.max_absent_rate:
        out.append(("many_absent", f"marked {absent:.0%} of {asked} parts absent "
                                   f"(> {rules.max_absent_rate:.0%})"))
    if said_yes >= rules.min_judgments and missing is not None and missing > rules.max_missing_rate:
        out.append(("missing_segmentations", f"no polygon for {missing:.0%} of {said_yes} "
                                             f"parts marked present (> {rules.max_missing_rate:.0%})"))
    z = flags["time_z"]
    if z is not None and abs(z) > rules.max_time_z:
        out.append(("outlying_time", f"median {row['median_seconds']:.1f} s per task, robust z {z:+.1f} "
                                     f"(|z| > {rules.max_time_z})"))
    if flags["qualified"] is False:
        out.append(("not_qualified", "not on the qualification pass list: answers recorded, not counted"))
    return out


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _share(part: int, whole: int) -> float | None:
    return None if whole == 0 else round(part / whole, 4)


def passed(report: Mapping[str, Any], threshold: float) -> list[dict[str, Any]]:
    """The workers of a qualification round's report whose gold accuracy reaches ``threshold`` over
    at least the rules' ``min_gold_answers`` gold judgments (a worker too sparse to judge never passes)."""
    least = report["rules"]["min_gold_answers"]
    return [{"worker": w["worker"], "gold_accuracy": w["gold_accuracy"], "gold_answers": w["gold_answers"]}
            for w in report["workers"]
            if w["gold_accuracy"] is not None and w["gold_accuracy"] >= threshold and w["gold_answers"] >= least]
