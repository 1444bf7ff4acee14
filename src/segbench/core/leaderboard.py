"""Leaderboards: many evaluation reports of one benchmark in one ranked table, with the published
numbers beside them where the benchmark's paper or leaderboard gives them.

A report is a folder an ``evaluate`` command wrote: its ``manifest.json`` names the evaluation
(``eval/cafe``, ``eval/COCO-CD``, ...) and its ``metrics.json`` holds the metrics. Each dataset
registers a :class:`Board` per evaluation it writes (``DatasetSpec.leaderboards``): the columns it
shows, how each is read from the metrics, which way is better, and its published rows. Pure
functions but :func:`read_report`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from segbench.core.errors import InputError
from segbench.core.io import read_json

Metrics = Mapping[str, Any]


@dataclass(frozen=True)
class Column:
    """One column: its name, its value in a report's metrics (None: undefined), and which way is better."""

    name: str
    value: Callable[[Metrics], float | None]
    higher_is_better: bool = True
    percent: bool = False  # a fraction shown ×100, as the papers print it


@dataclass(frozen=True)
class Entry:
    """One row: a report (``source`` "evaluated") or a published result (``source`` names where from)."""

    name: str
    source: str
    values: dict[str, float | None]


@dataclass(frozen=True)
class Board:
    """The leaderboard of one evaluation (``evaluation``: the ``dataset`` its reports' manifests name)."""

    evaluation: str
    title: str
    columns: tuple[Column, ...]
    published: Callable[[], list[Entry]] = field(default=lambda: [])  # in the columns' display units
    sources: Callable[[], list[str]] = field(default=lambda: [])  # where the published rows come from

    def has(self, name: str) -> bool:
        return any(c.name.lower() == name.lower() for c in self.columns)

    def column(self, name: str | None) -> Column:
        """The column called ``name`` (the first, the board's headline, when None).

        Raises:
            InputError: no such column; the message lists them.
        """
        if name is None:
            return self.columns[0]
        found = next((c for c in self.columns if c.name.lower() == name.lower()), None)
        if found is None:
            raise InputError(f"{self.title} has no column {name!r}", item="--by",
                             hint=f"its columns: {', '.join(c.name for c in self.columns)}")
        return found


def read_report(folder: Path) -> tuple[str, Metrics]:
    """The evaluation a report folder holds and its metrics.

    Raises:
        InputError: the folder has no ``manifest.json`` and ``metrics.json`` of an ``evaluate`` command.
    """
    manifest, metrics = Path(folder) / "manifest.json", Path(folder) / "metrics.json"
    for path in (manifest, metrics):
        if not path.is_file():
            raise InputError(f"not an evaluation report: no {path.name}", path=folder,
                             hint="pass the --out folders of segbench evaluate commands")
    described = read_json(manifest)
    evaluation = described.get("dataset") if isinstance(described, dict) else None
    data = read_json(metrics)
    if not isinstance(evaluation, str) or not evaluation.startswith("eval/") or not isinstance(data, dict) \
            or not isinstance(data.get("metrics"), dict):
        raise InputError("not an evaluation report (its manifest names no evaluation, or metrics.json has no "
                         "metrics)", path=folder, hint="pass the --out folders of segbench evaluate commands")
    return evaluation, data["metrics"]


def entry(board: Board, name: str, metrics: Metrics) -> Entry:
    """A report's row: each column's value, ×100 where the column is a percentage."""
    values = {}
    for column in board.columns:
        value = column.value(metrics)
        values[column.name] = None if value is None else (100 * value if column.percent else value)
    return Entry(name=name, source="evaluated", values=values)


@dataclass(frozen=True)
class Ranked:
    """One board's table: its rows best first by ``ranked_by``, ranks shared by equal values."""

    evaluation: str
    title: str
    ranked_by: str
    higher_is_better: bool
    columns: list[str]
    percent: list[str]  # the columns shown ×100
    rows: list[Entry]
    ranks: list[int | None]  # None: the ranked column is undefined for that row
    sources: list[str]  # where the published rows come from


def ranked(board: Board, entries: Sequence[Entry], by: str | None = None) -> Ranked:
    """The entries and the board's published rows, best first by column ``by`` (the headline by
    default; undefined values last, then by name).

    Raises:
        InputError: the board has no column ``by``.
    """
    column = board.column(by)
    sign = -1 if column.higher_is_better else 1

    def key(row: Entry) -> tuple[bool, float, str]:
        value = row.values.get(column.name)
        return value is None, 0.0 if value is None else sign * value, row.name

    rows = sorted([*entries, *board.published()], key=key)
    ranks: list[int | None] = []
    for index, row in enumerate(rows):
        value = row.values.get(column.name)
        tied = index and value is not None and value == rows[index - 1].values.get(column.name)
        ranks.append(None if value is None else ranks[-1] if tied else index + 1)
    return Ranked(evaluation=board.evaluation, title=board.title, ranked_by=column.name,
                  higher_is_better=column.higher_is_better, columns=[c.name for c in board.columns],
                  percent=[c.name for c in board.columns if c.percent], rows=rows, ranks=ranks,
                  sources=board.sources())


HEADERS = ("rank", "model")


def cells(table: Ranked) -> list[list[str]]:
    """The table's rows as shown: rank, model, each column (one decimal for a percentage, three
    otherwise, ``–`` if undefined), source."""
    def shown(column: str, value: float | None) -> str:
        if value is None:
            return "–"
        return f"{value:.1f}" if column in table.percent else f"{value:.3f}"

    return [[str(rank) if rank is not None else "–", row.name, *(shown(c, row.values.get(c)) for c in table.columns),
             row.source] for rank, row in zip(table.ranks, table.rows, strict=True)]


def markdown(tables: Sequence[Ranked]) -> str:
    """Every table as Markdown, with what each column means and where the published rows come from."""
    from segbench.core.reports import markdown_table

    parts = ["# Leaderboard", ""]
    for table in tables:
        order = "higher" if table.higher_is_better else "lower"
        parts += [f"## {table.title}", "",
                  f"Ranked by {table.ranked_by} ({order} is better); percentages ×100 "
                  f"({', '.join(table.percent) or 'none'}).", "",
                  markdown_table([*HEADERS, *table.columns, "source"], cells(table))]
        parts += [f"Published rows, {source}" for source in table.sources] + ([""] if table.sources else [])
    return "\n".join(parts)
