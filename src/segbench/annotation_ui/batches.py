"""Phased rollout: a round's items carry a ``batch`` (SPIN: super-category; CAFE: subset SM/CC/OC),
and a round can be launched one batch at a time, as the SPIN paper released its tasks.

``rounds launch KEY --batch NAME`` puts out that batch's tasks (again: nothing new); a later launch
of another batch adds its tasks, also after the round was ingested, so the first batch can be
checked before the next goes out; a launch without ``--batch`` puts out every item. The round
record keeps the batches that are out (``Round.launched_batches``; None once everything is).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from segbench.annotation_ui.rounds import check_step, mark_launched
from segbench.core.errors import InputError
from segbench.schemas.rounds import Round, RoundStatus

NO_BATCH = "(none)"  # how items without a batch are shown in the per-batch table


class BatchError(InputError):
    """``--batch`` names no batch of the round."""


def batch_names(round_: Round) -> list[str]:
    """The round's batches, sorted."""
    return sorted({item.batch for item in round_.items if item.batch is not None})


def launched_ids(round_: Round) -> set[str]:
    """Ids of the items whose tasks are out."""
    if round_.launched_at is None:
        return set()
    if round_.launched_batches is None:
        return {item.item_id for item in round_.items}
    return {item.item_id for item in round_.items if item.batch in round_.launched_batches}


def plan_launch(round_: Round, batch: str | None) -> tuple[Round, list[str] | None]:
    """What a launch puts out: the round with only the items of its launched batches (for the
    backend), and the batches out afterwards (None: every item).

    An ingested round launched in batches may be launched again: it adds the batches still held back.

    Raises:
        BatchError: ``batch`` is not a batch of the round (the message lists them).
        RoundStateError: the round's status allows no launch.
    """
    if not (round_.status is RoundStatus.INGESTED and round_.launched_batches is not None):
        check_step(round_, RoundStatus.LAUNCHED, "launch")
    if batch is None:
        return round_, None
    names = batch_names(round_)
    if batch not in names:
        known = ", ".join(names) if names else "none: its items carry no batch; launch without --batch"
        raise BatchError(f"round {round_.key!r} has no batch {batch!r} (batches: {known})",
                         item=f"--batch {batch}", hint=f"pick one of the batches `segbench rounds status "
                                                       f"{round_.key}` lists")
    if round_.launched_at is not None and round_.launched_batches is None:
        return round_, None  # everything is out already: a relaunch
    out = sorted({*(round_.launched_batches or []), batch})
    return round_.model_copy(update={"items": [i for i in round_.items if i.batch in out]}), out


def mark_batches_launched(round_: Round, project_id: int | None, out: list[str] | None, now: str) -> Round:
    """The round after a launch that put out ``out`` (see :func:`plan_launch`); an ingested round
    keeps its status (its answers so far stay ingested)."""
    if round_.status is RoundStatus.INGESTED:
        return round_.model_copy(update={"launched_batches": out, "updated_at": now})
    return mark_launched(round_, project_id, now).model_copy(update={"launched_batches": out})


def batch_rows(round_: Round, answered: Iterable[str]) -> list[dict[str, Any]]:
    """Per batch (items without one as ``(none)``): items, launched (tasks out) and answered."""
    answered, launched = set(answered), launched_ids(round_)
    rows: dict[str, dict[str, Any]] = {}
    for item in round_.items:
        row = rows.setdefault(item.batch or NO_BATCH, {"batch": item.batch or NO_BATCH, "items": 0,
                                                        "launched": 0, "answered": 0})
        row["items"] += 1
        row["launched"] += item.item_id in launched
        row["answered"] += item.item_id in answered
    return [rows[name] for name in sorted(rows)]
