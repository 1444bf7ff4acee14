"""Round records on disk and the status transitions between them.

A round is a saved record under a key (``data/rounds/<key>.json``, see
:mod:`segbench.schemas.rounds`). :class:`RoundStore` reads and writes those records atomically;
the ``mark_*`` functions are pure: they take a round and a timestamp and return a new round, or
raise :class:`RoundStateError` naming the round, its status and the steps it allows.

What does not belong here: talking to a backend (``backends/``), converting backend answers
(``convert.py``), aggregation (``segbench.core.agreement``) and reading the clock (flows pass
``now`` in, so these functions stay testable without dates).
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from segbench.annotation_ui.backends import backend_type
from segbench.core.errors import InputError, RoundStateError
from segbench.core.io import read_json, write_json
from segbench.schemas.rounds import Answer, AnswersFile, ItemAnswer, Round, RoundConfig, RoundItem, RoundStatus

__all__ = [
    "RoundStatus",
    "RoundStore",
    "mark_cancelled",
    "mark_closed",
    "mark_ingested",
    "mark_launched",
    "new_round",
]

logger = logging.getLogger(__name__)

_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")  # the same rule as Round.key
_ANSWERS_SUFFIX = ".answers"
# Files beside a round record that are not rounds: its worker report and a qualification's pass list.
_SIDE_SUFFIXES = (_ANSWERS_SUFFIX, ".workers", ".qualified")

# Which status each status may move to. Launch and ingest may repeat (a relaunch imports what is
# missing, a re-ingest converges); cancelling twice is harmless; closed and cancelled are final.
_NEXT: dict[RoundStatus, tuple[RoundStatus, ...]] = {
    RoundStatus.CREATED: (RoundStatus.LAUNCHED, RoundStatus.CANCELLED),
    RoundStatus.LAUNCHED: (RoundStatus.LAUNCHED, RoundStatus.INGESTED, RoundStatus.CANCELLED),
    RoundStatus.INGESTED: (RoundStatus.INGESTED, RoundStatus.CLOSED, RoundStatus.CANCELLED),
    RoundStatus.CLOSED: (),
    RoundStatus.CANCELLED: (RoundStatus.CANCELLED,),
}

# Fields that define what a round asks; two rounds with equal values here are the same round.
_DEFINITION = ("kind", "dataset", "dataset_version", "config", "items", "backend")


class RoundStore:
    """Round records as ``root/<key>.json`` (``root`` is ``data/rounds``).

    Answers of a round live next to it in ``root/<key>.answers.json``; the store only names that
    path, the ingest step writes it.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path(self, key: str) -> Path:
        """The record file of ``key`` (the key is checked, so it can never leave ``root``)."""
        return self.root / f"{_check_key(key)}.json"

    def answers_path(self, key: str) -> Path:
        return self.root / f"{_check_key(key)}{_ANSWERS_SUFFIX}.json"

    def load_answers(self, key: str) -> list[Answer]:
        """The answers saved by the last ingest of ``key`` (none when it was never ingested).

        Raises:
            InputError: the answers file is unreadable, not the answers format, or an answer in it is
                malformed; the message names the file and the answer (index and source id) and the fix.
        """
        return self.load_ingested(key)[0]

    def load_ingested(self, key: str) -> tuple[list[Answer], list[ItemAnswer]]:
        """The answers and the per-item decisions the last ingest of ``key`` saved (none before it).

        Raises:
            InputError: as :meth:`load_answers`, or a decision in the file is malformed.
        """
        path = self.answers_path(key)
        if not path.exists():
            return [], []
        fix = (f"delete {path} and run `segbench rounds ingest {key}` again: every answer is fetched again from "
               "the backend (remove or correct the bad results row first)")
        saved = read_json(path)
        if not isinstance(saved, dict) or not isinstance(saved.get("answers"), list):
            raise InputError("not a round answers file (expected an object with an 'answers' list)", path=path,
                             hint=fix)
        answers = []
        for index, record in enumerate(saved["answers"]):
            try:
                answers.append(Answer.model_validate(record))
            except ValidationError as exc:
                source = record.get("source_id") if isinstance(record, dict) else None
                raise InputError(f"saved answer is malformed ({_first_error(exc)})", path=path,
                                 item=f"answers[{index}]" + (f" ({source})" if source else ""), hint=fix) from exc
        try:
            decided = AnswersFile.model_validate(saved).items
        except ValidationError as exc:
            raise InputError(f"the answers file is damaged ({_first_error(exc)})", path=path, hint=fix) from exc
        return answers, decided

    def keys(self) -> list[str]:
        """Keys of the saved rounds, sorted."""
        if not self.root.is_dir():
            return []
        if not os.access(self.root, os.R_OK | os.X_OK):  # glob would quietly find nothing
            raise InputError("permission denied", path=self.root,
                             hint=f"make the rounds folder readable by this user (chmod u+rx {self.root})")
        return sorted(
            p.name[: -len(".json")]
            for p in self.root.glob("*.json")
            if p.is_file() and not p.name[: -len(".json")].endswith(_SIDE_SUFFIXES)
        )

    def exists(self, key: str) -> bool:
        return self.path(key).is_file()

    def check_free(self, key: str, overwrite: bool = False) -> None:
        """Refuse a key that is taken (unless ``overwrite``) before a create writes anything for it.

        Raises:
            RoundStateError: a round with that key exists and ``overwrite`` is false.
        """
        if self.exists(key) and not overwrite:
            existing = self.load(key)
            raise RoundStateError(f"round {key!r} already exists (status {existing.status.value})",
                                  path=self.path(key), hint="choose another key, or pass --overwrite to replace it")

    def create(self, round_: Round, overwrite: bool = False) -> Round:
        """Save a new round under its key.

        Raises:
            RoundStateError: a round with that key exists and ``overwrite`` is false. The message
                says whether the existing round asks the same thing (then load it) or what differs.
        """
        if self.exists(round_.key) and not overwrite:
            existing = self.load(round_.key)
            differs = [name for name in _DEFINITION if getattr(existing, name) != getattr(round_, name)]
            what = (
                f"a different round (differs in: {', '.join(differs)})"
                if differs
                else "the same definition; load it instead of creating it again"
            )
            raise RoundStateError(
                f"round {round_.key!r} already exists (status {existing.status.value}) with {what}",
                path=self.path(round_.key),
                hint="choose another key, or pass overwrite=True to replace the record "
                "(its answers file is kept; a Label Studio project is not deleted)",
            )
        return self.save(round_)

    def load(self, key: str) -> Round:
        """The saved round ``key``.

        Raises:
            InputError: no such round (the message lists the existing keys), or the record is
                malformed.
        """
        path = self.path(key)
        if not path.is_file():
            existing = ", ".join(self.keys()) or "none"
            raise InputError(
                f"no round with key {key!r}",
                path=path,
                hint=f"existing rounds: {existing}; create one with a kind of `segbench rounds create --help`",
            )
        try:
            return Round.model_validate(read_json(path))
        except ValidationError as exc:
            raise InputError(f"not a valid round record ({exc.error_count()} errors: {_first_error(exc)})",
                             path=path, hint="restore the file from version control") from exc

    def save(self, round_: Round) -> Round:
        """Write the record atomically (a crash leaves the previous record intact)."""
        write_json(self.path(round_.key), round_.model_dump(mode="json"), indent=2)
        return round_

    def list(self) -> list[Round]:
        """Every saved round, sorted by key."""
        return [self.load(key) for key in self.keys()]


