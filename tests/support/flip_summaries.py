"""A small flip-metrics summary, the same twelve 4×4 images wherever a report is drawn from one."""

from __future__ import annotations

import numpy as np

from segbench.tasks.flip.metrics import FlipAccumulator

GT = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 0, 0], [2, 2, 0, 0]], np.uint8)
PRED = np.array([[0, 0, 1, 2], [0, 1, 0, 1], [2, 1, 0, 0], [0, 2, 0, 0]], np.uint8)


def flip_summary(with_probs: bool, names=None) -> dict:
    """Twelve images, three per group; with ``with_probs`` every image gets its own flip risk."""
    acc = FlipAccumulator()
    for image_id in range(12):
        probs = None
        if with_probs:
            probs = np.full((3, 4, 4), 0.1)
            np.put_along_axis(probs, PRED[None].astype(np.int64), 0.8, axis=0)
            probs[1:, PRED > 0] += image_id / 100  # distinct risks
        acc.update(GT, PRED, probs, group_id=image_id % 4, image_id=image_id)
    return (acc.summarize(names) if names else acc.summarize()).model_dump(mode="json")
