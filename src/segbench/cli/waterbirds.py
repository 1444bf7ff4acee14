"""Waterbirds-seg's commands: ``build waterbirds`` and ``evaluate waterbirds``, and its build summary.

Flows are imported inside the commands, so ``--help`` stays fast.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from segbench import console
from segbench.cli import flip
from segbench.cli.common import (
    FORCE_BUILD,
    build_status,
    display_path,
    relative_to_repo,
    run_flow,
    seed_option,
    settings_of,
)
from segbench.cli.publish import print_publish
from segbench.core.errors import OnError
from segbench.core.paths import check_output_folder

if TYPE_CHECKING:
    from segbench.schemas.waterbirds import WaterbirdsBuildSummary, WaterbirdsDemo


class SpeciesMatch(str, enum.Enum):
    tokens = "tokens"
    substring = "substring"


PREDICTIONS_HELP = "Folder of <image id:012d>.png label maps (0/1 landbird/2 waterbird) or .npz files with 'probs'."
EVALUATE_HELP = "Evaluate predictions on Waterbirds-seg: the COCO-CD flip metrics with landbird/waterbird, land/water."


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add ``build waterbirds`` and ``evaluate waterbirds``."""
    build_app.command("waterbirds")(build_command)
    evaluate_app.command("waterbirds")(flip.evaluate_command("waterbirds", PREDICTIONS_HELP, EVALUATE_HELP))


def build_command(
    ctx: typer.Context,
    cub_root: Path = typer.Option(..., "--cub-root", help="CUB-200-2011 root: images.txt, classes.txt, "
                                                         "image_class_labels.txt, train_test_split.txt, images/, "
                                                         "segmentations/."),
    places_root: Path = typer.Option(..., "--places-root", help="Places365 root with one folder per place "
                                                               "(bamboo_forest, forest/broadleaf, ocean, lake/natural)."),
    out: Path = typer.Option(None, "--out", help="Output folder (default: <data root>/waterbirds_seg).",
                             callback=check_output_folder),
    rho: list[float] = typer.Option(None, "--rho", help="Train correlation ρ; repeat for several (default: 0.5, 0.95)."),
    val_per_group: int = typer.Option(None, "--val-per-group", help="Val images per group (default: 74, as "
                                                                    "released)."),
    test_per_group: int = typer.Option(None, "--test-per-group", help="Test images per group (default: 642, as "
                                                                      "released)."),
    val_fraction: float = typer.Option(None, "--val-fraction", min=0.01, max=0.99,
                                       help="Share of CUB's train split held out for val (default: 0.2, "
                                            "Waterbirds' val_frac)."),
    seed: int = seed_option(None, "Seed of every random draw (default: 13)."),
    species_match: SpeciesMatch = typer.Option(SpeciesMatch.tokens, "--species-match",
                                               help="Waterbird keywords match whole name tokens, or substrings as "
                                                    "the released build."),
    on_error: OnError = typer.Option(OnError.FAIL, "--on-error", help="Birds with a missing or unreadable image or "
                                                                     "segmentation: fail, or skip them and list them "
                                                                     "in skipped.json."),
    publish: bool = typer.Option(False, "--publish", help="Publish a DVC version of the data root afterwards."),
    shard_size: int = typer.Option(200, "--shard-size", min=1, help="Birds per render unit, the grain of resume "
                                                                    "and of Dask tasks (does not change the output)."),
    force: bool = FORCE_BUILD,
) -> None:
    """Build Waterbirds-seg: CUB birds composited on land/water places, Waterbirds' splits at each ρ.

    Does nothing when the output was built from the same inputs and options; a killed build resumes."""
    from segbench.core.splits import check_rhos
    from segbench.schemas.waterbirds import WaterbirdsParams
    from segbench.tasks.waterbirds.dataset import read_cub

    settings = settings_of(ctx)
    params = WaterbirdsParams(**{k: v for k, v in {
        "rhos": check_rhos(rho) if rho else None, "val_per_group": val_per_group, "test_per_group": test_per_group,
        "val_fraction": val_fraction, "seed": seed, "species_match": species_match.value, "on_error": on_error}.items() if v is not None})
    read_cub(cub_root)  # fail on a wrong path before starting Prefect
    from segbench.flows.waterbirds.build import build_waterbirds

    repo = Path(".").resolve()
    if publish:
        from segbench.core.versioning import configure_remote, ensure_repo

        ensure_repo(repo)  # refuse before building, not after
        if settings.dvc_remote:
            configure_remote(repo, settings.dvc_remote, local=True)
    summary = run_flow(ctx, build_waterbirds, cub_root, places_root, out or settings.data_root / "waterbirds_seg", params,
                       publish_repo=repo if publish else None,
                       publish_data_dir=relative_to_repo(settings.data_root, repo), shard_size=shard_size, force=force)
    print_build(summary)
    if publish:
        print_publish(summary.publish)


def print_build(summary: WaterbirdsBuildSummary) -> None:
    """The counts of a Waterbirds-seg build, its group counts per ρ and split, and where it is."""
    counts = summary.counts
    console.out.print(console.key_values("Waterbirds-seg", {
        "birds": counts.birds, **{f"  {k}": v for k, v in counts.per_class.items()},
        **{f"  in CUB's {k} split": v for k, v in counts.per_cub_split.items()},
        "images (bird on a place)": counts.rendered, **{f"  {k}": v for k, v in counts.per_group.items()},
        "substring-rule mislabels": ", ".join(m["species"] for m in summary.mislabels) or "none",
        "skipped (see skipped.json)": sum(summary.skipped.values()),
    }))
    flip.print_group_counts(counts.splits, ["landbird on land", "landbird on water", "waterbird on land",
                                            "waterbird on water"])
    console.out.print(f"Dataset: [bold]{display_path(summary.out)}[/]")
    console.out.print(build_status(summary))


def print_demo(results: WaterbirdsDemo, provider: Any, *, evaluation_only: bool = False) -> None:
    """Waterbirds-seg's part of the demo: its build."""
    print_build(results.build)
