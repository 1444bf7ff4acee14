"""Checks of compressed COCO RLE ``counts`` strings before pycocotools sees them.

pycocotools decodes ``counts`` without any check: a corrupt string (even ``"0" + "O" * 40``) makes
``rleIou`` loop for minutes holding the GIL, and ``rleDecode`` writes past its buffer. A string is
valid when its characters are in ``'0'..'o'``, it does not end inside a number, no number is longer
than any image needs, and its runs are non-negative and cover exactly the image's pixels.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

from segbench.core import process
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
    if not counts:
        return
    if use_compiled(len(counts)):
        from segbench.tasks.cafe.rle_kernels import corrupt_counts

        bad = corrupt_counts(counts, pixels)
    else:
        bad = np.zeros(len(counts), dtype=bool)
        ends = np.cumsum(np.fromiter(map(len, counts), dtype=np.int64, count=len(counts)))
        # Chunks keep the temporaries in cache: 64k characters are 2x faster than 1M, 4x faster than all at once.
        cuts = np.unique(np.searchsorted(ends, np.arange(_CHUNK_CHARS, ends[-1], _CHUNK_CHARS))).tolist()
        for lo, hi in zip([0, *cuts], [*cuts, len(counts)], strict=True):
            bad[lo:hi] = corrupt_compressed_rles(counts[lo:hi], pixels[lo:hi])
    first = next(iter(np.flatnonzero(bad)[:1].tolist()), None)
    if first is not None:
        raise InputError(f"corrupt compressed RLE counts: {compressed_rle_problem(counts[first], int(pixels[first]))}",
                         path=path, item=item_of(first),
                         hint="re-encode the mask with pycocotools.mask.encode (counts decoded to str)")


# Masks from which the compiled passes (rle_kernels) pay for numba's start-up (importing it and loading
# the cached machine code, ~0.5 s once per process). In a process that ends with its command,
# `evaluate cgf1` (bench/cafe_eval.py's data) took 1.95 s compiled and 1.64 s not at 40k masks, 7.5 s and
# 9.6 s at 400k: they pay from ~80k. Once paid, or in a process that lives on, they are faster from a
# few hundred masks (the CAFE table at 2k masks: 0.013 s against 0.055 s).
COMPILED_FROM_MASKS = 80_000
COMPILED_WARM_FROM_MASKS = 1_000


def use_compiled(masks: int) -> bool:
    """Whether to check or intersect ``masks`` masks with the compiled passes."""
    warm = "segbench.tasks.cafe.rle_kernels" in sys.modules or not process.is_one_command()
    return masks >= (COMPILED_WARM_FROM_MASKS if warm else COMPILED_FROM_MASKS)


# A run needs at most 7 characters for any image below 2**34 pixels; longer numbers only come from
# corrupt strings, and pycocotools would shift them past the width of its integers.
_MAX_RUN_CHARS = 7
_CHUNK_CHARS = 1 << 16  # characters per vectorised pass: its temporaries stay in the CPU caches


_RUN_SCALE = np.asarray([1 << (5 * d) for d in range(_MAX_RUN_CHARS + 1)], dtype=np.int64)  # 2 ** (5 * digits)


def corrupt_compressed_rles(counts: list[bytes], pixels: np.ndarray) -> np.ndarray:
    """Which compressed RLE ``counts`` strings are corrupt for images of ``pixels`` pixels, ``(n,)`` bool.

    The rules of :func:`compressed_rle_problem`, applied to all strings at once: one concatenated
    buffer, numbers split on the continuation bit (and at every string's end, so that a corrupt
    string cannot run into the next), then the runs summed per string. Every step is one pass over
    the characters or the numbers (no per-string Python work), since this runs on every mask of a
    predictions file before any IoU.
    """
    n = len(counts)
    lengths = np.fromiter(map(len, counts), dtype=np.int64, count=n)
    buf = np.frombuffer(b"".join(counts), dtype=np.uint8)
    last = np.cumsum(lengths) - 1  # each string's last character
    has_chars = lengths > 0
    bad = ~has_chars
    code = buf - np.uint8(48)  # characters outside '0'..'o' wrap to >= 64
    outside = np.flatnonzero(code > 63)
    if outside.size:
        bad[np.searchsorted(last, outside)] = True
    ended = (code & 0x20) == 0  # the character ends a number
    tails = last[has_chars]
    bad[has_chars] |= ~ended[tails]  # the string ends inside a number
    ended[tails] = True
    ends = np.flatnonzero(ended)
    if ends.size == 0:
        return bad
    starts = np.empty_like(ends)
    starts[0], starts[1:] = 0, ends[:-1] + 1
    digits = ends - starts + 1
    through = np.searchsorted(ends, last, side="right")  # numbers up to each string's end
    numbers = np.diff(through, prepend=0)
    first = through - numbers  # each string's first number
    values = (code[starts] & 0x1F).astype(np.int64)  # most runs are one character
    longer = np.flatnonzero(digits > 1)
    for j in range(1, _MAX_RUN_CHARS):
        if longer.size == 0:
            break
        values[longer] += (code[starts[longer] + j] & 0x1F).astype(np.int64) << (5 * j)
        longer = longer[digits[longer] > j + 1]
    if longer.size:  # numbers longer than any image needs
        bad[np.searchsorted(through, longer, side="right")] = True
        values[np.flatnonzero(digits > _MAX_RUN_CHARS)] = 0  # judged already; keeps the sums from overflowing
    # a set sign bit in the last character makes the number negative: minus 2 ** (5 * digits)
    negative = np.flatnonzero(code[ends] & 0x10)
    values[negative] -= _RUN_SCALE[np.minimum(digits[negative], _MAX_RUN_CHARS)]
    # from the fourth run on, a run is stored as the difference to the run two before: cumulative
    # sums per string over the odd and over the even (from the third) numbers give the runs
    runs = _runs(values, first, numbers)
    negative_runs = np.flatnonzero(runs < 0)
    if negative_runs.size:
        bad[np.searchsorted(through, negative_runs, side="right")] = True
    bad[has_chars] |= np.add.reduceat(runs, first[has_chars]) != pixels[has_chars]
    return bad


def _runs(values: np.ndarray, first: np.ndarray, numbers: np.ndarray) -> np.ndarray:
    """The runs of the numbers ``values`` of strings starting at ``first`` with ``numbers`` numbers each.

    From the fourth number on, a number is the difference to the run two before, so a run is a sum
    over the numbers of its parity in its string: the odd ones from the second, the even ones from
    the third. One cumulative sum per parity of the *global* index (the columns of an ``(n/2, 2)``
    view) serves both, as a string's local parity is its global one, flipped when the string starts
    at an odd index; each run then subtracts its class's sum just before its string's first term.
    """
    size = values.size
    padded = np.zeros(size + (size & 1) + 2, dtype=np.int64)  # two leading zeros: "before index 0"
    padded[2:size + 2] = values
    sums = np.cumsum(padded.reshape(-1, 2), axis=0).reshape(-1)  # sums[k + 2]: class of k, up to k
    string_first = np.repeat(first, numbers)
    local_odd = (np.arange(size) - string_first) & 1
    # minus the class sum up to two before the string's first term of that class: padded index
    # first + 1 for the odd terms (from first + 1), first + 2 for the even ones (from first + 2)
    runs = sums[2:size + 2] - sums[string_first + 2 - local_odd]
    runs[first[numbers > 0]] = values[first[numbers > 0]]
    return runs


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
