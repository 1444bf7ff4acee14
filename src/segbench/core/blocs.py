"""Blocs: accounts that answer as one person, found without trusting the aggregate, and counted as one voter.

One person behind many accounts answers every task the same way, by one policy; honest people err
independently, so two of them differ now and then however careful they are. A bloc is therefore a
group of accounts in which every pair that shares enough judgments agreed on at least
``min_agreement`` of them (near-identical answer vectors), with at least ``min_size`` accounts. The
aggregate plays no part: a bloc holding the majority makes the aggregate follow it, so every test
against the aggregate (accuracy, κ, the collusion test of :mod:`segbench.core.worker_signals`) sees
its members as excellent.

The cost of a false bloc is small by design: its members are merged, not left out, so the accounts
of two careful honest workers who happened to agree everywhere still give their (shared) answer, as
one voter instead of two. The gain against a real bloc is that twelve accounts weigh as one.

Identical answers are not the only trace one person leaves: one who adds noise so that no two
accounts match still works through the accounts one after another, so their submissions of a task
fall moments apart (:class:`Lockstep`). Honest people's clocks are their own.

Pure functions: no files, no backend; the same answers give the same blocs.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TypedDict

from segbench.core.clock import parse_time
from segbench.core.worker_quality import latest_per_worker
from segbench.schemas.rounds import Answer

BLOC_PREFIX = "bloc:"


class BlocRow(TypedDict):
    """A bloc as the answers file and the worker report record it."""

    voter: str
    members: list[str]
    pairs: int
    shared: int
    agreed: int


@dataclass(frozen=True)
class Bloc:
    """Accounts that answer as one.

    Attributes:
        members: the accounts, sorted.
        pairs: member pairs that shared enough judgments to compare (all of them agreed enough).
        shared: judgments those pairs shared, summed.
        agreed: of those, the ones both members answered alike.
    """

    members: tuple[str, ...]
    pairs: int
    shared: int
    agreed: int

    @property
    def voter(self) -> str:
        """The one voter the members count as: ``bloc:<first member>``."""
        return BLOC_PREFIX + self.members[0]

    def row(self) -> BlocRow:
        return {"voter": self.voter, "members": list(self.members), "pairs": self.pairs, "shared": self.shared,
                "agreed": self.agreed}


Submission = tuple[dt.datetime, float]  # when an answer was submitted, and the seconds its work took


@dataclass(frozen=True)
class Lockstep:
    """The second test for a link: two accounts that one person works through submit the same task
    one after the other, however much noise they add to their answers. A shared judgment is in
    lockstep when the two submissions are at most ``seconds`` apart *and* the later one's work began
    after the earlier was submitted (one person does one task at a time; two people working side by
    side, as on a Label Studio queue that hands both the same task, overlap). A pair is linked when
    at least ``share`` of its shared judgments are in lockstep and it agreed on at least
    ``agreement`` of them."""

    seconds: float
    share: float
    agreement: float


def find_blocs(labels: Mapping[str, Mapping[str, str]], *, min_shared: int, min_agreement: float,
               min_size: int, times: Mapping[str, Mapping[str, Submission]] | None = None,
               lockstep: Lockstep | None = None) -> list[Bloc]:
    """The blocs among the workers (see the module docstring).

    Pairs that share at least ``min_shared`` judgments and agree on at least ``min_agreement`` of
    them are linked. Each connected group of linked workers is then peeled: while some compared pair
    in it is not linked, or some member is linked to fewer than ``min_size - 1`` of the others, the
    member with the smallest share of links among its compared pairs (then the fewest links, the
    most unlinked pairs, the name) leaves. What remains with ``min_size`` members or
    more is a bloc; a peeled member may still form a bloc of its own with others who left.

    With ``times`` and ``lockstep``, pairs that worked in lockstep (:class:`Lockstep`) are linked too.

    Args:
        labels: worker → judgment key (``item|control``) → the worker's label.
        times: worker → judgment key → when the worker submitted it and how long it took (keys
            without one never count as in lockstep).

    Returns:
        The blocs, largest first, then by their first member.
    """
    by_key: dict[str, list[str]] = defaultdict(list)  # who answered each judgment: pairs that never meet cost nothing
    for worker in sorted(labels):
        for key in labels[worker]:
            by_key[key].append(worker)
    tally: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0])  # shared, agreed, in lockstep
    when = times or {}
    window = lockstep.seconds if lockstep else -1.0
    for key, workers in by_key.items():
        for first, second in combinations(workers, 2):
            counted = tally[(first, second)]
            counted[0] += 1
            counted[1] += labels[first][key] == labels[second][key]
            a, b = when.get(first, {}).get(key), when.get(second, {}).get(key)
            counted[2] += a is not None and b is not None and _one_after_the_other(a, b, window)
    compared: dict[str, set[str]] = defaultdict(set)
    linked: dict[str, set[str]] = defaultdict(set)
    counts: dict[tuple[str, str], tuple[int, int]] = {}
    for (first, second), (shared, agreed, together) in sorted(tally.items()):
        if shared < min_shared:
            continue
        compared[first].add(second)
        compared[second].add(first)
        counts[(first, second)] = (shared, agreed)
        in_lockstep = lockstep is not None and together >= lockstep.share * shared \
            and agreed >= lockstep.agreement * shared
        if agreed >= min_agreement * shared or in_lockstep:
            linked[first].add(second)
            linked[second].add(first)
    blocs = []
    for group in _components(linked):
        for members in _peel(group, compared, linked, min_size):
            if len(members) >= min_size:
                pairs = [counts[pair] for pair in combinations(sorted(members), 2) if pair in counts]
                blocs.append(Bloc(tuple(sorted(members)), len(pairs), sum(n for n, _ in pairs),
                                  sum(a for _, a in pairs)))
    return sorted(blocs, key=lambda b: (-len(b.members), b.members))


def _one_after_the_other(a: Submission, b: Submission, window: float) -> bool:
    (earlier, _), (later, took) = sorted((a, b))
    # Submit times are given to the second (MTurk): a second's slack for the later work's start.
    return (later - earlier).total_seconds() <= window and later - dt.timedelta(seconds=took - 1) >= earlier


def _components(linked: Mapping[str, set[str]]) -> list[set[str]]:
    seen: set[str] = set()
    out = []
    for start in sorted(linked):
        if start in seen:
            continue
        group, stack = set(), [start]
        while stack:
            worker = stack.pop()
            if worker not in group:
                group.add(worker)
                stack.extend(linked[worker] - group)
        seen |= group
        out.append(group)
    return out


def _peel(group: set[str], compared: Mapping[str, set[str]], linked: Mapping[str, set[str]],
          min_size: int) -> list[set[str]]:
    """``group`` split into sets in which every compared pair is linked and every member is linked
    to at least ``min_size - 1`` others (a bloc is seen whole, not pieced together along a chain)."""
    out = []
    rest = set(group)
    while rest:
        core = set(rest)
        while True:
            unlinked = {w: (compared[w] & core) - linked[w] for w in core}
            lonely = {w for w in core if len(linked[w] & core) < min(min_size, len(core)) - 1}
            if not any(unlinked.values()) and not lonely:
                break
            worst = min(core, key=lambda w: (len(linked[w] & core) / max(len(compared[w] & core), 1),
                                             len(linked[w] & core), -len(unlinked[w]), w))
            core.discard(worst)
        out.append(core)
        rest -= core
        # What was peeled may hold a bloc of its own: keep only members still linked among themselves.
        rest = {w for w in rest if linked[w] & rest}
    return out


def judgments(answers: Sequence[Answer], controls: Sequence[str]) -> dict[str, dict[str, str]]:
    """worker → ``item|control`` → label, from each worker's single-label choices on ``controls``
    (a worker's latest answer to an item counts)."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for answer in latest_per_worker(answers):
        for control in controls:
            chosen = answer.choices.get(control)
            if chosen and len(chosen) == 1:
                out[answer.annotator][f"{answer.item_id}|{control}"] = chosen[0]
    return dict(out)


def judgment_times(answers: Sequence[Answer], controls: Sequence[str]) -> dict[str, dict[str, Submission]]:
    """worker → ``item|control`` → when the worker's latest answer to the item was submitted and the
    seconds it took, for the judgments of :func:`judgments` (answers without both are left out)."""
    out: dict[str, dict[str, Submission]] = defaultdict(dict)
    for answer in latest_per_worker(answers):
        when = parse_time(answer.updated_at) if answer.updated_at else None
        for control in controls:
            chosen = answer.choices.get(control)
            if when is not None and answer.seconds is not None and chosen and len(chosen) == 1:
                out[answer.annotator][f"{answer.item_id}|{control}"] = (when, answer.seconds)
    return dict(out)


def as_one_voter(answers: Sequence[Answer], blocs: Sequence[Bloc], controls: Sequence[str]) -> list[Answer]:
    """``answers`` with each bloc's answers to an item replaced by one answer of the bloc's voter:
    of the members' latest answers, the one most of them gave alike on ``controls`` (ties: the
    first member's). Other answers are kept as they are."""
    voter = {member: bloc.voter for bloc in blocs for member in bloc.members}
    if not voter:
        return list(answers)
    out = [answer for answer in answers if answer.annotator not in voter]
    by_item: dict[tuple[str, str], list[Answer]] = defaultdict(list)
    for answer in latest_per_worker(a for a in answers if a.annotator in voter):
        by_item[(answer.item_id, voter[answer.annotator])].append(answer)
    for (_, name), given in sorted(by_item.items()):
        shapes = Counter(_shape(a, controls) for a in given)
        chosen = min(given, key=lambda a: (-shapes[_shape(a, controls)], a.annotator))
        out.append(chosen.model_copy(update={"annotator": name}))
    return out


def _shape(answer: Answer, controls: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(answer.choices.get(control, ())) for control in controls)
