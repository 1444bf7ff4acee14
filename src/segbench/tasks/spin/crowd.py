"""SPIN crowd rounds and their answers (seed 001, Sec. 3.1): tasks per image-object-part, polygons →
validated subpart masks → one resolved mask per (image, part, subpart).

Rounds: the subpart list differs per part, so a campaign is one round per (super-category, part), with
the ``spin_subparts`` label config listing that part's subparts; each item also carries the subparts
asked for *its* object class (object-specific ones such as a turtle's shell are only asked there).

Validation, per annotator answer and subpart (a failed check flags it; flagged answers are kept in the
raw file with their flags and take no part in resolution):

* ``too_few_points``: a polygon with fewer than 3 points;
* ``outside_image``: a point beyond the image (half a pixel of tolerance);
* ``zero_area``: a polygon, or the merged mask, that covers no pixel;
* ``not_contained``: less than ``containment`` (default 0.8) of the mask lies inside the part mask;
* ``unknown_subpart``: a polygon label that is not a subpart asked for this item;
* ``yes_without_polygon``: "yes" with nothing drawn.

Masks: one annotator's polygons of one subpart are merged by even-odd (XOR) rule, pixel by pixel, so
a polygon drawn inside another of the same subpart is a hole (the seed's coiled snakes), and separate
polygons (two eyes, occluded pieces) are a union. Rasterised with pycocotools, like every COCO tool.

Resolution (rule ``RESOLUTION_RULE``): the voters on a subpart are the annotators who said the part is
visible and whose answer on that subpart is not flagged. "Yes" answers whose masks are copies of one
another (:mod:`segbench.tasks.spin.copies`) count as one voter, the first annotator's, and are listed in
the report's ``copies``. The subpart is present when more than half of the voters said yes. Its mask is
the valid mask of the "yes" annotator with the highest mean IoU with the other "yes" masks (a single
one is chosen as is), ties broken by the smaller annotator id. ``agreement`` = yes voters / voters
(copies counted once). Pure functions: no files, no Prefect.

Mask aggregation (``ResolvePolicy.mask_aggregation``): ``medoid`` is the rule above, segbench's own
(the SPIN paper states no aggregation rule: one vetted worker per task, then two authors inspected
and corrected every annotation); ``stated`` is its former name, still accepted. ``em``,
``majority`` and ``rasa`` replace the medoid by crowd-kit's segmentation aggregate
(:func:`segbench.core.aggregation.aggregate_masks`) of the valid masks of the "yes" voters, the same
annotators the medoid is chosen among (a "no" voter drew nothing to aggregate); presence and
``agreement`` are decided as above. The aggregate's RLE and area come from its pixels as a chosen
mask's do; its ``polygons`` is its number of 8-connected regions. An aggregate that covers no pixel
(the "yes" masks share too little) resolves nothing: the subpart is left out of ``resolved.json`` and
listed in the report's ``empty_aggregate``. The rule recorded on every record and in the report
names the method.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

import numpy as np
from pycocotools import mask as mask_utils

from segbench.core import clock
from segbench.core.errors import InputError
from segbench.core.masks import CocoRle, bitmap_to_rle, rle_iou, rle_to_bitmap
from segbench.schemas.rounds import Answer, Polygon, slugify
from segbench.schemas.spin import PartContext, ResolvedSubpart, Taxonomy
from segbench.tasks.spin.copies import CopiedMasks, copy_groups

KIND = "spin_subparts"
LABEL_CONFIG = "spin_subparts"
DATASET = "spin"
RESOLUTION_RULE = "majority-yes-of-visible/medoid-mask/v2"  # v2: a copied mask counts once

MEDOID = "medoid"
MASK_AGGREGATIONS = (MEDOID, "em", "majority", "rasa")
"""How a present subpart's mask is resolved: segbench's medoid rule, or a crowd-kit segmentation model."""
RENAMED = {"stated": MEDOID}  # former names, still accepted


def mask_aggregation_name(value: str) -> str:
    """``value``, or the current name of a former one (``stated`` → ``medoid``).

    Raises:
        ValueError: not a mask aggregation.
    """
    name = RENAMED.get(value, value)
    if name not in MASK_AGGREGATIONS:
        raise ValueError(f"unknown mask aggregation {value!r}; choose one of {', '.join(MASK_AGGREGATIONS)}")
    return name
DEFAULT_CONTAINMENT = 0.8
PIXEL_TOLERANCE = 0.5
ITEM_FIELDS = ("image_id", "part_ann_id", "object", "object_class", "part")


# --- rounds ----------------------------------------------------------------------------------------------

SUBPARTS_PER_PAGE = 8  # a task page asks about at most this many subparts (labels beside the image)
# SPIN (supplementary, crowd pay): 10 cents per possible subpart, which paid above the US federal
# minimum wage in the authors' timing ($1.10 per Boat image, $2.90 per Car image).
REWARD_PER_SUBPART = 0.10


def round_key(prefix: str, object: str, part: str, page: int | None = None) -> str:
    """``<prefix>-<super>-<part>``, with ``-p<page>`` when the part's subparts span several pages."""
    return f"{prefix}-{slugify(object)}-{slugify(part)}" + (f"-p{page}" if page is not None else "")