def new_round(
    key: str,
    kind: str,
    dataset: str,
    dataset_version: str,
    config: RoundConfig,
    items: Iterable[RoundItem],
    backend: Literal["labelstudio", "files"],
    now: str,
) -> Round:
    """A round in status ``created``.

    Raises:
        InputError: no items, duplicate item ids, a key that is not a file-safe name, or any other
            field the schema refuses (the message names it).
    """
    items = list(items)
    _check_key(key)
    if not items:
        raise InputError("a round needs at least one item", item=f"round {key}",
                         hint="check the selection the round was built from")
    duplicates = sorted(item_id for item_id, n in Counter(i.item_id for i in items).items() if n > 1)
    if duplicates:
        shown = ", ".join(duplicates[:5]) + (" ..." if len(duplicates) > 5 else "")
        raise InputError(f"item ids must be unique; repeated: {shown}", item=f"round {key}",
                         hint="deduplicate the selection before creating the round")
    try:
        return Round(key=key, kind=kind, dataset=dataset, dataset_version=dataset_version, config=config,
                     items=items, backend=backend, created_at=now, updated_at=now)
    except ValidationError as exc:
        raise InputError(f"invalid round: {_first_error(exc)}", item=f"round {key}") from exc


def mark_launched(round_: Round, project_id: int | None, now: str) -> Round:
    """created or launched → launched.

    A relaunch keeps the round's project (it never creates a second one) and its first
    ``launched_at``. Whether it needs a project id is the backend's rule (Label Studio rounds need
    one; files rounds have none).

    Raises:
        RoundStateError: the status does not allow a launch, the project id does not fit the
            backend, or a relaunch names a different project.
    """
    check_step(round_, RoundStatus.LAUNCHED, "launch")
    backend_type(round_.backend).check_project_id(round_, project_id)
    if round_.project_id is not None and project_id != round_.project_id:
        raise RoundStateError(
            f"round {round_.key!r} was launched as project {round_.project_id}; a relaunch reuses it (got {project_id})",
            item=f"round {round_.key}",
            hint="relaunch into the same project, or create a new round under another key",
        )
    return round_.model_copy(update={
        "status": RoundStatus.LAUNCHED,
        "project_id": project_id,
        "launched_at": round_.launched_at or now,
        "updated_at": now,
    })


