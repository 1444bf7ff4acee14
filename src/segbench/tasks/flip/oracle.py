"""Oracle-FG and Oracle-BG inputs (the label-flips paper, App. C): mask-controlled mean-fill interventions.

Each image of a split is written twice. *Oracle-FG* keeps the ground-truth foreground and fills the
background with one mean colour (the background is removed). *Oracle-BG* keeps the background and
fills the foreground (the object is removed). A model run on both folders, then scored with
``segbench evaluate`` as usual, shows whether its flips come with the context or with the object.

The fill is ImageNet's mean colour by default, (124, 116, 104): an ImageNet-normalised encoder reads
it as zero. It can instead be the split's own mean colour (over every pixel of its images) or any
RGB triple. The fill, ρ, split and the split file's SHA-256 are recorded in the output's ``manifest.json``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from segbench.core.errors import InputError
from segbench.core.versioning import DatasetSource
from segbench.schemas.flip import FlipImage

IMAGENET_MEAN = (124, 116, 104)  # (0.485, 0.456, 0.406) × 255, rounded
ORACLE_FG = "oracle-fg"  # background filled
ORACLE_BG = "oracle-bg"  # foreground filled
VARIANTS = (ORACLE_FG, ORACLE_BG)
FILL_HELP = "imagenet (124, 116, 104), split (the split's mean colour) or R,G,B, e.g. 128,128,128"


def parse_fill(text: str) -> str | tuple[int, int, int]:
    """``imagenet``, ``split`` or an ``R,G,B`` triple of 0–255 integers.

    Raises:
        InputError: anything else (the message says what is accepted).
    """
    value = text.strip().lower()
    if value in ("imagenet", "split"):
        return value
    parts = value.split(",")
    try:
        rgb = tuple(int(p) for p in parts)
    except ValueError:
        rgb = ()
    if len(rgb) != 3 or not all(0 <= c <= 255 for c in rgb):
        raise InputError(f"--fill {text}: not a fill colour", item="--fill", hint=f"pass {FILL_HELP}")
    return rgb[0], rgb[1], rgb[2]


def mean_fill(image: np.ndarray, foreground: np.ndarray, variant: str, fill: Sequence[int]) -> np.ndarray:
    """``image`` (H, W, 3 uint8) with the background (``oracle-fg``) or the foreground (``oracle-bg``)
    set to ``fill``; ``foreground`` is the (H, W) ground-truth foreground (nonzero label)."""
    if image.shape[:2] != foreground.shape:
        raise ValueError(f"image {image.shape[:2]} and mask {foreground.shape} differ in size")
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    removed = ~foreground if variant == ORACLE_FG else foreground
    out = image.copy()
    out[removed] = np.asarray(fill, dtype=np.uint8)
    return out


@dataclass(frozen=True)
class OracleImage:
    """One image of the split, read: its id, file name, RGB pixels and ground-truth foreground."""

    image_id: int
    name: str
    pixels: np.ndarray
    foreground: np.ndarray


def read_oracle_images(source: DatasetSource, dataset_dir: str, images: Sequence[FlipImage]) -> Iterator[OracleImage]:
    """The split's images with their foregrounds, one at a time (a split of thousands never sits in
    memory at once), each checked to be the size of its mask.

    Raises:
        InputError: a split built without images, an image or mask missing, unreadable or of
            another size (the message names the file).
    """
    from segbench.core.io import open_image
    from segbench.tasks.flip.inputs import read_gt_mask

    for image in images:
        if image.image_file is None:
            raise InputError("the split lists no image files: the build wrote masks only",
                             item=f"image {image.id}", hint="rebuild the dataset with its images")
        relpath = f"{dataset_dir.rstrip('/')}/{image.image_file}"
        pixels = np.asarray(open_image(source.read_bytes(relpath), path=relpath).convert("RGB"))
        mask = read_gt_mask(source, dataset_dir, {"mask_file": image.mask_file})
        if pixels.shape[:2] != mask.shape:
            raise InputError(f"image is {pixels.shape[1]}×{pixels.shape[0]}, its mask {mask.shape[1]}×{mask.shape[0]}",
                             path=relpath, item=f"image {image.id}", hint="rebuild the dataset")
        yield OracleImage(image.id, Path(image.image_file).with_suffix(".png").name, pixels, mask > 0)


def split_mean(images: Iterable[OracleImage]) -> tuple[int, int, int]:
    """The mean colour over every pixel of ``images``, rounded (0, 0, 0 for none)."""
    total = np.zeros(3, dtype=np.float64)
    count = 0
    for image in images:
        total += image.pixels.reshape(-1, 3).sum(axis=0, dtype=np.float64)
        count += image.pixels.shape[0] * image.pixels.shape[1]
    mean = np.rint(total / max(count, 1)).astype(int)
    return int(mean[0]), int(mean[1]), int(mean[2])


def resolve_fill(fill: str | tuple[int, int, int], images: Callable[[], Iterable[OracleImage]]) -> tuple[int, int, int]:
    """The fill colour; ``split`` reads the split's images once (``images()``) for their mean."""
    if fill == "imagenet":
        return IMAGENET_MEAN
    if fill == "split":
        return split_mean(images())
    assert isinstance(fill, tuple)
    return fill


def write_oracle_inputs(out: Path, images: Iterable[OracleImage], fill: tuple[int, int, int],
                        record: dict[str, object]) -> int:
    """Write ``<out>/oracle-fg/`` and ``<out>/oracle-bg/`` (one PNG per image, named as the split's
    image) and ``<out>/manifest.json`` (``record`` with the fill and counts); return the number of
    images. The files go to the build stage of :func:`segbench.core.resume.resumable_stage`, keyed
    by ``record`` and the fill, which replaces ``out`` whole when complete: a failed or killed run
    leaves the previous output as it was.

    Raises:
        InputError: ``out`` holds something this command did not write (no oracle manifest).
    """
    from segbench.core.io import atomic_write_bytes, fingerprint, png_bytes, read_json, write_json
    from segbench.core.resume import resumable_stage

    if out.exists() and any(out.iterdir()):
        manifest = out / "manifest.json"
        previous = read_json(manifest) if manifest.is_file() else None
        if not (isinstance(previous, dict) and previous.get("kind") == "oracle-inputs"):
            raise InputError("the output folder holds other files", path=out,
                             hint="pass an empty or new folder as --out (or one this command wrote)")
    written = 0
    with resumable_stage(out, fingerprint({"oracle-inputs": record, "fill": list(fill)})) as stage:
        for image in images:
            for variant in VARIANTS:
                pixels = mean_fill(image.pixels, image.foreground, variant, fill)
                atomic_write_bytes(stage.path / variant / image.name, png_bytes(pixels), durable=False)
            written += 1
        write_json(stage.path / "manifest.json", {"kind": "oracle-inputs", **record, "fill": list(fill),
                                                  "images": dict.fromkeys(VARIANTS, written)}, indent=1)
    return written
