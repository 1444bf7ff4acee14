"""The SPIN evaluation report: ``metrics.json``, ``report.md`` and three PNG plots.

Input is the summary of ``SpinAccumulator.summarize`` (plus the recognition summary, when answers were
given) and a "what was evaluated" dict; nothing here computes a metric. Plots are drawn on a private Agg
canvas, as in :mod:`segbench.tasks.flip.report`, and every file is written atomically.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from segbench.core.figures import drawn
from segbench.core.reports import (
    evaluated_lines,
    figure_png,
    legend_beside,
    new_figure,
    table_lines,
    write_report_files,
)
from segbench.tasks.spin.metrics import LEVELS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

log = logging.getLogger(__name__)

MIOU_PLOT = "miou_by_level.png"
CONSISTENCY_PLOT = "consistency.png"
SUPER_PLOT = "per_supercategory.png"
EXAMPLES_NAME = "examples.png"  # ground truth and predictions of a few images (tasks.spin.examples)
LEVEL_LABEL = {"wholes": "objects", "parts": "parts", "subparts": "subparts"}
COLORS = {"general": "#4c72b0", "specific": "#dd8452"}


def pct(value: float | None) -> str:
    """A rate as a percentage with two decimals, as the seed's tables print them."""
    return "n/a" if value is None else f"{100 * value:.2f}"