def mark_ingested(round_: Round, counts: Mapping[str, int], now: str) -> Round:
    """launched or ingested → ingested; ``counts`` replace the previous counts (ingest may repeat).

    Raises:
        RoundStateError: the status does not allow an ingest.
    """
    check_step(round_, RoundStatus.INGESTED, "ingest")
    return round_.model_copy(update={
        "status": RoundStatus.INGESTED,
        "counts": dict(sorted(counts.items())),
        "ingested_at": now,
        "updated_at": now,
    })


def mark_closed(round_: Round, now: str) -> Round:
    """ingested → closed: the answers are final.

    Raises:
        RoundStateError: the round has not been ingested, or is already closed or cancelled.
    """
    check_step(round_, RoundStatus.CLOSED, "close")
    return round_.model_copy(update={"status": RoundStatus.CLOSED, "closed_at": now, "updated_at": now})


def mark_cancelled(round_: Round, now: str) -> Round:
    """Any status but closed → cancelled (``updated_at`` records when).

    Raises:
        RoundStateError: the round is closed.
    """
    check_step(round_, RoundStatus.CANCELLED, "cancel")
    return round_.model_copy(update={"status": RoundStatus.CANCELLED, "updated_at": now})


def check_step(round_: Round, target: RoundStatus, verb: str) -> None:
    """Raise a RoundStateError naming the round, its status and what it allows, unless allowed."""
    allowed = _NEXT[round_.status]
    if target in allowed:
        return
    needs = [s.value for s, nexts in _NEXT.items() if target in nexts]
    next_steps = ", ".join(s.value for s in allowed) or "none (the round is final)"
    raise RoundStateError(
        f"cannot {verb} round {round_.key!r}: its status is {round_.status.value}; "
        f"{verb} needs status {' or '.join(needs)}; allowed next: {next_steps}",
        item=f"round {round_.key}",
        hint="create a new round under another key" if not allowed else None,
    )


def check_round_key(key: str) -> str:
    """``key`` if it is a file-safe round key.

    Raises:
        InputError: the key could leave ``data/rounds`` or clash with an answers file (the message
            gives the rule and an example).
    """
    return _check_key(key)


def _check_key(key: str) -> str:
    if not isinstance(key, str) or not _KEY.match(key) or key.endswith(_SIDE_SUFFIXES):
        raise InputError(
            f"invalid round key {key!r}: use at most 100 letters, digits, '_', '.', '-', starting with a letter "
            f"or digit, not ending in {', '.join(map(repr, _SIDE_SUFFIXES))}",
            hint="pick a key such as audit-2026-01",
        )
    return key


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]
