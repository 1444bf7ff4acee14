"""What every dataset's tables and reports share: number formats, Markdown tables, plots as PNG
bytes, the skip report of a build, and the files every evaluation report has.

``metrics.json`` has one shape for every evaluation: ``{"evaluated": {...}, "metrics": {...}}``,
what was evaluated (sources, revision, thresholds) next to the metrics it gave. Readers take the
metrics from ``["metrics"]`` whatever the evaluation. Nothing here computes a metric.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from segbench.core.errors import SkipReport
from segbench.core.io import atomic_write_bytes, atomic_write_text, write_json

if TYPE_CHECKING:  # matplotlib takes ~1 s to import: only commands that draw pay for it
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

METRICS_NAME = "metrics.json"
REPORT_NAME = "report.md"


NOT_AVAILABLE = "n/a"


def fmt(value: float | None) -> str:
    """4 decimals, or ``n/a`` for an undefined value (None or NaN)."""
    if value is None or value != value:
        return NOT_AVAILABLE
    return f"{value:.4f}"


def cell(value: Any) -> str:
    """A table cell: floats with 4 decimals, ``n/a`` for a missing value, yes/no for a truth value."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None or isinstance(value, float):
        return fmt(value)
    return str(value)


def plain(values: Mapping[str, Any]) -> str:
    """A dict as a log line reads: ``parts 14, subparts 40, levels (exact 3, broad 5), names a, b``.

    Keys lose their underscores, floats get 4 decimals, nested dicts go in brackets, lists are joined;
    never a Python repr.
    """
    def shown(value: Any) -> str:
        if isinstance(value, Mapping):
            return f"({plain(value)})" if value else "none"
        if isinstance(value, (list, tuple, set, frozenset)):
            return ", ".join(shown(item) for item in value) if value else "none"
        return cell(value)

    return ", ".join(f"{str(key).replace('_', ' ')} {shown(value)}" for key, value in values.items())


def portable_paths(value: Any, base: str | Path) -> Any:
    """``value`` (a string, or dicts / lists of them) with every absolute path made portable.

    Reports get versioned with the data, so they must not name this machine's folders: a path
    below ``base`` (the project) becomes relative to it (``.`` for ``base`` itself), any other
    absolute path keeps only its name. ``<path>@<rev>`` and ``<path>:<file>`` keep their suffix
    (``<project>:<file>`` is just ``<file>``).
    """
    if isinstance(value, Mapping):
        return {key: portable_paths(item, base) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable_paths(item, base) for item in value]
    if isinstance(value, Path):
        value = str(value)
    if not isinstance(value, str) or not value.startswith("/"):
        return value
    for separator in ("@", ":"):
        head, found, tail = value.partition(separator)
        if found and tail:
            head = portable_paths(head, base)
            # A file of the project itself reads as its relative path, not as ".:<file>".
            return tail if (head, separator) == (".", ":") else f"{head}{separator}{tail}"
    path, root = Path(value), Path(base).resolve()
    try:
        return path.relative_to(root).as_posix() or "."
    except ValueError:
        return path.name


def evaluated_lines(evaluated: Mapping[str, Any]) -> list[str]:
    """The "What was evaluated" section of a report: one line per key, sorted, in plain words.

    A missing revision is the working tree; other missing values are ``n/a``; a group of files
    (ground truth per level) is listed as ``name `file```, never as a Python dict.
    """
    def shown(key: str, value: Any) -> str:
        if value is None:
            return "working tree" if key == "rev" else NOT_AVAILABLE
        if isinstance(value, Mapping):
            return ", ".join(f"{name} {shown(name, item)}" for name, item in value.items())
        if isinstance(value, (list, tuple)):
            return ", ".join(shown(key, item) for item in value)
        # Parameters (ρ, thresholds) as given, not as 4-decimal metrics.
        return f"`{value:g}`" if isinstance(value, float) else f"`{cell(value)}`"

    return ["## What was evaluated", ""] + [f"- **{key}**: {shown(key, evaluated[key])}"
                                            for key in sorted(evaluated)] + [""]


def table_lines(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table of ready-made cells as lines, followed by a blank line."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines + [""]


_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


def table_cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell: a ``|`` cannot end the cell, a line break cannot
    start a row, and a ``<`` cannot open an HTML tag (a worker id or an edited record is anyone's text)."""
    return _TAG_START.sub("&lt;", " ".join(text.replace("|", "\\|").splitlines()))


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table; cells as :func:`cell` writes them, made safe by :func:`table_cell`."""
    lines = ["| " + " | ".join(table_cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(table_cell(cell(v)) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def legend_beside(ax: "Axes", **options: Any) -> None:
    """The axes' legend to their right, outside the plotting area, so it covers no bar, point or label.

    The figure's ``tight_layout`` (or constrained layout) then makes room for it.
    """
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize=8, **options)


def new_figure(**options: Any) -> "Figure":
    """A matplotlib figure (``Figure(**options)``), for :func:`figure_png`. matplotlib is imported on
    the first figure, not with a report module: its 0.25 s would otherwise be paid by every command
    that imports one, and by an evaluation whose figures are drawn in other processes
    (:mod:`segbench.core.figures`)."""
    from matplotlib.figure import Figure

    return Figure(**options)


def figure_png(fig: "Figure") -> bytes:
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

    ``report.md`` ends with a "Plots" section showing each PNG (relative links: the folder moves
    as a whole).

    Args:
        metrics: the evaluation's metrics; evaluated: what was evaluated (both JSON-serialisable).
        markdown: the text of ``report.md``.
        plots: name -> (file name, bytes): the plots, and other files beside the report (a table's CSV).

    Returns:
        ``{"metrics": path, "report": path, <plot name>: path...}``.
    """
    out = Path(out_dir)
    shown = [f"![{name.replace('_', ' ')}]({file_name})" for name, (file_name, _) in plots.items()
             if file_name.endswith(".png")]
    if shown:
        markdown = markdown.rstrip("\n") + "\n\n## Plots\n\n" + "\n\n".join(shown) + "\n"
    paths = {"metrics": write_json(out / METRICS_NAME, {"evaluated": dict(evaluated), "metrics": dict(metrics)},
                                   indent=2),
             "report": atomic_write_text(out / REPORT_NAME, markdown)}
    for name, (file_name, data) in plots.items():
        paths[name] = atomic_write_bytes(out / file_name, data)
    return paths
