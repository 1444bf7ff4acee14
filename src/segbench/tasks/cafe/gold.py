"""Gold items of the CAFE verification round: known-bad pairs, whose answer is certain.

"Unedited": the candidate's source image with M outlined: q- is really present there, so the known
answer to ``negative_invalid`` is ``no``.

"Mask off the object": a candidate's edited image with its mask M moved beside the object (the
outline then surrounds background), so the known answer to ``mask_fits`` is ``no``. The shifted mask
must not touch M and must keep at least ``keep`` of its area inside the image; candidates where no
shift (right, left, down, up by the mask's box size plus a margin) does are not used.

Pure functions: the caller reads the candidates' images and writes the review images.
"""

from __future__ import annotations

import numpy as np

MASK_OFF = {"mask_fits": "no"}
UNEDITED = {"negative_invalid": "no"}
MARGIN = 4  # pixels between the object and the moved outline


def shifted_off(mask: np.ndarray, *, keep: float = 0.9) -> np.ndarray | None:
    """``mask`` moved beside itself, or None when no shift keeps it in the image and off the object."""
    mask = np.asarray(mask, dtype=bool)
    area = int(mask.sum())
    if area == 0:
        return None
    ys, xs = np.nonzero(mask)
    height, width = int(ys.max() - ys.min() + 1), int(xs.max() - xs.min() + 1)
    for dy, dx in ((0, width + MARGIN), (0, -width - MARGIN), (height + MARGIN, 0), (-height - MARGIN, 0)):
        moved = _shift(mask, dy, dx)
        if int(moved.sum()) >= keep * area and not (moved & mask).any():
            return moved
    return None


def _shift(mask: np.ndarray, dy: int, dx: int) -> np.ndarray:
    out = np.zeros_like(mask)
    h, w = mask.shape
    if abs(dy) >= h or abs(dx) >= w:  # moved entirely out of the image
        return out
    src = mask[max(0, -dy):h - max(0, dy), max(0, -dx):w - max(0, dx)]
    out[max(0, dy):max(0, dy) + src.shape[0], max(0, dx):max(0, dx) + src.shape[1]] = src
    return out
