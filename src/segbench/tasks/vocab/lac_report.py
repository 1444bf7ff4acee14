"""The vocabulary evaluation's report: ``metrics.json``, ``report.md`` and the Lexical Alignment Curve
plot ``lac.png`` (metrics from :mod:`segbench.tasks.vocab.lac`, PQ and AP when panoptic segments were
given)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from segbench.core.figures import drawn
from segbench.core.reports import figure_png, legend_beside, new_figure
from segbench.schemas.vocab import LEVELS
from segbench.tasks.vocab.lac import METRICS

if TYPE_CHECKING:
    from pathlib import Path

    from matplotlib.figure import Figure

PLOT_NAME = "lac.png"
METRIC_HEADS = ("mIoU", "mACC", "pACC", "region acc")
PANOPTIC_METRICS = ("pq", "sq", "rq", "ap", "ap50", "ap75")
PANOPTIC_HEADS = ("PQ", "SQ", "RQ", "AP", "AP50", "AP75")


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def render_markdown(summary: Mapping[str, Any], evaluated: Mapping[str, Any]) -> str:
    """The Markdown report: what was evaluated, metrics per level, LAC areas, the baseline."""
    regions = "predicted segments" if evaluated.get("segments") else "gt regions"
    lines = ["# Lexical Alignment Curve", "", "## What was evaluated", ""]
    lines += [f"- **{k}**: `{evaluated[k]}`" for k in sorted(evaluated) if evaluated[k] is not None]
    lines += [f"- **images / {regions}**: {summary['num_images']} / {summary['num_regions']}",
              f"- **{regions} without a description** (scored unmatched): {summary['undescribed_regions']}",
              f"- **described segments absent from their segment map** (skipped): {summary['absent_segments']}", ""]
    pq = summary.get("pq") is not None
    keys, heads = (METRICS + PANOPTIC_METRICS, METRIC_HEADS + PANOPTIC_HEADS) if pq else (METRICS, METRIC_HEADS)
    lines += ["## Metrics per lexical level", "", "| level | " + " | ".join(heads) + " |", "|---" * (len(heads) + 1) + "|"]
    lines += [f"| {lv['level']} | " + " | ".join(_fmt(lv[k]) for k in keys) + " |" for lv in summary["levels"]]
    area_keys, area_heads = (METRICS + ("pq", "ap"), METRIC_HEADS + ("PQ", "AP")) if pq else (METRICS, METRIC_HEADS)
    lines += ["", "Normalised LAC area (trapezoid over the four levels at x = 0, 1/3, 2/3, 1):", "",
              "| " + " | ".join(area_heads) + " |", "|---" * len(area_keys) + "|",
              "| " + " | ".join(_fmt(summary["lac"][k]["area"]) for k in area_keys) + " |", ""]
    lines += _kinds_section(summary)
    base = summary.get("baseline")
    lines += ["## Sentence-BERT baseline (forced choice)", ""]
    if base is None:
        lines += [evaluated.get("baseline_note") or "Not run.", ""]
    else:
        lines += ["| mIoU | mACC | pACC | region acc |", "|---|---|---|---|",
                  "| " + " | ".join(_fmt(base[k]) for k in METRICS) + " |", "",
                  "Agreement with the lexical mapping (share of regions mapped to the same class):", "",
                  "| " + " | ".join(LEVELS) + " |", "|" + "---|" * len(LEVELS),
                  "| " + " | ".join(_fmt(base["agreement"][n]) for n in LEVELS) + " |", ""]
    if not pq:
        lines += ["PQ and AP are not reported: they need panoptic ground truth (segments, `--panoptic`).", ""]
    else:
        lines += [_panoptic_note(summary, bool(evaluated.get("segments"))), ""]
    return "\n".join(lines)


def _panoptic_note(summary: Mapping[str, Any], own_segments: bool) -> str:
    """How PQ and AP were counted: whose pixels, which classes."""
    ap = (summary.get("ap") or [{}])[0]
    over = ("the thing classes" if ap.get("classes") == "things"
            else "every class (the vocabulary does not say which are things)")
    pixels = ("each predicted segment is matched to gt segments with its own pixels" if own_segments
              else "each gt segment is predicted with its own pixels")
    return (f"PQ / SQ / RQ follow panopticapi and mask AP pycocotools' COCOeval (IoU 0.50:0.95, at most 100 "
            f"detections per image, ranked by each description's score, 1 when none is given): {pixels} and the "
            f"class its description maps to; unmatched descriptions predict nothing. AP is over {over}.")


def _kinds_section(summary: Mapping[str, Any]) -> list[str]:
    """Things and stuff apart, per level (stuff is where the open-ended benchmark paper finds embedding
    mappings fail most)."""
    kinds = summary.get("kinds")
    lines = ["## Things and stuff", ""]
    if kinds is None:
        return [*lines, "Not reported: the vocabulary does not say which classes are things (isthing), and its "
                        "classes are no category set segbench ships.", ""]
    pq = summary.get("pq") is not None
    keys, heads = ["miou_things", "miou_stuff"], ["mIoU things", "mIoU stuff"]
    if pq:
        keys, heads = [*keys, "pq_things", "pq_stuff"], [*heads, "PQ things", "PQ stuff"]
    lines += [f"{len(kinds['things'])} things and {len(kinds['stuff'])} stuff classes, as {kinds['source']} "
              "says; each mean is over the classes of that kind with a defined score.", "",
              "| level | " + " | ".join(heads) + " |", "|---" * (len(heads) + 1) + "|"]
    lines += [f"| {lv['level']} | " + " | ".join(_fmt(lv.get(k)) for k in keys) + " |" for lv in summary["levels"]]
    return [*lines, ""]


def lac_figure(summary: Mapping[str, Any]) -> Figure:
    """Each metric against the four levels, the baseline as dashed horizontal lines."""
    fig = new_figure(figsize=(8, 4.5))
    ax = fig.add_subplot()
    x = np.linspace(0.0, 1.0, len(LEVELS))
    base = summary.get("baseline")
    keys = METRICS + tuple(k for k in ("pq", "ap") if k in summary["lac"])
    for key, color in zip(keys, ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860"), strict=False):
        curve = summary["lac"][key]
        y = [np.nan if v is None else v for v in curve["values"]]
        ax.plot(x, y, marker="o", color=color, label=f"{key} (area {_fmt(curve['area'])})")
        if base is not None and base.get(key) is not None:
            ax.axhline(base[key], color=color, linestyle="--", linewidth=0.8)
    ax.set_xticks(x, list(LEVELS))
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("lexical level (cumulative)")
    ax.set_ylabel("score")
    ax.set_title("Lexical Alignment Curve" + (" (dashed: Sentence-BERT)" if base else ""))
    legend_beside(ax)
    fig.tight_layout()
    return fig


def plot_lac(summary: Mapping[str, Any]) -> bytes:
    """PNG bytes of :func:`lac_figure`."""
    return figure_png(lac_figure(summary))


def write_report(out_dir: str | Path, summary: Mapping[str, Any], evaluated: Mapping[str, Any]) -> dict[str, Path]:
    """Write ``metrics.json`` ({evaluated, metrics}), ``report.md`` and ``lac.png`` atomically.

    Returns:
        ``{"metrics": path, "report": path, "lac_plot": path}``.
    """
    from segbench.core.reports import write_report_files

    return write_report_files(out_dir, summary, evaluated, render_markdown(summary, evaluated),
                              {"lac_plot": (PLOT_NAME, drawn({"lac": (plot_lac, (summary,))})["lac"])})
