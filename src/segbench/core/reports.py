"""The files every evaluation report has: ``metrics.json``, ``report.md`` and its plots.

``metrics.json`` has one shape for every evaluation: ``{"evaluated": {...}, "metrics": {...}}``,
what was evaluated (sources, revision, thresholds) next to the metrics it gave. Readers take the
metrics from ``["metrics"]`` whatever the evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from segbench.core.io import atomic_write_bytes, atomic_write_text, write_json

METRICS_NAME = "metrics.json"
REPORT_NAME = "report.md"


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
