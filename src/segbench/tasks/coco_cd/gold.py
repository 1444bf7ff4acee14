"""Gold items of the COCO-CD context audit: validation images whose context is unambiguous by the
evidence shares (COCO-Stuff area of indoor vs outdoor classes), with that context as the known answer.

An image is unambiguous when its indoor share is at least ``1 − margin`` (indoor) or at most
``margin`` (outdoor), and the build's label agrees. Pure: the caller reads the files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from segbench.schemas.flip import FlipImage
from segbench.schemas.rounds import RoundItem
from segbench.tasks.coco_cd.audit import CONTROL, group_batch

UNAMBIGUOUS_MARGIN = 0.1


def unambiguous_context(indoor_share: float | None, margin: float = UNAMBIGUOUS_MARGIN) -> str | None:
    """``indoor``/``outdoor`` when the evidence leaves no doubt, else None."""
    if indoor_share is None:
        return None
    if indoor_share >= 1 - margin:
        return "indoor"
    if indoor_share <= margin:
        return "outdoor"
    return None


def gold_candidates(val_images: Sequence[FlipImage], context_rows: Iterable[Mapping[str, Any]], *, dataset_dir: str,
                    size: int, margin: float = UNAMBIGUOUS_MARGIN, batch_by_group: bool = False) -> list[RoundItem]:
    """Validation images with an unambiguous context, as gold items (sorted by id), shown like audit
    items (with ``batch_by_group``, in their group's batch, as :func:`~segbench.tasks.coco_cd.audit.sample_audit_items` does)."""
    shares = {int(row["image_id"]): row.get("indoor_share") for row in context_rows}
    out = []
    for image in val_images:
        known = unambiguous_context(shares.get(image.id), margin)
        if known is not None and known == image.context:
            out.append(RoundItem(item_id=str(image.id), image=f"{dataset_dir}/{image.image_file}",
                                 width=size, height=size, gold={CONTROL: known},
                                 batch=group_batch(image.group_id) if batch_by_group else None))
    return sorted(out, key=lambda item: int(item.item_id))
