"""Checks of compressed COCO RLE ``counts`` strings before pycocotools sees them.

pycocotools decodes ``counts`` without any check: a corrupt string (even ``"0" + "O" * 40``) makes
``rleIou`` loop for minutes holding the GIL, and ``rleDecode`` writes past its buffer. A string is
valid when its characters are in ``'0'..'o'``, it does not end inside a number, no number is longer
than any image needs, and its runs are non-negative and cover exactly the image's pixels.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from segbench.core.errors import InputError


def check_compressed_rles(entries: list[tuple[bytes, int, str]], path: str) -> None:
    """Check compressed RLEs ``(counts, pixels, item)`` (see :func:`check_compressed_counts`)."""
    check_compressed_counts([e[0] for e in entries], np.fromiter((e[1] for e in entries), dtype=np.int64,
                            count=len(entries)), path, lambda k: entries[k][2])


def check_compressed_counts(counts: list[bytes], pixels: np.ndarray, path: str, item_of: Callable[[int], str]) -> None:
    """Check compressed RLE ``counts`` of images of ``pixels`` pixels; ``item_of(k)`` names string ``k``
    (asked only for a corrupt one). Large inputs go through the compiled pass (:func:`use_compiled`).

    Raises:
        InputError: the first corrupt one (see :func:`compressed_rle_problem`), naming its item.
    """
    if use_compiled(len(counts)):
        from segbench.tasks.cafe.rle_kernels import corrupt_counts

        first = next(iter(np.flatnonzero(corrupt_counts(counts, pixels)).tolist()), None)
    else:
        first = next((k for k, c in enumerate(counts) if compressed_rle_problem(c, int(pixels[k]))), None)
    if first is not None:
        raise InputError(f"corrupt compressed RLE counts: {compressed_rle_problem(counts[first], int(pixels[first]))}",
                         path=path, item=item_of(first),
                         hint="re-encode the mask with pycocotools.mask.encode (counts decoded to str)")


# Masks from which the compiled passes (rle_kernels) pay for numba's start-up (~0.5 s once per
# process): below, numpy's decode of each string and pycocotools' IoUs take less.
COMPILED_FROM_MASKS = 10_000


def use_compiled(masks: int) -> bool:
    """Whether to check or intersect ``masks`` masks with the compiled passes."""
    return masks >= COMPILED_FROM_MASKS


# A run needs at most 7 characters for any image below 2**34 pixels; longer numbers only come from
# corrupt strings, and pycocotools would shift them past the width of its integers.
_MAX_RUN_CHARS = 7


def compressed_rle_problem(counts: bytes, pixels: int) -> str | None:
    """What is wrong with a compressed RLE ``counts`` string for an image of ``pixels`` pixels, or ``None``.

    Decodes the runs the way pycocotools' ``rleFrString`` does (the rules of
    :func:`segbench.core.masks.rle_runs`, vectorised because predictions files hold tens of
    thousands of masks) and requires non-negative runs that cover exactly ``pixels``. pycocotools
    checks none of this: a corrupt string makes ``rleIou`` loop for minutes holding the GIL, so
    every RLE is checked here before pycocotools sees it.
    """
    codes = np.frombuffer(counts, dtype=np.uint8).astype(np.int64) - 48
    if codes.size == 0:
        return "the counts string is empty"
    if np.any((codes < 0) | (codes >= 64)):
        return "it contains a character outside '0'..'o'"
    more = (codes & 0x20) != 0
    if more[-1]:
        return "the string ends inside a number"
    ends = np.flatnonzero(~more)
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    if lengths.max() > _MAX_RUN_CHARS:
        return f"a number is {int(lengths.max())} characters long"
    digit = np.arange(codes.size) - np.repeat(starts, lengths)
    values = np.add.reduceat((codes & 0x1F) << (5 * digit), starts)
    negative = (codes[ends] & 0x10) != 0
    values = np.where(negative, values - (np.int64(1) << (5 * lengths)), values)
    runs = values.copy()  # from the fourth run on, each is stored as the difference to the run two before
    runs[1::2] = np.cumsum(values[1::2])
    runs[2::2] = np.cumsum(values[2::2])
    if np.any(runs < 0):
        return "a run is negative"
    if int(runs.sum()) != pixels:
        return f"the runs cover {int(runs.sum())} pixels, not the image's {pixels}"
    return None
