"""Reports of ``segbench evaluate cafe`` and ``segbench evaluate cgf1``: metrics.json, report.md, plots.

Input is the metrics dict of :func:`segbench.tasks.cafe.metrics.evaluate_cafe` (or the cgF1 summary
of :func:`segbench.tasks.cafe.cgf1.evaluate_cgf1`) plus a "what was evaluated" dict; nothing here computes
a metric. ``metrics.json`` is ``{"evaluated", "metrics"}`` like every evaluation's. The plots are
:mod:`segbench.tasks.cafe.eval_plots`'s; every file is written atomically.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from segbench.core.figures import drawn
from segbench.core.reports import evaluated_lines, fmt, table_lines, write_report_files
from segbench.tasks.cafe.eval_plots import (
    file_label,
    plot_cgf1_by_iou,
    plot_cgf1_by_subset,
    plot_cgf1_each_by_iou,
    plot_false_positive_rates,
    plot_standing,
    plot_tau_sweep,
)
from segbench.tasks.cafe.metrics import OVERALL, SUBSETS
from segbench.tasks.cafe.published import (
    CAFE_SUBSETS,
    SUMMARY_COLUMNS,
    THIS_MODEL,
    cafe_standing,
    cgf1_standing,
    published,
    source_line,
    summary_csv,
    summary_rows,
)

log = logging.getLogger(__name__)

ROWS = (*SUBSETS, OVERALL)
COUNT_COLUMNS = ("N", "TA-TP", "TA-FN", "UA-FN", "TN", "TA-FP", "UA-FP")
RATE_COLUMNS = ("AFPR", "UFPR", "IL-FPR", "ACSR", "UCSR", "CSR", "SoftSwap")
CGF1_COLUMNS = ("cgF1", "cgF1@0.5", "cgF1@0.75", "IL_MCC", "pmF1")
CGF1_SUMMARY_NAMES = ("cgF1", "cgF1@0.5", "cgF1@0.75", "IL_MCC", "pmF1", "positive_macro_F1", "IL_FPR",
                      "IL_precision", "IL_recall", "IL_F1", "precision", "recall", "F1")


def _cell(value: Any) -> str:
    return fmt(value) if value is None or isinstance(value, float) else str(value)


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    return table_lines(header, [[_cell(v) for v in row] for row in rows])


def ignored_line(ignored: Mapping[str, Any] | None) -> str:
    """One sentence on the predictions left out because their image is not in the ground truth."""
    if not ignored or not ignored["predictions"]:
        return "Ignored predictions: none (every prediction is for an image of the ground truth)."
    flag = "" if ignored["expected"] else "**Unexpected:** "
    return (f"{flag}Ignored predictions: {ignored['predictions']} on {ignored['images']} images not in the "
            f"ground truth ({ignored['reason']}).")


EPSILON_NOTE = ("Precision, recall and F1 carry SAM3's 1e-4 in their denominators, as its evaluator does, so "
                "perfect masks read pmF1 0.9999, not 1.")


def render_cafe_markdown(metrics: Mapping[str, Any], evaluated: Mapping[str, Any]) -> str:
    """The CAFE report: target-aware table, cgF1 family per subset, τ sweep and calibration."""
    params = metrics["params"]
    t, tau = params["score_threshold"], params["iou_threshold"]
    lines = ["# CAFE evaluation", "", *evaluated_lines(evaluated), ignored_line(metrics.get("ignored")), ""]
    calibration = metrics.get("calibration")
    if calibration:
        lines += ["## Calibrated score threshold", "",
                  f"t = {calibration['threshold']:g} maximises overall cgF1 ({fmt(calibration['cgF1'])}) on "
                  f"{calibration['source']}; every number below is at that t.", ""]
    lines += [f"## Target-aware classification (t = {t:g}, τ = {tau:g})", "",
              "TA-FN + UA-FN equals the TA-FN column of CAFE's public script, which does not separate "
              "aligned low-confidence predictions from unaligned ones. SoftSwap: share of pairs whose q- "
              "has a higher top score than q+ (no prediction = 0, ties not counted; independent of t and τ).", ""]
    lines += _table(["subset", *COUNT_COLUMNS], [[r, *(metrics[r][c] for c in COUNT_COLUMNS)] for r in ROWS])
    lines += _table(["subset", *RATE_COLUMNS], [[r, *(metrics[r][c] for c in RATE_COLUMNS)] for r in ROWS])
    lines += ["## cgF1 (SAM3 protocol)", "",
              "Fractions (papers print ×100). cgF1 = IL_MCC × pmF1 averaged over IoU 0.50:0.05:0.95; "
              "per subset on that subset's images only. " + EPSILON_NOTE, ""]
    lines += _table(["subset", "images", *CGF1_COLUMNS],
                    [[r, metrics[r]["cgF1_images"], *(metrics[r][c] for c in CGF1_COLUMNS)] for r in ROWS])
    lines += summary_section(metrics) + standing_section(metrics)
    sweep = metrics["tau_sweep"]
    lines += ["## τ sweep (Overall)", ""]
    sweep_columns = ("TA-TP", "TA-FN", "UA-FN", "AFPR", "UFPR", "ACSR", "UCSR", "SoftSwap")
    lines += _table(["τ", *sweep_columns],
                    [[f"{tau_k:g}", *(row[c] for c in sweep_columns)]
                     for tau_k, row in zip(sweep["tau"], sweep[OVERALL], strict=True)])
    return "\n".join(lines).rstrip("\n") + "\n"


def summary_markdown(metrics: Mapping[str, Any]) -> str:
    """``summary.md``: the one table of CAFE's toolkit column order, ready to paste."""
    params = metrics["params"]
    return "\n".join([f"CAFE summary (t = {params['score_threshold']:g}, τ = {params['iou_threshold']:g}); "
                      "TA-FN counts every q+ that is not TA-TP, as CAFE's toolkit does.", "",
                      *_table(list(SUMMARY_COLUMNS), summary_rows(metrics))]).rstrip("\n") + "\n"