def render_markdown(summary: Mapping[str, Any], evaluated: Mapping[str, Any]) -> str:
    """The Markdown report. Rates are printed as percentages (Tables 2 and 3 of the seed)."""
    prompts = summary["prompts"]
    lines = ["# SPIN evaluation", ""] + evaluated_lines(evaluated)[:-1]
    lines += [f"- **images**: {summary['num_images']}", f"- **prompts**: {', '.join(prompts) or 'none'}", ""]

    lines += ["## Localization (mIoU, %)", "",
              "mIoU = mean over categories of Σ intersection / Σ union over entities; a missing or empty "
              "prediction is an abstention (IoU 0).", ""]
    rows = [[LEVEL_LABEL[level], prompt, pct(lv["miou"]), pct(lv["mean_entity_iou"]), str(lv["entities"]),
             pct(lv["abstention_rate"]), str(lv["unprompted_predictions"])]
            for level in LEVELS for prompt, p in prompts.items() for lv in [p["levels"][level]]]
    lines += table_lines(["level", "prompt", "mIoU", "mean entity IoU", "entities", "abstention", "unprompted"], rows)

    lines += ["## Hierarchical consistency (%)", "",
              "SpCS: mean containment |child ∩ parent| / |child| over predicted pairs linked in the ground truth; "
              "SeCS: share of pixels foreground at all three levels whose subpart→part→object labels are "
              "entailed.", ""]
    rows = []
    for prompt, p in prompts.items():
        s = p["spcs"]
        rows.append([prompt, pct(s["mean"]), pct(s["pooled"]), pct(s["s2p"]["score"]), str(s["s2p"]["pairs"]),
                     pct(s["p2o"]["score"]), str(s["p2o"]["pairs"]), pct(p["secs"]["score"]),
                     str(p["secs"]["pixels"])])
    lines += table_lines(["prompt", "SpCS-Avg", "SpCS pooled", "SpCS-S2P", "S2P pairs", "SpCS-P2O", "P2O pairs", "SeCS",
                     "SeCS pixels"], rows)
    skipped = [f"{prompt}: {child} pairs without a child prediction, {parent} without a parent one"
               for prompt, p in prompts.items()
               for child, parent in [(sum(p["spcs"][r]["child_abstained"] for r in ("s2p", "p2o")),
                                      sum(p["spcs"][r]["parent_abstained"] for r in ("s2p", "p2o")))]
               if child or parent]
    lines += ["Left out of SpCS (abstentions): " + "; ".join(skipped) + ".", ""] if skipped else []

    lines += ["## Region size vs IoU (SPIN's Table 5)", "",
              "Least squares IoU ~ β1 · ln(region size in pixels) + β0 over the level's entities (an abstention is "
              "IoU 0); Pearson's R² and the p-value of β1. The paper marks p < 0.001 as significant.", ""]
    rows = [[LEVEL_LABEL[level], prompt, str(fit["entities"]), f"{fit['slope']:.4f}", f"{fit['r_squared']:.3f}",
             f"{fit['p_value']:.2g}"] if fit else [LEVEL_LABEL[level], prompt, "–", "–", "–", "–"]
            for level in LEVELS for prompt, p in prompts.items() for fit in [p.get("size_vs_iou", {}).get(level)]]
    lines += table_lines(["level", "prompt", "entities", "β1", "R²", "p"], rows)

    for prompt, p in prompts.items():
        lines += [f"## Per super-category ({prompt} prompts, %)", ""]
        lines += table_lines(["super-category", *(f"mIoU {LEVEL_LABEL[lv]}" for lv in LEVELS), "SpCS-S2P", "SpCS-P2O",
                         "SeCS"],
                        [[name, *(pct(v["miou"][lv]) for lv in LEVELS), pct(v["spcs"]["s2p"]["score"]),
                          pct(v["spcs"]["p2o"]["score"]), pct(v["secs"]["score"])]
                         for name, v in p["per_supercategory"].items()])

    recognition = summary.get("recognition")
    if recognition:
        lines += ["## Recognition (mACC, %)", "", "Accuracy per category, averaged over the level's categories; the "
                  "yes rate shows a bias towards answering yes.", ""]
        lines += table_lines(["level", "prompt", "mACC", "accuracy", "yes rate", "answers"],
                        [[LEVEL_LABEL[level], prompt, pct(r["macc"]), pct(r["accuracy"]), pct(r["yes_rate"]),
                          str(r["answers"])]
                         for level in LEVELS for prompt, by_level in recognition.items()
                         for r in [by_level.get(level)] if r])
    skip = summary.get("skipped")
    if skip and skip["count"]:
        lines += [f"{skip['count']} input items were skipped (see `skipped.json`); skipped predictions count as "
                  "abstentions.", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _bars(ax: Any, labels: list[str], series: Mapping[str, list[float | None]], xlabel: str, ylabel: str) -> None:
    width = 0.8 / max(len(series), 1)
    for i, (prompt, values) in enumerate(series.items()):
        xs = [k + (i - (len(series) - 1) / 2) * width for k in range(len(labels))]
        bars = ax.bar(xs, [100 * (v or 0.0) for v in values], width, label=f"{prompt} prompts",
                      color=COLORS.get(prompt))
        ax.bar_label(bars, labels=[pct(v) for v in values], fontsize=7, padding=2)
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylim(0, 110)  # headroom for the value printed above a bar of 100
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if series:
        legend_beside(ax)


def miou_by_level_figure(summary: Mapping[str, Any]) -> Figure:
    """mIoU per level, general and specific prompts side by side."""
    fig = new_figure(figsize=(8, 4))
    ax = fig.add_subplot()
    _bars(ax, [LEVEL_LABEL[lv] for lv in LEVELS],
          {prompt: [p["levels"][lv]["miou"] for lv in LEVELS] for prompt, p in summary["prompts"].items()},
          "hierarchy level", "mIoU (%)")
    ax.set_title("Localization by hierarchy level")
    fig.tight_layout()
    return fig


def plot_miou_by_level(summary: Mapping[str, Any]) -> bytes:
    """PNG bytes of :func:`miou_by_level_figure`."""
    return figure_png(miou_by_level_figure(summary))


def consistency_figure(summary: Mapping[str, Any]) -> Figure:
    """SpCS-S2P, SpCS-P2O, SpCS-Avg and SeCS per prompt kind."""
    fig = new_figure(figsize=(8, 4))
    ax = fig.add_subplot()
    _bars(ax, ["SpCS-S2P", "SpCS-P2O", "SpCS-Avg", "SeCS"],
          {prompt: [p["spcs"]["s2p"]["score"], p["spcs"]["p2o"]["score"], p["spcs"]["mean"], p["secs"]["score"]]
           for prompt, p in summary["prompts"].items()}, "consistency measure", "score (%)")
    ax.set_title("Hierarchical consistency")
    fig.tight_layout()
    return fig


def plot_consistency(summary: Mapping[str, Any]) -> bytes:
    """PNG bytes of :func:`consistency_figure`."""
    return figure_png(consistency_figure(summary))


def per_supercategory_figure(summary: Mapping[str, Any]) -> Figure:
    """One heat map per prompt kind, super-categories × (mIoU per level, SpCS-S2P/P2O, SeCS), with its colour bar."""
    prompts = list(summary["prompts"].items())
    columns = [*(f"mIoU\n{LEVEL_LABEL[lv]}" for lv in LEVELS), "SpCS\nS2P", "SpCS\nP2O", "SeCS"]
    fig = new_figure(figsize=(7.5 * max(len(prompts), 1), 5), layout="constrained")
    for index, (prompt, p) in enumerate(prompts, start=1):
        ax = fig.add_subplot(1, len(prompts), index)
        names = list(p["per_supercategory"])
        values = np.array([[*(v["miou"][lv] for lv in LEVELS), v["spcs"]["s2p"]["score"], v["spcs"]["p2o"]["score"],
                            v["secs"]["score"]] for v in p["per_supercategory"].values()], dtype=float)
        values = values.reshape(len(names), len(columns))  # None became NaN: drawn blank
        image = ax.imshow(100 * values, vmin=0, vmax=100, cmap="viridis", aspect="auto")
        for (r, c), value in np.ndenumerate(values):
            ax.text(c, r, "n/a" if np.isnan(value) else f"{100 * value:.0f}", ha="center", va="center", fontsize=7,
                    color="black" if np.isnan(value) or value >= 0.6 else "white")
        ax.set_xticks(range(len(columns)), columns, fontsize=7)
        ax.set_yticks(range(len(names)), names, fontsize=8)
        ax.set_xlabel("measure")
        ax.set_ylabel("super-category")
        ax.set_title(f"{prompt} prompts")
        fig.colorbar(image, ax=ax, label="score (%)")
    if not prompts:
        fig.add_subplot().axis("off")
    return fig


def plot_per_supercategory(summary: Mapping[str, Any]) -> bytes:
    """PNG bytes of :func:`per_supercategory_figure`."""
    return figure_png(per_supercategory_figure(summary))


def write_report(out_dir: str | Path, summary: Mapping[str, Any], evaluated: Mapping[str, Any],
                 examples: bytes | None = None) -> dict[str, Path]:
    """Write ``metrics.json`` (``{"evaluated", "metrics"}``), ``report.md``, the plots and the examples
    (``examples``: the PNG of :func:`segbench.tasks.spin.examples.draw`, None when none) into ``out_dir``.

    Returns:
        ``{"metrics", "report", "miou_by_level", "consistency", "per_supercategory": path}``, and
        ``"examples"`` when there are some.
    """
    pngs = drawn({"miou_by_level": (plot_miou_by_level, (summary,)), "consistency": (plot_consistency, (summary,)),
                  "per_supercategory": (plot_per_supercategory, (summary,))})
    files = {"miou_by_level": MIOU_PLOT, "consistency": CONSISTENCY_PLOT, "per_supercategory": SUPER_PLOT,
             "examples": EXAMPLES_NAME}
    if examples is not None:
        pngs["examples"] = examples
    paths = write_report_files(out_dir, summary, evaluated, render_markdown(summary, evaluated),
                               {name: (files[name], png) for name, png in pngs.items()})
    log.info("wrote the SPIN report to %s", out_dir)
    return paths

