"""Follow-up rounds: ask again about the items of an ingested round whose answers are not good enough,
and merge the answers of the linked rounds.

A follow-up is a round of the same kind, label config and backend whose record names the round it
follows (``Round.follow_up_of``). Rounds linked that way form a chain, root → … → follow-up; a round
has at most one follow-up, so the chain has one end. Ingesting a follow-up merges every answer of
the chain, keyed by the backend's answer id as any ingest is, so no answer counts twice and a
re-ingest converges; its answers file then holds the merged answers and, per item, ``decided_by``:
the last round of the chain whose own answers took part in the item's result.

Downstream readers (``build cafe --round``, ``spin import``) read :func:`final_key`: the deepest
ingested round of the chain below the key they are given, whose answers file is the merged result.

Which items a follow-up asks about is a list of conditions (``--where``), any of which selects an
item: see :data:`CONDITION_FORMS`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from segbench.annotation_ui.convert import merge_answers
from segbench.annotation_ui.rounds import RoundStore, new_round
from segbench.core.errors import InputError, RoundStateError
from segbench.core.io import read_json
from segbench.schemas.rounds import Answer, ItemAnswer, Round, RoundStatus

CONDITION_FORMS: dict[str, str] = {
    "agreement<X": "the share of annotators with the majority is below X (0 < X <= 1) on any choice control",
    "agreement:CONTROL<X": "the same, on the choice control CONTROL only",
    "votes<N": "fewer than N annotators answered the item (N >= 1; unanswered items too)",
    "suspicious": "a worker the round's worker report lists as suspicious answered the item",
    "tie": "no majority of the people (two labels share the most votes, even where a model chose one) on some "
           "choice control",
}
_DONE = (RoundStatus.INGESTED, RoundStatus.CLOSED)

_CONDITION = re.compile(r"""^\s*(?:
    agreement (?::(?P<control>[A-Za-z0-9_][A-Za-z0-9_.-]*))? \s*<\s* (?P<share>[^\s<]+)
  | votes \s*<\s* (?P<votes>[^\s<]+)
  | (?P<flag>suspicious|tie)
)\s*$""", re.VERBOSE)


class ConditionError(InputError):
    """A ``--where`` condition is not one of :data:`CONDITION_FORMS`."""


@dataclass(frozen=True)
class Condition:
    """One parsed ``--where`` condition (``text`` is how the user wrote it)."""

    kind: Literal["agreement", "votes", "suspicious", "tie"]
    text: str
    control: str | None = None
    below: float = 0.0


def parse_condition(text: str) -> Condition:
    """The condition ``text`` names.

    Raises:
        ConditionError: ``text`` is none of :data:`CONDITION_FORMS`, or its number is out of range
            (the message names the condition and lists the valid forms).
    """
    match = _CONDITION.match(text or "")
    if match is None:
        raise _bad(text, "is not a condition")
    if match["flag"]:
        return Condition("tie" if match["flag"] == "tie" else "suspicious", text.strip())
    if match["votes"] is not None:
        votes = match["votes"]
        if not votes.isdigit() or int(votes) < 1:
            raise _bad(text, f"needs a whole number of votes >= 1, got {votes!r}")
        return Condition("votes", text.strip(), below=int(votes))
    share = _number(match["share"])
    if share is None or not 0 < share <= 1:
        raise _bad(text, f"needs a share 0 < X <= 1, got {match['share']!r}")
    return Condition("agreement", text.strip(), control=match["control"], below=share)


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _bad(text: str, why: str) -> ConditionError:
    forms = "; ".join(f"{form} ({meaning})" for form, meaning in CONDITION_FORMS.items())
    return ConditionError(f"--where {text!r} {why}", item=f"--where {text}",
                          hint=f"use one of: {forms}. Several --where select the items matching any of them")


# --- chains ----------------------------------------------------------------------------------------

def chain(store: RoundStore, round_: Round) -> list[Round]:
    """The rounds from the chain's root to ``round_`` (``[round_]`` for a round that follows none).

    Raises:
        InputError: a round of the chain is missing, or the links loop.
    """
    rounds = [round_]
    while rounds[0].follow_up_of is not None:
        parent = store.load(rounds[0].follow_up_of)
        if any(r.key == parent.key for r in rounds):
            raise InputError(f"the follow-up links of round {round_.key!r} loop through {parent.key!r}",
                             path=store.path(parent.key), hint="restore the round records from version control")
        rounds.insert(0, parent)
    return rounds


def follow_up_of(store: RoundStore, key: str) -> Round | None:
    """The round that follows ``key`` up, if any."""
    found = [r for r in store.list() if r.follow_up_of == key]
    return found[0] if found else None


def final_key(store: RoundStore, key: str) -> str:
    """The key whose answers file is the merged result for ``key``: the deepest ingested round of
    the chain below ``key`` (``key`` itself when nothing below it is ingested)."""
    best, current = key, store.load(key)
    seen = {key}
    while (child := follow_up_of(store, current.key)) is not None and child.key not in seen:
        seen.add(child.key)
        if child.status in _DONE:
            best = child.key
        current = child
    return best


def report_round(store: RoundStore, round_: Round) -> Round:
    """The round an ingest's report hooks see: a follow-up stands for its whole chain (the root's
    items, in the root's order), since its answers file holds the merged answers of all of them."""
    if round_.follow_up_of is None:
        return round_
    return round_.model_copy(update={"items": chain(store, round_)[0].items})


