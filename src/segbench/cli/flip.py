"""What the commands of the datasets scored with the flip metrics share (COCO-CD and Waterbirds-seg):
their ``evaluate`` options, the evaluation body and the summary it prints, and ``oracle-inputs``."""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from segbench import console, registry
from segbench.cli.common import (
    FORCE_EVALUATION,
    TRACK,
    display_path,
    print_up_to_date,
    relative_to_repo,
    run_evaluation,
    settings_of,
)
from segbench.core.paths import check_output_folder

if TYPE_CHECKING:
    from segbench.schemas.flip import FlipSummary
    from segbench.schemas.results import EvaluationResult

REV = typer.Option(None, "--rev", help="Git revision of the published dataset (default: working tree).")
REPO = typer.Option(Path("."), "--repo", help="The git + DVC project holding data.dvc.")


def _rho(value: float) -> float:
    if not (math.isfinite(value) and 0.5 <= value <= 1.0):
        raise typer.BadParameter(f"{value} is outside [0.5, 1]; pass the ρ of a built split (e.g. 0.95)")
    return value


RHO = typer.Option(0.95, "--rho", callback=_rho, help="Which ρ directory to read.")


class Split(str, enum.Enum):
    train = "train"
    val = "val"
    test = "test"


SPLIT = typer.Option(Split.test, "--split", help="Which split to read.")
OUT = typer.Option(None, "--out", help="Report folder (default: <reports dir>/<dataset>/<run>).",
                   callback=check_output_folder)


def evaluate_command(dataset: str, predictions_help: str, doc: str) -> Callable[..., None]:
    """The ``evaluate <dataset>`` command of a dataset scored with the flip metrics.

    Args:
        predictions_help: what its ``--predictions`` folder holds; doc: the command's help text.
    """

    def command(
        ctx: typer.Context,
        predictions: Path = typer.Option(..., "--predictions", help=predictions_help),
        rev: str = REV, repo: Path = REPO, rho: float = RHO, split: Split = SPLIT, out: Path = OUT,
        force: bool = FORCE_EVALUATION, track: bool = TRACK,
    ) -> None:
        evaluate(ctx, dataset, predictions, rev, repo, rho, split.value, out, force, track)

    command.__doc__ = doc + "\n\nDoes nothing when the report is up to date with the split, its masks and the predictions."
    return command


def evaluate(ctx: typer.Context, dataset: str, predictions: Path, rev: str | None, repo: Path, rho: float,
             split: str, out: Path | None, force: bool, track: bool = False) -> None:
    """Run the registered evaluation of ``dataset`` on one ρ split and print its summary."""
    spec = registry.dataset(dataset)
    settings = settings_of(ctx)
    dataset_dir = relative_to_repo(settings.data_root / spec.default_out, repo)
    from segbench.core.versioning import revision_label

    out = out or (settings.reports_dir / spec.default_out
                  / f"{revision_label(repo, rev)}-rho{rho:g}-{split}-{predictions.name}")
    result = run_evaluation(ctx, track, spec.hook(spec.evaluate, "evaluation"), spec.hook(spec.evaluate_flow, "evaluation flow"), repo=repo, rev=rev, predictions=predictions,
                            out=out, rho=rho, split=split, dataset_dir=dataset_dir, force=force)
    print_up_to_date(result, out)
    print_evaluation(result)


class FlipDataset(str, enum.Enum):
    coco_cd = "coco-cd"
    waterbirds = "waterbirds"


def register(build_app: typer.Typer, evaluate_app: typer.Typer, app: typer.Typer) -> None:
    """Add ``oracle-inputs`` to the root command group."""
    app.command("oracle-inputs")(oracle_inputs_command)


