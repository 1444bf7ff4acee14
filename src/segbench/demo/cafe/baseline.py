"""A prompt-blind baseline for CAFE: it segments the edited target whatever the prompt says.

It answers both images of every pair with the target mask M at a fixed confidence, so it localises
every positive prompt perfectly and accepts every misleading one: pmF1 is 1, IL_MCC and cgF1 are 0,
AFPR is 1. That is the failure CAFE is built to expose (a model that finds the edited region but
never checks whether the concept is really there), and a reference point for real models' reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def prompt_blind_predictions(export: Mapping[str, Any], score: float = 0.9) -> list[dict[str, Any]]:
    """COCO results for every image of a CAFE export (``CAFE.json`` as loaded JSON), sorted by image id."""
    targets = {ann["image_id"]: ann for ann in export["annotations"]}
    results = []
    for image in export["images"]:
        source = image.get("fp_source_id", image["id"])
        target = targets.get(source)
        if target is None:
            continue
        results.append({"image_id": image["id"], "category_id": target["category_id"],
                        "segmentation": target["segmentation"], "bbox": target["bbox"], "score": score})
    return sorted(results, key=lambda r: r["image_id"])
