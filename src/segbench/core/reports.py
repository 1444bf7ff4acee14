"""What every dataset's tables and reports share: number formats, Markdown tables, plots as PNG
bytes, the skip report of a build, and the files every evaluation report has.

``metrics.json`` has one shape for every evaluation: ``{"evaluated": {...}, "metrics": {...}}``,
what was evaluated (sources, revision, thresholds) next to the metrics it gave. Readers take the
metrics from ``["metrics"]`` whatever the evaluation. Nothing here computes a metric.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from segbench.core.errors import SkipReport
from segbench.core.io import atomic_write_bytes, atomic_write_text, write_json

if TYPE_CHECKING:  # matplotlib takes ~1 s to import: only commands that draw pay for it
    from matplotlib.figure import Figure

METRICS_NAME = "metrics.json"
REPORT_NAME = "report.md"


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
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    # No "Software" tag: the bytes then do not change with the matplotlib version.
    fig.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return buffer.getvalue()


def write_skip_report(folder: Path, report: SkipReport) -> Path:
    """``skipped.json`` in ``folder``: every item a build skipped, with its file, id and the rule broken."""
    return write_json(folder / "skipped.json", report.to_json(), indent=1)


def write_report_files(out_dir: str | Path, metrics: Mapping[str, Any], evaluated: Mapping[str, Any],
                       markdown: str, plots: Mapping[str, tuple[str, bytes]]) -> dict[str, Path]:
    """Write ``metrics.json``, ``report.md`` and the plots into ``out_dir``, each atomically.

    Args:
        metrics: the evaluation's metrics; evaluated: what was evaluated (both JSON-serialisable).
        markdown: the text of ``report.md``.
        plots: name -> (file name, PNG bytes).

    Returns:
        ``{"metrics": path, "report": path, <plot name>: path...}``.
    """
    out = Path(out_dir)
    paths = {"metrics": write_json(out / METRICS_NAME, {"evaluated": dict(evaluated), "metrics": dict(metrics)},
                                   indent=2),
             "report": atomic_write_text(out / REPORT_NAME, markdown)}
    for name, (file_name, data) in plots.items():
        paths[name] = atomic_write_bytes(out / file_name, data)
    return paths