# --- merging a follow-up's answers with its chain's ------------------------------------------------

@dataclass
class ChainMerge:
    """A round's answers merged with those its parent's answers file holds (the chain's, merged).

    Attributes:
        answers: every answer of the chain, without duplicate answer ids.
        own: answer ids of the round's own answers (not in the parent's file).
    """

    round: Round
    answers: list[Answer]
    own: set[str]
    inherited: dict[str, str | None] = field(default_factory=dict)  # item id → who decided it before

    def decide(self, items: Iterable[ItemAnswer]) -> list[ItemAnswer]:
        """``items`` with ``decided_by``: this round for an item it asked about and got answers
        for itself; else the round that decided the item before."""
        asked = {i.item_id for i in self.round.items}
        answered = {a.item_id for a in self.answers if a.source_id in self.own}
        return [item.model_copy(update={"decided_by": self.round.key if item.item_id in asked & answered
                                        else self.inherited.get(item.item_id) or self.round.follow_up_of})
                for item in items]

    def items_answered(self) -> int:
        """The round's items with at least one answer of its own."""
        answered = {a.item_id for a in self.answers if a.source_id in self.own}
        return sum(1 for item in self.round.items if item.item_id in answered)


def merge_chain(store: RoundStore, round_: Round, answers: list[Answer]) -> ChainMerge:
    """Merge ``answers`` (the round's saved and fetched answers) with its parent's answers file.

    The parent's copy of an answer wins a tie: it is the backend's state at the parent's last ingest.

    Raises:
        RoundStateError: the parent round has no answers file (ingest it first).
    """
    if round_.follow_up_of is None:
        return ChainMerge(round_, answers, {a.source_id for a in answers})
    parent = round_.follow_up_of
    path = store.answers_path(parent)
    if not path.is_file():
        raise RoundStateError(f"round {round_.key!r} follows up {parent!r}, which has no answers file",
                              path=path, hint=f"segbench rounds ingest {parent}")
    theirs = store.load_answers(parent)
    merged = merge_answers(answers, theirs)
    inherited = {a.source_id for a in theirs}
    decided = {i["item_id"]: i.get("decided_by") or parent for i in read_json(path).get("items", [])}
    return ChainMerge(round_, merged, {a.source_id for a in merged if a.source_id not in inherited}, decided)


# --- creating a follow-up --------------------------------------------------------------------------

def workers_path(store: RoundStore, key: str) -> Path:
    """The worker report an ingest writes next to the round (``<key>.workers.json``)."""
    return store.root / f"{key}.workers.json"


def suspicious_workers(store: RoundStore, key: str) -> set[str]:
    """The workers the round's worker report lists as suspicious.

    Raises:
        RoundStateError: the round has no worker report yet. InputError: the report is malformed.
    """
    path = workers_path(store, key)
    if not path.is_file():
        raise RoundStateError(f"round {key!r} has no worker report, so --where suspicious has no workers to use",
                              path=path, item=f"round {key}", hint=f"ingest it first: segbench rounds ingest {key}")
    report = read_json(path)
    listed = report.get("suspicious") if isinstance(report, dict) else None
    if not isinstance(listed, list) or not all(isinstance(w, dict) and "worker" in w for w in listed):
        raise InputError("not a worker report (expected 'suspicious': [{'worker': ..., 'reasons': [...]}, ...])",
                         path=path, hint=f"delete it and run `segbench rounds ingest {key}` again")
    return {str(w["worker"]) for w in listed}


