"""``segbench leaderboard REPORT...``: evaluation reports ranked per benchmark, beside published results."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from segbench import console
from segbench.cli.common import display_path

if TYPE_CHECKING:
    from segbench.core.leaderboard import Metrics


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add ``leaderboard`` to the root command group."""
    app.command("leaderboard")(leaderboard_command)


def leaderboard_command(
    reports: list[Path] = typer.Argument(..., help="Report folders (the --out of evaluate commands), of one "
                                                   "benchmark or several."),
    by: str = typer.Option(None, "--by", metavar="COLUMN", help="The column to rank by, in the benchmarks that "
                                                                "have it (default, and elsewhere: each "
                                                                "benchmark's first, e.g. cgF1 for CAFE)."),
    out: Path = typer.Option(None, "--out", help="Also write the tables as Markdown to this file."),
    across_key: str = typer.Option(None, "--across", metavar="KEY", help="Also lay each benchmark out model × KEY, "
                                   "a field of what the reports evaluated (vocab, coverage, mapping, rho...), with "
                                   "Kendall's τ between the models' rankings under each two values."),
) -> None:
    """Rank evaluation reports per benchmark in one table each, with the published results beside them.

    CAFE's table holds the CAFE leaderboard's and paper's numbers; the other benchmarks rank the
    reports given. A report is the folder an evaluate command wrote (manifest.json, metrics.json).
    """
    from segbench import registry
    from segbench.core.errors import InputError
    from segbench.core.io import atomic_write_text
    from segbench.core.leaderboard import (
        HEADERS,
        across,
        across_cells,
        across_markdown,
        cells,
        entry,
        markdown,
        ranked,
        read_report,
        tau_cells,
    )

    boards = registry.leaderboards()
    found: dict[str, list[tuple[str, Metrics, Metrics]]] = {}
    names = _names(reports)
    for folder, name in zip(reports, names, strict=True):
        evaluation, metrics, evaluated = read_report(folder)
        if evaluation not in boards:
            raise InputError(f"no leaderboard for {evaluation}", path=folder,
                             hint=f"leaderboards: {', '.join(sorted(boards))}")
        found.setdefault(evaluation, []).append((name, metrics, evaluated))
    chosen = [boards[evaluation] for evaluation in found]
    if by is not None and not any(board.has(by) for board in chosen):
        chosen[0].column(by)  # no benchmark has it: refused, naming the columns there are
    column = {board.evaluation: by if by is not None and board.has(by) else None for board in chosen}
    tables = [ranked(board, [entry(board, name, metrics) for name, metrics, _ in found[board.evaluation]],
                     column[board.evaluation]) for board in chosen]
    laid_out = ([across(board, found[board.evaluation], across_key, column[board.evaluation]) for board in chosen]
                if across_key else [])
    for table in tables:
        console.out.print(console.table(f"{table.title}: ranked by {table.ranked_by}",
                                        [*HEADERS, *table.columns, "source"], cells(table)))
    for pivot in laid_out:
        console.out.print(console.table(f"{pivot.title}: {pivot.metric} across {pivot.key}",
                                        ["model", *pivot.values], across_cells(pivot)))
        console.out.print(console.table(f"Kendall's τ between rankings ({pivot.key})",
                                        [pivot.key, pivot.key, "τ", "models"], tau_cells(pivot)))
    if out is not None:
        atomic_write_text(out, markdown(tables) + ("\n" + across_markdown(laid_out) if laid_out else ""))
        console.out.print(f"Leaderboard: {display_path(out)}")
    console.set_summary(tables)


def _names(reports: list[Path]) -> list[str]:
    """Each report's name: its folder's name, or its path where two folders share a name."""
    names = [folder.name or str(folder) for folder in reports]
    return [name if names.count(name) == 1 else str(folder) for name, folder in zip(names, reports, strict=True)]
