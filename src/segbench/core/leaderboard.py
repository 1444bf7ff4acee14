"""Leaderboards: many evaluation reports of one benchmark in one ranked table, with the published
numbers beside them where the benchmark's paper or leaderboard gives them.

A report is a folder an ``evaluate`` command wrote: its ``manifest.json`` names the evaluation
(``eval/cafe``, ``eval/COCO-CD``, ...) and its ``metrics.json`` holds the metrics. Each dataset
registers a :class:`Board` per evaluation it writes (``DatasetSpec.leaderboards``): the columns it
shows, how each is read from the metrics, which way is better, and its published rows. Pure
functions but :func:`read_report`.
"""

from __future__ import annotations

import os.path
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


def read_report(folder: Path) -> tuple[str, Metrics, Metrics]:
    """The evaluation a report folder holds, its metrics and what it evaluated (``evaluated``).

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
    evaluated = data.get("evaluated")
    return evaluation, data["metrics"], evaluated if isinstance(evaluated, dict) else {}


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


@dataclass(frozen=True)
class Across:
    """One board's ``metric`` for each model (a row: what the reports scored, their predictions or
    descriptions) under each value of ``key`` (a column: something the reports record in "evaluated",
    such as the judge's vocabulary, the coverage, ρ), and Kendall's τ between the models' rankings
    under each two values: does the choice of ``key`` reorder the models?"""

    evaluation: str
    title: str
    key: str
    metric: str
    values: list[str]
    models: list[str]
    cells: dict[tuple[str, str], float | None]
    tau: list[tuple[str, str, float | None, int]]  # (value, value, τ or None, models ranked under both)


def _model(evaluated: Metrics) -> str:
    """What a report scored: its predictions (a folder of per-level files by their common folder) or descriptions."""
    scored = evaluated.get("predictions", evaluated.get("descriptions"))
    if isinstance(scored, dict) and scored:
        return os.path.commonpath([str(v) for v in scored.values()]) or ", ".join(sorted(map(str, scored.values())))
    return str(scored)


def across(board: Board, reports: Sequence[tuple[str, Metrics, Metrics]], key: str, by: str | None = None) -> Across:
    """``reports`` (name, metrics, evaluated) of one board laid out model × ``key`` (see :class:`Across`).

    Raises:
        InputError: a report records no ``key`` (names it and the keys it has), or two reports
            score one model under one value (names both).
    """
    from scipy.stats import kendalltau

    column = board.column(by)
    cells: dict[tuple[str, str], float | None] = {}
    where: dict[tuple[str, str], str] = {}
    for name, metrics, evaluated in reports:
        if key not in evaluated:
            raise InputError(f"report {name} records no {key!r} in what it evaluated", item="--across",
                             hint=f"its keys: {', '.join(sorted(evaluated)) or 'none'}")
        model, value = _model(evaluated), str(evaluated[key])
        if (model, value) in where:
            raise InputError(f"reports {where[(model, value)]} and {name} both score {model} with {key} {value}",
                             item="--across", hint="pass one report per model and value")
        where[(model, value)] = name
        cells[(model, value)] = entry(board, name, metrics).values[column.name]
    values = sorted({value for _, value in cells}, key=_natural)
    models = sorted({model for model, _ in cells})
    tau = []
    for i, first in enumerate(values):
        for second in values[i + 1:]:
            both = [m for m in models if cells.get((m, first)) is not None and cells.get((m, second)) is not None]
            result = (kendalltau([cells[(m, first)] for m in both], [cells[(m, second)] for m in both]).statistic
                      if len(both) >= 2 else None)
            tau.append((first, second, None if result is None or result != result else float(result), len(both)))
    return Across(evaluation=board.evaluation, title=board.title, key=key, metric=column.name, values=values,
                  models=models, cells=cells, tau=tau)


def _natural(value: str) -> tuple[int, float | str]:
    """Numbers in numeric order (0.2 before 0.95 before 1), then text."""
    try:
        return 0, float(value)
    except ValueError:
        return 1, value


def across_cells(table: Across) -> list[list[str]]:
    """The model × value rows as shown (three decimals, ``–`` where no report scored it)."""
    return [[model, *("–" if (v := table.cells.get((model, value))) is None else f"{v:.3f}"
                      for value in table.values)] for model in table.models]


def tau_cells(table: Across) -> list[list[str]]:
    return [[first, second, "–" if tau is None else f"{tau:.3f}", str(count)] for first, second, tau, count in table.tau]


def across_markdown(tables: Sequence[Across]) -> str:
    from segbench.core.reports import markdown_table

    parts = []
    for table in tables:
        parts += [f"## {table.title}: {table.metric} across {table.key}", "",
                  markdown_table(["model", *table.values], across_cells(table)),
                  "Kendall's τ between the models' rankings under two values (1: the same order):", "",
                  markdown_table([f"{table.key}", f"{table.key}", "τ", "models"], tau_cells(table))]
    return "\n".join(parts)
