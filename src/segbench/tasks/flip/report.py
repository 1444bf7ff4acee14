"""The COCO-CD evaluation report: ``metrics.json``, ``report.md`` and two PNG plots.

Input is the summary dict of ``FlipAccumulator.summarize`` plus a small "what was evaluated" dict;
nothing here computes a metric. Plots are drawn on a private Agg canvas (no pyplot global state, so
threads cannot interfere) and every file is written atomically.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from segbench.core.figures import drawn
from segbench.core.reports import (
    evaluated_lines,
    figure_png,
    fmt,
    legend_beside,
    new_figure,
    table_lines,
    write_report_files,
)
from segbench.tasks.flip.metrics import COCO_CD_NAMES, FlipNames

if TYPE_CHECKING:
    from matplotlib.figure import Figure

log = logging.getLogger(__name__)

GROUP_PLOT_NAME = "per_group_iou.png"
DECILE_PLOT_NAME = "flip_by_risk_decile.png"
EXAMPLES_NAME = "examples.png"  # the most flipped images (tasks.flip.qualitative)


def render_markdown(
    summary: Mapping[str, Any], evaluated: Mapping[str, Any], names: FlipNames = COCO_CD_NAMES
) -> str:
    """The Markdown report (``names``: the dataset's class and context names, COCO-CD's by default).

    Args:
        summary: ``FlipAccumulator.summarize()`` output.
        evaluated: what was evaluated: ``source``, ``rev``, ``rho``, ``split``, ``split_file``,
            ``predictions`` (and optionally more keys, listed as they are).
    """
    first, second = names.classes
    lines = [f"# {names.dataset} evaluation", ""] + evaluated_lines(evaluated)[:-1]
    lines += [f"- **images**: {summary['num_images']}", ""]

    iou = summary["class_iou"]
    lines += ["## Overlap", ""]
    lines += table_lines(
        ["background IoU", f"{first} IoU", f"{second} IoU", f"mIoU ({first}, {second})", "Fg-IoU"],
        [
            [
                fmt(iou["background"]),
                fmt(iou[first]),
                fmt(iou[second]),
                fmt(summary["miou"]),
                fmt(summary["fg_iou"]),
            ]
        ],
    )

    dec, flip = summary["fg_decomposition"], summary["flip"]
    lines += ["## Foreground error decomposition", ""]
    lines += [
        f"Over {dec['gt_fg_pixels']} ground-truth foreground pixels; the three rates sum to 1.",
        "",
    ]
    lines += table_lines(
        ["FG-Corr", "FG-Flip", "FG-Miss", "Flip (global)", "Flip (per-image mean)"],
        [
            [
                fmt(dec["corr"]),
                fmt(dec["flip"]),
                fmt(dec["miss"]),
                fmt(flip["global"]),
                fmt(flip["per_image_mean"]),
            ]
        ],
    )
    if flip["images_without_gt_fg"]:
        lines += [
            f"{flip['images_without_gt_fg']} images without ground-truth foreground are left "
            "out of the per-image mean.",
            "",
        ]

    lines += ["## Per-group IoU", ""]
    lines += table_lines(
        ["group", "images", f"{first} IoU", f"{second} IoU"],
        [
            [g["name"], str(g["num_images"]), fmt(g["iou"][first]), fmt(g["iou"][second])]
            for g in summary["per_group"]
        ],
    )
    group_names = {g["group_id"]: g["name"] for g in summary["per_group"]}
    lines += ["Aligned − counterfactual IoU gap per class:", ""]
    lines += table_lines(
        ["class", "aligned", "counterfactual", "gap"],
        [
            [
                cls,
                f"{fmt(gap['aligned_iou'])} ({group_names[gap['aligned_group']]})",
                f"{fmt(gap['counterfactual_iou'])} ({group_names[gap['counterfactual_group']]})",
                fmt(gap["gap"]),
            ]
            for cls, gap in sorted(summary["gaps"].items())
        ],
    )
    return "\n".join(lines + _risk_section(summary, names)).rstrip("\n") + "\n"


def _risk_section(summary: Mapping[str, Any], names: FlipNames = COCO_CD_NAMES) -> list[str]:
    lines = ["## Flip-risk deciles", ""]
    risk = summary["flip_risk"]
    if risk is None:
        return lines + [f"Flip-risk unavailable: {summary['flip_risk_unavailable']}.", ""]
    lines += [
        f"Images sorted by flip-risk (mean renormalised {'/'.join(names.classes)} entropy over predicted-foreground "
        f"pixels), low to high; {risk['num_records']} images ranked.",
        "",
    ]
    if risk["fewer_than_10_records"]:
        lines += ["Fewer than 10 images were ranked, so some deciles are empty.", ""]
    skipped = risk["images_without_pred_fg"] + risk["images_without_gt_fg"]
    if skipped:
        lines += [
            f"Not ranked: {risk['images_without_pred_fg']} images without predicted "
            f"foreground, {risk['images_without_gt_fg']} without ground-truth foreground.",
            "",
        ]
    lines += _decile_table(risk)
    lines += [f"Top-decile share of all flips: {fmt(risk['top_decile_share'])}", ""]
    by_gt = summary.get("flip_risk_gt_foreground")
    if by_gt is None:
        return lines
    lines += ["### Over ground-truth foreground (App. G, analysis)", "",
              f"The same entropy averaged over ground-truth foreground pixels instead: it needs the ground truth, "
              f"so it checks the deployable ranking above rather than replacing it; {by_gt['num_records']} images "
              f"ranked ({by_gt['images_without_gt_fg']} without ground-truth foreground).", ""]
    return lines + _decile_table(by_gt) + [f"Top-decile share of all flips: {fmt(by_gt['top_decile_share'])}", ""]


def _decile_table(risk: Mapping[str, Any]) -> list[str]:
    return table_lines(["decile", "images", "mean risk", "mean flip"],
                       [[str(d["decile"]), str(d["count"]), fmt(d["mean_risk"]), fmt(d["mean_flip"])]
                        for d in risk["deciles"]])


def per_group_iou_figure(summary: Mapping[str, Any], names: FlipNames = COCO_CD_NAMES) -> Figure:
    """Grouped bars, one group of (class IoU, class IoU) per (class, context) group."""
    fig = new_figure(figsize=(9, 4.5))
    ax = fig.add_subplot()
    groups = summary["per_group"]
    width = 0.38
    first, second = names.classes
    for offset, cls, color in ((-width / 2, first, "#4c72b0"), (width / 2, second, "#dd8452")):
        values = [g["iou"][cls] or 0.0 for g in groups]  # an undefined IoU is drawn as an empty bar
        bars = ax.bar(
            [i + offset for i in range(len(groups))], values, width, label=f"{cls} IoU", color=color
        )
        ax.bar_label(bars, labels=[fmt(g["iou"][cls]) for g in groups], fontsize=7, padding=2)
    ax.set_xticks(range(len(groups)), [g["name"] for g in groups], fontsize=8)
    ax.set_ylim(0, 1.1)  # headroom for the value printed above a bar of IoU 1
    ax.set_xlabel("group (ground-truth class in its context)")
    ax.set_ylabel("IoU")
    ax.set_title("Per-group IoU")
    legend_beside(ax)
    fig.tight_layout()
    return fig


def plot_per_group_iou(summary: Mapping[str, Any], names: FlipNames = COCO_CD_NAMES) -> bytes:
    """PNG bytes of :func:`per_group_iou_figure`."""
    return figure_png(per_group_iou_figure(summary, names))


def flip_by_risk_decile_figure(summary: Mapping[str, Any]) -> Figure:
    """Mean per-image flip per flip-risk decile (or a note, without axes, when risk is unavailable)."""
    by_gt = summary.get("flip_risk_gt_foreground")
    fig = new_figure(figsize=(10 if by_gt else 7, 4))
    ax = fig.add_subplot()
    risk = summary["flip_risk"]
    if risk is None:
        ax.axis("off")
        ax.text(
            0.5,
            0.5,
            f"Flip-risk unavailable:\n{summary['flip_risk_unavailable']}",
            ha="center",
            va="center",
            wrap=True,
            fontsize=9,
        )
    else:
        deciles = risk["deciles"]
        width = 0.4 if by_gt else 0.8
        series = [("over predicted\nforeground\n(deployable)", risk, "#c44e52")]
        series += [("over ground-truth\nforeground\n(App. G)", by_gt, "#8c8c8c")] if by_gt else []
        for k, (label, ranked, color) in enumerate(series):
            offset = (k - (len(series) - 1) / 2) * width
            bars = ax.bar([d["decile"] + offset for d in ranked["deciles"]],
                          [d["mean_flip"] or 0.0 for d in ranked["deciles"]], width, color=color, label=label)
            ax.bar_label(bars, labels=[_short(d["mean_flip"]) if by_gt else fmt(d["mean_flip"])
                                       for d in ranked["deciles"]], fontsize=6 if by_gt else 7, padding=2)
        if by_gt:
            legend_beside(ax, title="risk averaged")
        ax.set_xticks([d["decile"] for d in deciles])
        ax.set_xlabel("flip-risk decile (1 = lowest risk)")
        ax.set_ylabel("mean per-image flip")
        ax.set_ylim(0, 1.1)  # headroom for the value printed above a bar of 1
        shares = f"top-decile share {fmt(risk['top_decile_share'])}" + (
            f"; {fmt(by_gt['top_decile_share'])} over ground-truth foreground" if by_gt else "")
        ax.set_title(f"Flip by risk decile ({shares})")
    fig.tight_layout()
    return fig


def _short(value: float | None) -> str:
    """A bar's value in two decimals, so two bars side by side keep their labels apart."""
    return "n/a" if value is None else f"{value:.2f}"


