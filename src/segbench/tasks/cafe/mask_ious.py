"""IoUs of groups of predicted masks, each group with its own mask, in few pycocotools calls.

pycocotools compares every mask of a call with every target, but masks and targets of different
sizes cost it only a bounding-box test; batching targets of distinct sizes saves the per-call cost
(most of the time on small matrices) without adding mask comparisons. The numbers are pycocotools'
own (``mask.iou`` with ``iscrowd`` 0); large inputs go through the compiled pass that gives the
same numbers (:mod:`segbench.tasks.cafe.rle_kernels`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pycocotools import mask as mask_utils

from segbench.tasks.cafe import rle_checks

_TARGETS_PER_CALL = 32


def distinct_size_batches(targets: Sequence[Mapping[str, Any]]) -> list[list[int]]:
    """Target indices in batches of at most ``_TARGETS_PER_CALL`` whose targets all differ in size."""
    by_size: dict[tuple[int, int], list[int]] = defaultdict(list)
    for k, target in enumerate(targets):
        by_size[tuple(target["size"])].append(k)
    groups = list(by_size.values())
    batches = []
    for depth in range(max(map(len, groups), default=0)):
        layer = [group[depth] for group in groups if depth < len(group)]  # one target per size
        batches += [layer[i:i + _TARGETS_PER_CALL] for i in range(0, len(layer), _TARGETS_PER_CALL)]
    return batches


def grouped_ious(rles: Sequence[Mapping[str, Any]], members: Sequence[Sequence[int]],
                 targets: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """IoU of mask ``rles[i]`` with ``targets[k]`` for every ``i`` of ``members[k]``, concatenated in
    group order (``sum(len(m) for m in members)`` values). Each group's masks must have its target's size."""
    sizes = [len(m) for m in members]
    if rle_checks.use_compiled(len(rles)):
        from segbench.tasks.cafe.rle_kernels import target_ious

        index = np.fromiter((i for m in members for i in m), dtype=np.int64, count=sum(sizes))
        return target_ious([r["counts"] for r in rles], index, [t["counts"] for t in targets],
                           np.repeat(np.arange(len(members), dtype=np.int64), sizes))
    offsets = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64)))
    out = np.zeros(int(offsets[-1]))
    for batch in distinct_size_batches(targets):
        rows: list[int] = []
        column: list[int] = []
        where: list[int] = []
        for j, k in enumerate(batch):
            rows += members[k]
            column += [j] * sizes[k]
            where += range(offsets[k], offsets[k + 1])
        if rows:
            matrix = np.asarray(mask_utils.iou([rles[i] for i in rows], [targets[k] for k in batch], [0] * len(batch)))
            out[where] = matrix[np.arange(len(rows)), column]
    return out
