"""A one-image vocabulary evaluation: a three-class vocabulary, a 4 × 6 gt label map, three descriptions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

VOCAB = {
    "road": {"exact": ["road"], "synonyms": ["street"], "hyponyms": ["highway"], "meronyms": ["lane marking"],
             "semantically_related": [], "id": 0},
    "car": {"exact": ["car"], "synonyms": ["automobile"], "hyponyms": ["taxi"], "meronyms": ["wheel"],
            "semantically_related": [], "id": 1},
    "dog": {"exact": ["dog"], "synonyms": ["puppy"], "hyponyms": ["poodle"], "meronyms": ["tail"],
            "semantically_related": [], "id": 2},
}
DESCRIPTIONS = [{"image_id": "img1", "descriptions": [
    {"segment_id": 0, "description": "an empty street"},
    {"segment_id": 1, "description": "the wheel of a car"},
    {"segment_id": 2, "description": "a fluffy puppy"},
]}]


def write_vocab_evaluation(root: Path) -> Path:
    """``vocab.json``, ``gt/img1.png`` (road on top, car and dog below) and ``desc.json`` under ``root``."""
    (root / "gt").mkdir(parents=True)
    label = np.full((4, 6), 255, np.uint8)
    label[:2, :] = 0  # road
    label[2:, :3] = 1  # car
    label[2:, 3:] = 2  # dog
    Image.fromarray(label).save(root / "gt" / "img1.png")
    (root / "desc.json").write_text(json.dumps(DESCRIPTIONS))
    (root / "vocab.json").write_text(json.dumps(VOCAB))
    return root
