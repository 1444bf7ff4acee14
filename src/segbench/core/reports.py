"""What every dataset's tables and reports share: number formats, Markdown tables, plots as PNG
bytes, and the skip report of a build.

Nothing here computes a metric; the datasets' report modules call these so every report reads alike.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from segbench.core.errors import SkipReport
from segbench.core.io import write_json


def fmt(value: float | None) -> str:
    """4 decimals, or ``n/a`` for an undefined value."""
    return "n/a" if value is None else f"{value:.4f}"


def table_lines(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table of ready-made cells as lines, followed by a blank line."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines + [""]


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table; floats with 4 decimals, None as an en dash."""

    def cell(value: Any) -> str:
        if value is None:
            return "–"
        return f"{value:.4f}" if isinstance(value, float) else str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def figure_png(fig: Figure) -> bytes:
    """A matplotlib figure as PNG bytes, drawn on a private Agg canvas (no pyplot global state)."""
    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    # No "Software" tag: the bytes then do not change with the matplotlib version.
    fig.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return buffer.getvalue()


def write_skip_report(folder: Path, report: SkipReport) -> Path:
    """``skipped.json`` in ``folder``: every item a build skipped, with its file, id and the rule broken."""
    return write_json(folder / "skipped.json", report.to_json(), indent=1)
