"""The parent-mask baseline for SPIN: every entity is predicted with its parent's ground-truth mask.

Objects get their own ground truth (they have no parent); each part gets its object's mask, each
subpart its part's mask. It is not a model: it is the reference point that shows what the SPIN
metrics separate. Its predictions are perfectly contained in their parents' predictions (SpCS = 1),
yet part and subpart IoU stay low (a subpart covers a small share of its part, seed 001 Sec. 3.2),
and where several parts predict the same object mask the label maps disagree with the taxonomy,
which lowers SeCS.

Writes the three COCO results files ``spin_<split>_{wholes,parts,subparts}_results.json`` that
``segbench evaluate spin --predictions DIR`` reads; each entry names its ground-truth annotation
(``gt_id``). Pure: files in, files out, no Prefect.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from segbench.core.errors import InputError
from segbench.core.io import read_json, write_json
from segbench.tasks.spin.inputs import results_name

NAME = "parent-mask baseline"
LEVELS = ("wholes", "parts", "subparts")
PARENT = {"parts": "wholes", "subparts": "parts"}


def parent_mask_predictions(cocos: Mapping[str, Mapping[str, Any]], *, path: str | Path = "") -> dict[str, list[dict]]:
    """Results per level for one split's ground truth ``{level: COCO dict}``, sorted by annotation id.

    Raises:
        InputError: an annotation whose ``parent_id`` is not an annotation of the level above.
    """
    by_id = {level: {ann["id"]: ann for ann in cocos[level]["annotations"]} for level in LEVELS}
    out: dict[str, list[dict]] = {}
    for level in LEVELS:
        entries = []
        for ann_id, ann in sorted(by_id[level].items()):
            source = ann
            if level in PARENT:
                source = by_id[PARENT[level]].get(ann.get("parent_id"))
                if source is None:
                    raise InputError(f"{level} annotation {ann_id} names parent {ann.get('parent_id')!r}, which is "
                                     f"not a {PARENT[level]} annotation", path=path, item=f"annotation {ann_id}",
                                     hint="rebuild SPIN with `segbench build spin`")
            entries.append({"image_id": ann["image_id"], "category_id": ann["category_id"], "gt_id": ann_id,
                            "segmentation": source["segmentation"], "score": 1.0, "prompt": "general"})
        out[level] = entries
    return out


def write_parent_mask_predictions(dataset_dir: str | Path, split: str, out_dir: str | Path) -> dict[str, Path]:
    """Read ``<dataset_dir>/spin_<split>_<level>.json`` and write the baseline's results into ``out_dir``.

    Raises:
        InputError: a ground-truth file is missing or malformed.
    """
    dataset_dir, out_dir = Path(dataset_dir), Path(out_dir)
    cocos = {}
    for level in LEVELS:
        path = dataset_dir / f"spin_{split}_{level}.json"
        coco = read_json(path)
        if not isinstance(coco, dict) or not isinstance(coco.get("annotations"), list):
            raise InputError("not a SPIN COCO file (no 'annotations' list)", path=path,
                             hint="build SPIN with `segbench build spin`")
        cocos[level] = coco
    predictions = parent_mask_predictions(cocos, path=dataset_dir)
    return {level: write_json(out_dir / results_name(split, level), entries)
            for level, entries in predictions.items()}
