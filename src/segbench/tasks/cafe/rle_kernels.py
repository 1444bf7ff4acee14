"""Compiled passes over compressed COCO RLE strings: the checks and the IoUs of large inputs.

A predictions file of tens of thousands of masks holds tens of millions of ``counts`` characters.
Checked in numpy that takes ~60 ns a character, and pycocotools' IoUs add their per-call cost; the
loops below, compiled by numba, take ~3 ns. numba's start-up (~0.7 s: its import and the first
call, which loads the machine code cached beside this file) is paid once per process, so callers
use these passes for large inputs only (:func:`segbench.tasks.cafe.rle_checks.use_compiled`).

The rules are pycocotools' own: :func:`_decode` decodes a string the way ``rleFrString`` does,
:func:`_corrupt` judges it as :func:`segbench.tasks.cafe.rle_checks.compressed_rle_problem` does, and
:func:`_iou` is ``rleIou``'s merge of two run lists (``iscrowd`` 0), so the numbers are pycocotools'
to the bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# A run needs at most 7 characters for any image below 2**34 pixels (as rle_checks says).
_MAX_RUN_CHARS = 7


def joined(counts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """All ``counts`` strings in one buffer, and the ``n + 1`` offsets of their starts and end."""
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, counts), dtype=np.int64, count=len(counts)), out=offsets[1:])
    return np.frombuffer(b"".join(counts), dtype=np.uint8), offsets


def corrupt_counts(counts: list[bytes], pixels: np.ndarray) -> np.ndarray:
    """Which ``counts`` strings are corrupt for images of ``pixels`` pixels, ``(n,)`` bool."""
    buf, offsets = joined(counts)
    return _corrupt(buf, offsets, np.asarray(pixels, dtype=np.int64))


def target_ious(masks: list[bytes], index: np.ndarray, targets: list[bytes], target_of: np.ndarray) -> np.ndarray:
    """IoU of ``masks[index[j]]`` with ``targets[target_of[j]]`` for every ``j`` (checked strings of
    equal image sizes), as pycocotools' ``mask.iou`` gives it."""
    buf, offsets = joined(masks + targets)
    order = np.argsort(target_of, kind="stable")  # each target is decoded once
    out = np.empty(index.size)
    out[order] = _ious(buf, offsets, np.asarray(index, dtype=np.int64)[order],
                       np.asarray(target_of, dtype=np.int64)[order] + len(masks))
    return out


@njit(cache=True, nogil=True)
def _decode(buf: np.ndarray, start: int, end: int, runs: np.ndarray) -> int:  # pragma: no cover - compiled
    """Decode ``buf[start:end]`` into ``runs`` the way ``rleFrString`` does: the number of runs, or -1
    for a character outside '0'..'o', a string ending inside a number or a number longer than any
    image needs."""
    p, m = start, 0
    while p < end:
        value, digits = np.int64(0), 0
        while True:
            c = np.int64(buf[p]) - 48
            if c < 0 or c > 63:
                return -1
            value |= (c & 0x1F) << (5 * digits)
            p += 1
            digits += 1
            if (c & 0x20) == 0:
                if c & 0x10:  # a set sign bit: the number is negative
                    value -= np.int64(1) << (5 * digits)
                break
            if p == end or digits == _MAX_RUN_CHARS:
                return -1
        if m > 2:  # from the fourth run on, the difference to the run two before
            value += runs[m - 2]
        runs[m] = value
        m += 1
    return m


@njit(cache=True, nogil=True)
def _longest(offsets: np.ndarray) -> int:  # pragma: no cover - compiled
    """The longest string's length: a string has at most one run per character."""
    longest = 0
    for i in range(offsets.size - 1):
        longest = max(longest, offsets[i + 1] - offsets[i])
    return longest


@njit(cache=True, nogil=True)
def _corrupt(buf: np.ndarray, offsets: np.ndarray, pixels: np.ndarray) -> np.ndarray:  # pragma: no cover
    """Whether each string is corrupt: empty, undecodable (:func:`_decode`), with a negative run, or
    with runs not covering its image's pixels."""
    runs = np.empty(_longest(offsets), dtype=np.int64)
    bad = np.zeros(offsets.size - 1, dtype=np.bool_)
    for i in range(bad.size):
        m = _decode(buf, offsets[i], offsets[i + 1], runs)
        bad[i] = m <= 0 or runs[:m].min() < 0 or runs[:m].sum() != pixels[i]
    return bad


@njit(cache=True, nogil=True)
def _iou(a: np.ndarray, ka: int, b: np.ndarray, kb: int) -> float:  # pragma: no cover - compiled
    """pycocotools' ``rleIou`` of two run lists: walk both, counting where either and both are set."""
    ca, cb, ia, ib = a[0], b[0], 1, 1
    in_a, in_b = False, False
    intersection, union, left = 0, 0, 1
    while left > 0:
        step = min(ca, cb)
        if in_a or in_b:
            union += step
            if in_a and in_b:
                intersection += step
        ca -= step
        if ca == 0 and ia < ka:
            ca, ia, in_a = a[ia], ia + 1, not in_a
        cb -= step
        if cb == 0 and ib < kb:
            cb, ib, in_b = b[ib], ib + 1, not in_b
        left = ca + cb
    return intersection / union if intersection > 0 else 0.0


@njit(cache=True, nogil=True)
def _ious(buf: np.ndarray, offsets: np.ndarray, first: np.ndarray,
          second: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """IoU of string ``first[j]`` with string ``second[j]``; ``second`` sorted, so that each string of
    it is decoded once. One thread: Dask workers already use every core."""
    a = np.empty(_longest(offsets), dtype=np.int64)
    b = np.empty_like(a)
    out = np.zeros(first.size)
    decoded, kb = -1, 0
    for j in range(first.size):
        if second[j] != decoded:
            kb, decoded = _decode(buf, offsets[second[j]], offsets[second[j] + 1], b), second[j]
        ka = _decode(buf, offsets[first[j]], offsets[first[j] + 1], a)
        out[j] = _iou(a, ka, b, kb)
    return out