def oracle_inputs_command(
    ctx: typer.Context,
    dataset: FlipDataset = typer.Argument(..., help="coco-cd or waterbirds."),
    out: Path = typer.Option(..., "--out", help="Folder to write (oracle-fg/, oracle-bg/, manifest.json).",
                             callback=check_output_folder),
    fill: str = typer.Option("imagenet", "--fill", help="The colour of what is removed: imagenet (124, 116, 104), "
                                                         "split (the split's mean colour) or R,G,B."),
    rev: str = REV, repo: Path = REPO, rho: float = RHO, split: Split = SPLIT,
) -> None:
    """Write the Oracle-FG and Oracle-BG images of a split (the label-flips paper, App. C).

    Oracle-FG keeps each image's ground-truth foreground and fills the background with one colour;
    Oracle-BG fills the foreground instead. Run a model on each folder and score it with evaluate
    coco-cd or evaluate waterbirds as usual: the images keep their names and sizes.
    """
    from segbench.core.io import sha256_bytes
    from segbench.core.versioning import DatasetSource
    from segbench.locking import command_lock, output_lock
    from segbench.tasks.flip import oracle
    from segbench.tasks.flip.inputs import read_images, split_relpath

    chosen = oracle.parse_fill(fill)
    spec = registry.dataset(dataset.value.replace("-", "_"))
    dataset_dir = relative_to_repo(settings_of(ctx).data_root / spec.default_out, repo)
    with command_lock(ctx, reads_only=True), DatasetSource(repo, rev) as source:
        split_path = split_relpath(dataset_dir, rho, split.value)
        listed = read_images(source, split_path)
        split_sha256 = sha256_bytes(source.read_bytes(split_path))

        def images() -> Iterator[oracle.OracleImage]:
            return oracle.read_oracle_images(source, dataset_dir, listed)

        colour = oracle.resolve_fill(chosen, images)
        with output_lock(out, command="oracle-inputs"):
            written = oracle.write_oracle_inputs(out, images(), colour, {
                "dataset": spec.name, "dataset_dir": dataset_dir, "split_sha256": split_sha256, "rev": rev,
                "rho": rho, "split": split.value, "fill_rule": chosen if isinstance(chosen, str) else "rgb"})
    console.out.print(console.key_values(f"Oracle inputs ({spec.title}, ρ {rho:g}, {split.value})", {
        "images": written, "fill": ", ".join(map(str, colour)),
        **{f"{variant}/": display_path(out / variant) for variant in oracle.VARIANTS}}))
    console.set_summary({"out": str(out), "images": written, "fill": list(colour)})


def print_group_counts(splits: dict[str, dict[str, list[int]]], groups: list[str]) -> None:
    """The images of each group per ρ and split of a build, ``groups`` naming them ("cat indoors", "landbird on land")."""
    # Sorted: a fresh build and an up-to-date one (read back from JSON) list the rows in the same order.
    order = {"train": 0, "val": 1, "test": 2}
    rows = [[rho, split, *values, sum(values)] for rho, by_split in sorted(splits.items())
            for split, values in sorted(by_split.items(), key=lambda item: (order.get(item[0], 3), item[0]))]
    console.out.print(console.table("Group counts", ["ρ", "split", *groups, "total"], rows))


def print_evaluation(result: EvaluationResult[FlipSummary]) -> None:
    """The flip-metric summary of one evaluation, with the dataset's own class names."""
    m = result.summary
    fg = m.fg_decomposition
    iou = m.class_iou.model_dump()  # the dataset's class names are its fields
    first, second = (name for name in iou if name != "background")
    console.out.print(console.key_values("Evaluation", {
        "images": m.num_images,
        f"IoU {first} / {second}": f"{_fmt(iou[first])} / {_fmt(iou[second])}",
        f"mIoU ({first}, {second})": m.miou,
        "Fg-IoU": m.fg_iou,
        "FG-Corr / FG-Flip / FG-Miss": " / ".join(_fmt(v) for v in (fg.corr, fg.flip, fg.miss)),
        "Flip per-image mean": m.flip.per_image_mean,
        f"gap {first} / {second} (aligned − counterf.)": f"{_fmt(m.gaps[first].gap)} / {_fmt(m.gaps[second].gap)}",
        "top-decile share of flips": m.flip_risk.top_decile_share if m.flip_risk else None,
    }))
    console.out.print(f"Report: [bold]{display_path(result.report)}[/]")


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"
