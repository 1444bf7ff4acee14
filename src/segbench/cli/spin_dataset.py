"""`segbench build spin`: the SPIN dataset from PartImageNet, the taxonomy and the resolved crowd subparts.

Registered by :mod:`segbench.cli`; the flow is imported inside the command so ``--help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path

import typer

from segbench import console
from segbench.cli.common import build_status, run_flow, settings_of
from segbench.core.errors import InputError, OnError


def build_spin_command(
    ctx: typer.Context,
    partimagenet_root: Path = typer.Option(
        ..., "--partimagenet", help="PartImageNet root: annotations/{train,val,test}.json and images/<split>/"),
    cap: int = typer.Option(1200, "--cap", min=1, help="images kept per super-category"),
    seed: int = typer.Option(0, "--seed", help="seeds the choice among equally good images under the cap"),
    on_error: OnError = typer.Option(
        OnError.FAIL, "--on-error", help="fail on a bad record, or skip it and list it in skipped.json"),
    force: bool = typer.Option(False, "--force", help="Rebuild even when spin/dataset/ is up to date."),
) -> None:
    """Build SPIN: wholes / parts / subparts COCO files per split, images, statistics and a manifest.

    Reads <data root>/spin/taxonomy.yaml and spin/crowd/resolved.json; replaces spin/dataset/ when done.
    Does nothing when spin/dataset/ was built from the same inputs and options.
    """
    from segbench.flows.spin.build import build_spin
    from segbench.schemas.spin import SpinBuildParams

    if not (partimagenet_root / "annotations").is_dir():  # fail on a wrong path before starting Prefect
        raise InputError("not a PartImageNet root (no annotations/ folder)", path=partimagenet_root,
                         hint="pass the folder holding annotations/{train,val,test}.json and images/")
    data_root = settings_of(ctx).data_root
    params = SpinBuildParams(cap_per_supercategory=cap, seed=seed, on_error=on_error)
    print_build(run_flow(ctx, build_spin, partimagenet_root, data_root, params, force=force))


def print_build(summary: dict) -> None:
    overall = summary["counts"]["composition"]["overall"]
    console.out.print(console.key_values(f"SPIN → {summary['out']}", {
        "images": overall["images"],
        **{f"{level} (categories / annotations)": f"{o['categories_used']} / {o['annotations']}"
           for level, o in ((lv, overall[lv]) for lv in ("wholes", "parts", "subparts"))},
        "left out: no parts / over the cap": f"{sum(summary['counts']['without_parts'].values())} / "
                                             f"{summary['counts']['over_cap']}",
        "skipped records": summary["skipped"],
    }))
    console.out.print(build_status(summary))


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add this module's commands to the `build`, `evaluate` and root command groups."""
    build_app.command("spin")(build_spin_command)
