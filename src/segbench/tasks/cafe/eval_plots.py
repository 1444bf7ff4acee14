"""The plots of ``segbench evaluate cafe`` and ``segbench evaluate cgf1`` reports, as PNG bytes.

Apart from :mod:`segbench.tasks.cafe.eval_report`, which writes the reports, so that the process that
draws them (:mod:`segbench.core.figures`) imports matplotlib and these functions, not the evaluation.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from segbench.core.reports import figure_png, fmt, legend_beside, new_figure
from segbench.tasks.cafe.published import CAFE_SUBSETS, THIS_MODEL

ROWS = CAFE_SUBSETS  # SM, CC, OC, then Overall: the rows of the CAFE table
OVERALL = ROWS[-1]


def file_label(path: str) -> str:
    """How a ground-truth file is named in tables and legends: its stem."""
    return Path(path).stem


def plot_standing(standing: Mapping[str, list[dict[str, Any]]]) -> bytes:
    """PNG bytes: per subset, one panel of the published models' cgF1 (×100) as bars, the model highlighted."""
    rows = max(len(models) for models in standing.values())
    fig = new_figure(figsize=(12, 0.6 * rows + 2.2))
    for k, (subset, models) in enumerate(standing.items()):
        ax = fig.add_subplot(2, 2, k + 1)
        names = [row["model"] for row in models][::-1]
        values = [row["cgF1"] for row in models][::-1]
        colors = ["#c44e52" if name == THIS_MODEL else "#8c8c8c" for name in names]
        bars = ax.barh(names, values, color=colors)
        ax.bar_label(bars, labels=[f"{v:g}" for v in values], fontsize=7, padding=2)
        ax.axvline(0, color="black", linewidth=0.6)
        ax.set_xlim(min(0.0, *values) - 10, max(100.0, *values) + 5)
        ax.set_xlabel("cgF1 ×100", fontsize=8)
        ax.set_title(f"CAFE {subset}", fontsize=9)
        ax.tick_params(labelsize=7)
    fig.suptitle("The model among the published results", fontsize=10)
    fig.tight_layout()
    return figure_png(fig)


def _bar_value(value: float | None) -> float:
    return 0.0 if value is None else value


def plot_cgf1_by_subset(metrics: Mapping[str, Any]) -> bytes:
    """PNG bytes: grouped bars of cgF1, IL_MCC and pmF1 per subset."""
    fig = new_figure(figsize=(8, 4.5))
    ax = fig.add_subplot()
    width = 0.27
    for k, (name, color) in enumerate((("cgF1", "#4c72b0"), ("IL_MCC", "#dd8452"), ("pmF1", "#55a868"))):
        values = [metrics[r][name] for r in ROWS]
        bars = ax.bar([i + (k - 1) * width for i in range(len(ROWS))], [_bar_value(v) for v in values], width,
                      label=name, color=color)
        ax.bar_label(bars, labels=[fmt(v) for v in values], fontsize=6, padding=2)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xticks(range(len(ROWS)), ROWS)
    ax.set_ylim(min(-0.1, *(_bar_value(metrics[r]["IL_MCC"]) - 0.1 for r in ROWS)), 1.2)
    ax.set_title("cgF1, IL_MCC and pmF1 per subset")
    legend_beside(ax)
    fig.tight_layout()
    return figure_png(fig)


def plot_false_positive_rates(metrics: Mapping[str, Any]) -> bytes:
    """PNG bytes: AFPR and UFPR stacked per subset (their sum is IL-FPR)."""
    fig = new_figure(figsize=(7, 4.5))
    ax = fig.add_subplot()
    afpr = [_bar_value(metrics[r]["AFPR"]) for r in ROWS]
    ufpr = [_bar_value(metrics[r]["UFPR"]) for r in ROWS]
    ax.bar(ROWS, afpr, color="#c44e52", label="AFPR (target-aligned)")
    top = ax.bar(ROWS, ufpr, bottom=afpr, color="#8c8c8c", label="UFPR (unaligned)")
    ax.bar_label(top, labels=[fmt(metrics[r]["IL-FPR"]) for r in ROWS], fontsize=7, padding=2)
    ax.set_ylim(0, 1.15)
    ax.set_ylabel("rate over negative prompts")
    ax.set_title(f"False positives on misleading prompts (τ = {metrics['params']['iou_threshold']:g})")
    legend_beside(ax)  # inside, it covered the SM bar's value
    fig.tight_layout()
    return figure_png(fig)


def plot_tau_sweep(metrics: Mapping[str, Any]) -> bytes:
    """PNG bytes: TA-TP rate, AFPR, UFPR, ACSR against τ, one line per subset."""
    sweep = metrics["tau_sweep"]
    fig = new_figure(figsize=(10, 6))
    panels = (("TA-TP rate", lambda row: row["TA-TP"] / row["N"] if row["N"] else None),
              ("AFPR", lambda row: row["AFPR"]), ("UFPR", lambda row: row["UFPR"]), ("ACSR", lambda row: row["ACSR"]))
    for k, (title, value) in enumerate(panels):
        ax = fig.add_subplot(2, 2, k + 1)
        for name in ROWS:
            ys = [value(row) for row in sweep[name]]
            if any(y is not None for y in ys):
                ax.plot(sweep["tau"], [float("nan") if y is None else y for y in ys], marker="o", markersize=3,
                        label=name, linewidth=2 if name == OVERALL else 1)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("τ (IoU with the target mask)", fontsize=8)
        ax.set_ylim(-0.02, 1.02)
        ax.tick_params(labelsize=7)
        if k == 0:
            ax.legend(fontsize=7)
    fig.tight_layout()
    return figure_png(fig)


def plot_cgf1_by_iou(summary: Mapping[str, Any]) -> bytes:
    """PNG bytes: cgF1 and pmF1 against the IoU threshold."""
    per_iou = summary["per_iou"]
    fig = new_figure(figsize=(7, 4))
    ax = fig.add_subplot()
    for name, label in (("cgF1", "cgF1"), ("positive_micro_F1", "pmF1")):
        ax.plot(per_iou["iou_thresholds"], per_iou[name], marker="o", label=label)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xlabel("IoU threshold")
    ax.set_ylim(min(-0.05, min(per_iou["cgF1"]) - 0.05), 1.02)
    ax.set_title(f"cgF1 {fmt(summary['cgF1'])}, IL_MCC {fmt(summary['IL_MCC'])}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return figure_png(fig)


def plot_cgf1_each_by_iou(metrics: Mapping[str, Any]) -> bytes:
    """PNG bytes: cgF1 against the IoU threshold, one line per ground-truth file."""
    fig = new_figure(figsize=(7, 4))
    ax = fig.add_subplot()
    low = 0.0
    for f in metrics["files"]:
        per_iou = f["per_iou"]
        ax.plot(per_iou["iou_thresholds"], per_iou["cgF1"], marker="o", label=file_label(f["ground_truth"]))
        low = min(low, *per_iou["cgF1"])
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_xlabel("IoU threshold")
    ax.set_ylabel("cgF1")
    ax.set_ylim(low - 0.05, 1.02)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return figure_png(fig)


__all__ = ["ROWS", "file_label", "plot_standing", "plot_cgf1_by_iou", "plot_cgf1_by_subset",
           "plot_cgf1_each_by_iou", "plot_false_positive_rates", "plot_tau_sweep"]
