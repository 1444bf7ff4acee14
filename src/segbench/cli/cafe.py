"""`segbench` commands that build CAFE: ``build cafe-candidates``, ``build cafe-verification`` and
``build cafe``. Heavy imports (Prefect, pycocotools, the providers) happen inside the commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from segbench import console
from segbench.cli.common import build_status, run_flow
from segbench.cli.rounds import Backend
from segbench.core.errors import InputError, OnError


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add this module's commands to the `build`, `evaluate` and root command groups."""
    build_app.command("cafe-candidates")(build_candidates_command)
    build_app.command("cafe-verification")(create_verification_command)
    build_app.command("cafe")(export_command)


def _pairs(values: list[str], option: str, convert: Any) -> dict[str, Any]:
    """``NAME=VALUE`` options as a dict; an InputError names the bad one."""
    out = {}
    for text in values or []:
        name, sep, value = text.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError("no NAME=")
            out[name.strip()] = convert(value)
        except ValueError:
            raise InputError(f"{option} {text!r} is not NAME=VALUE", hint=f"e.g. {option} coco=500") from None
    return out


def build_candidates_command(
    ctx: typer.Context,
    source: list[str] = typer.Option(..., "--source", help="NAME=ANNOTATIONS_JSON:IMAGES_DIR of a COCO-format "
                                     "source (COCO val2017, LVIS val, SA-Co/Gold); repeat for several."),
    quota: list[str] = typer.Option(None, "--quota", help="NAME=N: at most N targets from that source."),
    min_area: float = typer.Option(None, "--min-area", help="Smallest target area, as a fraction of the image "
                                                            "(default 0.02)."),
    max_area: float = typer.Option(None, "--max-area", help="Largest target area fraction (default 0.6)."),
    per_image: int = typer.Option(None, "--per-image", help="Targets per image (default 1)."),
    edit_mix: list[str] = typer.Option(None, "--edit-mix", help="TYPE=SHARE for SM, CC, OC (default: the released "
                                                                "CAFE mix 1111 : 593 : 442)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the target draw, edit types, offline plans and edits."),
    on_error: OnError = typer.Option(OnError.FAIL, "--on-error", help="fail on a bad annotation, image or edit, "
                                                                      "or skip it and report it in skipped.json."),
    out: Path = typer.Option(None, "--out", help="Output folder (default: <data root>/cafe_candidates)."),
    replay_only: bool = typer.Option(False, "--replay-only", help="Plans and edits only from the caches."),
    force: bool = typer.Option(False, "--force", help="Rebuild even when the candidates are up to date."),
) -> None:
    """Select targets, ask for edit plans, validate the prompt pairs and edit the images (staged).

    Does nothing when the candidates were built from the same sources and options; a killed build resumes."""
    from segbench.providers import make_provider
    from segbench.providers.editors import make_image_editor
    from segbench.schemas.cafe import CafeParams, SourceSpec

    settings = ctx.obj["settings"]
    try:
        sources = [SourceSpec.parse(text) for text in source]
        values = {"min_area_fraction": min_area, "max_area_fraction": max_area, "targets_per_image": per_image}
        params = CafeParams(seed=seed, on_error=on_error, quotas=_pairs(quota, "--quota", int),
                            **({"edit_mix": _pairs(edit_mix, "--edit-mix", float)} if edit_mix else {}),
                            **{k: v for k, v in values.items() if v is not None})
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise InputError(str(exc).splitlines()[-1] if "\n" in str(exc) else str(exc),
                         hint="see segbench build cafe-candidates --help") from None
    for spec in sources:  # fail before Prefect starts
        if not spec.annotations.is_file() or not spec.images.is_dir():
            raise InputError(f"source {spec.name}: annotations file or images folder not found",
                             path=spec.annotations if not spec.annotations.is_file() else spec.images,
                             hint="--source NAME=ANNOTATIONS_JSON:IMAGES_DIR")
    replay = replay_only or settings.replay_only
    provider = make_provider(settings, replay_only=replay)
    editor = make_image_editor(settings, replay_only=replay)
    from segbench.flows.cafe.build import build_cafe_candidates

    summary = run_flow(ctx, build_cafe_candidates, sources, out or settings.data_root / "cafe_candidates", provider,
                       params, editor=editor, nltk_data=settings.work_dir / "nltk_data", force=force)
    counts = summary["counts"]
    console.out.print(console.key_values("CAFE candidates", {
        "candidates": counts["candidates"], **{f"  {k}": v for k, v in counts["by_edit_type"].items()},
        "prompt pairs": counts["prompt_pairs"],
        "skipped": ", ".join(f"{k} {v}" for k, v in counts["skipped"].items()) or "none",
        "provider": f"{provider.name} ({provider.model})", "editor": f"{editor.name} ({editor.model})",
        "calls / cache hits": f"{summary['usage']['calls']} / {summary['usage']['cache_hits']}"}))
    console.out.print(f"Candidates: [bold]{summary['out']}[/]\nNext: segbench build cafe-verification KEY")
    console.out.print(build_status(summary))


def create_verification_command(
    ctx: typer.Context,
    key: str = typer.Argument(..., help="Name of the round (letters, digits, - _ .)."),
    backend: Backend = typer.Option(Backend.labelstudio, "--backend", help="Label Studio, or files for a crowd."),
    overlap: int = typer.Option(3, "--overlap", help="Annotators per sample (the majority decides)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing round with this key."),
) -> None:
    """Create the verification round of the CAFE candidates: people check q+, q-, the edit and the mask."""
    from segbench.flows.cafe.verify import create_cafe_verification
    from segbench.locking import command_lock

    with command_lock(ctx):
        round_ = create_cafe_verification(ctx.obj["settings"].data_root, key, backend=backend.value, overlap=overlap,
                                          overwrite=overwrite)
    console.out.print(console.key_values("Round created", {
        "key": round_.key, "kind": round_.kind, "backend": round_.backend, "items": len(round_.items),
        "overlap": round_.config.overlap, "candidates": f"{round_.dataset} ({round_.dataset_version[:12]})"}))
    console.out.print(f"Next: segbench rounds launch {key}, then segbench rounds ingest {key}, "
                      f"then segbench build cafe --round {key}")


def export_command(
    ctx: typer.Context,
    round_key: str = typer.Option(..., "--round", help="The ingested CAFE verification round."),
    out: Path = typer.Option(None, "--out", help="Output folder (default: <data root>/cafe)."),
    force: bool = typer.Option(False, "--force", help="Export even when the export is up to date."),
) -> None:
    """Export the verified CAFE pairs in the SA-Co format (CAFE.json, CAFE_{SM,CC,OC}.json, images/).

    Does nothing when the export was made from the same round answers and candidates."""
    from segbench.flows.cafe.verify import build_cafe

    settings = ctx.obj["settings"]
    summary = run_flow(ctx, build_cafe, settings.data_root, round_key, out=out, force=force)
    print_export(summary)


def print_export(summary: dict[str, Any]) -> None:
    counts = summary["counts"]
    console.out.print(console.key_values("CAFE", {
        "samples (pairs)": counts["samples"], **{f"  {k}": v for k, v in counts["by_edit_type"].items()},
        "not verified": counts["not_verified"], "prompt pairs": counts["prompt_pairs"],
        "unique q+ / q-": f"{counts['unique_positive']} / {counts['unique_negative']}"}))
    console.out.print(f"Dataset: [bold]{summary['out']}[/]")
    console.out.print(build_status(summary))
