"""Conversions between annotation backends and segbench answer records.

Label Studio's JSON export and AMT-style results rows (the files backend, read by
:mod:`segbench.annotation_ui.crowd_files`) become :class:`~segbench.schemas.rounds.Answer` records;
:func:`merge_answers` makes re-ingest converge. Every function is pure apart from the file reads and
writes it is named for.

What does not belong here: HTTP (``client.py`` alone talks to Label Studio), round status
(``rounds.py``) and aggregation or agreement (``segbench.core.agreement``).

Checks run per answer (one Label Studio annotation, one results row). A bad answer goes to the
:class:`ImportPolicy`: raised, or skipped whole and recorded in its report. A partly kept answer
would misrepresent what the annotator said, so nothing is dropped from inside an answer.
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from segbench.annotation_ui.crowd_files import FILES_REQUIRED
from segbench.core import clock
from segbench.core.errors import AnnotationError, ImportPolicy
from segbench.core.io import FLOAT_DIGITS
from segbench.schemas.rounds import Answer, BackendProgress, Polygon, Round

logger = logging.getLogger(__name__)

# Label Studio stores points as floats in percent; its front end can leave float noise just
# beyond the border when a point is snapped to it.
PERCENT_TOLERANCE = 1e-6
# Half a pixel: a point drawn on the border pixel may legitimately land up to its outer edge.
PIXEL_TOLERANCE = 0.5
LABEL_SEPARATOR = "|"

Allowed = Mapping[str, set[str]] | None

# What to do about one bad answer, when nothing more precise can be said.
SKIP_HINT = "correct that answer, or ingest with --on-error skip to leave it out (it is listed in the skip report)"


# --- Label Studio ------------------------------------------------------------------------------------

def answers_from_labelstudio(
    export: list[dict[str, Any]],
    round_: Round,
    policy: ImportPolicy,
    *,
    allowed: Allowed = None,
    source: str | Path | None = None,
    check_polygons: bool = True,
    prefix: str = "labelstudio",
) -> list[Answer]:
    """One Answer per non-cancelled annotation of a Label Studio JSON export.

    Choices come from ``choices`` results (``value.choices``), polygons from ``polygonlabels``
    results, converted from percent to pixels of the round item's width and height; the
    annotation's ``lead_time`` becomes ``seconds``.

    Args:
        export: the export (a list of tasks, each with ``data.item_id`` and ``annotations``).
        round: the round the tasks belong to.
        policy: fail on the first bad annotation, or skip it into ``policy.report``.
        allowed: control name → allowed labels; None accepts any control and label.
        source: where the export came from (a file, a project URL), named in errors.
        check_polygons: refuse polygons with fewer than 3 points or points outside the image. False
            keeps them as drawn (converted to pixels, not clamped) for importers that flag bad
            polygons themselves and keep the rest of the answer (the SPIN crowd import).
        prefix: what the annotator and answer ids start with (``<prefix>:<user id>``):
            ``labelstudio``, or ``labelstudio@<annotator>`` for an annotator's own server.

    Returns:
        The answers, sorted by (item_id, annotator, source_id).

    Raises:
        AnnotationError: under a fail policy, for a task whose item is not in the round, an
            unknown control or label, a polygon with fewer than 3 points or without exactly one
            label, a point outside the image, an ``original_width/height`` that disagrees with the
            item, or a result type segbench does not read.
    """
    items = round_.items_by_task_id()
    answers, cancelled = [], 0
    seen: dict[str, object] = {}  # annotation id -> the task it came with
    for task in export:
        for annotation in task.get("annotations") or []:
            if annotation.get("was_cancelled"):
                cancelled += 1  # the annotator pressed "skip": no answer, not an error
                continue
            where = f"task {task.get('id')} / annotation {annotation.get('id')}"
            try:
                # An answer is known by its annotation id (re-ingest merges by it): one without, or one
                # that two annotations share, would silently replace another person's answer.
                key = annotation.get("id")
                if not isinstance(key, int) or isinstance(key, bool):
                    raise AnnotationError(f"annotation id {key!r} is not a number", path=source, item=where,
                                          hint="export the project from Label Studio again")
                if str(key) in seen:
                    raise AnnotationError(f"annotation id {key} appears twice (with task {seen[str(key)]} and "
                                          f"task {task.get('id')})", path=source, item=where,
                                          hint="the server's export is inconsistent: export the project again; "
                                               "--on-error skip keeps the first")
                seen[str(key)] = task.get("id")
                answers.append(_labelstudio_answer(task, annotation, items, allowed, where, source, check_polygons,
                                                   prefix))
            except AnnotationError as error:
                policy.handle(error)
    if cancelled:
        logger.info("round %s: %d cancelled Label Studio annotations carry no answer", round_.key, cancelled)
    return sorted(answers, key=answer_order)


def progress_of(export: list[dict[str, Any]], prefix: str = "labelstudio") -> BackendProgress:
    """How far a Label Studio project is, from its JSON export: ``tasks``, ``done`` (tasks with ≥1
    answer that was not cancelled), ``annotations`` (answers not cancelled), ``by_annotator``
    (``<prefix>:<user id>`` → answers) and ``done_items`` (the task ids of the done tasks)."""
    by_annotator: Counter[str] = Counter()
    done, done_items = 0, set()
    for task in export:
        answers = [a for a in task.get("annotations", []) if not a.get("was_cancelled")]
        done += bool(answers)
        if answers and "item_id" in task.get("data", {}):
            done_items.add(str(task["data"]["item_id"]))
        by_annotator.update(f"{prefix}:{a.get('completed_by')}" for a in answers)
    return {
        "tasks": len(export),
        "done": done,
        "annotations": sum(by_annotator.values()),
        "by_annotator": dict(sorted(by_annotator.items())),
        "done_items": sorted(done_items),
    }


def _labelstudio_answer(task, annotation, items, allowed, where, source, check_polygons=True,
                        prefix="labelstudio") -> Answer:
    def fail(message: str, hint: str = SKIP_HINT) -> AnnotationError:
        return AnnotationError(message, path=source, item=where, hint=hint)

    item_id = (task.get("data") or {}).get("item_id")
    if item_id is None or str(item_id) not in items:
        raise fail(f"task item_id {item_id!r} is not an item of this round",
                   hint="export the round's own project, or check the tasks' item_id field")
    item = items[str(item_id)]
    choices: dict[str, list[str]] = {}
    polygons: dict[str, list[Polygon]] = {}
    for result in annotation.get("result") or []:
        kind, control = result.get("type"), result.get("from_name", "")
        value = result.get("value") or {}
        if kind == "choices":
            labels = [str(label) for label in value.get("choices") or []]
            _check_labels(control, labels, allowed, fail)
            choices[control] = sorted(set(choices.get(control, [])) | set(labels))
        elif kind == "polygonlabels":
            labels = [str(label) for label in value.get("polygonlabels") or []]
            _check_labels(control, labels, allowed, fail)
            if len(labels) != 1:
                raise fail(f"polygon {result.get('id')} has {len(labels)} labels; a polygon needs exactly one")
            points = _polygon_pixels(result, item.width, item.height, fail, check=check_polygons)
            polygons.setdefault(control, []).append(Polygon(label=labels[0], points=points))
        else:
            raise fail(f"result type {kind!r} (control {control!r}) is not read by segbench; "
                       "only choices and polygonlabels are", hint="use a segbench label config")
    completed_by = annotation.get("completed_by")
    if isinstance(completed_by, dict):  # exports made with user details inline the user object
        completed_by = completed_by.get("id")
    return Answer(
        item_id=item.item_id,
        annotator=f"{prefix}:{completed_by}",
        source_id=f"{prefix}:{annotation.get('id')}",
        updated_at=annotation.get("updated_at") or annotation.get("created_at"),
        choices=dict(sorted(choices.items())),
        polygons=dict(sorted(polygons.items())),
        seconds=_seconds(annotation.get("lead_time")),
    )


def _polygon_pixels(result: dict, width: int, height: int, fail, *, check: bool = True) -> list[tuple[float, float]]:
    """Percent points → pixels of the round item, checking size agreement (and bounds, if ``check``)."""
    rid = result.get("id")
    for name, expected in (("original_width", width), ("original_height", height)):
        got = result.get(name)
        if got is not None and int(got) != expected:
            raise fail(f"polygon {rid}: {name} is {got} but the round item is {width}x{height}",
                       hint="the image shown differs from the round's image; relaunch the round with the right files")
    raw = (result.get("value") or {}).get("points") or []
    if not isinstance(raw, list) or not all(_is_point(p) for p in raw):
        raise fail(f"polygon {rid}: points must be a list of finite [x, y] numbers (percent of the image)",
                   hint="re-export the project from Label Studio; a point that is null, NaN or infinite cannot be kept")
    if not check:
        return [(round(float(x) * width / 100.0, FLOAT_DIGITS), round(float(y) * height / 100.0, FLOAT_DIGITS))
                for x, y in raw]
    if len(raw) < 3:
        raise fail(f"polygon {rid} has {len(raw)} points; a polygon needs at least 3 (x, y) pairs")
    points = []
    for x_pct, y_pct in raw:
        x, y = float(x_pct) * width / 100.0, float(y_pct) * height / 100.0
        outside_pct = not all(-PERCENT_TOLERANCE <= v <= 100 + PERCENT_TOLERANCE for v in (x_pct, y_pct))
        outside_px = not (-PIXEL_TOLERANCE <= x <= width + PIXEL_TOLERANCE
                          and -PIXEL_TOLERANCE <= y <= height + PIXEL_TOLERANCE)
        if outside_pct or outside_px:
            raise fail(f"polygon {rid}: point ({x_pct}%, {y_pct}%) = ({x:.1f}, {y:.1f}) px lies outside "
                       f"the {width}x{height} image; points must be within [0, 100] percent")
        # Clamp what the tolerance let through, and round now so that the answers file read back
        # compares equal to a fresh conversion (canonical JSON keeps FLOAT_DIGITS).
        points.append((round(min(max(x, 0.0), width), FLOAT_DIGITS), round(min(max(y, 0.0), height), FLOAT_DIGITS)))
    return points


def _check_labels(control: str, labels: list[str], allowed: Allowed, fail) -> None:
    if allowed is None:
        return
    if control not in allowed:
        raise fail(f"control {control!r} is not in the label config (controls: {', '.join(sorted(allowed))})")
    unknown = sorted(set(labels) - set(allowed[control]))
    if unknown:
        raise fail(f"label {unknown[0]!r} is not allowed for control {control!r} "
                   f"(allowed: {', '.join(sorted(allowed[control]))})")


# --- files backend (AMT-style) -----------------------------------------------------------------------

def answers_from_files(
    rows: list[dict[str, Any]], round_: Round, policy: ImportPolicy, allowed: Allowed = None, *,
    check_polygons: bool = True, source: str | Path | None = None,
) -> list[Answer]:
    """One Answer per AMT-style results row.

    A row has ``WorkerId``, ``AssignmentId``, ``Input.item_id`` and ``Answer.<control>`` columns
    holding a label (several separated by ``|``; empty = no answer for that control). Rows whose
    ``AssignmentStatus`` is ``Rejected`` were refused by the requester and are left out (counted
    in a warning). ``SubmitTime`` becomes ``updated_at``, ``WorkTimeInSeconds`` becomes ``seconds``.

    A polygon control (``Answer.polygons``, see :data:`POLYGON_CONTROLS`) holds JSON, in pixels of
    the item's image: ``[{"label": "Eye", "points": [[x, y], ...]}, ...]`` (empty cell or ``[]`` = none).

    Args:
        check_polygons: refuse polygons with fewer than 3 points or points outside the image (False:
            keep them as drawn, for importers that flag bad polygons themselves). Points that are not
            finite numbers are refused either way.
        source: the results file the rows come from, named in errors.

    Raises:
        AnnotationError: under a fail policy, for a row missing a required column, an item not in
            the round, an unknown control or label, or a polygon cell that is not that JSON (the
            error names the row and assignment).
    """
    items = round_.items_by_task_id()
    answers, rejected = [], 0
    for index, row in enumerate(rows, start=1):
        if str(row.get("AssignmentStatus", "")).strip().lower() == "rejected":
            rejected += 1
            continue
        where = f"row {index} / assignment {row.get('AssignmentId')}"
        try:
            answers.append(_files_answer(row, items, allowed, where, check_polygons, source))
        except AnnotationError as error:
            policy.handle(error)
    if rejected:
        logger.warning("round %s: left out %d rejected assignments", round_.key, rejected)
    return sorted(answers, key=answer_order)


def _files_answer(row: Mapping[str, Any], items: Mapping[str, Any], allowed: Allowed, where: str,
                  check_polygons: bool = True, source: str | Path | None = None) -> Answer:
    def fail(message: str, hint: str = SKIP_HINT) -> AnnotationError:
        return AnnotationError(message, path=source, item=where, hint=hint)

    for column in FILES_REQUIRED:
        if _cell(row.get(column)) == "":
            raise fail(f"column {column!r} is missing or empty")
    item_id = _cell(row["Input.item_id"])
    if item_id not in items:
        raise fail(f"Input.item_id {item_id!r} is not an item of this round",
                   hint="the results file belongs to another round")
    choices, polygons = {}, {}
    for column, value in row.items():
        if not column.startswith("Answer."):
            continue
        control = column[len("Answer."):]
        if control in POLYGON_CONTROLS:
            drawn = _file_polygons(value, items[item_id], fail, check_polygons)
            _check_labels(control, sorted({p.label for p in drawn}), allowed, fail)
            if drawn:
                polygons[control] = drawn
            continue
        labels = _labels(value)
        if labels:
            _check_labels(control, labels, allowed, fail)
            choices[control] = sorted(set(labels))
    return Answer(
        item_id=items[item_id].item_id,
        annotator=f"worker:{_cell(row['WorkerId'])}",
        source_id=f"files:{_cell(row['AssignmentId'])}",
        updated_at=_submit_time(row, fail),
        choices=dict(sorted(choices.items())),
        polygons=dict(sorted(polygons.items())),
        seconds=_seconds(row.get("WorkTimeInSeconds")),
    )


def _seconds(value: Any) -> float | None:
    """Time on task in seconds (LS ``lead_time``, AMT ``WorkTimeInSeconds``); None when absent or not a
    finite, non-negative number: the time is a quality signal, never a reason to refuse an answer."""
    try:
        seconds = float(_cell(value)) if not isinstance(value, (int, float)) else float(value)
    except ValueError:
        return None
    return round(seconds, FLOAT_DIGITS) if math.isfinite(seconds) and seconds >= 0 else None


# Answer columns that hold polygons (JSON) rather than labels.
POLYGON_CONTROLS = frozenset({"polygons"})
POLYGON_FORMAT = '[{"label": "<label>", "points": [[x, y], ...]}, ...] in pixels of the image'


def _file_polygons(value: Any, item: Any, fail, check: bool) -> list[Polygon]:
    """The polygons of one results cell (a JSON string, or already parsed when read from JSON)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return []
    try:
        data = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError as exc:
        raise fail(f"Answer.polygons is not JSON ({exc.msg} at character {exc.pos})",
                   hint=f"write {POLYGON_FORMAT}") from exc
    if not isinstance(data, list):
        raise fail("Answer.polygons must be a JSON list", hint=f"write {POLYGON_FORMAT}")
    out = []
    for index, entry in enumerate(data):
        points = entry.get("points") if isinstance(entry, dict) else None
        label = entry.get("label") if isinstance(entry, dict) else None
        if not isinstance(label, str) or not label.strip() or not isinstance(points, list):
            raise fail(f"Answer.polygons entry {index} is not {{label, points: [[x, y], ...]}}",
                       hint=f"write {POLYGON_FORMAT}")
        if not all(_is_point(p) for p in points):
            # Saved, a NaN or infinite point would become null and make every later ingest fail.
            raise fail(f"Answer.polygons entry {index} has a point that is not two finite numbers "
                       "(NaN, infinite or not a number)",
                       hint=f"correct or remove this row (or ingest with --on-error skip); write {POLYGON_FORMAT}")
        pts = [(round(float(x), FLOAT_DIGITS), round(float(y), FLOAT_DIGITS)) for x, y in points]
        if check:
            if len(pts) < 3:
                raise fail(f"polygon {index} has {len(pts)} points; a polygon needs at least 3 (x, y) pairs")
            if not all(-PIXEL_TOLERANCE <= x <= item.width + PIXEL_TOLERANCE and
                       -PIXEL_TOLERANCE <= y <= item.height + PIXEL_TOLERANCE for x, y in pts):
                raise fail(f"polygon {index} has a point outside the {item.width}x{item.height} image")
        out.append(Polygon(label=label.strip(), points=pts))
    return out


