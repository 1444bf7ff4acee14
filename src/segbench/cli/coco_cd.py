"""COCO-CD's commands: ``build coco-cd`` and ``evaluate coco-cd``, and its summaries.

The rounds of its context audit are ``segbench rounds`` commands (:mod:`segbench.cli.rounds`).
Flows are imported inside the commands, so ``--help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from segbench import console
from segbench.cli import flip, rounds
from segbench.cli.common import (
    FORCE_BUILD,
    build_status,
    display_path,
    flow_command_lock,
    relative_to_repo,
    run_flow,
    seed_option,
    settings_of,
)
from segbench.cli.publish import print_publish
from segbench.cli.rounds import Backend, print_ingest, print_round
from segbench.core.errors import OnError
from segbench.core.paths import check_output_folder

if TYPE_CHECKING:
    from segbench.schemas.coco_cd import CocoCdBuildSummary, CocoCdDemo

PREDICTIONS_HELP = "Folder of <image id:012d>.png label maps or .npz files with 'probs' (3 × 512 × 512)."
EVALUATE_HELP = "Evaluate predictions on COCO-CD: IoU, Fg-IoU, FG-Corr/Flip/Miss, group gaps, flip-risk deciles."


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add ``build coco-cd`` and ``evaluate coco-cd`` (its context audit's ``rounds create`` is its round kind's)."""
    build_app.command("coco-cd")(build_command)
    evaluate_app.command("coco-cd")(flip.evaluate_command("coco_cd", PREDICTIONS_HELP, EVALUATE_HELP))


def _params(**values: Any):
    from segbench.schemas.coco_cd import CocoCdParams

    return CocoCdParams(**{k: v for k, v in values.items() if v is not None})


def build_command(
    ctx: typer.Context,
    coco_root: Path = typer.Option(..., "--coco-root", help="The COCO 2017 folder: the instances files in "
                                                           "annotations/, and the train2017/ and val2017/ images."),
    stuff_root: Path = typer.Option(..., "--stuff-root", help="The COCO-Stuff folder, with the stuff "
                                                             "annotations of train2017 and val2017 (stuff_*.json)."),
    out: Path = typer.Option(None, "--out", help="Output folder (default: <data root>/coco_cd).",
                             callback=check_output_folder),
    rho: list[float] = typer.Option(None, "--rho", help="Train correlation ρ; repeat for several (default: 0.5, 0.95)."),
    val_per_group: int = typer.Option(None, "--val-per-group", help="Val images per group (default: 50)."),
    test_per_group: int = typer.Option(None, "--test-per-group", help="Test images per group (default: 125)."),
    seed: int = seed_option(None, "Seed of every random draw (default: 13)."),
    on_error: OnError = typer.Option(OnError.FAIL, "--on-error", help="Bad items: fail, or skip them and list "
                                                                     "them in skipped.json."),
    images: bool = typer.Option(True, "--images/--no-images", help="Write the resized images (masks always)."),
    publish: bool = typer.Option(False, "--publish", help="Publish a DVC version of the data root afterwards."),
    shard_size: int = typer.Option(200, "--shard-size", min=1, help="Images per render unit, the grain of resume "
                                                                    "and of Dask tasks (does not change the output)."),
    force: bool = FORCE_BUILD,
) -> None:
    """Build COCO-CD: cat/dog images, indoor/outdoor context from COCO-Stuff, ρ-controlled splits.

    An output already built from the same inputs and parameters is left as is. A build that was
    interrupted (even killed) resumes where it stopped when run again.
    """
    settings = settings_of(ctx)
    from segbench.core.splits import check_rhos

    params = _params(rhos=check_rhos(rho) if rho else None, val_per_group=val_per_group,
                     test_per_group=test_per_group, seed=seed, on_error=on_error, write_images=images)
    from segbench.tasks.coco_cd.selection import source_files

    source_files(coco_root, stuff_root)  # fail on a wrong path before starting Prefect
    from segbench.flows.coco_cd.build import build_coco_cd

    repo = Path(".").resolve()
    if publish:
        from segbench.core.versioning import configure_remote, ensure_repo

        ensure_repo(repo)  # refuse before building, not after
        if settings.dvc_remote:
            configure_remote(repo, settings.dvc_remote, local=True)
    summary = run_flow(ctx, build_coco_cd, coco_root, stuff_root, out or settings.data_root / "coco_cd", params,
                       publish_repo=repo if publish else None,
                       publish_data_dir=relative_to_repo(settings.data_root, repo), shard_size=shard_size, force=force)
    print_build(summary)
    if publish:
        print_publish(summary.publish)


