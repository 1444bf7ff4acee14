"""CAFE's build commands: ``build cafe-candidates`` (a first batch, or ``--top-up`` of a round that fell
short of the quotas), ``rounds create cafe_verification`` and ``build cafe`` (the export), and the
export's summary. Heavy imports (Prefect, the providers) happen inside the commands."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from segbench import console
from segbench.cli import rounds
from segbench.cli.common import (
    build_status,
    display_path,
    flow_command_lock,
    run_flow,
    seed_option,
    settings_of,
)
from segbench.cli.rounds import Backend
from segbench.core.errors import InputError, OnError
from segbench.core.paths import check_output_folder

if TYPE_CHECKING:
    from segbench.schemas.cafe import ExportSummary

T = TypeVar("T")


def _pairs(values: list[str], option: str, convert: Callable[[str], T]) -> dict[str, T]:
    """``NAME=VALUE`` options as a dict; an InputError names the bad one."""
    out = {}
    for text in values or []:
        name, sep, value = text.partition("=")
        try:
            if not sep or not name.strip():
                raise ValueError("no NAME=")
            out[name.strip()] = convert(value)
        except ValueError as exc:
            raise InputError(f"{option} {text!r} is not NAME=VALUE", hint=f"e.g. {option} coco=500") from exc
    return out


def build_candidates_command(
    ctx: typer.Context,
    source: list[str] = typer.Option(..., "--source", help="NAME=ANNOTATIONS_JSON:IMAGES_DIR of a COCO-format "
                                     "source (COCO val2017, LVIS val, SA-Co/Gold); repeat for several."),
    quota: list[str] = typer.Option(None, "--quota", help="NAME=N: N verified samples wanted from that source, "
                                    "dealt over the edit mix (default: every eligible object)."),
    expect_acceptance: float = typer.Option(None, "--expect-acceptance", metavar="SHARE",
                                            help="Share of candidates people are expected to verify (default 1): a "
                                                 "quota asks for quota / SHARE candidates."),
    top_up: str = typer.Option(None, "--top-up", metavar="ROUND",
                               help="Top up the chain of this ingested verification round: draw new targets for "
                                    "what it is short of, over the share it verified. Keeps that batch's options."),
    min_area: float = typer.Option(None, "--min-area", help="Smallest target area, as a fraction of the image "
                                                            "(default 0.02)."),
    max_area: float = typer.Option(None, "--max-area", help="Largest target area fraction (default 0.6)."),
    per_image: int = typer.Option(None, "--per-image", help="Targets per image (default 1)."),
    edit_mix: list[str] = typer.Option(None, "--edit-mix", help="TYPE=SHARE for SM, CC, OC (default: the released "
                                                                "CAFE mix 1111 : 593 : 442)."),
    seed: int = seed_option(0, "Seed of the target draw, edit types, offline plans and edits."),
    on_error: OnError = typer.Option(OnError.FAIL, "--on-error", help="fail on a bad annotation, image or edit, "
                                                                      "or skip it and report it in skipped.json."),
    out: Path = typer.Option(None, "--out", help="Output folder (default: <data root>/cafe_candidates, and "
                                                 "cafe_candidates_N for the Nth batch of a top-up chain).",
                             callback=check_output_folder),
    replay_only: bool = typer.Option(False, "--replay-only", help="Plans and edits only from the caches."),
    force: bool = typer.Option(False, "--force", help="Rebuild even when the candidates are up to date."),
) -> None:
    """Select targets, ask for edit plans, validate the prompt pairs and edit the images (staged).

    Does nothing when the candidates were built from the same sources and options; a killed build resumes.
    After a verification round falls short of the quotas, --top-up ROUND builds the next batch."""
    from segbench.providers import make_provider
    from segbench.providers.cafe.editors import make_image_editor
    from segbench.schemas.cafe import CafeParams, SourceSpec

    settings = settings_of(ctx)
    try:
        sources = [SourceSpec.parse(text) for text in source]
        values = {"min_area_fraction": min_area, "max_area_fraction": max_area, "targets_per_image": per_image,
                  "expected_acceptance": expect_acceptance}
        params = CafeParams(seed=seed, on_error=on_error, quotas=_pairs(quota, "--quota", int),
                            **({"edit_mix": _pairs(edit_mix, "--edit-mix", float)} if edit_mix else {}),
                            **{k: v for k, v in values.items() if v is not None})
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        raise InputError(str(exc).splitlines()[-1] if "\n" in str(exc) else str(exc),
                         hint="see segbench build cafe-candidates --help") from exc
    default_out = settings.data_root / "cafe_candidates"
    if top_up:
        params, default_out = _top_up_params(ctx, settings.data_root, top_up, on_error)
    for spec in sources:  # fail before Prefect starts
        if not spec.annotations.is_file() or not spec.images.is_dir():
            raise InputError(f"source {spec.name}: annotations file or images folder not found",
                             path=spec.annotations if not spec.annotations.is_file() else spec.images,
                             hint="--source NAME=ANNOTATIONS_JSON:IMAGES_DIR")
    replay = replay_only or settings.replay_only
    provider = make_provider(settings, replay_only=replay)
    editor = make_image_editor(settings, replay_only=replay)
    from segbench.flows.cafe.candidates import build_cafe_candidates

    out = out or default_out
    summary = run_flow(ctx, build_cafe_candidates, sources, out, provider, params, editor=editor,
                       nltk_data=settings.work_dir / "nltk_data", force=force, data_root=settings.data_root)
    counts = summary.counts
    console.out.print(console.key_values("CAFE candidates", {
        "candidates": counts.candidates, **{f"  {k}": v for k, v in counts.by_edit_type.items()},
        "prompt pairs": counts.prompt_pairs,
        "skipped": ", ".join(f"{k} {v}" for k, v in counts.skipped.items()) or "none",
        "provider": f"{provider.name} ({provider.model})", "editor": f"{editor.name} ({editor.model})",
        "calls / cache hits": f"{summary.usage.calls} / {summary.usage.cache_hits}"}))
    folder = _under(settings.data_root, out)
    candidates_option = "" if folder == "cafe_candidates" else f" --candidates {folder}"
    console.out.print(f"Candidates: [bold]{display_path(summary.out)}[/]\n"
                      f"Next: segbench rounds create cafe_verification KEY{candidates_option}")
    console.out.print(build_status(summary))


# What a top-up keeps from the batch it tops up: the draw must continue the same seeded order.
_KEPT_BY_TOP_UP = ("quota", "expect_acceptance", "min_area", "max_area", "per_image", "edit_mix", "seed")


def _top_up_params(ctx: typer.Context, data_root: Path, round_key: str, on_error: OnError) -> tuple[Any, Path]:
    """The params of a top-up of ``round_key``'s chain and its default folder (``cafe_candidates_N``).

    Raises:
        InputError: an option the top-up keeps was given, or the round's candidates are not a build.
    """
    from segbench.annotation_ui.rounds import RoundStore
    from segbench.core.manifest import read_manifest
    from segbench.schemas.cafe import CafeParams

    # By name: typer ships its own copy of click, whose ParameterSource is another enum.
    given = [name for name in _KEPT_BY_TOP_UP if getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"]
    if given:
        options = ", ".join("--" + name.replace("_", "-") for name in given)
        raise InputError(f"--top-up keeps the options of the batch it tops up; {options} cannot change them",
                         item=f"--top-up {round_key}", hint="leave those options out, or build a new first batch")
    round_ = RoundStore(data_root / "rounds").load(round_key)
    folder = data_root / round_.dataset
    previous = read_manifest(folder).params
    fields = {k: v for k, v in previous.items() if k in CafeParams.model_fields}
    params = CafeParams.model_validate({**fields, "on_error": on_error, "top_up_of": round_key,
                                        "batch": int(fields.get("batch", 1)) + 1})
    return params, data_root / f"cafe_candidates_{params.batch}"


def _under(data_root: Path, folder: Path) -> str:
    """``folder`` relative to the data root (rounds name their candidates so)."""
    try:
        return str(Path(folder).resolve().relative_to(Path(data_root).resolve()))
    except ValueError:
        return str(folder)


def create_verification_command(
    ctx: typer.Context,
    key: str = rounds.ROUND_KEY,
    backend: Backend = rounds.BACKEND,
    overlap: int = typer.Option(3, "--overlap", help="Annotators per sample (the majority decides)."),
    candidates: str = typer.Option("cafe_candidates", "--candidates", metavar="FOLDER",
                                   help="The candidates folder under the data root (a top-up batch: "
                                        "cafe_candidates_2, ...)."),
    overwrite: bool = rounds.OVERWRITE,
    gold: str = typer.Option("0", "--gold", metavar="N|auto",
                             help="Mix in N known-bad pairs (a candidate with its outline moved off the object), "
                                  "chosen by --seed, scored per worker; auto: sized from --expected-workers and --overlap."),
    gold_source: list[str] = typer.Option(None, "--gold-source", metavar="NAME=IMAGES_DIR",
                                          help="A source's images folder (repeatable): half the --gold pairs are "
                                               "then its unedited images, where q- is really present."),
    gold_file: Path = rounds.GOLD_FILE,
    gold_from: str = rounds.GOLD_FROM,
    workers: int = rounds.WORKERS,
    rule: list[str] = rounds.RULE,
    qualification: bool = rounds.QUALIFICATION,
    pass_threshold: float = rounds.PASS_THRESHOLD,
    requires: str = rounds.REQUIRES,
    seed: int = seed_option(0, "Seed of the gold items."),
) -> None:
    """CAFE's verification: people check each candidate's q+, q-, edit and mask."""
    from segbench.annotation_ui.gold import QualityOptions
    from segbench.flows.cafe.verification import create_cafe_verification

    quality = QualityOptions(**rounds.quality_kwargs(gold, gold_file, qualification, pass_threshold, requires,
                                                     overlap=overlap, workers=workers, rules=rule, gold_from=gold_from),
                             seed=seed)
    from segbench.core.io import inside_name

    data_root = settings_of(ctx).data_root
    candidates = inside_name(candidates, item="--candidates", root=data_root)  # rounds name it relative to the root
    with flow_command_lock(ctx):
        round_ = create_cafe_verification(data_root, key, backend=backend.value, overlap=overlap,
                                          overwrite=overwrite, quality=quality, candidates_dir=candidates,
                                          gold_sources=_gold_sources(gold_source or []))
    console.out.print(console.key_values("Round created", {
        "key": round_.key, "kind": round_.kind, "backend": round_.backend, "items": len(round_.items),
        "overlap": round_.config.overlap, "candidates": f"{round_.dataset} ({round_.dataset_version[:12]})"}))
    rounds.warn_thin_gold(round_, workers)
    console.out.print(f"Next: segbench rounds launch {key}, then segbench rounds ingest {key}, "
                      f"then segbench build cafe --round {key}")


def _gold_sources(values: list[str]) -> dict[str, Path]:
    """``NAME=IMAGES_DIR`` values as a mapping; a value without ``=`` or a missing folder is refused."""
    out = {}
    for value in values:
        name, sep, folder = value.partition("=")
        if not sep or not name or not folder:
            raise InputError(f"--gold-source {value!r} is not NAME=IMAGES_DIR", item="--gold-source",
                             hint="name the source as in build cafe-candidates --source, e.g. coco=/data/coco/val2017")
        if not Path(folder).is_dir():
            raise InputError("images folder not found", path=folder, item=f"--gold-source {name}",
                             hint="pass the folder the source's images are in")
        out[name] = Path(folder)
    return out


def export_command(
    ctx: typer.Context,
    round_key: str = typer.Option(..., "--round", help="The ingested CAFE verification round."),
    out: Path = typer.Option(None, "--out", help="Output folder (default: <data root>/cafe).",
                             callback=check_output_folder),
    force: bool = typer.Option(False, "--force", help="Export even when the export is up to date."),
    partial: bool = typer.Option(False, "--partial", help="Export a round some of whose items have no answer yet "
                                                          "(they count as not verified)."),
) -> None:
    """Export the verified CAFE pairs in the SA-Co format (CAFE.json, CAFE_{SM,CC,OC}.json, images/).

    Does nothing when the export was made from the same round answers and candidates."""
    from segbench.flows.cafe.export import build_cafe

    settings = settings_of(ctx)
    summary = run_flow(ctx, build_cafe, settings.data_root, round_key, out=out, force=force, partial=partial)
    print_export(summary)
    short = sum(row.short for row in summary.counts.targets)
    if short:
        console.out.print(f"{short} samples short of the quotas (tables/targets.md). Next: segbench build "
                          f"cafe-candidates --source … --top-up {round_key}")


def print_export(summary: ExportSummary) -> None:
    counts = summary.counts
    console.out.print(console.key_values("CAFE", {
        "samples (pairs)": counts.samples, **{f"  {k}": v for k, v in counts.by_edit_type.items()},
        "not verified": f"{counts.not_verified} ({counts.rejected} rejected, {counts.tied} tied, "
                        f"{counts.unanswered} unanswered)",
        **({"held out for gold": f"{counts.held_out} (not asked about in this round)"} if counts.held_out else {}),
        **({"exported / target": f"{sum(r.exported for r in counts.targets)} / {sum(r.target or 0 for r in counts.targets)}"
            + (f" ({counts.beyond_target} verified beyond it)" if counts.beyond_target else "")}
           if counts.targets else {}),
        "prompt pairs": counts.prompt_pairs,
        "unique q+ / q-": f"{counts.unique_positive} / {counts.unique_negative}"}))
    console.out.print(f"Dataset: [bold]{display_path(summary.out)}[/]")
    console.out.print(build_status(summary))
