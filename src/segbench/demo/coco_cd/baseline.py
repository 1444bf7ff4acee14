"""A context-biased baseline predictor for COCO-CD, used by the demo and the evaluation tests.

It imitates the failure mode of seed 002 (section 4) without a network: the foreground extent is the
gt mask (sometimes eroded or dilated by one pixel, so FG-Miss is small but not zero) and the cat/dog
identity is a logit that mixes the context cue (indoor -> cat, outdoor -> dog), almost as strong,
with the true class. Aligned images get a large, confident margin; counterfactual images get one
near zero, so they flip often and with high identity entropy, which gives the flip-risk deciles
their rising tail.

Everything is a function of (seed, image id, gt mask, group): ``numpy.random.default_rng([seed,
image_id])`` and no global RNG, so predictions are byte-identical across runs and shardings.
Evaluating predictions is not done here (see ``segbench.tasks.flip.metrics``).
"""

from __future__ import annotations

import io
import logging
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from segbench.core.io import atomic_write_bytes
from segbench.core.versioning import DatasetSource
from segbench.tasks.flip.inputs import read_gt_mask
from segbench.tasks.flip.metrics import GROUPS

log = logging.getLogger(__name__)

# Fixed zip timestamp: np.savez_compressed stamps the current time into the archive, which would
# make two runs differ byte-wise. This writes the same .npz layout (np.load reads it) without that.
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class BaselineConfig:
    """Knobs of the baseline. Logits are in favour of "dog" (positive) over "cat" (negative).

    Attributes:
        context_weight: pull towards the context's usual class (indoor cat, outdoor dog).
        identity_weight: pull towards the true class. Only slightly above ``context_weight``, so a
            counterfactual image keeps a margin near zero: many of its pixels flip, with high
            identity entropy; confidently wrong images (low risk, high flip) stay rare.
        image_noise: std of a per-image logit offset (some counterfactual images come out right).
        pixel_noise: std of a smooth per-pixel logit field (partial flips inside one object).
        noise_cells: the pixel field is drawn on a ``cells x cells`` grid and upsampled.
        fg_prob: probability mass on foreground inside the predicted extent.
        bg_prob: probability of background outside it.
        extent_change: chance that an image's extent is changed; half erode, half dilate.
    """

    context_weight: float = 2.0
    identity_weight: float = 2.3
    image_noise: float = 0.4
    pixel_noise: float = 0.8
    noise_cells: int = 16
    fg_prob: float = 0.9
    bg_prob: float = 0.95
    extent_change: float = 0.5


def _shift_all(mask: np.ndarray, *, fill: bool, combine: Any) -> np.ndarray:
    """Combine ``mask`` with its four 1-pixel shifts (4-neighbourhood erosion / dilation)."""
    padded = np.pad(mask, 1, constant_values=fill)
    out = mask.copy()
    for dy, dx in ((0, 1), (2, 1), (1, 0), (1, 2)):
        out = combine(out, padded[dy : dy + mask.shape[0], dx : dx + mask.shape[1]])
    return out


def _upsample(grid: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Nearest-neighbour upsampling of a (c, c) grid to ``shape`` (any size, not only multiples)."""
    rows = np.arange(shape[0]) * grid.shape[0] // shape[0]
    cols = np.arange(shape[1]) * grid.shape[1] // shape[1]
    return grid[np.ix_(rows, cols)]


def baseline_probs(
    mask: np.ndarray,
    *,
    group_id: int,
    image_id: int,
    seed: int = 0,
    config: BaselineConfig = BaselineConfig(),
) -> np.ndarray:
    """Context-biased probabilities for one image.

    Args:
        mask: (H, W) gt label map (0 background, 1 cat, 2 dog); not modified.
        group_id: ``2*y + a`` of the image (y: cat 0, dog 1; a: indoor 0, outdoor 1).
        image_id: COCO image id; with ``seed`` it seeds the image's RNG.

    Returns:
        (3, H, W) float32 probabilities (background, cat, dog) summing to 1 per pixel.
    """
    if group_id not in GROUPS:
        raise ValueError(f"group_id must be one of {sorted(GROUPS)}, got {group_id}")
    rng = np.random.default_rng([seed, image_id])
    is_dog, is_outdoor = divmod(group_id, 2)
    fg = mask > 0
    draw = rng.random()
    if draw < config.extent_change / 2:
        fg = _shift_all(fg, fill=True, combine=np.logical_and)
    elif draw < config.extent_change:
        fg = _shift_all(fg, fill=False, combine=np.logical_or)
    logit = (
        config.context_weight * (1.0 if is_outdoor else -1.0)
        + config.identity_weight * (1.0 if is_dog else -1.0)
        + rng.normal(0.0, config.image_noise)
    )
    cells = rng.normal(0.0, config.pixel_noise, (config.noise_cells, config.noise_cells))
    p_dog = 1.0 / (1.0 + np.exp(-(logit + _upsample(cells, mask.shape))))
    background = np.where(fg, 1.0 - config.fg_prob, config.bg_prob)
    foreground = 1.0 - background
    probs = np.stack([background, foreground * (1.0 - p_dog), foreground * p_dog])
    return probs.astype(np.float32)


def npz_bytes(probs: np.ndarray) -> bytes:
    """A compressed ``.npz`` holding ``probs`` under the key ``probs``, byte-identical across runs."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        info = zipfile.ZipInfo("probs.npy", date_time=_ZIP_EPOCH)
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, "w", force_zip64=True) as handle:
            np.lib.format.write_array(handle, np.ascontiguousarray(probs), allow_pickle=False)
    return buffer.getvalue()


def write_baseline_predictions(
    source: DatasetSource,
    dataset_dir: str,
    images: Iterable[Mapping[str, Any]],
    out_dir: str | Path,
    *,
    seed: int = 0,
    config: BaselineConfig = BaselineConfig(),
) -> list[Path]:
    """Write ``{id:012d}.npz`` (key ``probs``, float32 (3, H, W)) for each split image.

    Args:
        source: where the dataset is read from. dataset_dir: e.g. ``"data/coco_cd"``.
        images: split image entries (``flip_inputs.read_split``). out_dir: created if needed.

    Returns:
        The written files, in the order of ``images``.

    Raises:
        InputError: a gt mask is missing or malformed.
    """
    out = Path(out_dir)
    written = []
    for image in images:
        image_id = int(image["id"])
        mask = read_gt_mask(source, dataset_dir, image)
        probs = baseline_probs(
            mask, group_id=int(image["group_id"]), image_id=image_id, seed=seed, config=config
        )
        written.append(atomic_write_bytes(out / f"{image_id:012d}.npz", npz_bytes(probs)))
    log.debug("wrote %d baseline predictions to %s", len(written), out)
    return written
