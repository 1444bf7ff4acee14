"""SPIN's commands: ``build spin-taxonomy``, ``spin import``, ``build spin`` and ``evaluate spin``, and its
summaries (its round kinds' create commands: :mod:`segbench.cli.spin.rounds`). Heavy imports (Prefect,
pycocotools) happen inside the commands."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from segbench import console, registry
from segbench.cli.common import (
    FORCE_EVALUATION,
    TRACK,
    build_status,
    display_path,
    existing,
    print_up_to_date,
    relative_to_repo,
    run_evaluation,
    run_flow,
    seed_option,
    settings_of,
)
from segbench.core.errors import InputError, OnError
from segbench.core.paths import check_output_folder

if TYPE_CHECKING:
    from segbench.schemas.results import EvaluationResult
    from segbench.schemas.spin_metrics import SpinMetrics
    from segbench.schemas.spin_results import SpinBuildSummary, SpinDemo, SpinFilters, TaxonomySummary

LEVEL_OPTION = "{level} results file (instead of --predictions, or overriding its file)."

class YesRule(str, Enum):
    SUBSTRING = "substring"
    WORD = "word"


class SubpartPromptName(str, Enum):
    """The choices of ``build spin-taxonomy --prompt`` (segbench.tasks.spin.taxonomy.PROMPTS, not imported
    here: the command line stays light)."""

    paper = "paper"
    segbench = "segbench"


class MaskAggregation(str, Enum):
    """The choices of ``spin import --mask-aggregation`` (segbench.tasks.spin.crowd.MASK_AGGREGATIONS, not
    imported here: the command line stays light)."""

    medoid = "medoid"
    em = "em"
    majority = "majority"
    rasa = "rasa"
    stated = "stated"  # medoid's former name, still accepted


spin_app = typer.Typer(help="SPIN crowd annotation: import a crowd's answers into resolved subpart masks.",
                       no_args_is_help=True)


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add this module's commands to the `build`, `evaluate` and root command groups."""
    build_app.command("spin-taxonomy")(build_taxonomy_command)
    build_app.command("spin")(build_spin_command)
    evaluate_app.command("spin")(evaluate_spin_command)
    app.add_typer(spin_app, name="spin")


def build_taxonomy_command(
    ctx: typer.Context,
    edits: Path = typer.Option(None, "--edits", help="Edit file (exclude / rename / add rules); default: the "
                                                     "shipped taxonomy_edits.yaml."),
    out: Path = typer.Option(None, "--out", help="Folder of taxonomy.yaml (default: <data root>/spin).",
                             callback=check_output_folder),
    replay_only: bool = typer.Option(False, "--replay-only", help="Answer only from the cache; a miss is an error."),
    force: bool = typer.Option(False, "--force", help="Rebuild even when the taxonomy is up to date."),
    prompt: SubpartPromptName = typer.Option(
        SubpartPromptName.paper, "--prompt",
        help="How subparts are asked for: paper (SPIN §8.1's question, word for word) or segbench (segbench's "
             "own: example classes, the other parts, no internal anatomy). Recorded in the taxonomy."),
) -> None:
    """Build the SPIN subpart taxonomy: ask for the subparts of every PartImageNet part and apply the edits.

    Writes taxonomy.yaml and prints what changed since the previous build.

    Does nothing when the taxonomy was built from the same edits, provider and versions."""
    from segbench.providers import make_provider
    from segbench.tasks.spin.taxonomy import load_catalog
    from segbench.tasks.spin.taxonomy_edits import load_edits

    settings = settings_of(ctx)
    if edits is not None:
        load_edits(edits, load_catalog())  # a bad edit file fails before Prefect starts
    provider = make_provider(settings, replay_only=replay_only or settings.replay_only)
    from segbench.flows.spin.taxonomy import build_spin_taxonomy

    result = run_flow(ctx, build_spin_taxonomy, out or settings.data_root / "spin", provider, edits, force=force,
                      prompt=prompt.value)
    print_taxonomy(result, provider)


