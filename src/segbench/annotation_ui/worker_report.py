"""The worker report of a round, written at every ingest: ``data/rounds/<key>.workers.{json,md,png}``.

One row per worker (answers, gold accuracy, agreement with the aggregate, median seconds per task,
the SPIN signals) and the suspicious workers with their reasons; the rules are those of
:mod:`segbench.core.worker_quality`. A qualification round's ingest also writes its pass list
(:func:`segbench.annotation_ui.gold.write_pass_list`). Same answers ⇒ the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from segbench.annotation_ui import gold
from segbench.annotation_ui.rounds import RoundStore
from segbench.core.io import atomic_write_bytes, atomic_write_text, read_json, write_json
from segbench.core.reports import cell, figure_png, markdown_table
from segbench.schemas.rounds import Round, WorkerSummary

WORKERS_SUFFIX = ".workers"


def report_paths(store: RoundStore, key: str) -> dict[str, Path]:
    stem = store.root / f"{key}{WORKERS_SUFFIX}"
    return {ext: stem.with_name(f"{stem.name}.{ext}") for ext in ("json", "md", "png")}


def write_worker_report(store: RoundStore, round_: Round, scored: Mapping[str, Any],
                        left_out: Mapping[str, Sequence[str]], qualified: set[str] | None,
                        files_folder: Path) -> WorkerSummary:
    """Write the round's worker report (``score_workers``'s result, with the workers the screened
    aggregation left out) and a qualification round's pass list."""
    report = {"round": round_.key, "purpose": round_.purpose, "requires": round_.requires,
              "aggregation": round_.aggregation, **scored,
              "left_out": [{"worker": w, "reasons": list(r)} for w, r in sorted(left_out.items())]}
    paths = report_paths(store, round_.key)
    written = {"workers_json": write_json(paths["json"], report, indent=1),
               "workers_markdown": atomic_write_text(paths["md"], worker_markdown(report)),
               "workers_plot": atomic_write_bytes(paths["png"], worker_plot(report))}
    passed = None
    if round_.purpose == "qualification":
        written.update(gold.write_pass_list(store, round_, report, files_folder))
        passed = len(read_json(written["pass_list"])["passed"])
    return WorkerSummary(paths=written, suspicious=len(report["suspicious"]), passed=passed)


def worker_markdown(report: dict[str, Any]) -> str:
    header = ["worker", "answers", "gold", "gold accuracy", "agreement", "median s", "absent rate",
              "missing seg. rate", "time z", "flags"]
    rows = [[w["worker"], w["answers"], w["gold_answers"], w["gold_accuracy"], w["agreement_with_aggregate"],
             w["median_seconds"], w["flags"]["absent_rate"], w["flags"]["missing_segmentation_rate"],
             w["flags"]["time_z"], ", ".join(w["flags"]["raised"]) or "-"] for w in report["workers"]]
    suspicious = [[s["worker"], "; ".join(s["reasons"])] for s in report["suspicious"]]
    rules = ", ".join(f"{k.replace('_', ' ')} {cell(v)}" for k, v in report["rules"].items())
    lines = [f"# Workers of round {report['round']}", "",
             f"Purpose: {report['purpose']}" + (f"; counted only if on the pass list of {report['requires']}"
                                                 if report["requires"] else ""), "",
             markdown_table(header, [[cell(v) for v in row] for row in rows]), "",
             f"## Suspicious workers ({len(suspicious)})", "",
             markdown_table(["worker", "reasons"], suspicious) if suspicious else "None.", "",
             f"Rules: {rules}.", ""]
    return "\n".join(lines)


def worker_plot(report: dict[str, Any]) -> bytes:
    """Gold accuracy (or agreement, without gold) against median seconds per task; suspicious in red."""
    from matplotlib.figure import Figure  # here: matplotlib is slow to import and only the report needs it

    fig = Figure(figsize=(6, 4))
    ax = fig.add_subplot()
    bad = {s["worker"] for s in report["suspicious"]}
    for w in report["workers"]:
        quality = w["gold_accuracy"] if w["gold_accuracy"] is not None else w["agreement_with_aggregate"]
        x = w["median_seconds"] if w["median_seconds"] is not None else 0.0
        ax.scatter([x], [quality if quality is not None else 0.0], color="tab:red" if w["worker"] in bad else "tab:blue")
        ax.annotate(w["worker"], (x, quality if quality is not None else 0.0), fontsize=7)
    ax.set_xlabel("median seconds per task (0: not timed)")
    ax.set_ylabel("gold accuracy (else agreement)")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title(f"Workers of {report['round']} (red: suspicious)")
    return figure_png(fig)
