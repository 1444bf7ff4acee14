"""Terminal output of the CLI: progress bars, summaries and error messages (rich, on stderr/stdout).

Only the CLI uses this module; library code reports through :mod:`segbench.progress` and logging.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

out = Console()
err = Console(stderr=True)


class RichListener:
    """A :class:`segbench.progress.Listener` drawing one bar per step on stderr."""

    def __init__(self) -> None:
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=err, transient=False,
        )

    def __enter__(self) -> RichListener:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def start(self, description: str, total: int | None) -> object:
        return self.progress.add_task(description, total=total)

    def advance(self, handle: object, amount: int = 1) -> None:
        self.progress.advance(handle, amount)  # type: ignore[arg-type]

    def finish(self, handle: object) -> None:
        task = self.progress.tasks[[t.id for t in self.progress.tasks].index(handle)]
        if task.total is None:
            self.progress.update(handle, total=task.completed or 1, completed=task.completed or 1)  # type: ignore[arg-type]


def table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> Table:
    t = Table(title=title, title_justify="left", title_style="bold")
    for index, header in enumerate(headers):
        t.add_column(header, justify="left" if index == 0 else "right")
    for row in rows:
        t.add_row(*("–" if v is None else f"{v:.4f}" if isinstance(v, float) else str(v) for v in row))
    return t


def key_values(title: str, items: Mapping[str, Any]) -> Table:
    t = Table(title=title, title_justify="left", title_style="bold", show_header=False, box=None)
    t.add_column(style="dim")
    t.add_column()
    for key, value in items.items():
        t.add_row(key, "–" if value is None else f"{value:.4f}" if isinstance(value, float) else str(value))
    return t


def error(message: str) -> None:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True, markup=True)