def print_taxonomy(result: TaxonomySummary, provider: Any, *, diff: bool = True) -> None:

    if diff and not result.up_to_date:
        console.out.print(result.diff_markdown)
    counts = result.counts
    console.out.print(console.key_values("SPIN taxonomy", {
        "parts": counts.parts, "subparts (object-specific)": f"{counts.subparts} ({counts.object_specific})",
        "proposed / not visible / removed": f"{counts.proposed} / {counts.not_visible} / {counts.removed}",
        "provider": f"{provider.name} ({provider.model})",
        **({"proposer vs reference (recall / precision)":
            f"{_share(counts.proposer_matched_reference or 0, counts.reference_subparts)} / "
            f"{_share(counts.proposer_matched_proposals or 0, counts.proposed - counts.not_visible)} "
            f"of {counts.reference_subparts}",
            "proposer recall before the visibility check":
            _share(counts.proposer_matched_reference_before_visibility or 0, counts.reference_subparts)}
           if counts.reference_subparts is not None else {}),
        **({"questions without a usable answer (skipped)": counts.rejected_answers}
           if counts.rejected_answers is not None else {}),
        "rules that changed nothing": ", ".join(result.unused_rules) or "none",
        "taxonomy": display_path(result.paths["taxonomy"]), "diff": display_path(result.paths["diff"]),
        "figure": display_path(result.paths["figure"])}))
    for reason in counts.suspect or []:
        console.err.print(f"[yellow]warning:[/] the model's proposals look wrong: {reason}; try a larger model")
    console.out.print(build_status(result))


@spin_app.command("import")
def import_command(
    ctx: typer.Context,
    round_key: str = typer.Option(..., "--round", help="The SPIN round (one per super-category and part)."),
    results: Path = typer.Option(None, "--results", callback=existing, help="AMT-style results file (CSV or JSON) to import instead "
                                 "of the round's ingested answers; Answer.polygons holds JSON "
                                 r"\[{label, points: \[\[x, y], …]}] in pixels."),
    parts: Path = typer.Option(None, "--parts", callback=existing, help="COCO parts file (PartImageNet) for the part masks, when the "
                                                     "round items carry none."),
    taxonomy: Path = typer.Option(None, "--taxonomy", help="Taxonomy YAML (default: taxonomy.yaml in <data root>/spin)."),
    containment: float = typer.Option(0.8, "--containment", min=0.0, max=1.0,
                                      help="Share of a subpart mask that must lie inside its part."),
    on_error: OnError = typer.Option(OnError.FAIL, "--on-error", help="fail on a bad results row, or skip and "
                                                                      "report it."),
    mask_aggregation: MaskAggregation = typer.Option(
        MaskAggregation.medoid, "--mask-aggregation",
        help="How a present subpart's mask is resolved: medoid (segbench's rule: the yes-mask with the highest "
             "mean IoU with the others; the SPIN paper states none), or crowd-kit's aggregate of the yes-masks: "
             "em (its SegmentationEM), majority (its pixel majority vote), rasa (its SegmentationRASA). stated "
             "is medoid's former name."),
) -> None:
    """Validate and resolve a SPIN round's answers into data/spin/crowd/ (raw, report, resolved.json)."""
    from segbench.flows.spin.crowd import import_spin_round
    from segbench.locking import command_lock

    settings = settings_of(ctx)
    if mask_aggregation is MaskAggregation.stated:
        console.err.print("note: --mask-aggregation stated is now called medoid (it is segbench's rule, not one "
                          "the SPIN paper states); stated still works and means the same", markup=False,
                          highlight=False, soft_wrap=True)
    with command_lock(ctx):
        result = import_spin_round(settings.data_root, round_key, results=results, parts=parts, taxonomy=taxonomy,
                                   containment=containment, on_error=on_error,
                                   mask_aggregation=mask_aggregation.value)
    report = result.report
    console.out.print(console.key_values(f"SPIN round {round_key}", {
        "answers": report.answers, "items answered": report.items_answered,
        "subparts resolved": report.resolved, "absent / no voters": f"{report.absent} / {report.no_voters}",
        "mask rule": report.rule,
        **({"copied masks (counted once)": sum(len(c["annotators"]) - 1 for c in report.copies)}
           if report.copies else {}),
        **({"empty aggregate masks (not resolved)": len(report.empty_aggregate)}
           if report.empty_aggregate is not None else {}),
        **{f"flag {k}": v for k, v in report.flags.items()},
        "skipped rows": report.skipped.count, "resolved": str(result.paths["resolved"])}))