def _is_listed(annotator: str, listed: AbstractSet[str]) -> bool:
    """Reports name a worker by its backend-qualified id (``worker:A1``); a bare id matches too."""
    return annotator in listed or annotator.split(":", 1)[-1] in listed


def matching_items(item_ids: Sequence[str], items: Sequence[ItemAnswer], answers: Sequence[Answer],
                   conditions: Sequence[Condition], suspicious: AbstractSet[str] = frozenset()) -> dict[str, list[str]]:
    """Item id → the conditions it matches (only items matching one or more), in ``item_ids`` order."""
    by_id = {item.item_id: item for item in items}
    flagged = {a.item_id for a in answers if _is_listed(a.annotator, suspicious)}
    out = {}
    for item_id in item_ids:
        result = by_id.get(item_id)
        hits = [c.text for c in conditions if _matches(c, result, item_id in flagged)]
        if hits:
            out[item_id] = hits
    return out


def _matches(condition: Condition, result: ItemAnswer | None, flagged: bool) -> bool:
    if condition.kind == "suspicious":
        return flagged
    if condition.kind == "votes":
        return len(result.annotators if result else []) < condition.below
    if result is None:
        return False
    if condition.kind == "tie":
        return any(result.people_label(control) is None for control in result.majority)
    shares = result.agreement if condition.control is None else {
        k: v for k, v in result.agreement.items() if k == condition.control}
    return any(share < condition.below for share in shares.values())


def create_follow_up(store: RoundStore, key: str, new_key: str, conditions: Sequence[Condition],
                     now: str) -> tuple[Round | None, dict[str, list[str]]]:
    """Create round ``new_key`` following ``key`` up, for the chain's items matching any condition.

    Returns:
        (the saved round, or None when no item matches; item id → the conditions it matched).

    Raises:
        RoundStateError: ``key`` is not ingested, already has a follow-up, or (for ``suspicious``)
            has no worker report; ``new_key`` exists. ConditionError: a control the round lacks.
    """
    source = store.load(key)
    if source.status not in _DONE:
        raise RoundStateError(f"round {key!r} is {source.status.value}; a follow-up needs its answers",
                              item=f"round {key}", hint=f"segbench rounds ingest {key}")
    existing = follow_up_of(store, key)
    if existing is not None:
        raise RoundStateError(f"round {key!r} already has a follow-up: {existing.key!r}", item=f"round {key}",
                              hint=f"follow up {existing.key} instead (a chain has one end)")
    if store.exists(new_key):
        raise RoundStateError(f"round {new_key!r} already exists", path=store.path(new_key),
                              hint="choose another key for the follow-up")
    _check_controls(source, conditions)
    suspicious = suspicious_workers(store, key) if any(c.kind == "suspicious" for c in conditions) else set()
    saved = read_json(store.answers_path(key))
    items = [ItemAnswer.model_validate(i) for i in saved.get("items", [])]
    candidates = chain(store, source)[0].items
    matched = matching_items([i.item_id for i in candidates], items, store.load_answers(key), conditions, suspicious)
    if not matched:
        return None, {}
    follow_up = new_round(new_key, source.kind, source.dataset, source.dataset_version, source.config,
                          [i for i in candidates if i.item_id in matched], source.backend, now)
    # A round kept apart on its annotators' own servers is followed up there too.
    return store.create(follow_up.model_copy(update={"follow_up_of": key, "aggregation": source.aggregation,
                                                     "annotators": source.annotators})), matched


def _check_controls(round_: Round, conditions: Sequence[Condition]) -> None:
    from segbench.annotation_ui.kinds import allowed_labels

    named = [c for c in conditions if c.control is not None]
    if not named:
        return
    controls = sorted(allowed_labels(round_))
    for condition in named:
        if condition.control not in controls:
            raise ConditionError(f"--where {condition.text!r}: round {round_.key!r} has no choice control "
                                 f"{condition.control!r}", item=f"--where {condition.text}",
                                 hint=f"its controls: {', '.join(controls) or 'none'}")
