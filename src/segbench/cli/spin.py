"""`segbench` commands for the SPIN taxonomy and crowd answers: ``build spin-taxonomy`` and
``spin import``. Heavy imports (Prefect, pycocotools) happen inside the commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from segbench import console
from segbench.cli.common import build_status, display_path, run_flow
from segbench.cli.rounds import Backend
from segbench.core.errors import OnError

spin_app = typer.Typer(help="SPIN crowd annotation: create the rounds, import answers into resolved subpart masks.",
                       no_args_is_help=True)


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add this module's commands to the `build`, `evaluate` and root command groups."""
    build_app.command("spin-taxonomy")(build_taxonomy_command)
    app.add_typer(spin_app, name="spin")


def build_taxonomy_command(
    ctx: typer.Context,
    edits: Path = typer.Option(None, "--edits", help="Edit file (exclude / rename / add rules); default: the "
                                                     "shipped taxonomy_edits.yaml."),
    out: Path = typer.Option(None, "--out", help="Folder of taxonomy.yaml (default: <data root>/spin)."),
    replay_only: bool = typer.Option(False, "--replay-only", help="Answer only from the cache; a miss is an error."),
    force: bool = typer.Option(False, "--force", help="Rebuild even when the taxonomy is up to date."),
) -> None:
    """Build the SPIN subpart taxonomy: ask for the subparts of every PartImageNet part, apply the edits,
    write taxonomy.yaml and print what changed since the previous build.

    Does nothing when the taxonomy was built from the same edits, provider and versions."""
    from segbench.providers import make_provider
    from segbench.tasks.spin.taxonomy import load_catalog, load_edits

    settings = ctx.obj["settings"]
    if edits is not None:
        load_edits(edits, load_catalog())  # a bad edit file fails before Prefect starts
    provider = make_provider(settings, replay_only=replay_only or settings.replay_only)
    from segbench.flows.spin.taxonomy import build_spin_taxonomy

    result = run_flow(ctx, build_spin_taxonomy, out or settings.data_root / "spin", provider, edits, force=force)
    print_taxonomy(result, provider)


def print_taxonomy(result: dict, provider: Any, *, diff: bool = True) -> None:

    if diff and not result.get("up_to_date"):
        console.out.print(result["diff_markdown"])
    counts = result["counts"]
    console.out.print(console.key_values("SPIN taxonomy", {
        "parts": counts["parts"], "subparts (object-specific)": f"{counts['subparts']} ({counts['object_specific']})",
        "proposed / removed by edits": f"{counts['proposed']} / {counts['removed']}",
        "provider": f"{provider.name} ({provider.model})",
        "rules that changed nothing": ", ".join(result["unused_rules"]) or "none",
        "taxonomy": result["paths"]["taxonomy"], "diff": result["paths"]["diff"]}))
    console.out.print(build_status(result))


@spin_app.command("rounds")
def rounds_command(
    ctx: typer.Context,
    partimagenet: Path = typer.Option(..., "--partimagenet", help="PartImageNet root: annotations/{train,val,test}"
                                                                  ".json and images/<split>/."),
    key: str = typer.Option(..., "--key", help="Prefix of the round keys: <key>-<super-category>-<part>."),
    backend: Backend = typer.Option(Backend.labelstudio, "--backend", help="Label Studio, or files for a crowd."),
    overlap: int = typer.Option(3, "--overlap", help="Annotators per task."),
    cap: int = typer.Option(None, "--cap", help="Images per super-category (default: 1200, as build spin)."),
    seed: int = typer.Option(None, "--seed", help="Seed of the capped selection (default: 0, as build spin)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace existing rounds with these keys."),
) -> None:
    """Create the annotation rounds: one per (super-category, part), one task per image–object–part
    showing the part outlined, asking for each subpart of the taxonomy (build spin-taxonomy first)."""
    from segbench.flows.spin.build import source_version, spin_paths, spin_round_items
    from segbench.flows.spin.crowd import create_spin_rounds
    from segbench.locking import command_lock
    from segbench.schemas.spin import SpinBuildParams

    data_root = ctx.obj["settings"].data_root
    params = SpinBuildParams(**{k: v for k, v in {"cap_per_supercategory": cap, "seed": seed}.items()
                                if v is not None})
    with command_lock(ctx):
        items = [item for group in spin_round_items(partimagenet, data_root, params).values() for item in group]
        version = source_version(partimagenet, spin_paths(data_root)["taxonomy"])
        rounds = create_spin_rounds(data_root, items, key_prefix=key, dataset_version=version, backend=backend.value,
                                    overlap=overlap, overwrite=overwrite)
    console.out.print(console.table("SPIN rounds", ["round", "object-part", "tasks", "subparts asked"], [
        [r.key, f"{r.config.params['object']}-{r.config.params['part']}", len(r.items),
         len(r.config.params["subparts"])] for r in rounds]))
    console.out.print(f"Task overlays: {display_path(data_root / 'spin' / 'tasks')}")
    console.out.print("Next: segbench rounds launch KEY for each round, then segbench rounds ingest KEY "
                      "(ingest imports the subpart answers).")


@spin_app.command("import")
def import_command(
    ctx: typer.Context,
    round_key: str = typer.Option(..., "--round", help="The SPIN round (one per super-category and part)."),
    results: Path = typer.Option(None, "--results", help="AMT-style results file (CSV or JSON) to import instead "
                                 "of the round's ingested answers; Answer.polygons holds JSON "
                                 "[{label, points: [[x, y], ...]}] in pixels."),
    parts: Path = typer.Option(None, "--parts", help="COCO parts file (PartImageNet) for the part masks, when the "
                                                     "round items carry none."),
    taxonomy: Path = typer.Option(None, "--taxonomy", help="Taxonomy YAML (default: <data root>/spin/taxonomy.yaml)."),
    containment: float = typer.Option(0.8, "--containment", min=0.0, max=1.0,
                                      help="Share of a subpart mask that must lie inside its part."),
    on_error: OnError = typer.Option(OnError.FAIL, "--on-error", help="fail on a bad results row, or skip and "
                                                                      "report it."),
) -> None:
    """Validate and resolve a SPIN round's answers into data/spin/crowd/ (raw, report, resolved.json)."""
    from segbench.flows.spin.crowd import import_spin_round
    from segbench.locking import command_lock

    settings = ctx.obj["settings"]
    with command_lock():
        result = import_spin_round(settings.data_root, round_key, results=results, parts=parts, taxonomy=taxonomy,
                                   containment=containment, on_error=on_error)
    report = result["report"]
    console.out.print(console.key_values(f"SPIN round {round_key}", {
        "answers": report["answers"], "items answered": report["items_answered"],
        "subparts resolved": report["resolved"], "absent / no voters": f"{report['absent']} / {report['no_voters']}",
        **{f"flag {k}": v for k, v in report["flags"].items()},
        "skipped rows": report["skipped"]["count"], "resolved": result["paths"]["resolved"]}))