def subpart_pages(names: Sequence[str], size: int = SUBPARTS_PER_PAGE) -> list[list[str]]:
    """``names`` in order, split into the fewest pages of at most ``size``, as even as possible
    (23 → 8, 8, 7), so no page is left with one or two subparts."""
    if not names:
        return []
    count = -(-len(names) // size)
    base, extra = divmod(len(names), count)
    pages, start = [], 0
    for index in range(count):
        end = start + base + (1 if index < extra else 0)
        pages.append(list(names[start:end]))
        start = end
    return pages


# --- masks and validation -----------------------------------------------------------------------------

def polygon_flags(polygon: Polygon, height: int, width: int) -> list[str]:
    """The rules one polygon breaks (empty if none); ``zero_area`` is checked on its raster."""
    flags = []
    if len(polygon.points) < 3:
        return ["too_few_points"]
    if not all(-PIXEL_TOLERANCE <= x <= width + PIXEL_TOLERANCE and -PIXEL_TOLERANCE <= y <= height + PIXEL_TOLERANCE
               for x, y in polygon.points):
        flags.append("outside_image")
    elif not polygon_bitmap(polygon, height, width).any():
        flags.append("zero_area")
    return flags


def polygon_bitmap(polygon: Polygon, height: int, width: int) -> np.ndarray:
    """The COCO raster of one polygon, ``(H, W)`` uint8."""
    flat = [float(v) for point in polygon.points for v in point]
    return mask_utils.decode(mask_utils.frPyObjects([flat], height, width))[:, :, 0]


def merge_polygons(polygons: Sequence[Polygon], height: int, width: int) -> np.ndarray:
    """Even-odd merge: a pixel is in the mask when an odd number of polygons cover it, ``(H, W)`` uint8."""
    out = np.zeros((height, width), dtype=np.uint8)
    for polygon in polygons:
        out ^= polygon_bitmap(polygon, height, width)
    return out


@dataclass
class SubpartAnswer:
    """One annotator's answer on one subpart of one item."""

    has: str | None  # "yes", "no" or None (not answered)
    polygons: int = 0
    rle: CocoRle | None = None
    area: int = 0
    containment: float | None = None
    flags: list[str] = field(default_factory=list)


def subpart_answer(answer: Answer, subpart: str, ctx: PartContext, part_bitmap: np.ndarray,
                   containment: float) -> SubpartAnswer:
    """Validate and rasterise what ``answer`` says about ``subpart``."""
    has = next(iter(answer.choices.get(f"has_{slugify(subpart)}") or []), None)
    drawn = [p for p in answer.polygons.get("polygons", []) if p.label == subpart]
    result = SubpartAnswer(has=has, polygons=len(drawn))
    if not drawn:
        if has == "yes":
            result.flags.append("yes_without_polygon")
        return result
    if has is None:
        result.has = has = "yes"  # drawing a subpart is saying it is there
    flags = sorted({f for p in drawn for f in polygon_flags(p, ctx.height, ctx.width)})
    if flags:
        result.flags = flags
        return result
    bitmap = merge_polygons(drawn, ctx.height, ctx.width)
    result.area = int(bitmap.sum())
    if result.area == 0:
        result.flags.append("zero_area")
        return result
    result.rle = bitmap_to_rle(bitmap)
    result.containment = float((bitmap & part_bitmap).sum()) / result.area
    if result.containment < containment:
        result.flags.append("not_contained")
    if has == "no":
        result.flags.append("no_with_polygon")
    return result


# --- resolution ----------------------------------------------------------------------------------------

def resolution_rule(mask_aggregation: str = MEDOID) -> str:
    """The rule string recorded for a mask aggregation (the medoid rule's is ``RESOLUTION_RULE``)."""
    if mask_aggregation_name(mask_aggregation) == MEDOID:
        return RESOLUTION_RULE
    return f"majority-yes-of-visible/crowdkit-segmentation-{mask_aggregation}/v1"


class SubpartRecord(TypedDict):
    """One annotator's answer on one subpart, as the raw file keeps it."""

    has: str | None
    polygons: int
    area: int
    containment: float | None
    segmentation: CocoRle | None
    flags: list[str]


class RawRecord(TypedDict):
    """One answer, validated, as the raw file keeps it (flagged answers take no part in resolution)."""

    item_id: str
    image_id: int
    part_ann_id: int
    annotator: str
    source_id: str
    updated_at: str | None
    part_visible: str | None
    flags: list[str]
    unknown_labels: list[str]
    subparts: dict[str, SubpartRecord]


class _Mask(TypedDict):
    segmentation: CocoRle
    area: int
    polygons: int


class EmptyAggregate(TypedDict):
    image_id: int
    part_ann_id: int
    subpart: str
    yes: list[str]


class ResolveReportJson(TypedDict):
    answers: int
    items_answered: int
    resolved: int
    absent: int
    no_voters: int
    copies: list[CopiedMasks]
    flags: dict[str, int]
    rule: str
    mask_aggregation: NotRequired[str]
    empty_aggregate: NotRequired[list[EmptyAggregate]]


@dataclass(frozen=True)
class ResolvePolicy:
    containment: float = DEFAULT_CONTAINMENT  # share of a subpart mask that must lie inside its part
    mask_aggregation: str = MEDOID  # one of MASK_AGGREGATIONS


@dataclass
class ResolveReport:
    answers: int = 0
    items_answered: int = 0
    flags: Counter = field(default_factory=Counter)
    resolved: int = 0
    absent: int = 0  # (item, subpart) pairs voted absent or without a majority
    no_voters: int = 0
    mask_aggregation: str = MEDOID
    empty_aggregate: list[EmptyAggregate] = field(default_factory=list)  # present subparts whose aggregate is empty
    copies: list[CopiedMasks] = field(default_factory=list)

    def to_json(self) -> ResolveReportJson:
        out: ResolveReportJson = {"answers": self.answers, "items_answered": self.items_answered, "resolved": self.resolved,
               "absent": self.absent, "no_voters": self.no_voters,
               "copies": sorted(self.copies, key=lambda c: (c["image_id"], c["part_ann_id"], c["subpart"])),
               "flags": dict(sorted(self.flags.items())),
               "rule": resolution_rule(self.mask_aggregation)}
        if self.mask_aggregation != MEDOID:  # keys of a crowd-kit method only: the medoid rule's report is unchanged
            out["mask_aggregation"] = self.mask_aggregation
            out["empty_aggregate"] = sorted(self.empty_aggregate,
                                            key=lambda e: (e["image_id"], e["part_ann_id"], e["subpart"]))
        return out


def item_subparts(item_data: Mapping[str, Any], taxonomy: Taxonomy, ctx: PartContext) -> list[str]:
    """The subparts asked for one item: its own list if the round gave one, else the taxonomy's."""
    names = item_data.get("subparts")
    if isinstance(names, list) and names:
        return [str(n) for n in names]
    return [s.name for s in taxonomy.subparts_for(ctx.object, ctx.part, ctx.object_class)]


def resolve_subparts(answers: Sequence[Answer], items: Mapping[str, PartContext], taxonomy: Taxonomy,
                     params: Mapping[str, Mapping[str, Any]], policy: ResolvePolicy = ResolvePolicy()
                     ) -> tuple[list[RawRecord], list[ResolvedSubpart], ResolveReport]:
    """Validate every answer, keep it as a raw record, and resolve one mask per present subpart.

    Args:
        answers: the round's answers (one per annotator and item; a later duplicate of the same
            annotator and item replaces the earlier one in resolution, both stay in the raw file).
        items: item id → its part context (image size, part mask).
        params: item id → the item's round data (its ``subparts`` list); missing = the taxonomy's.

    Returns:
        (raw records sorted by item, annotator, source id; resolved records sorted by image id, part
        annotation id, subpart; the report).

    Raises:
        InputError: an answer names an item that has no part context.
    """
    report = ResolveReport(answers=len(answers), mask_aggregation=policy.mask_aggregation)
    resolution_rule(policy.mask_aggregation)  # an unknown method fails before any work
    raw: list[RawRecord] = []
    latest: dict[tuple[str, str], RawRecord] = {}
    part_bitmaps: dict[str, np.ndarray] = {}
    ordered = sorted(answers, key=lambda a: (a.item_id, a.annotator, clock.time_order(a.updated_at), a.source_id))
    for answer in ordered:
        ctx = items.get(answer.item_id)
        if ctx is None:
            raise InputError(f"answer {answer.source_id} is about item {answer.item_id!r}, which has no part context",
                             item=answer.item_id, hint="import the answers with the round they belong to")
        if answer.item_id not in part_bitmaps:
            part_bitmaps[answer.item_id] = rle_to_bitmap(ctx.part_rle.model_dump())
        names = item_subparts(params.get(answer.item_id, {}), taxonomy, ctx)
        record = _raw_record(answer, ctx, names, part_bitmaps[answer.item_id], policy.containment)
        report.flags.update(f for f in record["flags"])
        report.flags.update(f for s in record["subparts"].values() for f in s["flags"])
        raw.append(record)
        latest[(answer.item_id, answer.annotator)] = record
    report.items_answered = len({r["item_id"] for r in raw})
    resolved = []
    by_item: dict[str, list[RawRecord]] = {}
    for (item_id, _), record in sorted(latest.items()):
        by_item.setdefault(item_id, []).append(record)
    for item_id, records in by_item.items():
        ctx = items[item_id]
        for name in item_subparts(params.get(item_id, {}), taxonomy, ctx):
            found = _resolve_one(ctx, name, records, report)
            if found is not None:
                resolved.append(found)
    raw.sort(key=lambda r: (r["item_id"], r["annotator"], r["source_id"]))
    resolved.sort(key=lambda r: (r.image_id, r.part_ann_id, r.subpart))
    report.resolved = len(resolved)
    return raw, resolved, report


def _raw_record(answer: Answer, ctx: PartContext, names: list[str], part_bitmap: np.ndarray,
                containment: float) -> RawRecord:
    visible = next(iter(answer.choices.get("part_visible") or []), None)
    flags = [] if visible in ("yes", "no") else ["part_visible_missing"]
    labels = {p.label for p in answer.polygons.get("polygons", [])}
    flags += ["unknown_subpart"] if labels - set(names) else []
    subparts: dict[str, SubpartRecord] = {}
    for name in names:
        s = subpart_answer(answer, name, ctx, part_bitmap, containment) if visible == "yes" else SubpartAnswer(None)
        subparts[name] = {"has": s.has, "polygons": s.polygons, "area": s.area, "containment": s.containment,
                          "segmentation": s.rle, "flags": s.flags}
    return {"item_id": answer.item_id, "image_id": ctx.image_id, "part_ann_id": ctx.part_ann_id,
            "annotator": answer.annotator, "source_id": answer.source_id, "updated_at": answer.updated_at,
            "part_visible": visible, "flags": flags, "unknown_labels": sorted(labels - set(names)),
            "subparts": subparts}


def _resolve_one(ctx: PartContext, name: str, records: list[RawRecord],
                 report: ResolveReport) -> ResolvedSubpart | None:
    voters = [r for r in records if r["part_visible"] == "yes" and not r["flags"]
              and not r["subparts"][name]["flags"] and r["subparts"][name]["has"] in ("yes", "no")]
    if not voters:
        report.no_voters += 1
        return None
    yes = sorted((r for r in voters if r["subparts"][name]["has"] == "yes"), key=lambda r: r["annotator"])
    kept, copied = copy_groups([(r["annotator"], r["subparts"][name]["segmentation"], r["subparts"][name]["area"])
                                for r in yes])
    yes = [yes[i] for i in kept]
    for group in copied:
        report.copies.append({"image_id": ctx.image_id, "part_ann_id": ctx.part_ann_id, "subpart": name,
                              "annotators": group})
    votes = len(voters) - sum(len(group) - 1 for group in copied)
    if 2 * len(yes) <= votes:
        report.absent += 1
        return None
    chosen = (_medoid(yes, name) if report.mask_aggregation == MEDOID
              else _aggregate(yes, name, report.mask_aggregation))
    if chosen is None:
        report.empty_aggregate.append({"image_id": ctx.image_id, "part_ann_id": ctx.part_ann_id, "subpart": name,
                                       "yes": [r["annotator"] for r in yes]})
        return None
    return ResolvedSubpart(
        image_id=ctx.image_id, part_ann_id=ctx.part_ann_id, object=ctx.object, object_class=ctx.object_class,
        part=ctx.part, subpart=name, category=f"{ctx.object}-{ctx.part}-{name}", segmentation=chosen["segmentation"],
        area=chosen["area"], polygons=chosen["polygons"], workers=sorted(r["annotator"] for r in voters),
        agreement=len(yes) / votes, rule=resolution_rule(report.mask_aggregation))


def _segmentation(record: RawRecord, name: str) -> CocoRle:
    rle = record["subparts"][name]["segmentation"]
    if rle is None:  # a "yes" without a mask is flagged, and a flagged answer never votes
        raise ValueError(f"answer {record['source_id']}: subpart {name} voted present without a mask")
    return rle


def _medoid(yes: list[RawRecord], name: str) -> SubpartRecord:
    masks = [_segmentation(r, name) for r in yes]
    iou = rle_iou(masks, masks)
    # Rounded so that float noise cannot break a tie; max() keeps the first (smallest annotator id) of equals.
    scores = [round(float(np.delete(iou[i], i).mean()), 9) if len(yes) > 1 else 1.0 for i in range(len(yes))]
    best = max(range(len(yes)), key=lambda i: scores[i])
    return yes[best]["subparts"][name]


def _aggregate(yes: list[RawRecord], name: str, method: str) -> _Mask | None:
    """crowd-kit's aggregate of the "yes" masks as a subpart answer (segmentation, area, polygons); None if empty."""
    from scipy import ndimage

    from segbench.core.aggregation import aggregate_masks  # crowd-kit loads only when a method asks for it

    mask = aggregate_masks({r["annotator"]: rle_to_bitmap(_segmentation(r, name)) for r in yes}, method)
    area = int(mask.sum())
    if area == 0:
        return None
    _, regions = ndimage.label(mask, structure=np.ones((3, 3), dtype=int))
    return {"segmentation": bitmap_to_rle(mask), "area": area, "polygons": int(regions)}