def plot_flip_by_risk_decile(summary: Mapping[str, Any]) -> bytes:
    """PNG bytes of :func:`flip_by_risk_decile_figure`."""
    return figure_png(flip_by_risk_decile_figure(summary))


def write_report(
    out_dir: str | Path,
    summary: Mapping[str, Any],
    evaluated: Mapping[str, Any],
    names: FlipNames = COCO_CD_NAMES,
    examples: bytes | None = None,
) -> dict[str, Path]:
    """Write ``metrics.json`` (``{"evaluated", "metrics"}``), ``report.md``, both plots and the examples
    (``examples``: the PNG of :func:`segbench.tasks.flip.qualitative.draw`, None when none) into ``out_dir``.

    Returns:
        ``{"metrics": path, "report": path, "per_group_iou": path, "flip_by_risk_decile": path}``, and
        ``"examples"`` when there are some.
    """
    pngs = drawn({"per_group_iou": (plot_per_group_iou, (summary, names)),
                  "flip_by_risk_decile": (plot_flip_by_risk_decile, (summary,))})
    paths = write_report_files(out_dir, summary, evaluated, render_markdown(summary, evaluated, names), {
        "per_group_iou": (GROUP_PLOT_NAME, pngs["per_group_iou"]),
        "flip_by_risk_decile": (DECILE_PLOT_NAME, pngs["flip_by_risk_decile"]),
        **({"examples": (EXAMPLES_NAME, examples)} if examples is not None else {}),
    })
    log.info("wrote the %s report to %s", names.dataset, out_dir)
    return paths