def print_build(summary: CocoCdBuildSummary) -> None:
    """The counts of a COCO-CD build, its group counts per ρ and split, and where it is."""
    counts = summary.counts
    console.out.print(console.key_values("COCO-CD", {
        "source images": counts.source_images,
        "with cat or dog": counts.with_target_class,
        "  both classes (excluded)": counts.both_classes,
        "  foreground too small / too large": f"{counts.fg_too_small} / {counts.fg_too_large}",
        "retained": counts.kept,
        "  indoor / outdoor / unknown": "{indoor} / {outdoor} / {unknown}".format(**counts.context),
        "usable for splits": counts.usable,
        "skipped (see skipped.json)": sum(summary.skipped.values()),
    }))
    flip.print_group_counts(counts.splits, ["cat indoors", "cat outdoors", "dog indoors", "dog outdoors"])
    out = display_path(summary.out)
    console.out.print(f"Dataset: [bold]{out}[/]  (tables in {out}/tables)")
    console.out.print(build_status(summary))


def create_audit_command(
    ctx: typer.Context,
    key: str = rounds.ROUND_KEY,
    per_group: int = typer.Option(50, "--per-group", min=1, help="Audit: validation images per group."),
    seed: int = seed_option(13, "Seed of the sample."),
    backend: Backend = rounds.BACKEND,
    overlap: int = typer.Option(2, "--overlap", help="Annotators per task."),
    overwrite: bool = rounds.OVERWRITE,
    batch_by_group: bool = typer.Option(False, "--batch-by-group", help="Give each item its group as batch "
                                        "(cat-indoors, ...), to launch group by group with `rounds launch --batch`."),
    gold: str = rounds.GOLD,
    gold_file: Path = rounds.GOLD_FILE,
    gold_from: str = rounds.GOLD_FROM,
    workers: int = rounds.WORKERS,
    rule: list[str] = rounds.RULE,
    qualification: bool = rounds.QUALIFICATION,
    pass_threshold: float = rounds.PASS_THRESHOLD,
    requires: str = rounds.REQUIRES,
) -> None:
    """The COCO-CD context audit: people label sampled validation images indoor, outdoor or ambiguous.

    Gold items are validation images whose context is unambiguous by the evidence shares, and with
    --gold-from those an earlier audit's people decided unanimously."""
    from segbench.tasks.coco_cd.audit import audit_sources

    quality = rounds.quality_kwargs(gold, gold_file, qualification, pass_threshold, requires, overlap=overlap,
                                    workers=workers, rules=rule, gold_from=gold_from)
    audit_sources(settings_of(ctx).data_root / "coco_cd", per_group)  # the flow's own check, before Prefect starts
    from segbench.flows.coco_cd.audit import create_coco_cd_audit

    with flow_command_lock(ctx):
        round_ = create_coco_cd_audit(settings_of(ctx).data_root, key, per_group=per_group, seed=seed, backend=backend.value,
                                      overlap=overlap, overwrite=overwrite, batch_by_group=batch_by_group,
                                      **quality)
    print_round(round_, "Round created")
    rounds.warn_thin_gold(round_, workers)
    console.out.print(f"Next: segbench rounds launch {key}")


def print_demo(results: CocoCdDemo, provider: Any, *, evaluation_only: bool = False) -> None:
    """COCO-CD's part of the demo: the build and the context audit, then the baseline's evaluation."""
    if not evaluation_only:
        print_build(results.build)
        print_ingest(results.audit)
    if results.evaluation is not None:
        flip.print_evaluation(results.evaluation)