def _is_point(point: Any) -> bool:
    """An (x, y) pair of finite numbers (JSON readers accept NaN and Infinity; answers must not)."""
    return (isinstance(point, (list, tuple)) and len(point) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in point))


def _cell(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _labels(value: Any) -> list[str]:
    if isinstance(value, list):
        parts = [_cell(v) for v in value]
    else:
        parts = [p.strip() for p in _cell(value).split(LABEL_SEPARATOR)]
    return [p for p in parts if p]


# --- re-ingest -----------------------------------------------------------------------------------------

def merge_answers(old: list[Answer], new: list[Answer], *, drop_missing: bool = False) -> list[Answer]:
    """Merge freshly fetched answers into the saved ones so that re-ingest converges.

    Keyed by ``source_id`` (the backend's own answer id): an answer only in ``old`` is kept (with
    ``drop_missing``, for a fetch of the backend's whole state, it was deleted there and is dropped),
    one only in ``new`` is added, and for one in both the newer ``updated_at`` wins. Ties, and
    timestamps that are missing or not ISO 8601, go to ``new``: the latest fetch is the backend's
    current state. Merging the same fetch twice therefore returns the same list.

    Returns:
        Answers without duplicate source ids, sorted by (item_id, annotator, source_id).
    """
    merged: dict[str, Answer] = {}
    fetched = {answer.source_id for answer in new}
    for answer in [*(a for a in old if not drop_missing or a.source_id in fetched), *new]:
        current = merged.get(answer.source_id)
        if current is None or not _older(answer, current):
            merged[answer.source_id] = answer
    return sorted(merged.values(), key=answer_order)


def merge_counts(old: list[Answer], new: list[Answer]) -> dict[str, int]:
    """What :func:`merge_answers` does: ``added``, ``updated``, ``unchanged`` and ``kept`` (only in old)."""
    before = {a.source_id: a for a in old}
    after = {a.source_id: a for a in merge_answers(old, new)}
    fetched = {a.source_id for a in new}
    return {
        "added": sum(1 for s in after if s not in before),
        "updated": sum(1 for s in after if s in before and after[s] != before[s]),
        "unchanged": sum(1 for s in after if s in before and s in fetched and after[s] == before[s]),
        "kept": sum(1 for s in before if s not in fetched),
    }


def _submit_time(row: Mapping[str, Any], fail: Callable[..., AnnotationError]) -> str | None:
    """``SubmitTime`` as given, once it reads as a time (MTurk's ``Wed Nov 26 09:00:37 PST 2025`` or ISO
    8601): answers are ordered by it, so one that cannot be read would scramble a worker's timeline."""
    text = _cell(row.get("SubmitTime"))
    if text and clock.parse_time(text) is None:
        raise fail(f"SubmitTime {text!r} is not a time segbench reads (MTurk's 'Wed Nov 26 09:00:37 PST 2025' "
                   "or ISO 8601 such as 2025-11-26T17:00:37Z)")
    return text or None


def _older(candidate: Answer, current: Answer) -> bool:
    """True when ``candidate`` is strictly older than ``current`` by comparable timestamps."""
    a, b = (clock.parse_time(t) if t else None for t in (candidate.updated_at, current.updated_at))
    return a is not None and b is not None and a < b


def answer_order(answer: Answer) -> tuple[str, str, str]:
    """How answers are listed everywhere: by item, annotator, answer id."""
    return (answer.item_id, answer.annotator, answer.source_id)
