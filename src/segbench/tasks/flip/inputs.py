"""Reading what a COCO-CD evaluation needs: a split, its ground-truth masks, a predictions folder.

Turns every bad file into an :class:`~segbench.core.errors.InputError` naming it; the metric code in
:mod:`segbench.tasks.flip.metrics` never touches the file system.
"""

from __future__ import annotations

import logging
import os
import posixpath
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from segbench.core.errors import AnnotationError, InputError
from segbench.core.io import check_input_file, open_image
from segbench.core.splits import rho_name
from segbench.core.versioning import DatasetSource
from segbench.schemas.flip import FlipImage
from segbench.tasks.flip.metrics import GROUPS, NUM_CLASSES, FlipAccumulator, labels_from_probs

log = logging.getLogger(__name__)


PREDICTION_HINT = (
    "write one {id:012d}.npz (array 'probs', shape (3, H, W) at the size of the split's masks: background, then "
    "the dataset's two classes in its order, e.g. cat, dog for COCO-CD, landbird, waterbird for Waterbirds-seg) or "
    "one {id:012d}.png label map (values 0/1/2 in that order) per image of the split"
)
_IMAGE_KEYS = ("id", "group_id", "mask_file")


def split_relpath(dataset_dir: str, rho: float, split: str) -> str:
    """The split file, e.g. ``data/coco_cd/splits/rho_0.95/test.json``."""
    return f"{dataset_dir.rstrip('/')}/splits/{rho_name(rho)}/{split}.json"


def read_split(source: DatasetSource, relpath: str) -> list[dict[str, Any]]:
    """The ``images`` entries of a COCO-CD split JSON, sorted by id.

    Raises:
        InputError: the file is missing or not a COCO JSON with an ``images`` list.
        AnnotationError: an image entry lacks ``id``/``group_id``/``mask_file`` or has a bad group.
    """
    try:
        data = source.read_json(relpath)
    except InputError:
        if source.exists(relpath):
            raise  # there, but unreadable: the error names why
        splits = posixpath.dirname(posixpath.dirname(relpath))
        built = [name.removeprefix("rho_") for name in source.listdir(splits, "directory") if name.startswith("rho_")]
        raise InputError("no such split in this build", path=relpath,
                         hint=f"this build has ρ = {', '.join(built)}: pass one of them as --rho" if built
                         else "build the dataset first (segbench build …), or check --repo and --rev") from None
    images = data.get("images") if isinstance(data, dict) else None
    if not isinstance(images, list):
        raise InputError("no 'images' list; not a COCO-CD split file", path=relpath)
    for image in images:
        missing = [k for k in _IMAGE_KEYS if k not in image]
        if missing:
            raise AnnotationError(
                f"image entry lacks {', '.join(missing)}",
                path=relpath,
                item=f"image {image.get('id')}",
            )
        if image["group_id"] not in GROUPS:
            raise AnnotationError(
                f"group_id {image['group_id']!r} is not one of 0..3 (2*y + a)",
                path=relpath,
                item=f"image {image['id']}",
            )
    return sorted(images, key=lambda im: int(im["id"]))


def read_images(source: DatasetSource, relpath: str) -> list[FlipImage]:
    """The images of a split file as :class:`FlipImage` (what the build writes), sorted by id.

    Raises:
        InputError: as :func:`read_split`.
        AnnotationError: an image lacks a field of a built split (class, context, file names...)
            or has one of the wrong type; the message names the field.
    """
    images = []
    for entry in read_split(source, relpath):
        try:
            images.append(FlipImage.model_validate(entry))
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            field = ".".join(str(part) for part in error["loc"]) or "the entry"
            raise AnnotationError(f"{field}: {error['msg']}", path=relpath, item=f"image {entry.get('id')}",
                                  hint="rebuild the dataset: this is not a split file segbench wrote") from None
    return images


def _decode_png(data: bytes, path: str | Path) -> np.ndarray:
    # open_image turns every Pillow failure (a decompression bomb included) into an InputError.
    return np.asarray(open_image(data, path=path, hint="replace the file with a PNG label map"))


def read_gt_mask(source: DatasetSource, dataset_dir: str, image: Mapping[str, Any]) -> np.ndarray:
    """The (H, W) uint8 gt label map of one split image (0 background, 1 cat, 2 dog).

    Raises:
        InputError: the mask is missing, unreadable, not 2-D or has values above 2.
    """
    relpath = f"{dataset_dir.rstrip('/')}/{image['mask_file']}"
    mask = _decode_png(source.read_bytes(relpath), relpath)
    if mask.ndim != 2 or (mask.size and int(mask.max()) >= NUM_CLASSES):
        raise InputError(
            f"gt mask must be a (H, W) map with values 0..2, got shape {mask.shape}", path=relpath
        )
    return mask


