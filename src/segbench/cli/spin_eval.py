"""`segbench evaluate spin`: localization (mIoU per level), SpCS, SeCS and recognition mACC on SPIN.

Registered by :mod:`segbench.cli`. The flow is imported inside the command, so ``--help`` stays fast and
Prefect starts only when there is work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from segbench import console
from segbench.cli.common import (
    FORCE_EVALUATION,
    display_path,
    print_up_to_date,
    relative_to_repo,
    run_flow,
    settings_of,
)
from segbench.core.errors import InputError, OnError

LEVEL_OPTION = "{level} results file (instead of --predictions, or overriding its file)."


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add this module's commands to the `build`, `evaluate` and root command groups."""
    evaluate_app.command("spin")(evaluate_spin_command)


def evaluate_spin_command(
    ctx: typer.Context,
    predictions: Path = typer.Option(None, "--predictions", help="Folder holding spin_<split>_{wholes,parts,"
                                                                "subparts}_results.json (any of them)."),
    wholes: Path = typer.Option(None, "--wholes", help=LEVEL_OPTION.format(level="Objects")),
    parts: Path = typer.Option(None, "--parts", help=LEVEL_OPTION.format(level="Parts")),
    subparts: Path = typer.Option(None, "--subparts", help=LEVEL_OPTION.format(level="Subparts")),
    answers: Path = typer.Option(None, "--answers", help="Recognition answers [{image_id, category_id | gt_id, "
                                                        "level, prompt?, answer, truth?}] for mACC."),
    split: str = typer.Option("test", "--split", help="train, val or test."),
    rev: str = typer.Option(None, "--rev", help="Git revision of the published dataset (default: working tree)."),
    repo: Path = typer.Option(Path("."), "--repo", help="The git + DVC project holding data.dvc."),
    dataset_dir: str = typer.Option(None, "--dataset-dir", help="SPIN folder inside the repo (default: "
                                                               "<data root>/spin: taxonomy.yaml and dataset/)."),
    out: Path = typer.Option(None, "--out", help="Report folder (default: <data root>/eval/spin/<run>)."),
    on_error: OnError = typer.Option(OnError.FAIL, "--on-error", help="Bad predictions or answers: fail, or skip "
                                                                     "them (an abstention) and list them in "
                                                                     "skipped.json."),
    force: bool = FORCE_EVALUATION,
) -> None:
    """Evaluate SPIN predictions: mIoU per level and abstention, SpCS-S2P/P2O, SeCS, and mACC of answers,
    each for general and specific prompts.

    Does nothing when the report is up to date with the ground truth, results and answers files.

    A results file is COCO results, [{image_id, category_id | gt_id, segmentation (RLE), score?,
    prompt?: general|specific}], one prediction per ground-truth entity prompt.
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
    out = out or data_root / "eval" / "spin" / f"{rev or 'worktree'}-{split}-{run}"
    from segbench.flows.spin.evaluate import evaluate_spin

    result = run_flow(ctx, evaluate_spin, repo=repo, rev=rev, predictions=files, out=out, split=split,
                      dataset_dir=dataset_dir or relative_to_repo(data_root / "spin", repo),
                      answers=answers, on_error=on_error, force=force)
    print_up_to_date(result, out)
    print_summary(result)
    console.out.print(f"Report: [bold]{display_path(Path(result['paths']['report']))}[/]")


def print_summary(result: dict[str, Any]) -> None:
    """One table of the headline numbers per prompt kind (percentages, as the seed prints them)."""
    summary = result["summary"]
    rows = []
    for prompt, p in summary["prompts"].items():
        levels, spcs = p["levels"], p["spcs"]
        rows.append([prompt, *(_pct(levels[lv]["miou"]) for lv in ("subparts", "parts", "wholes")),
                     _pct(levels["subparts"]["abstention_rate"]), _pct(spcs["s2p"]["score"]),
                     _pct(spcs["p2o"]["score"]), _pct(spcs["mean"]), _pct(p["secs"]["score"])])
    console.out.print(console.table(f"SPIN ({summary['num_images']} images, %)",
                                    ["prompt", "mIoU S", "mIoU P", "mIoU O", "abstain S", "SpCS-S2P", "SpCS-P2O",
                                     "SpCS-Avg", "SeCS"], rows))
    recognition = summary.get("recognition") or {}
    if recognition:
        console.out.print(console.table("Recognition (mACC, %)", ["prompt", "subparts", "parts", "objects"], [
            [prompt, *(_pct((by_level.get(lv) or {}).get("macc")) for lv in ("subparts", "parts", "wholes"))]
            for prompt, by_level in recognition.items()]))
    if summary.get("skipped"):
        console.out.print(f"Skipped items: {summary['skipped']['count']} (see skipped.json)")


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.2f}"
