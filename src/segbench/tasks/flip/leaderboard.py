"""The leaderboards of COCO-CD and Waterbirds-seg: mIoU, foreground IoU, Flip and the context gap."""

from __future__ import annotations

from segbench.core.leaderboard import Board, Column, Metrics
from segbench.tasks.flip.metrics import COCO_CD_NAMES, WATERBIRDS_NAMES, FlipNames


def _worst_gap(metrics: Metrics) -> float | None:
    gaps = [gap["gap"] for gap in (metrics.get("gaps") or {}).values() if gap.get("gap") is not None]
    return max(gaps) if gaps else None


def _board(names: FlipNames) -> Board:
    return Board(evaluation=f"eval/{names.dataset}", title=names.dataset, columns=(
        Column("mIoU", lambda m: m.get("miou"), percent=True),
        Column("Fg-IoU", lambda m: m.get("fg_iou"), percent=True),
        Column("Flip", lambda m: (m.get("flip") or {}).get("global"), higher_is_better=False, percent=True),
        Column("FG-Miss", lambda m: (m.get("fg_decomposition") or {}).get("miss"), higher_is_better=False,
               percent=True),
        Column("worst gap", _worst_gap, higher_is_better=False, percent=True),
    ))


COCO_CD = _board(COCO_CD_NAMES)
WATERBIRDS = _board(WATERBIRDS_NAMES)
