"""SPIN's Table 5: does a region's size predict the IoU a model reaches on it?

The paper fits IoU ~ β1 · ln(region size) + β0 over the entities of each level, per model, and reports
Pearson's R² and the p-value of β1.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from segbench.schemas.spin_metrics import SizeVsIoU


def size_vs_iou(pairs: Sequence[tuple[int, float]]) -> SizeVsIoU | None:
    """SPIN's Table 5 regression, IoU ~ β1 · ln(region size) + β0 (``scipy.stats.linregress``); None
    with fewer than 3 entities, one region size only (no line to fit) or one IoU only (nothing to
    explain: R² is undefined)."""
    if len(pairs) < 3 or len({size for size, _ in pairs}) < 2 or len({iou for _, iou in pairs}) < 2:
        return None
    from scipy.stats import linregress

    fit = linregress(np.log([size for size, _ in pairs]), [iou for _, iou in pairs])
    return SizeVsIoU(entities=len(pairs), slope=float(fit.slope), intercept=float(fit.intercept),
                     r_squared=float(fit.rvalue) ** 2, p_value=float(fit.pvalue))
