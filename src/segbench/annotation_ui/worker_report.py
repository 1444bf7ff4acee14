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
                        files_folder: Path, names: Mapping[str, str] | None = None) -> WorkerSummary:
    """Write the round's worker report (``score_workers``'s result, with the workers the screened
    aggregation left out) and a qualification round's pass list. ``names``: annotator id → the
    name people know them by (a Label Studio user's e-mail), shown beside the id."""
    names = names or {}
    workers = [{**w, "name": names[w["worker"]]} if w["worker"] in names else w for w in scored["workers"]]
    report = {"round": round_.key, "purpose": round_.purpose, "requires": round_.requires,
              "aggregation": round_.aggregation, **scored, "workers": workers,
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
    header = ["worker", "answers", "gold", "gold accuracy", "κ", "agreement", "tied", "label distance", "median s",
              "time z", "flags"]
    rows = [[_shown(w), w["answers"], w["gold_answers"], w["gold_accuracy"], w.get("kappa"),
             w["agreement_with_aggregate"], w.get("undecided_judgments", 0), w.get("label_distance"),
             w["median_seconds"], w["flags"]["time_z"],
             ", ".join(w["flags"]["raised"]) or "-"] for w in report["workers"]]
    named = {w["worker"]: _shown(w) for w in report["workers"]}
    suspicious = [[named.get(s["worker"], s["worker"]), "; ".join(s["reasons"])] for s in report["suspicious"]]
    left_out = [[named.get(e["worker"], e["worker"]), "; ".join(e["reasons"])] for e in report.get("left_out", [])]
    rules = ", ".join(f"{k.replace('_', ' ')} {cell(v)}" for k, v in report["rules"].items())
    kind = ("A qualification round: every item is gold; workers pass at the pass threshold"
            if report["purpose"] == "qualification" else "A work round")
    gate = f"; answers count only for workers on the pass list of {report['requires']}" if report["requires"] else ""
    lines = [f"# Workers of round {report['round']}", "",
             f"{kind}{gate}. Aggregation: {report.get('aggregation', '-')}. κ is Cohen's κ with the reference "
             "(the known label on gold, the aggregate elsewhere); agreement is the share of the worker's answers "
             "equal to the aggregate, over the items the aggregate decides (tied: answers on items whose "
             "aggregate is a tie, left out of it); label distance is the total variation distance "
             "between the worker's label shares and the references'.", "",
             markdown_table(header, [[cell(v) for v in row] for row in rows]), "",
             f"## Suspicious workers ({len(suspicious)})", "",
             markdown_table(["worker", "reasons"], suspicious) if suspicious else "None.", ""]
    if report.get("aggregation") == "screened":
        if left_out or report.get("left_out_capped"):
            lines += [f"## Left out of the masks ({len(left_out)})", "",
                      "The suspicious workers' polygons take no part in SPIN's masks; their answers still count "
                      "in the labels, where Dawid–Skene weighs each voter by their confusion matrix.", "",
                      markdown_table(["worker", "reasons"], left_out) if left_out else "None.", ""]
        if report.get("left_out_capped"):
            lines += ["The rules flag more than half of the voters, so none of those was left out: they say more "
                      "about this round than about its workers (set them per round with `--rule`).", ""]
        choice = report.get("model_choice")
        if choice:
            lines += ["## The model behind the labels", "", f"{choice['reason']}.", ""]
            if choice["held_out"]:
                lines += [f"Each of {choice['folds']} parts of the gold was held out in turn; every model was fitted "
                          "with the rest of the gold as its anchors and judged on the part held out. Another model "
                          "replaces Dawid–Skene, the default, only when it is right significantly more often "
                          "(one-sided exact binomial test on the judgments where one of the two is right).", "",
                          markdown_table(["model", "held-out gold right", "held out", "p (better than the default)"],
                                         [[m, r, n, choice["p_values"].get(m, "-")]
                                          for m, (r, n) in choice["held_out"].items()]), ""]
        blocs = report.get("blocs", [])
        lines += [f"## Accounts that answered as one ({len(blocs)} blocs)", "",
                  "Every pair of a bloc's accounts that shared enough judgments gave the same answers (the rules "
                  "bloc min shared and bloc min agreement), or submitted them one after another, as one person "
                  "working through several accounts does (the bloc lockstep rules); its accounts count as one "
                  "voter in the aggregation.", "",
                  markdown_table(["voter", "accounts", "pairs compared", "shared judgments", "agreed"],
                                 [[b["voter"], ", ".join(named.get(m, m) for m in b["members"]), b["pairs"],
                                   b["shared"], b["agreed"]] for b in blocs]) if blocs else "None.", ""]
    if report.get("too_sparse"):
        lines += [f"Too few gold answers to judge on gold ({len(report['too_sparse'])}): "
                  f"{', '.join(report['too_sparse'])}.", ""]
    if report.get("colluding_pairs"):
        lines += ["## Pairs agreeing beyond chance", "",
                  markdown_table(["workers", "shared", "agreed", "expected", "p"],
                                 [[" & ".join(p["workers"]), p["shared"], p["agreed"], cell(p["expected"]),
                                   f"{p['p_value']:.2g}"] for p in report["colluding_pairs"]]), ""]
    lines += [f"Rules: {rules}.", ""]
    return "\n".join(lines)


def _shown(row: Mapping[str, Any]) -> str:
    """A worker as the report shows them: the id, with the name people know them by when there is one."""
    return f"{row['worker']} ({row['name']})" if row.get("name") else row["worker"]


def worker_plot(report: dict[str, Any]) -> bytes:
    """Each worker's κ with the reference against their gold accuracy (else agreement with the
    aggregate); suspicious in red, named; the others unnamed, so names never pile up."""
    from matplotlib.figure import Figure  # here: matplotlib is slow to import and only the report needs it

    fig = Figure(figsize=(7, 4.8))
    ax = fig.add_subplot()
    bad = {s["worker"] for s in report["suspicious"]} | {e["worker"] for e in report.get("left_out", [])}
    placed: list[tuple[float, float]] = []  # where names went: a new one moves up until it is clear of them
    lowest = 0.0
    for w in report["workers"]:
        quality = w["gold_accuracy"] if w["gold_accuracy"] is not None else w["agreement_with_aggregate"]
        kappa = w.get("kappa")
        x, y = (kappa if kappa is not None else 0.0), (quality if quality is not None else 0.0)
        lowest = min(lowest, x)
        flagged = w["worker"] in bad
        ax.scatter([x], [y], color="tab:red" if flagged else "tab:blue", alpha=0.8, s=24)
        if flagged:
            label_y = y
            while any(abs(px - x) < 0.35 and abs(py - label_y) < 0.04 for px, py in placed):
                label_y += 0.04
            placed.append((x, label_y))
            ax.annotate(w.get("name") or w["worker"], (x, y), xytext=(x + 0.03, label_y + 0.01), fontsize=7,
                        arrowprops={"arrowstyle": "-", "color": "0.6", "lw": 0.5} if label_y != y else None)
    ax.set_xlim(min(-0.3, lowest - 0.05), 1.25)
    ax.set_ylim(-0.05, max(1.05, max((py for _, py in placed), default=0.0) + 0.06))
    ax.set_xlabel("Cohen's κ with the reference (0: chance)")
    ax.set_ylabel("gold accuracy (else agreement with the aggregate)")
    ax.set_title(f"Workers of {report['round']} (red: suspicious or left out)")
    return figure_png(fig)
