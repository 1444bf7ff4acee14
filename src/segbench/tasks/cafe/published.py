"""Published results a model is placed beside, and the summary table in CAFE's toolkit column order.

The numbers are segbench's own copies, with their source and date, in
``segbench/resources/published/``: ``cafe.json`` (CAFE's leaderboard, cgF1 ×100 per subset, and the
paper's IL_MCC / pmF1 / false-positive rates of SAM 3 and CAFE-SAM3) and ``saco_gold.json`` (SAM3's
SA-Co/Gold table: cgF1 and pmF1 ×100, IL_MCC). Nothing here computes a metric: evaluation results
(fractions) are scaled ×100 only to sit beside published cgF1 values.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

CAFE_SUBSETS = ("SM", "CC", "OC", "Overall")
# CAFE's build_summary.py column order; its "TA-FN" is every q+ that is not TA-TP (TA-FN + UA-FN here).
SUMMARY_COLUMNS = ("Subset", "N", "TA-TP", "TA-FN", "TA-FP", "UA-FP", "TN", "AFPR", "UFPR", "IL-FPR", "ACSR",
                   "UCSR", "CSR", "SoftSwap", "cgF1", "cgF1@0.5", "cgF1@0.75", "IL_MCC", "pmF1")
THIS_MODEL = "this model"
# SA-Co/Gold subset named by a ground-truth file name (gold_fg_food_merged_a_release_test.json ...).
_GOLD_PATTERNS = (("metaclip", "metaclip_nps"), ("sa1b", "sa1b_nps"), ("crowded", "crowded"),
                  ("fg_food", "fg_food"), ("fg_sports", "fg_sports_equipment"), ("attributes", "attributes"),
                  ("wiki_common", "wiki_common"))


@cache
def published(name: str) -> dict[str, Any]:
    """The shipped published numbers ``name`` (``"cafe"`` or ``"saco_gold"``), parsed."""
    text = resources.files("segbench.resources").joinpath("published", f"{name}.json").read_text("utf-8")
    return json.loads(text)


def source_line(data: Mapping[str, Any], key: str) -> str:
    source = data["sources"][key]
    return f"{source['what']} — {source['url']} ({source['date']})"


def _scaled(value: float | None) -> float | None:
    return None if value is None else round(100 * value, 1)


def cafe_standing(metrics: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Per CAFE subset, the leaderboard's cgF1 (×100) with the model's inserted, best first.

    ``metrics`` is :func:`segbench.tasks.cafe.metrics.evaluate_cafe`'s dict (fractions).
    Returns ``{subset: [{"model", "type", "cgF1", "rank"}, ...]}``; the model is ``THIS_MODEL``,
    left out of a subset it has no cgF1 for, and out of Overall unless every subset has pairs (an
    Overall over one subset file is not the leaderboard's Overall).
    """
    data = published("cafe")
    complete = all((metrics.get(s) or {}).get("N") for s in CAFE_SUBSETS[:-1])
    out = {}
    for subset in CAFE_SUBSETS:
        rows = [{"model": m["model"], "type": m["type"], "cgF1": m["metrics"]["cgF1"]["values"][subset]}
                for m in data["models"]]
        ours = (metrics.get(subset) or {}).get("cgF1") if complete or subset != "Overall" else None
        if ours is not None:
            rows.append({"model": THIS_MODEL, "type": "evaluated here", "cgF1": _scaled(ours)})
        rows.sort(key=lambda r: (-r["cgF1"], r["model"] != THIS_MODEL))
        out[subset] = [r | {"rank": k + 1} for k, r in enumerate(rows)]
    return out


def published_context(ground_truth: str) -> tuple[str, str] | None:
    """Which published table a ground-truth file belongs to, by its name: ``("cafe", subset)`` for
    CAFE exports (``CAFE.json`` → Overall, ``CAFE_OC.json`` → OC, CAFEval2026 names alike),
    ``("saco_gold", subset)`` for SA-Co/Gold files, else ``None``."""
    stem = Path(ground_truth.rsplit(":", 1)[-1]).stem.lower()
    match = re.fullmatch(r"(?:cafe|cafeval2026)(?:_(sm|cc|oc|annotations))?", stem)
    if match:
        part = match.group(1)
        return "cafe", "Overall" if part in (None, "annotations") else part.upper()
    if "gold" in stem:
        for pattern, subset in _GOLD_PATTERNS:
            if pattern in stem:
                return "saco_gold", subset
    return None


def cgf1_standing(summary: Mapping[str, Any], ground_truth: str) -> dict[str, Any] | None:
    """The published rows beside a cgF1 summary of ``ground_truth`` (see :func:`published_context`):
    ``{"table", "subset", "source", "rows": [{"model", "cgF1", "IL_MCC", "pmF1"}, ...]}`` best cgF1
    first, the model as ``THIS_MODEL``; ``None`` when no published table matches the file."""
    context = published_context(ground_truth)
    if context is None:
        return None
    table, subset = context
    data = published(table)
    if table == "cafe":
        rows = [{"model": m["model"], "cgF1": m["metrics"]["cgF1"]["values"][subset],
                 "IL_MCC": m["metrics"].get("IL_MCC", {}).get("values", {}).get(subset),
                 "pmF1": m["metrics"].get("pmF1", {}).get("values", {}).get(subset)} for m in data["models"]]
        source = "; ".join(source_line(data, k) for k in data["sources"])
    else:
        rows = [{"model": m["model"], **m["results"][subset]} for m in data["models"]]
        source = source_line(data, "sam3_gold_readme")
    rows.append({"model": THIS_MODEL, "cgF1": _scaled(summary["cgF1"]), "IL_MCC": round(summary["IL_MCC"], 2),
                 "pmF1": _scaled(summary["pmF1"])})
    rows.sort(key=lambda r: (-r["cgF1"], r["model"] != THIS_MODEL))
    return {"table": data["benchmark"], "subset": subset, "source": source, "rows": rows}


def summary_rows(metrics: Mapping[str, Any]) -> list[list[Any]]:
    """The summary table's rows in :data:`SUMMARY_COLUMNS` order, SM, CC, OC, Overall; a subset
    without pairs is left out, as CAFE's ``build_summary.py`` leaves it out."""
    rows = []
    for subset in CAFE_SUBSETS:
        m = metrics[subset]
        if not m["N"]:
            continue
        values = {**m, "Subset": subset, "TA-FN": m["TA-FN"] + m["UA-FN"]}
        rows.append([values[c] for c in SUMMARY_COLUMNS])
    return rows


def summary_csv(metrics: Mapping[str, Any]) -> str:
    """The summary table as CSV (full-precision values, empty cells for undefined ones)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(SUMMARY_COLUMNS)
    for row in summary_rows(metrics):
        writer.writerow(["" if v is None else repr(v) if isinstance(v, float) else v for v in row])
    return buffer.getvalue()
