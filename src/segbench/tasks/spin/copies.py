"""Copied masks: one answer given twice (a copy of another worker's polygons, or one person's accounts
drawing the same polygon), which must weigh as one person, not as people agreeing.

Two masks are copies when their IoU is at least :data:`COPY_IOU` and both have :data:`COPY_MIN_AREA`
pixels or more: two hands tracing the same subpart of that size differ by more than 1% of the union,
while a copy (or a polygon pasted from one account to the next) does not. Smaller masks are never
called copies, as two honest outlines of a few pixels can coincide.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from segbench.core.masks import CocoRle, rle_iou

COPY_IOU = 0.99
COPY_MIN_AREA = 100


class CopiedMasks(TypedDict):
    """Answers on one subpart whose masks were copies: counted as the first annotator's alone."""

    image_id: int
    part_ann_id: int
    subpart: str
    annotators: list[str]


def copy_groups(masks: Sequence[tuple[str, CocoRle | None, int]]) -> tuple[list[int], list[list[str]]]:
    """Which of ``(annotator, mask, area)`` answers count, and who copied whom.

    Returns:
        The indices kept (each group of copies keeps its first), and the annotators of each group of
        copies, the kept one first; groups in the order of their first member.
    """
    large = [i for i, (_, mask, area) in enumerate(masks) if mask is not None and area >= COPY_MIN_AREA]
    if len(large) < 2:
        return list(range(len(masks))), []
    rles = [rle for i in large if (rle := masks[i][1]) is not None]
    iou = rle_iou(rles, rles)
    copy_of: dict[int, int] = {}
    for a, first in enumerate(large):
        if first in copy_of:
            continue
        for b in range(a + 1, len(large)):
            if large[b] not in copy_of and iou[a, b] >= COPY_IOU:
                copy_of[large[b]] = first
    groups: dict[int, list[str]] = {}
    for copy, first in sorted(copy_of.items()):
        groups.setdefault(first, [masks[first][0]]).append(masks[copy][0])
    return [i for i in range(len(masks)) if i not in copy_of], [groups[i] for i in sorted(groups)]
