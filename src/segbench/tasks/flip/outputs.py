"""What every ρ-controlled build (COCO-CD, Waterbirds-seg) writes alike: its group counts table and
its split files, one folder per ρ with the shared val and test beside each train."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from typing_extensions import TypedDict  # the one CocoImage is: the two bases must share it

from segbench.core.coco_documents import CocoDocument, CocoImage
from segbench.core.io import atomic_write_text, write_json
from segbench.core.reports import markdown_table
from segbench.core.splits import SplitPlan, rho_name

# The image keys every flip split file holds (the class is a Python keyword: hence the two parts).
_ClassKey = TypedDict("_ClassKey", {"class": str})


class FlipImageKeys(CocoImage, _ClassKey):
    """An image of a COCO-CD or Waterbirds-seg split file (:class:`segbench.schemas.flip.FlipImage` reads it)."""

    group_id: int
    context: str
    image_file: str
    mask_file: str


def write_group_counts(stage: Path, counts: dict[str, dict[str, list[int]]], names: Sequence[str],
                       classes: Sequence[str], contexts: Sequence[str]) -> list[Path]:
    """``tables/group_counts.{json,md}``: images per group (``names``, groups 2·y + a) per ρ and split."""
    rows = [[rho, split, *values, sum(values)] for rho, splits in counts.items() for split, values in splits.items()]
    text = ("# Group counts per split and correlation regime\n\n"
            f"Groups are 2·y + a with y: {classes[0]} 0, {classes[1]} 1; a: {contexts[0]} 0, {contexts[1]} 1. "
            "Val and test are shared by every ρ.\n\n"
            + markdown_table(["ρ", "split", *[f"{g} ({i})" for i, g in enumerate(names)], "total"], rows))
    return [write_json(stage / "tables" / "group_counts.json", {"groups": list(names), "counts": counts}, indent=1),
            atomic_write_text(stage / "tables" / "group_counts.md", text)]


def write_splits(stage: Path, plan: SplitPlan, title: str,
                 coco_of: Callable[[Sequence[int], str], CocoDocument]) -> list[Path]:
    """``splits/rho_<ρ>/{train,val,test}.json``: ``coco_of(ids, description)`` for each split's image ids."""
    written = []
    for rho, train_ids in sorted(plan.train.items()):
        for split, ids in (("train", train_ids), ("val", plan.val), ("test", plan.test)):
            coco = coco_of(ids, f"{title} {split}, ρ = {rho:g}")
            written.append(write_json(stage / "splits" / rho_name(rho) / f"{split}.json", coco))
    return written
