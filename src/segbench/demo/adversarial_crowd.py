"""An adversarial simulated crowd for the files backend: it reads only the task rows of ``tasks.csv``
and returns an MTurk-style results file, as an external crowd would.

Spammers, cycled through ``CrowdMix.spammer_kinds`` (default :data:`SPAMMER_KINDS`):

* ``ring``: colluders who share one answer sheet (a random label per task, the same for every member);
* ``same``: one label for everything (the most common true label, so gold that mirrors the
  imbalance would pass them);
* ``random``: uniform clicks;
* ``spotter``: tries to spot the gold from the task order (rows that break an ascending run of task
  ids, which finds gold inserted into sorted work) and answers those with care, the rest at random;

and, when ``CrowdMix.spammer_kinds`` asks for them:

* ``camouflaged``: careful (as a plain honest worker) on their first ``camouflage_tasks`` tasks, then
  random clicks;
* ``herder``: gives the label most of the task's earlier answers gave (a random one when none did).

Sybils (``CrowdMix.sybils`` accounts, one person behind them all): on ``sybil_reach`` of the tasks
the person takes ``sybil_seats`` of the seats and answers each with one plausible policy, the same
for every account: a label that is the true one on clear scenes and wrong on the tasks the caller
marks as traps (``policy``: "outdoor whenever sky is visible" on indoor rooms with windows). Gold
drawn from clear scenes cannot tell that policy from the truth. With ``sybil_noise`` each account
answers at random that share of the time, so that no two accounts' answers are identical.

Honest workers, cycled through ``CrowdMix.honest_kinds`` (default :data:`HONEST_KINDS`): ``plain``
(right with a probability drawn from ``accuracy``), ``biased`` (as plain on the majority label, less
accurate on the others: they lean to the majority), ``drifting`` (accuracy falling from the top of
``accuracy`` to ``drift_floor`` over their tasks, in task order) and, when asked for, ``specialist``
(as plain on the items of one true label, the true labels in turn from worker to worker, and
guessing uniformly on the others).

Every task gets ``overlap`` distinct workers. Each person works at their own pace from a start
drawn within the round's first four hours, doing their tasks in the order of the task file (a work
time, then a pause); ``SubmitTime`` is their clock. A task's workers answer in the order their
clocks reach it (a herder copies the answers before theirs). The Sybil accounts share one person's
clock, so they answer a task one after another. Work times are drawn alike for everyone. Everything
is seeded.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

OPENS = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)
START_SPREAD_S = 4 * 3600  # workers start within the round's first four hours
PAUSE_S = 20  # the mean pause between two tasks of one person

SPAMMER_KINDS = ("ring", "same", "random", "spotter")
ADVERSARIES = (*SPAMMER_KINDS, "camouflaged", "herder", "sybil")
HONEST_KINDS = ("plain", "plain", "biased", "plain", "drifting", "biased")


@dataclass(frozen=True)
class CrowdMix:
    """Who is in the crowd and how they work."""

    workers: int = 30
    spammers: float = 0.4
    overlap: int = 7
    accuracy: tuple[float, float] = (0.85, 0.97)
    biased_minority_accuracy: float = 0.75
    drift_floor: float = 0.7
    honest_kinds: tuple[str, ...] = HONEST_KINDS
    spammer_kinds: tuple[str, ...] = SPAMMER_KINDS
    camouflage_tasks: int = 15
    sybils: int = 0
    sybil_seats: int = 4
    sybil_reach: float = 2 / 3
    sybil_noise: float = 0.0


@dataclass(frozen=True)
class Worker:
    name: str
    kind: str
    accuracy: float
    speciality: int = 0  # a specialist knows the speciality-th true label (specialists take them in turn)

    @property
    def spammer(self) -> bool:
        return self.kind in ADVERSARIES


def crowd(mix: CrowdMix, seed: int) -> list[Worker]:
    """The workers: Sybil accounts first, then spammers (a ``spammers`` share of the others), then honest."""
    rng = random.Random(f"crowd:{seed}")
    spammers = mix.sybils + round(mix.spammers * (mix.workers - mix.sybils))
    out: list[Worker] = []
    for n in range(mix.workers):
        kinds = mix.honest_kinds
        if n < mix.sybils:
            kind = "sybil"
        else:
            spam = mix.spammer_kinds
            kind = spam[n % len(spam)] if n < spammers else kinds[(n - spammers) % len(kinds)]
        out.append(Worker(f"A{rng.getrandbits(40):010X}", kind, rng.uniform(*mix.accuracy),
                          sum(w.kind == "specialist" for w in out)))
    return out


def answer_rows(tasks: Sequence[Mapping[str, Any]], truth: Mapping[str, str], labels: Sequence[str], *,
                control: str, mix: CrowdMix, seed: int,
                policy: Mapping[str, str] | None = None) -> tuple[list[dict[str, Any]], list[Worker]]:
    """The crowd's results rows for ``tasks`` (rows of ``tasks.csv``, in file order).

    Args:
        truth: task id → true label (the simulation's, never read by the spammers).
        labels: the labels a worker may give.
        policy: task id → the Sybils' answer (default: the truth).

    Returns:
        (results rows with ``WorkerId``, ``AssignmentId``, ``Input.item_id``, ``Answer.<control>``,
        ``SubmitTime``, ``WorkTimeInSeconds``; the workers).
    """
    rng = random.Random(f"answers:{seed}")
    workers = crowd(mix, seed)
    order = [str(t["item_id"]) for t in tasks]
    common = max(sorted(labels), key=lambda label: sum(v == label for v in truth.values()))
    known = sorted(set(truth.values()))  # the labels that are ever true
    sheet = {task: rng.choice(labels) for task in order}
    suspected = suspected_gold(order)
    sybils = [w for w in workers if w.kind == "sybil"]
    others = [w for w in workers if w.kind != "sybil"]
    assigned = {task: _seats(sybils, others, mix, rng) for task in order}
    done: dict[str, int] = {w.name: 0 for w in workers}
    loads = {w.name: sum(w in who for who in assigned.values()) for w in workers}
    # Who sits at the keyboard: one person behind every Sybil account, so they share one clock.
    person = {w.name: "sybil" if w.kind == "sybil" else w.name for w in workers}
    clock = {who: rng.uniform(0, START_SPREAD_S) for who in sorted(set(person.values()))}
    rows = []
    for position, task in enumerate(order):
        given: list[str] = []
        for worker in sorted(assigned[task], key=lambda w: (clock[person[w.name]], w.name)):
            if worker.kind == "sybil":  # the policy's answer, or now and then another, so no two accounts match
                label = rng.choice(labels) if rng.random() < mix.sybil_noise else (policy or truth)[task]
            elif worker.kind == "herder":
                label = _herd(given, labels, rng)
            else:
                careful = worker.kind != "camouflaged" or done[worker.name] < mix.camouflage_tasks
                label = _answer(worker if careful else Worker(worker.name, "random", 0.0), truth[task], labels,
                                known, common, sheet[task], task in suspected,
                                done[worker.name] / max(loads[worker.name] - 1, 1), mix, rng)
            given.append(label)
            done[worker.name] += 1
            seconds = round(rng.lognormvariate(2.5, 0.4), 1)
            clock[person[worker.name]] += seconds + rng.expovariate(1 / PAUSE_S)
            submitted = OPENS + dt.timedelta(seconds=round(clock[person[worker.name]]))
            rows.append({"WorkerId": worker.name, "AssignmentId": f"{worker.name}-{position:05d}",
                         "Input.item_id": task, f"Answer.{control}": label,
                         "SubmitTime": submitted.isoformat(), "WorkTimeInSeconds": seconds})
    return rows, workers


def _seats(sybils: Sequence[Worker], others: Sequence[Worker], mix: CrowdMix, rng: random.Random) -> list[Worker]:
    """A task's workers: the Sybils take their seats on ``sybil_reach`` of the tasks."""
    if sybils and rng.random() < mix.sybil_reach:
        seats = min(mix.sybil_seats, len(sybils), mix.overlap)
        return rng.sample(list(sybils), seats) + rng.sample(list(others), mix.overlap - seats)
    return rng.sample(list(others), mix.overlap)


def _herd(given: Sequence[str], labels: Sequence[str], rng: random.Random) -> str:
    if not given:
        return rng.choice(labels)
    counts = {label: given.count(label) for label in labels}
    return max(sorted(labels), key=lambda label: counts[label])


def _answer(worker: Worker, true: str, labels: Sequence[str], known: Sequence[str], common: str, sheet: str,
            looks_gold: bool, progress: float, mix: CrowdMix, rng: random.Random) -> str:
    if worker.kind == "ring":
        return sheet
    if worker.kind == "same":
        return common
    if worker.kind == "random" or (worker.kind == "spotter" and not looks_gold):
        return rng.choice(labels)
    if worker.kind == "specialist" and true != known[worker.speciality % len(known)]:
        return rng.choice(labels)  # outside their speciality they guess
    accuracy = worker.accuracy
    if worker.kind == "spotter":
        accuracy = 1.0
    elif worker.kind == "biased" and true != common:
        accuracy = mix.biased_minority_accuracy
    elif worker.kind == "drifting":
        accuracy = mix.accuracy[1] - (mix.accuracy[1] - mix.drift_floor) * progress
    if rng.random() < accuracy:
        return true
    return common if worker.kind == "biased" and true != common else rng.choice([v for v in labels if v != true])


def suspected_gold(order: Sequence[str]) -> set[str]:
    """Tasks that break an ascending run of ids: where gold inserted into sorted work would show."""
    out = set()
    for before, task, after in zip(order, order[1:], order[2:], strict=False):
        if _key(before) < _key(after) and not _key(before) < _key(task) < _key(after):
            out.add(task)
    return out


def _key(task: str) -> tuple[int, str]:
    return (int(task), "") if task.isdigit() else (0, task)
