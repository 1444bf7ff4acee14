"""`segbench evaluate cafe` and `segbench evaluate cgf1`: CAFE's target-aware table and SAM3's cgF1."""

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


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add this module's commands to the `build`, `evaluate` and root command groups."""
    evaluate_app.command("cafe")(evaluate_cafe_command)
    evaluate_app.command("cgf1")(evaluate_cgf1_command)


def evaluate_cafe_command(
    ctx: typer.Context,
    predictions: Path = typer.Option(..., "--predictions", help="COCO results JSON [{image_id, category_id, "
                                                                "segmentation (RLE), score}] for both images "
                                                                "of every pair."),
    gt: Path = typer.Option(None, "--gt", help="A CAFE export (CAFE.json) to read instead of the published one."),
    rev: str = typer.Option(None, "--rev", help="Git revision of the published dataset (default: working tree)."),
    repo: Path = typer.Option(Path("."), "--repo", help="The git + DVC project holding data.dvc."),
    score_threshold: float = typer.Option(0.5, "--score-threshold", help="Presence threshold t (SAM3: 0.5)."),
    iou_threshold: float = typer.Option(0.3, "--iou-threshold", help="Target-alignment IoU τ (paper: 0.3)."),
    tau: list[float] = typer.Option(None, "--tau", help="τ of the sweep; repeat for several (default 0.1..0.9)."),
    calibrate: bool = typer.Option(False, "--calibrate", help="Choose t maximising overall cgF1 on a calibration "
                                                              "split (for models without a presence head)."),
    calibration_gt: Path = typer.Option(None, "--calibration-gt", help="Calibration ground truth (with "
                                                                       "--calibration-predictions)."),
    calibration_predictions: Path = typer.Option(None, "--calibration-predictions", help="Calibration results."),
    calibration_fraction: float = typer.Option(0.2, "--calibration-fraction", help="Without a calibration set: "
                                                                                   "this seeded fraction of the "
                                                                                   "pairs calibrates and is left "
                                                                                   "out of the numbers."),
    seed: int = typer.Option(0, "--seed", help="Seed of the calibration split."),
    out: Path = typer.Option(None, "--out", help="Report folder (default: <data root>/eval/cafe/<run>)."),
    force: bool = FORCE_EVALUATION,
) -> None:
    """Evaluate predictions on CAFE: TA-TP/FN, TA-FP/UA-FP, AFPR/UFPR, ACSR/UCSR and cgF1 per subset.

    Does nothing when the report is up to date with the ground truth, predictions and options."""
    from segbench.schemas.cafe import CafeEvalParams

    settings = settings_of(ctx)
    params = CafeEvalParams(score_threshold=score_threshold, iou_threshold=iou_threshold, calibrate=calibrate,
                            calibration_fraction=calibration_fraction, seed=seed,
                            **({"taus": tuple(tau)} if tau else {}))
    out = out or settings.data_root / "eval" / "cafe" / f"{rev or 'worktree'}-{predictions.stem}"
    from segbench.flows.cafe.evaluate import evaluate_cafe

    result = run_flow(ctx, evaluate_cafe, repo=repo, rev=rev, gt=gt, predictions=predictions, out=out,
                      dataset_dir=relative_to_repo(settings.data_root / "cafe", repo), params=params,
                      calibration_gt=calibration_gt, calibration_predictions=calibration_predictions, force=force)
    print_up_to_date(result, out)
    print_cafe_evaluation(result)


def print_cafe_evaluation(result: dict[str, Any]) -> None:
    from segbench.tasks.cafe.metrics import OVERALL, SUBSETS

    m = result["summary"]
    params = m["params"]
    title = f"CAFE (t = {params['score_threshold']:g}, τ = {params['iou_threshold']:g})"
    if m.get("calibration"):
        title += " — t calibrated"
    for heading, columns in ((title, ("N", "TA-TP", "TA-FN", "UA-FN", "TA-FP", "UA-FP", "TN")),
                             ("Rates and cgF1", ("AFPR", "UFPR", "ACSR", "UCSR", "cgF1", "IL_MCC", "pmF1"))):
        console.out.print(console.table(heading, ["subset", *columns],
                                        [[s, *(m[s][c] for c in columns)] for s in (*SUBSETS, OVERALL)]))
    console.out.print(f"Report: [bold]{display_path(Path(result['paths']['report']))}[/]")


def evaluate_cgf1_command(
    ctx: typer.Context,
    gt: list[Path] = typer.Option(..., "--gt", help="SA-Co-format ground truth; repeat for the oracle protocol "
                                                    "(each image keeps its best-matching ground truth)."),
    predictions: Path = typer.Option(..., "--predictions", help="COCO results JSON (RLE segmentations)."),
    score_threshold: float = typer.Option(0.5, "--score-threshold", help="Predictions below are dropped."),
    out: Path = typer.Option(None, "--out", help="Report folder (default: <data root>/eval/cgf1/<run>)."),
    force: bool = FORCE_EVALUATION,
) -> None:
    """cgF1, IL_MCC, pmF1, IL_FPR and the rest of SAM3's cgF1 summary on any SA-Co-format ground truth.

    Does nothing when the report is up to date with the ground truths, predictions and threshold."""

    settings = settings_of(ctx)
    out = out or settings.data_root / "eval" / "cgf1" / f"{gt[0].stem}-{predictions.stem}"
    from segbench.flows.cafe.evaluate import evaluate_cgf1

    result = run_flow(ctx, evaluate_cgf1, gts=gt, predictions=predictions, out=out, score_threshold=score_threshold,
                      force=force)
    print_up_to_date(result, out)
    m = result["summary"]
    console.out.print(console.key_values("cgF1", {
        "images (IL TP / FP / TN / FN)": f"{m['num_images']} ({m['IL_TP']} / {m['IL_FP']} / {m['IL_TN']} / "
                                         f"{m['IL_FN']})",
        **{name: m[name] for name in ("cgF1", "cgF1@0.5", "cgF1@0.75", "IL_MCC", "pmF1", "positive_macro_F1",
                                      "IL_FPR")},
    }))
    console.out.print(f"Report: [bold]{display_path(Path(result['paths']['report']))}[/]")
