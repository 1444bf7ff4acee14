"""SPIN in ``segbench view``: each split's images with the wholes, parts and subparts as three
segmentation fields, one per level of the hierarchy."""

from __future__ import annotations

from pathlib import Path

from segbench.schemas.views import ViewFile

LEVELS = ("wholes", "parts", "subparts")


def view_files(dataset: Path, rho: str | None = None) -> list[ViewFile]:
    """``spin_<split>_<level>.json`` of every split built (``rho`` does not apply)."""
    return [ViewFile(path=Path(dataset) / f"spin_{split}_{level}.json", split=split, field=level,
                     images=Path(dataset) / "images" / split, image_suffix=".JPEG")
            for split in ("train", "val", "test") for level in LEVELS
            if (Path(dataset) / f"spin_{split}_{level}.json").is_file()]
