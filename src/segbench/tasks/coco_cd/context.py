"""Indoor / outdoor context from COCO-Stuff pixel evidence (seed 002, Appendix A).

Each stuff or thing class maps to indoor, outdoor or nothing (neutral classes such as walls and
floors, and classes on no list). An image's indoor (outdoor) evidence is the summed ``area`` of its
indoor (outdoor) annotations, stuff and things alike; the target classes never count. Then:

* indoor  if indoor share ≥ ``share`` and indoor area ≥ ``min_area`` · image area;
* outdoor if outdoor share > ``share`` and outdoor area ≥ ``min_area`` · image area;
* unknown otherwise (no evidence at all included).

The comparisons are exact (rational arithmetic): a threshold met to the last pixel must not flip
with floating-point noise, e.g. 0.02 · 20000 is not exactly 400 in binary floating point.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction

INDOOR, OUTDOOR, UNKNOWN = "indoor", "outdoor", "unknown"


def context_of_class(name: str, *, indoor: Iterable[str], outdoor: Iterable[str], neutral: Iterable[str]) -> str | None:
    """The context a class is evidence for: neutral first, then indoor, then outdoor, else None."""
    if name in set(neutral):
        return None
    if name in set(indoor):
        return INDOOR
    if name in set(outdoor):
        return OUTDOOR
    return None


def evidence_slots(
    category_names: Mapping[int, str],
    *,
    indoor: Iterable[str],
    outdoor: Iterable[str],
    neutral: Iterable[str],
    exclude: Iterable[str] = (),
) -> dict[int, int]:
    """Category id → evidence slot (0 indoor, 1 outdoor) for the categories that count."""
    indoor, outdoor, neutral, exclude = set(indoor), set(outdoor), set(neutral), set(exclude)
    slots = {}
    for cat_id, name in category_names.items():
        if name in exclude:
            continue
        context = context_of_class(name, indoor=indoor, outdoor=outdoor, neutral=neutral)
        if context is not None:
            slots[cat_id] = 0 if context == INDOOR else 1
    return slots


def classify_context(
    indoor_area: float,
    outdoor_area: float,
    image_area: float,
    *,
    share: float = 0.5,
    min_area: float = 0.02,
) -> str:
    """The context label of one image from its summed evidence areas (pixels)."""
    indoor, outdoor = Fraction(indoor_area), Fraction(outdoor_area)
    total = indoor + outdoor
    if total <= 0:
        return UNKNOWN
    # Decimal parameters are meant exactly as written (0.02 means 2/100).
    share_q, floor = Fraction(str(share)), Fraction(str(min_area)) * Fraction(image_area)
    if indoor >= share_q * total and indoor >= floor:
        return INDOOR
    if outdoor > share_q * total and outdoor >= floor:
        return OUTDOOR
    return UNKNOWN


def indoor_share(indoor_area: float, outdoor_area: float) -> float | None:
    """indoor / (indoor + outdoor), or None without evidence."""
    total = indoor_area + outdoor_area
    return indoor_area / total if total > 0 else None
