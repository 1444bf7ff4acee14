"""CAFE's commands: the build commands (:mod:`segbench.cli.cafe.build`), ``evaluate cafe`` (the
target-aware table) and ``evaluate cgf1`` (SAM3's cgF1 on any SA-Co ground truth), and their
summaries. Heavy imports (Prefect, pycocotools) happen inside the commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from segbench import console
from segbench.cli.cafe.build import build_candidates_command, export_command, print_export
from segbench.cli.common import (
    FORCE_EVALUATION,
    TRACK,
    display_path,
    print_up_to_date,
    relative_to_repo,
    run_evaluation,
    seed_option,
    settings_of,
)
from segbench.core.paths import check_output_folder

if TYPE_CHECKING:
    from segbench.schemas.cafe import CafeDemo
    from segbench.schemas.cafe_metrics import CafeMetrics, CgF1FileSummary, Ignored
    from segbench.schemas.results import EvaluationResult

# What `evaluate cafe` / `evaluate cgf1` run: the function in this process, or with --track its flow.
EVALUATE_CAFE = "segbench.tasks.cafe.evaluation:evaluate_cafe"
EVALUATE_CAFE_FLOW = "segbench.flows.cafe.evaluate:evaluate_cafe"
EVALUATE_CGF1 = "segbench.tasks.cafe.evaluation:evaluate_cgf1"
EVALUATE_CGF1_FLOW = "segbench.flows.cafe.evaluate:evaluate_cgf1"


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add this module's commands to the `build`, `evaluate` and root command groups."""
    build_app.command("cafe-candidates")(build_candidates_command)
    build_app.command("cafe")(export_command)
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
                                                                       "the calibration predictions)."),
    calibration_predictions: Path = typer.Option(None, "--calibration-predictions", help="Calibration results."),
    calibration_fraction: float = typer.Option(0.2, "--calibration-fraction", help="Without a calibration set: "
                                                                                   "this seeded fraction of the "
                                                                                   "pairs calibrates and is left "
                                                                                   "out of the numbers."),
    seed: int = seed_option(0, "Seed of the calibration split."),
    out: Path = typer.Option(None, "--out", help="Report folder (default: <reports dir>/cafe/<run>).",
                             callback=check_output_folder),
    force: bool = FORCE_EVALUATION,
    track: bool = TRACK,
) -> None:
    """Evaluate predictions on CAFE: TA-TP/FN, TA-FP/UA-FP, AFPR/UFPR, ACSR/UCSR and cgF1 per subset.

    Does nothing when the report is up to date with the ground truth, predictions and options."""
    from segbench.schemas.cafe import CafeEvalParams

    settings = settings_of(ctx)
    params = CafeEvalParams(score_threshold=score_threshold, iou_threshold=iou_threshold, calibrate=calibrate,
                            calibration_fraction=calibration_fraction, seed=seed,
                            **({"taus": tuple(tau)} if tau else {}))
    from segbench.core.versioning import revision_label
    out = out or settings.reports_dir / "cafe" / f"{revision_label(repo, rev)}-{predictions.stem}"
    result = run_evaluation(ctx, track, EVALUATE_CAFE, EVALUATE_CAFE_FLOW, repo=repo, rev=rev, gt=gt, predictions=predictions,
                            out=out, dataset_dir=relative_to_repo(settings.data_root / "cafe", repo), params=params,
                            calibration_gt=calibration_gt, calibration_predictions=calibration_predictions,
                            force=force)
    print_up_to_date(result, out)
    print_cafe_evaluation(result)


def print_cafe_evaluation(result: EvaluationResult[CafeMetrics]) -> None:
    m = result.summary
    title = f"CAFE (t = {m.params.score_threshold:g}, τ = {m.params.iou_threshold:g})"
    if m.calibration:
        title += " — t calibrated"
    rows = {name: subset.model_dump() for name, subset in m.subsets().items()}  # by the table's column names
    for heading, columns in ((title, ("N", "TA-TP", "TA-FN", "UA-FN", "TA-FP", "UA-FP", "TN")),
                             ("Rates and cgF1", ("AFPR", "UFPR", "ACSR", "UCSR", "SoftSwap", "cgF1", "IL_MCC",
                                                 "pmF1"))):
        console.out.print(console.table(heading, ["subset", *columns],
                                        [[name, *(row[c] for c in columns)] for name, row in rows.items()]))
    print_ignored(m.ignored)
    console.out.print(f"Report: [bold]{display_path(result.report)}[/]")


