"""``segbench rounds create vocab_adjudication``: people say which category each region description of an
``evaluate vocab`` report names, to check the lexical mapping against them (:mod:`segbench.flows.vocab.rounds`)."""

from __future__ import annotations

from pathlib import Path

import typer

from segbench import console
from segbench.cli import rounds
from segbench.cli.common import display_path, existing, seed_option, settings_of
from segbench.cli.rounds import Backend


def create_adjudication_command(
    ctx: typer.Context,
    key: str = rounds.ROUND_KEY,
    report: Path = typer.Option(..., "--report", callback=existing, metavar="DIR",
                                help="An evaluate vocab report folder (its mappings.json and metrics.json)."),
    repo: Path = typer.Option(Path("."), "--repo", help="The project the evaluation read its ground truth from."),
    images: Path = typer.Option(None, "--images", callback=existing, metavar="DIR",
                                help="Photos as <image_id>.jpg or .png, shown under the region (default: grey)."),
    disagreements: bool = typer.Option(False, "--disagreements", help="Only the descriptions where Sentence-BERT "
                                       "and the lexical mapping (meronym level) disagree: the paper's second stage."),
    sample: int = typer.Option(None, "--sample", min=1, help="Ask about this many descriptions, drawn by --seed "
                                                             "(default: all)."),
    seed: int = seed_option(0, "Seed of --sample."),
    backend: Backend = rounds.BACKEND,
    overlap: int = typer.Option(3, "--overlap", min=1, help="People per description (a strict majority decides)."),
    overwrite: bool = rounds.OVERWRITE,
) -> None:
    """Valid vocabularies: people adjudicate region descriptions (which category, and how).

    Ingest reports how often each mapping (the lexical one per level, Sentence-BERT) names the category
    people named, and what each recovers where the two disagree."""
    from segbench.flows.vocab.rounds import ADJUDICATION_DIR, create_adjudication_round
    from segbench.locking import command_lock

    data_root = settings_of(ctx).data_root
    with command_lock(ctx):
        round_ = create_adjudication_round(data_root, key, report, repo=repo, images=images,
                                           disagreements=disagreements, sample=sample, seed=seed,
                                           backend=backend.value, overlap=overlap, overwrite=overwrite)
    console.out.print(console.key_values("Adjudication round created", {
        "key": round_.key, "kind": round_.kind, "backend": round_.backend, "descriptions": len(round_.items),
        "stage": "disagreements" if disagreements else "all descriptions", "people per description": overlap,
        "categories": len(round_.config.params["categories"]),
        "task images": display_path(data_root / ADJUDICATION_DIR / round_.key)}))
    console.out.print(f"Next: segbench rounds launch {key}, then segbench rounds ingest {key} (it writes "
                      f"{ADJUDICATION_DIR}/{key}.report.md)")