def prediction_paths(predictions_dir: str | Path, image_ids: Iterable[int]) -> dict[int, str]:
    """Map each image id to its prediction file (``.npz`` preferred over ``.png``).

    Raises:
        InputError: the directory is missing, or some images have no prediction (names the count
            and the first few ids).
    """
    root = Path(predictions_dir)
    if not root.is_dir():
        raise InputError("predictions directory not found", path=root, hint=PREDICTION_HINT)
    names = set(os.listdir(root))
    found: dict[int, str] = {}
    missing: list[int] = []
    ids = [int(i) for i in image_ids]
    for image_id in ids:
        stem = f"{image_id:012d}"
        for ext in (".npz", ".png"):
            if stem + ext in names:
                found[image_id] = str(root / (stem + ext))
                break
        else:
            missing.append(image_id)
    if missing:
        first = ", ".join(f"{i:012d}" for i in missing[:5])
        raise InputError(
            f"{len(missing)} of {len(ids)} predictions are missing (first: {first})",
            path=root,
            hint=PREDICTION_HINT,
        )
    return found


def _declared_shape(archive: Any) -> tuple[int, ...]:
    """The shape the header of ``probs.npy`` in an open ``.npz`` declares, read without the data."""
    with archive.zip.open("probs.npy") as member:
        version = np.lib.format.read_magic(member)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        declared, _fortran, _dtype = read_header(member)
    return tuple(declared)


def read_prediction(
    path: str | Path, shape: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray | None]:
    """Read one prediction file.

    Args:
        path: ``{id:012d}.npz`` (array ``probs``, (3, H, W)) or ``{id:012d}.png`` ((H, W) labels).
        shape: (H, W) of the gt mask it is compared with.

    Returns:
        ``(pred, probs)``: pred (H, W) uint8; probs (3, H, W) or ``None`` for a label map.

    Raises:
        InputError: unreadable file, no ``probs`` array, wrong shape, non-finite or negative
            probabilities, or labels outside 0..2; the error names the file.
    """
    path = Path(path)
    check_input_file(path, hint=PREDICTION_HINT)  # no FIFO, device or oversized file is opened
    if path.suffix == ".npz":
        expected = (NUM_CLASSES, *shape)
        try:
            with np.load(path, allow_pickle=False) as archive:
                if "probs" not in archive.files:
                    raise InputError(
                        f"no array 'probs' (found: {', '.join(archive.files) or 'none'})",
                        path=path,
                        hint=PREDICTION_HINT,
                    )
                declared = _declared_shape(archive)  # before reading: a header may claim 100,000² pixels
                if declared != expected:
                    raise InputError(f"probs has shape {declared}; expected {expected}", path=path,
                                     hint=PREDICTION_HINT)
                probs = archive["probs"]
        except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
            raise InputError(f"not a readable .npz ({exc})", path=path) from exc
        if not np.issubdtype(probs.dtype, np.floating) or not np.isfinite(probs).all():
            raise InputError("probs must be finite floats", path=path, hint=PREDICTION_HINT)
        if (probs < 0).any():
            raise InputError("probs has negative values; expected softmax probabilities", path=path)
        return labels_from_probs(probs), probs
    pred = _decode_png(path.read_bytes(), path)
    if pred.shape != tuple(shape):
        raise InputError(
            f"label map has shape {pred.shape}; expected {tuple(shape)}",
            path=path,
            hint=PREDICTION_HINT,
        )
    if pred.size and int(pred.max()) >= NUM_CLASSES:
        raise InputError(
            f"label map has value {int(pred.max())}; labels must be 0 (background), 1 or 2 (the dataset's classes)",
            path=path,
        )
    return pred.astype(np.uint8), None


def evaluate_images(
    source: DatasetSource,
    dataset_dir: str,
    images: Iterable[Mapping[str, Any]],
    predictions: Mapping[int, str | Path],
) -> FlipAccumulator:
    """Evaluate split images against their predictions into a fresh accumulator.

    Args:
        images: split image entries (``read_split``). predictions: image id -> prediction file.
    """
    acc = FlipAccumulator()
    for image in images:
        image_id = int(image["id"])
        gt = read_gt_mask(source, dataset_dir, image)
        pred, probs = read_prediction(predictions[image_id], gt.shape)
        acc.update(gt, pred, probs, group_id=int(image["group_id"]), image_id=image_id)
    return acc