def print_ignored(ignored: Ignored | None, label: str = "") -> None:
    """Say how many predictions were left out (image not in the ground truth); warn when unexpected."""
    if not ignored or not ignored.predictions:
        return
    text = (f"{label}{ignored.predictions} predictions on {ignored.images} images not in the ground truth "
            f"were ignored: {ignored.reason}.")
    if ignored.expected:
        console.out.print(f"Ignored: {text}")
    else:
        console.err.print(f"[yellow]Warning:[/] {text}")


def evaluate_cgf1_command(
    ctx: typer.Context,
    gt: list[Path] = typer.Option(..., "--gt", help="SA-Co-format ground truth; repeat for the oracle protocol "
                                                    "(each image keeps its best-matching ground truth)."),
    predictions: Path = typer.Option(..., "--predictions", help="COCO results JSON (RLE segmentations). "
                                     "Predictions for images outside a ground truth are ignored and counted."),
    score_threshold: float = typer.Option(0.5, "--score-threshold", help="Predictions below are dropped."),
    each: bool = typer.Option(False, "--each", help="Score the predictions against each --gt file in turn (CAFE's "
                                                    "run_eval.sh on CAFE_SM/CC/OC.json) instead of the oracle "
                                                    "protocol; an image in none of the files is an error."),
    out: Path = typer.Option(None, "--out", help="Report folder (default: <reports dir>/cgf1/<run>).",
                             callback=check_output_folder),
    force: bool = FORCE_EVALUATION,
    track: bool = TRACK,
) -> None:
    """cgF1, IL_MCC, pmF1, IL_FPR and the rest of SAM3's cgF1 summary on any SA-Co-format ground truth.

    Does nothing when the report is up to date with the ground truths, predictions and threshold."""

    settings = settings_of(ctx)
    out = out or settings.reports_dir / "cgf1" / f"{gt[0].stem}-{predictions.stem}"
    result = run_evaluation(ctx, track, EVALUATE_CGF1, EVALUATE_CGF1_FLOW, gts=gt, predictions=predictions, out=out,
                            score_threshold=score_threshold, force=force, each=each)
    print_up_to_date(result, out)
    from segbench.schemas.cafe_metrics import CgF1Each

    m = result.summary
    if isinstance(m, CgF1Each):
        print_cgf1_each(m.files)
    else:
        named = m.model_dump()  # by SAM3's names (cgF1@0.5, ...)
        console.out.print(console.key_values("cgF1", {
            "images (IL TP / FP / TN / FN)": f"{m.num_images} ({m.IL_TP} / {m.IL_FP} / {m.IL_TN} / {m.IL_FN})",
            **{name: named[name] for name in ("cgF1", "cgF1@0.5", "cgF1@0.75", "IL_MCC", "pmF1", "positive_macro_F1",
                                              "IL_FPR")},
        }))
        print_ignored(m.ignored)
    console.out.print(f"Report: [bold]{display_path(result.report)}[/]")


def print_cgf1_each(files: list[CgF1FileSummary]) -> None:
    columns = ("num_images", "cgF1", "cgF1@0.5", "cgF1@0.75", "IL_MCC", "pmF1", "IL_FPR")
    rows = [(Path(f.ground_truth).name, f.model_dump(), f.ignored) for f in files]
    console.out.print(console.table("cgF1, each ground truth in turn", ["ground truth", *columns, "ignored"],
                                    [[name, *(named[c] for c in columns), ignored.predictions if ignored else 0]
                                     for name, named, ignored in rows]))
    for name, _, ignored in rows:
        print_ignored(ignored, label=f"{name}: ")


def print_demo(results: CafeDemo, provider: Any, *, evaluation_only: bool = False) -> None:
    """CAFE's part of the demo: the export of the verified pairs, then the prompt-blind baseline's evaluation."""
    if not evaluation_only:
        print_export(results.export)
    if results.evaluation is not None:
        print_cafe_evaluation(results.evaluation)