def build_spin_command(
    ctx: typer.Context,
    partimagenet_root: Path = typer.Option(
        ..., "--partimagenet", callback=existing,
        help="The PartImageNet folder: the split files (train.json, val.json, test.json) in annotations/, and "
             "images/<split>/."),
    cap: int = typer.Option(1200, "--cap", min=1, help="images kept per super-category"),
    seed: int = seed_option(0, "seeds the choice among equally good images under the cap"),
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


def print_build(summary: SpinBuildSummary) -> None:
    overall = summary.counts.composition.overall
    console.out.print(console.key_values(f"SPIN → {display_path(summary.out)}", {
        "images": overall.images,
        **{f"{level} (categories / annotations)": f"{o.categories_used} / {o.annotations}"
           for level, o in (("wholes", overall.wholes), ("parts", overall.parts), ("subparts", overall.subparts))},
        "left out: no parts / over the cap": f"{sum(summary.counts.without_parts.values())} / "
                                             f"{summary.counts.over_cap}",
        **_filter_rows(summary.counts.filters),
        "skipped records": summary.skipped,
    }))
    console.out.print(build_status(summary))


def _filter_rows(filters: SpinFilters) -> dict[str, str | int]:
    """The §8.3 filters' counts."""
    ambiguous = ", ".join(f"{name} {n}" for name, n in filters.ambiguous_part_annotations.items())
    over = ", ".join(f"{sup} {sum(by_split.values())}" for sup, by_split in filters.over_cap.items()) or "none"
    return {"ambiguous parts (annotations, no subparts)": ambiguous, "over the cap per super-category": over,
            "kept images": filters.kept_images}


@spin_app.command("prompts")
def prompts_command(
    ctx: typer.Context,
    out: Path = typer.Option(..., "--out", help="The JSON file to write."),
    split: str = typer.Option("test", "--split", help="train, val or test."),
    rev: str = typer.Option(None, "--rev", help="Git revision of the published dataset (default: working tree)."),
    repo: Path = typer.Option(Path("."), "--repo", help="The git + DVC project holding data.dvc."),
    dataset_dir: str = typer.Option(None, "--dataset-dir", help="SPIN folder inside the repo (default: "
                                                               "<data root>/spin)."),
) -> None:
    """Write a box and a point prompt per ground-truth object, part and subpart, for SAM-style upper bounds.

    Each entry is {gt_id, image_id, level, category_id, category, bbox (x, y, w, h), point (x, y)}, the
    point the pixel farthest inside the mask. Run a promptable model on them and give its masks with
    their gt_id to evaluate spin, which scores them instance by instance.
    """
    from segbench.core.io import write_json
    from segbench.tasks.spin.evaluation import load_truth
    from segbench.tasks.spin.prompts import entity_prompts

    data_root = settings_of(ctx).data_root
    truth = load_truth(str(repo), rev, dataset_dir or relative_to_repo(data_root / "spin", repo), split)
    prompts = entity_prompts(truth)
    write_json(out, prompts, indent=1)
    levels = {level: sum(p["level"] == level for p in prompts) for level in ("wholes", "parts", "subparts")}
    console.out.print(console.key_values(f"SPIN prompts ({split})", {
        "images": len(truth.images), **{f"{level} prompts": n for level, n in levels.items()},
        "file": display_path(out)}))
    console.set_summary({"file": str(out), "images": len(truth.images), "prompts": levels})


def evaluate_spin_command(
    ctx: typer.Context,
    predictions: Path = typer.Option(None, "--predictions", help="Folder holding the results files "
                                                                "spin_<split>_<level>_results.json, level wholes, "
                                                                "parts or subparts (any of them)."),
    wholes: Path = typer.Option(None, "--wholes", help=LEVEL_OPTION.format(level="Objects")),
    parts: Path = typer.Option(None, "--parts", callback=existing, help=LEVEL_OPTION.format(level="Parts")),
    subparts: Path = typer.Option(None, "--subparts", help=LEVEL_OPTION.format(level="Subparts")),
    answers: Path = typer.Option(None, "--answers", help="Recognition answers [{image_id, category_id | gt_id, "
                                                        "level, prompt?, answer, truth?}] for mACC."),
    split: str = typer.Option("test", "--split", help="train, val or test."),
    rev: str = typer.Option(None, "--rev", help="Git revision of the published dataset (default: working tree)."),
    repo: Path = typer.Option(Path("."), "--repo", help="The git + DVC project holding data.dvc."),
    dataset_dir: str = typer.Option(None, "--dataset-dir", help="SPIN folder inside the repo (default: "
                                                               "<data root>/spin: taxonomy.yaml and dataset/)."),
    out: Path = typer.Option(None, "--out", help="Report folder (default: <reports dir>/spin/<run>).",
                             callback=check_output_folder),
    on_error: OnError = typer.Option(OnError.FAIL, "--on-error", help="Bad predictions or answers: fail, or skip "
                                                                     "them (an abstention) and list them in "
                                                                     "skipped.json."),
    yes_rule: YesRule = typer.Option(YesRule.SUBSTRING, "--yes-rule", help="When an answer counts as yes: "
                                     "'yes' anywhere in it (substring, the paper's rule: 'eyes' counts) or as a "
                                     "whole word (word)."),
    force: bool = FORCE_EVALUATION,
    track: bool = TRACK,
) -> None:
    """Evaluate SPIN predictions: mIoU per level, abstention, SpCS-S2P/P2O, SeCS and mACC of answers.

    Each is reported for general and for specific prompts.

    Does nothing when the report is up to date with the ground truth, results and answers files.

    A results file is COCO results, [{image_id, category_id | gt_id, segmentation (RLE), score?,
    prompt?: general|specific}]: one prediction per annotation (gt_id: scored instance by instance) or
    per image and category (scored against the union of its annotations), per prompt. A box model's
    detections give a bbox (x, y, w, h) instead of a segmentation, several per category: their union is its
    mask.
    """
    from segbench.tasks.spin.inputs import prediction_files

    files: dict[str, Path] = prediction_files(predictions, split) if predictions is not None else {}
    for level, path in (("wholes", wholes), ("parts", parts), ("subparts", subparts)):
        if path is not None:
            if not path.is_file():
                raise InputError("results file not found", path=path, hint=f"check the --{level} path")
            files[level] = path
    if not files and answers is None:
        raise InputError("nothing to evaluate", hint="give --predictions DIR, or --wholes/--parts/--subparts "
                                                     "files, and/or --answers")
    data_root = settings_of(ctx).data_root
    run = predictions.name if predictions is not None else "-".join(sorted(files)) or "answers"
    from segbench.core.versioning import revision_label
    out = out or settings_of(ctx).reports_dir / "spin" / f"{revision_label(repo, rev)}-{split}-{run}"
    spec = registry.dataset("spin")
    result = run_evaluation(ctx, track, spec.hook(spec.evaluate, "evaluation"), spec.hook(spec.evaluate_flow, "evaluation flow"), repo=repo, rev=rev, predictions=files,
                            out=out, split=split, dataset_dir=dataset_dir or relative_to_repo(data_root / "spin", repo),
                            answers=answers, on_error=on_error, force=force, yes_rule=yes_rule.value)
    print_up_to_date(result, out)
    print_summary(result)
    console.out.print(f"Report: [bold]{display_path(result.report)}[/]")


def print_summary(result: EvaluationResult[SpinMetrics]) -> None:
    """One table of the headline numbers per prompt kind (percentages, as the seed prints them)."""
    summary = result.summary
    rows = []
    for prompt, p in summary.prompts.items():
        levels, spcs = p.levels, p.spcs
        rows.append([prompt, *(_pct(level.miou) for level in (levels.subparts, levels.parts, levels.wholes)),
                     _pct(levels.subparts.abstention_rate), _pct(spcs.s2p.score), _pct(spcs.p2o.score),
                     _pct(spcs.mean), _pct(p.secs.score)])
    console.out.print(console.table(f"SPIN ({summary.num_images} images, %)",
                                    ["prompt", "mIoU S", "mIoU P", "mIoU O", "abstain S", "SpCS-S2P", "SpCS-P2O",
                                     "SpCS-Avg", "SeCS"], rows))
    if summary.recognition:
        console.out.print(console.table("Recognition (mACC, %)", ["prompt", "subparts", "parts", "objects"], [
            [prompt, *(_pct(by_level[lv].macc if lv in by_level else None) for lv in ("subparts", "parts", "wholes"))]
            for prompt, by_level in summary.recognition.items()]))
    if summary.skipped:
        console.out.print(f"Skipped items: {summary.skipped.count} (see skipped.json)")


def _share(part: int, whole: int) -> str:
    return f"{_pct(part / whole)}%" if whole else "n/a"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.2f}"


def print_demo(results: SpinDemo, provider: Any, *, evaluation_only: bool = False) -> None:
    """SPIN's part of the demo: taxonomy, crowd rounds, dataset and the parent-mask baseline's evaluation."""
    print_taxonomy(results.taxonomy, provider, diff=False)
    console.out.print(console.key_values("SPIN crowd rounds", {"rounds": len(results.rounds), **results.crowd}))
    print_build(results.spin)
    print_summary(results.evaluation)