def summary_section(metrics: Mapping[str, Any]) -> list[str]:
    return ["## Summary in CAFE's toolkit column order", "",
            "Also written as `summary.md` and `summary.csv`. TA-FN here is TA-FN + UA-FN, the toolkit's TA-FN.", "",
            *_table(list(SUMMARY_COLUMNS), summary_rows(metrics))]


def standing_section(metrics: Mapping[str, Any]) -> list[str]:
    """Published cgF1 (×100) per subset with the model among them, and the paper's other numbers."""
    data, standing = published("cafe"), cafe_standing(metrics)
    by_model: dict[str, dict[str, Any]] = {}
    for subset in CAFE_SUBSETS:
        for row in standing[subset]:
            by_model.setdefault(row["model"], {"type": row["type"]})[subset] = row["cgF1"]
    order = sorted(by_model, key=lambda m: -(overall if (overall := by_model[m].get(OVERALL)) is not None
                                             else float("-inf")))
    lines = ["## Where the model stands", "",
             f"cgF1 ×100, published: {source_line(data, 'leaderboard')}. Split sizes: "
             + ", ".join(f"{k} {v:,}" for k, v in data["split_sizes"].items()) + ".", ""]
    lines += _table(["model", "type", *CAFE_SUBSETS],
                    [[f"**{m}**" if m == THIS_MODEL else m, by_model[m]["type"],
                      *(_published_cell(by_model[m].get(s)) for s in CAFE_SUBSETS)] for m in order])
    paper = [m for m in data["models"] if len(m["metrics"]) > 1]
    keys = [(name, subset) for name in ("IL_MCC", "pmF1", "IL-FPR", "AFPR", "ACSR") for subset in CAFE_SUBSETS
            if any(subset in m["metrics"].get(name, {}).get("values", {}) for m in paper)]
    lines += [f"The paper's other numbers ({source_line(data, 'paper')}); pmF1 and rates ×100, IL-FPR is its FPR.",
              ""]
    lines += _table(["metric", "subset", *(m["model"] for m in paper), f"**{THIS_MODEL}**"],
                    [[name, subset, *(_published_cell(m["metrics"].get(name, {}).get("values", {}).get(subset))
                                      for m in paper), _published_cell(_ours(metrics, name, subset))]
                     for name, subset in keys])
    return lines


def _ours(metrics: Mapping[str, Any], name: str, subset: str) -> float | None:
    value = (metrics.get(subset) or {}).get(name)
    if value is None:
        return None
    return round(value, 3) if name == "IL_MCC" else round(100 * value, 1)


def _published_cell(value: float | None) -> str:
    return "–" if value is None else f"{value:g}"


def write_cafe_report(out_dir: str | Path, metrics: Mapping[str, Any], evaluated: Mapping[str, Any]) -> dict[str, Path]:
    """Write ``metrics.json`` (``{"evaluated", "metrics"}``), ``report.md`` and four plots into ``out_dir``.

    Also ``summary.md`` / ``summary.csv`` (CAFE's toolkit column order) and ``standing.png`` (the
    model among the published results, a panel per subset).

    Returns:
        ``{"metrics", "report", "cgf1_by_subset", "false_positive_rates", "tau_sweep", "standing",
        "summary_md", "summary_csv": path}``.
    """
    standing = cafe_standing(metrics)
    pngs = drawn({"cgf1_by_subset": (plot_cgf1_by_subset, (metrics,)),
                  "false_positive_rates": (plot_false_positive_rates, (metrics,)),
                  "tau_sweep": (plot_tau_sweep, (metrics,)),
                  "standing": (plot_standing, ({s: standing[s] for s in CAFE_SUBSETS},))})
    paths = write_report_files(out_dir, metrics, evaluated, render_cafe_markdown(metrics, evaluated), {
        **{name: (f"{name}.png", png) for name, png in pngs.items()},
        "summary_md": ("summary.md", summary_markdown(metrics).encode()),
        "summary_csv": ("summary.csv", summary_csv(metrics).encode()),
    })
    log.info("wrote the CAFE report to %s", out_dir)
    return paths


