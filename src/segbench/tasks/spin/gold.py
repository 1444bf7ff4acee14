"""Gold items of SPIN subpart rounds: parts with reference polygons of their subparts (``gold`` =
``{"polygons": [{"label": <subpart>, "points": [[x, y], ...]}, ...]}``, pixels of the item's image),
scored by polygon IoU (:mod:`segbench.core.worker_quality`).

A round asks one page of a part's subparts, so a gold item keeps only the reference polygons of the
subparts its page asks; a gold item with none left on a page is not in that page's round.
"""

from __future__ import annotations

from collections.abc import Iterable

from segbench.schemas.rounds import RoundItem

POLYGONS = "polygons"


def page_gold(items: Iterable[RoundItem]) -> list[RoundItem]:
    """``items`` with each gold item's reference narrowed to the subparts it is asked about."""
    out = []
    for item in items:
        if not item.gold:
            out.append(item)
            continue
        asked = set(item.data.get("subparts") or [])
        kept = [p for p in item.gold.get(POLYGONS, []) if p.get("label") in asked]
        if kept:
            out.append(item.model_copy(update={"gold": {**item.gold, POLYGONS: kept}}))
    return out
