"""Checks of compressed COCO RLE ``counts`` strings before pycocotools sees them.

pycocotools decodes ``counts`` without any check: a corrupt string (even ``"0" + "O" * 40``) makes
``rleIou`` loop for minutes holding the GIL, and ``rleDecode`` writes past its buffer. A string is
valid when its characters are in ``'0'..'o'``, it does not end inside a number, no number is longer
than any image needs, and its runs are non-negative and cover exactly the image's pixels.
"""

from __future__ import annotations

import numpy as np

from segbench.core.errors import InputError


def check_compressed_rles(entries: list[tuple[bytes, int, str]], path: str) -> None:
    """Check compressed RLEs ``(counts, pixels, item)`` in one vectorised pass.

    Raises:
        InputError: the first corrupt one (see :func:`compressed_rle_problem`), naming its item.
    """
    if not entries:
        return
    bad = corrupt_compressed_rles([e[0] for e in entries], np.asarray([e[1] for e in entries], dtype=np.int64))
    if bad.any():
        counts, pixels, item = entries[int(np.argmax(bad))]
        raise InputError(f"corrupt compressed RLE counts: {compressed_rle_problem(counts, pixels)}", path=path,
                         item=item, hint="re-encode the mask with pycocotools.mask.encode (counts decoded to str)")


# A run needs at most 7 characters for any image below 2**34 pixels; longer numbers only come from
# corrupt strings, and pycocotools would shift them past the width of its integers.
_MAX_RUN_CHARS = 7


_RUN_SCALE = np.asarray([1 << (5 * d) for d in range(_MAX_RUN_CHARS + 1)], dtype=np.int64)  # 2 ** (5 * digits)


def corrupt_compressed_rles(counts: list[bytes], pixels: np.ndarray) -> np.ndarray:
    """Which compressed RLE ``counts`` strings are corrupt for images of ``pixels`` pixels, ``(n,)`` bool.

    The rules of :func:`compressed_rle_problem`, applied to all strings at once: one concatenated
    buffer, numbers split on the continuation bit (and at every string's end, so that a corrupt
    string cannot run into the next), then the runs summed per string.
    """
    n = len(counts)
    lengths = np.fromiter(map(len, counts), dtype=np.int64, count=n)
    buf = np.frombuffer(b"".join(counts), dtype=np.uint8)
    last = np.cumsum(lengths) - 1  # each string's last character
    has_chars = lengths > 0
    bad = ~has_chars
    bad[np.searchsorted(last, np.flatnonzero((buf < 48) | (buf > 111)))] = True
    code = buf - np.uint8(48)  # wraps on the characters judged above
    ended = (code & 0x20) == 0  # the character ends a number
    bad[has_chars] |= ~ended[last[has_chars]]  # the string ends inside a number
    ended[last[has_chars]] = True
    ends = np.flatnonzero(ended)
    if ends.size == 0:
        return bad
    starts = np.concatenate(([0], ends[:-1] + 1))
    digits = ends - starts + 1
    numbers = np.zeros(n, dtype=np.int64)  # numbers per string
    numbers[has_chars] = np.add.reduceat(ended, (last - lengths + 1)[has_chars], dtype=np.int64)
    owner = np.repeat(np.arange(n), numbers)
    too_long = digits > _MAX_RUN_CHARS
    bad[owner[too_long]] = True
    values = (code[starts] & 0x1F).astype(np.int64)  # most runs are one character
    for j in range(1, _MAX_RUN_CHARS):
        at = np.flatnonzero(digits > j)
        values[at] += (code[starts[at] + j] & 0x1F).astype(np.int64) << (5 * j)
    # a set sign bit in the last character makes the number negative: minus 2 ** (5 * digits)
    values -= ((code[ends] >> 4) & 1) * _RUN_SCALE[np.minimum(digits, _MAX_RUN_CHARS)]
    values[too_long] = 0  # judged already; keeps the sums below from overflowing
    first = np.cumsum(numbers) - numbers  # each string's first number
    start = first[owner]
    index = np.arange(values.size) - start  # the number's index in its string
    odd = (index & 1).astype(bool)
    even = ~odd & (index >= 2)
    # from the fourth run on, a run is stored as the difference to the run two before: cumulative
    # sums per string over the odd and over the even (from the third) numbers give the runs
    odd_sums, even_sums = np.cumsum(values * odd), np.cumsum(values * even)
    runs = np.where(odd, odd_sums - odd_sums[start], np.where(even, even_sums - even_sums[start], values))
    bad[owner[runs < 0]] = True
    bad[has_chars] |= np.add.reduceat(runs, first[has_chars]) != pixels[has_chars]
    return bad


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