def render_cgf1_markdown(summary: Mapping[str, Any], evaluated: Mapping[str, Any]) -> str:
    """The cgF1 report: the summary SAM3 prints, image-level counts, and per-IoU values."""
    lines = ["# cgF1 evaluation", "", *evaluated_lines(evaluated), ignored_line(summary.get("ignored")), "", "## Summary", ""]
    lines += _table(["metric", "value"], [[name, summary[name]] for name in CGF1_SUMMARY_NAMES])
    lines += [EPSILON_NOTE, ""]
    lines += ["## Image-level decisions", ""]
    lines += _table(["images", "IL_TP", "IL_FP", "IL_TN", "IL_FN"],
                    [[summary[k] for k in ("num_images", "IL_TP", "IL_FP", "IL_TN", "IL_FN")]])
    per_iou = summary["per_iou"]
    lines += ["## Per IoU threshold", ""]
    lines += _table(["IoU", "cgF1", "pmF1", "TP", "FP", "FN"],
                    [[f"{thr:.2f}", *(per_iou[k][i] for k in ("cgF1", "positive_micro_F1", "TPs", "FPs", "FNs"))]
                     for i, thr in enumerate(per_iou["iou_thresholds"])])
    gts = evaluated.get("ground_truth") or []
    if isinstance(gts, str):
        gts = [gts]
    if gts:
        lines += cgf1_standing_section(summary, gts[0])
    return "\n".join(lines).rstrip("\n") + "\n"


def write_cgf1_report(out_dir: str | Path, summary: Mapping[str, Any], evaluated: Mapping[str, Any]) -> dict[str, Path]:
    """Write ``metrics.json`` (``{"evaluated", "metrics"}``), ``report.md`` and ``cgf1_by_iou.png`` into ``out_dir``.

    Returns:
        ``{"metrics", "report", "cgf1_by_iou": path}``.
    """
    paths = write_report_files(out_dir, summary, evaluated, render_cgf1_markdown(summary, evaluated),
                               {"cgf1_by_iou": ("cgf1_by_iou.png", drawn({"png": (plot_cgf1_by_iou, (summary,))})["png"])})
    log.info("wrote the cgF1 report to %s", out_dir)
    return paths


def render_cgf1_each_markdown(metrics: Mapping[str, Any], evaluated: Mapping[str, Any]) -> str:
    """The report of one predictions file scored against each ground truth in turn: one column per file."""
    files = metrics["files"]
    lines = ["# cgF1 evaluation, each ground truth in turn", "", *evaluated_lines(evaluated), "## Summary", ""]
    lines += _table(["metric", *(file_label(f["ground_truth"]) for f in files)],
                    [[name, *(f[name] for f in files)] for name in (*CGF1_SUMMARY_NAMES, "num_images")])
    lines += ["## Ignored predictions", "", "Predictions whose image is not in a file are left out of that file's "
              "numbers, as SAM3's evaluator leaves them out.", ""]
    lines += _table(["ground truth", "predictions", "images", "expected", "reason"],
                    [[f["ground_truth"], f["ignored"]["predictions"], f["ignored"]["images"],
                      "yes" if f["ignored"]["expected"] else "no", f["ignored"]["reason"]] for f in files])
    for f in files:
        lines += cgf1_standing_section(f, f["ground_truth"])
    return "\n".join(lines).rstrip("\n") + "\n"


def write_cgf1_each_report(out_dir: str | Path, metrics: Mapping[str, Any],
                           evaluated: Mapping[str, Any]) -> dict[str, Path]:
    """Write ``metrics.json`` (``{"evaluated", "metrics": {"files": [...]}}``), ``report.md`` and
    ``cgf1_by_iou.png`` for the each-file protocol.

    Returns:
        ``{"metrics", "report", "cgf1_by_iou": path}``.
    """
    paths = write_report_files(out_dir, metrics, evaluated, render_cgf1_each_markdown(metrics, evaluated),
                               {"cgf1_by_iou": ("cgf1_by_iou.png", drawn({"png": (plot_cgf1_each_by_iou, (metrics,))})["png"])})
    log.info("wrote the cgF1 report to %s", out_dir)
    return paths


def cgf1_standing_section(summary: Mapping[str, Any], ground_truth: str) -> list[str]:
    """The published results of the benchmark ``ground_truth`` belongs to, with the model among them
    (nothing when its file name matches no published table)."""
    standing = cgf1_standing(summary, ground_truth)
    if standing is None:
        return []
    lines = [f"## Where the model stands: {standing['table']}, {standing['subset']} ({file_label(ground_truth)})",
             "", f"cgF1 and pmF1 ×100, IL_MCC as is. Published: {standing['source']}.", ""]
    return lines + _table(["model", "cgF1", "IL_MCC", "pmF1"],
                          [[f"**{r['model']}**" if r["model"] == THIS_MODEL else r["model"],
                            *(_published_cell(r.get(k)) for k in ("cgF1", "IL_MCC", "pmF1"))]
                           for r in standing["rows"]])
