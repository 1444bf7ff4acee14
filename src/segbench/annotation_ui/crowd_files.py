"""The external crowd's file formats (AMT style): the task files a round is published as, and the
results files its answers come back in. :mod:`segbench.annotation_ui.convert` turns results rows
into answer records.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from segbench.core.errors import InputError
from segbench.core.io import atomic_write_text, canonical_json, read_json, read_text, write_json
from segbench.schemas.rounds import Round

FILES_REQUIRED = ("WorkerId", "AssignmentId", "Input.item_id")
TASK_COLUMNS = ("item_id", "image", "width", "height")


# Separators a spreadsheet may have used instead of commas, and what people call them.
_SEPARATORS = {";": "semicolons", "\t": "tabs", "|": "bars"}


def read_results(path: str | Path) -> list[dict[str, Any]]:
    """Read a results file of the files backend: CSV (with a header) or JSON (a list of rows).

    Raises:
        InputError: the file is missing, unreadable or malformed, or a row lacks one of
            ``WorkerId``, ``AssignmentId``, ``Input.item_id`` or has no ``Answer.<control>``
            column (the message names the file, the row and the column).
    """
    path = Path(path)
    if path.is_dir():
        raise InputError("expected a results file, found a directory", path=path,
                         hint="give one results file (.csv or .json); a round's results/ folder is read by "
                              "`segbench rounds ingest`")
    if path.suffix.lower() == ".json":
        rows = read_json(path)
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise InputError("expected a JSON list of results rows (objects)", path=path,
                             hint='write [{"WorkerId": ..., "AssignmentId": ..., "Input.item_id": ..., '
                                  '"Answer.<control>": ...}, ...]')
        for index, row in enumerate(rows, start=1):
            _check_columns(row.keys(), path, f"row {index}")
        return rows
    if path.suffix.lower() != ".csv":
        raise InputError(f"unknown results format {path.suffix!r}; expected .csv or .json", path=path,
                         hint="save the crowd's results as CSV (with a header row) or as a JSON list of rows")
    # utf-8-sig: spreadsheet programs and AMT's download add a byte-order mark.
    text = read_text(path, encoding="utf-8-sig")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    if not reader.fieldnames:
        raise InputError("no header row", path=path, hint="export the results with their column names")
    if len(reader.fieldnames) == 1 and (separator := next((c for c in _SEPARATORS if c in reader.fieldnames[0]),
                                                          None)):
        raise InputError(f"the columns are separated by {_SEPARATORS[separator]}, not commas", path=path,
                         hint="export the results as comma-separated CSV (a spreadsheet's locale may choose ';')")
    _check_columns(reader.fieldnames, path, "header")
    seen: dict[str, int] = {}
    for number, name in enumerate(reader.fieldnames, start=1):
        if name in seen:  # csv.DictReader would keep the last cell of the two, silently
            raise InputError(f"header: column {name!r} appears twice (columns {seen[name]} and {number})", path=path,
                             hint="remove or rename one of the two columns")
        seen[name] = number
    try:
        rows = []
        for row in reader:
            if None in row:  # csv.DictReader puts cells beyond the header under the key None
                raise InputError(f"row {reader.line_num - 1} has more cells than the header", path=path,
                                 hint="quote cells that hold commas, or fix the row")
            rows.append(dict(row))
        return rows
    except csv.Error as exc:
        raise InputError(f"malformed CSV at line {reader.line_num}: {exc}", path=path,
                         hint="export the file again from the crowd platform, or fix that line") from exc


def _check_columns(columns: Iterable[str], path: Path, where: str) -> None:
    columns = set(columns)
    for column in FILES_REQUIRED:
        if column not in columns:
            raise InputError(f"{where}: column {column!r} is missing", path=path,
                             hint=f"a results row needs {', '.join(FILES_REQUIRED)} and Answer.<control> columns")
    if not any(c.startswith("Answer.") for c in columns):
        raise InputError(f"{where}: no Answer.<control> column", path=path,
                         hint="name answer columns Answer.<control>, e.g. Answer.context")


def write_file_tasks(round_: Round, out_dir: str | Path) -> list[Path]:
    """Write the round's tasks for an external crowd: ``tasks.csv`` (AMT input format) and ``tasks.json``.

    Columns: ``item_id`` (the task id, :meth:`~segbench.schemas.rounds.Round.task_id`), ``image`` (relative to the data root), ``width``, ``height``, then the
    item's ``data`` fields flattened (nested keys joined with ``.``, lists as JSON), sorted. Both
    files hold the same rows in the round's item order; JSON keeps the values' types.

    Raises:
        InputError: a data field would overwrite one of the four task columns.
    """
    rows = []
    for item in round_.items:
        extra = _flatten(item.data)
        clash = sorted(set(extra) & set(TASK_COLUMNS))
        if clash:
            raise InputError(f"data field {clash[0]!r} clashes with a task column", item=f"item {item.item_id}",
                             hint=f"rename the field; {', '.join(TASK_COLUMNS)} are reserved")
        rows.append({"item_id": round_.task_id(item.item_id), "image": item.image, "width": item.width, "height": item.height,
                     **extra})
    extras = sorted({k for row in rows for k in row} - set(TASK_COLUMNS))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=[*TASK_COLUMNS, *extras], lineterminator="\n", restval="")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _csv_value(v) for k, v in row.items()})
    out_dir = Path(out_dir)
    return [atomic_write_text(out_dir / "tasks.csv", buffer.getvalue()),
            write_json(out_dir / "tasks.json", rows, indent=1)]


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _csv_value(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return canonical_json(value)
    if value is None:
        return ""
    return spreadsheet_safe(value) if isinstance(value, str) else value


def spreadsheet_safe(text: str) -> str:
    """``text`` as a CSV cell a spreadsheet shows as text: a leading ``= + - @`` (or tab, CR) would
    make it a formula (``=HYPERLINK(…)``), so it gets a ``'`` in front (OWASP's CSV-injection rule)."""
    return f"'{text}" if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
