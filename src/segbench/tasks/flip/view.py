"""COCO-CD and Waterbirds-seg in ``segbench view``: one ρ's train, val and test splits, the
ground-truth masks in field ``ground_truth``, and each image's class, context and group."""

from __future__ import annotations

from pathlib import Path

from segbench.core.errors import InputError
from segbench.schemas.views import ViewFile

SPLITS = ("train", "val", "test")


def view_files(dataset: Path, rho: str | None = None) -> list[ViewFile]:
    """The split files of ``rho`` (e.g. ``0.95``; default: the most correlated ρ built).

    Raises:
        InputError: no splits built, or not that ρ (the message lists the built ones).
    """
    built = sorted(path.name.removeprefix("rho_") for path in (Path(dataset) / "splits").glob("rho_*") if path.is_dir())
    if not built:
        raise InputError("no splits built here", path=Path(dataset) / "splits", hint="build the dataset first")
    chosen = rho if rho is not None else max(built, key=float)
    if chosen not in built:
        raise InputError(f"ρ {chosen} is not built (built: {', '.join(built)})", path=Path(dataset) / "splits",
                         hint=f"pass --rho {built[-1]}, or build with that ρ")
    folder = Path(dataset) / "splits" / f"rho_{chosen}"
    return [ViewFile(path=folder / f"{split}.json", split=split, field="ground_truth", images=Path(dataset),
                     image_key="image_file") for split in SPLITS if (folder / f"{split}.json").is_file()]
