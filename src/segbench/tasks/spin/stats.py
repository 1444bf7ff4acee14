"""SPIN statistics: the subpart measures of the paper's Fig. 3 and its Table 1 counts.

Definitions (seed Sec. 3.2 and supplementary 10.3), per subpart annotation:

- **Polygons** are the 8-connected components of the mask (a hole stays a hole).
- **Perimeter and area of a polygon** are those of its boundary rings (outer ring and holes): the
  marching-squares contour of the mask at level 1/2 (through the midpoints between inside and
  outside pixel centres), simplified with Douglas-Peucker at a tolerance of 1 pixel. Unsimplified,
  a digital disk's staircase contour is ~6% longer than its circle (quotient ~0.89); simplifying
  within the 1-pixel staircase amplitude removes that bias, much as an annotator's clicked polygon
  does: a disk of radius 50 scores 0.99 and any axis-aligned square exactly pi/4. A ring that
  simplification would collapse (under 3 vertices or no area: 1-2 pixel specks) keeps its
  marching-squares form. Rings are true polygons, so no shape scores above 1.
- **Boundary complexity** = 4·pi·A / P² (isoperimetric quotient) of each polygon; **extent** =
  pixel count / bounding-box pixel count of each polygon. A subpart with several polygons gets the
  mean over its polygons, as the supplementary does.
- **Image coverage** = subpart pixels / image pixels; **part** and **object coverage** = pixels of
  the subpart inside its parent part (object) / pixels of that part (object).
- **Size** follows COCO on the annotation area: small < 32², medium < 96², large otherwise.
- **Subparts per part** counts the subpart annotations of every part whose category has subpart
  categories (parts where the crowd found none count as 0).
- **Holes** (supplementary 10.2: "a polygon embedded within another") are the 4-connected pieces of
  background a subpart's mask encloses, i.e. that do not reach the image border (4-connected, the
  complement of the 8-connected polygons). Reported per super-category: the share of subparts with
  at least one hole, and the mean number of holes of those.
- **Per part category** (Fig. 5 and 6): subpart annotations, and those with more than one polygon.

Only computation lives here; tables and plots are written by ``spin_stats_report.py``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict

import contourpy
import numpy as np
from scipy import ndimage

from segbench.core.masks import rle_to_bitmap
from segbench.schemas.spin_results import Composition, LevelComposition, SpinComposition

SMALL_MAX = 32 * 32
MEDIUM_MAX = 96 * 96
MEASURES = ("subparts_per_part", "extent", "boundary_complexity", "image_coverage", "part_coverage",
            "object_coverage")
SIMPLIFY_TOLERANCE = 1.0  # pixels
# PartImageNet's rigid super-categories (human-made); the other six are animals. §4 compares the two.
RIGID = frozenset({"Aeroplane", "Bicycle", "Boat", "Bottle", "Car"})
SHAPES = ("extent", "boundary_complexity")  # Fig. 7: each for single- and multi-polygon subparts
_EIGHT_CONNECTED = np.ones((3, 3), dtype=bool)


def size_bucket(area: float) -> str:
    """COCO's size class of an area in pixels."""
    if area < SMALL_MAX:
        return "small"
    return "medium" if area < MEDIUM_MAX else "large"


def _douglas_peucker(points: np.ndarray, tolerance: float) -> np.ndarray:
    """Keep-mask of an open polyline's vertices after Douglas-Peucker simplification."""
    keep = np.zeros(len(points), dtype=bool)
    keep[[0, -1]] = True
    stack = [(0, len(points) - 1)]
    while stack:
        first, last = stack.pop()
        if last <= first + 1:
            continue
        start, chord = points[first], points[last] - points[first]
        inner = points[first + 1 : last] - start
        length = math.hypot(*chord)
        if length == 0:
            distance = np.hypot(inner[:, 0], inner[:, 1])
        else:
            distance = np.abs(chord[0] * inner[:, 1] - chord[1] * inner[:, 0]) / length
        farthest = int(np.argmax(distance))
        if distance[farthest] > tolerance:
            split = first + 1 + farthest
            keep[split] = True
            stack += [(first, split), (split, last)]
    return keep


def _simplified_ring(ring: np.ndarray, tolerance: float) -> np.ndarray:
    """A closed ring (first vertex not repeated) simplified, split at the vertex farthest from its first."""
    far = int(np.argmax(np.hypot(*(ring - ring[0]).T)))
    if far == 0:
        return ring
    head = ring[: far + 1][_douglas_peucker(ring[: far + 1], tolerance)]
    tail_points = np.vstack([ring[far:], ring[:1]])
    tail = tail_points[_douglas_peucker(tail_points, tolerance)]
    return np.vstack([head[:-1], tail[:-1]])


def _ring_length_area(ring: np.ndarray) -> tuple[float, float]:
    """Perimeter and signed (shoelace) area of a closed ring."""
    x, y = ring[:, 0], ring[:, 1]
    nx, ny = np.roll(x, -1), np.roll(y, -1)
    return float(np.sum(np.hypot(nx - x, ny - y))), float(0.5 * np.sum(x * ny - nx * y))


def contour_perimeter_area(mask: np.ndarray, tolerance: float = SIMPLIFY_TOLERANCE) -> tuple[float, float]:
    """Perimeter and enclosed area of the simplified contour rings of a ``(H, W)`` mask (module doc)."""
    padded = np.pad(np.asarray(mask, dtype=float), 1)
    lines = contourpy.contour_generator(z=padded, name="serial", corner_mask=False).lines(0.5)
    perimeter = signed_area = 0.0
    for line in lines:
        ring = np.asarray(line, dtype=float)
        if len(ring) > 1 and np.array_equal(ring[0], ring[-1]):
            ring = ring[:-1]
        simple = _simplified_ring(ring, tolerance)
        length, area = _ring_length_area(simple)
        if len(simple) < 3 or abs(area) == 0:
            length, area = _ring_length_area(ring)
        perimeter += length
        signed_area += area  # holes run the other way round, so their area subtracts
    return perimeter, abs(signed_area)


def isoperimetric_quotient(mask: np.ndarray) -> float:
    """4·pi·A / P² of the mask's contour (one polygon expected); 0 for an empty mask."""
    perimeter, area = contour_perimeter_area(mask)
    return 0.0 if perimeter == 0 else 4 * math.pi * area / perimeter**2


def polygon_shapes(mask: np.ndarray) -> list[tuple[float, float]]:
    """``(boundary complexity, extent)`` of each 8-connected component of a mask, in label order."""
    labels, count = ndimage.label(np.asarray(mask, dtype=bool), structure=_EIGHT_CONNECTED)
    out = []
    for index, box in enumerate(ndimage.find_objects(labels), start=1):
        component = labels[box] == index
        out.append((isoperimetric_quotient(component), float(component.sum()) / component.size))
    return out


def hole_count(mask: np.ndarray) -> int:
    """The holes of a mask: 4-connected background regions that do not touch the image border."""
    background, count = ndimage.label(~np.asarray(mask, dtype=bool))  # 4-connected by default
    reach_border = set(np.unique(np.concatenate([background[0], background[-1], background[:, 0], background[:, -1]])))
    return sum(1 for label in range(1, count + 1) if label not in reach_border)


def _bitmaps(coco: Mapping[str, Any]) -> dict[int, np.ndarray]:
    return {ann["id"]: rle_to_bitmap(ann["segmentation"]).astype(bool) for ann in coco["annotations"]}


def subpart_measures(levels: Mapping[str, Mapping[str, Any]], split: str = "") -> list[dict[str, Any]]:
    """One row per subpart annotation of one split's three COCO dicts (``{"wholes", "parts", "subparts"}``).

    Row keys: ``split, image_id, object, part, category, area, size, polygons, holes, boundary_complexity,
    extent, image_coverage, part_coverage, object_coverage``.
    """
    wholes, parts, subparts = levels["wholes"], levels["parts"], levels["subparts"]
    whole_of_image = {ann["image_id"]: ann["id"] for ann in wholes["annotations"]}
    whole_masks, part_masks = _bitmaps(wholes), _bitmaps(parts)
    categories = {c["id"]: c for c in subparts["categories"]}
    rows = []
    for ann in subparts["annotations"]:
        mask = rle_to_bitmap(ann["segmentation"]).astype(bool)
        part, whole = part_masks[ann["parent_id"]], whole_masks[whole_of_image[ann["image_id"]]]
        shapes = polygon_shapes(mask)
        area = int(mask.sum())
        category = categories[ann["category_id"]]
        obj, part_name = category["supercategory"].split("-", 1)
        rows.append({
            "split": split, "image_id": ann["image_id"], "object": obj, "part": part_name,
            "category": category["name"], "area": area, "size": size_bucket(area), "polygons": len(shapes),
            "holes": hole_count(mask),
            "boundary_complexity": float(np.mean([s[0] for s in shapes])),
            "extent": float(np.mean([s[1] for s in shapes])),
            "image_coverage": area / mask.size,
            "part_coverage": float((mask & part).sum()) / max(int(part.sum()), 1),
            "object_coverage": float((mask & whole).sum()) / max(int(whole.sum()), 1),
        })
    return rows


def subparts_per_part(levels: Mapping[str, Mapping[str, Any]], split: str = "") -> list[dict[str, Any]]:
    """One row per part annotation whose category has subpart categories: ``object, part, subparts``."""
    decomposable = {c["part_category_id"] for c in levels["subparts"]["categories"]}
    part_names = {c["id"]: c["name"] for c in levels["parts"]["categories"]}
    counts: dict[int, int] = {}
    for ann in levels["subparts"]["annotations"]:
        counts[ann["parent_id"]] = counts.get(ann["parent_id"], 0) + 1
    rows = []
    for ann in levels["parts"]["annotations"]:
        if ann["category_id"] in decomposable:
            obj, part = part_names[ann["category_id"]].split("-", 1)
            rows.append({"split": split, "object": obj, "part": part, "subparts": counts.get(ann["id"], 0)})
    return rows


def subparts_per_object(levels: Mapping[str, Mapping[str, Any]], split: str = "") -> list[dict[str, Any]]:
    """One row per object annotation: ``object, subparts`` (its image's subpart annotations, 0 if none)."""
    counts: dict[int, int] = {}
    for ann in levels["subparts"]["annotations"]:
        counts[ann["image_id"]] = counts.get(ann["image_id"], 0) + 1
    supers = {c["id"]: c["supercategory"] for c in levels["wholes"]["categories"]}  # categories are ImageNet classes
    return [{"split": split, "object": supers[ann["category_id"]], "subparts": counts.get(ann["image_id"], 0)}
            for ann in levels["wholes"]["annotations"]]


def composition(cocos: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> SpinComposition:
    """Table 1: images and, per level, categories used (of those declared) and annotations; per split too."""

    def level(split_levels: Sequence[Mapping[str, Mapping[str, Any]]], name: str) -> LevelComposition:
        anns = [a for levels in split_levels for a in levels[name]["annotations"]]
        declared = split_levels[0][name]["categories"] if split_levels else []
        return LevelComposition(categories=len(declared), categories_used=len({a["category_id"] for a in anns}),
                                annotations=len(anns))

    def count(split_levels: Sequence[Mapping[str, Mapping[str, Any]]]) -> Composition:
        return Composition(images=sum(len(levels["wholes"]["images"]) for levels in split_levels),
                           wholes=level(split_levels, "wholes"), parts=level(split_levels, "parts"),
                           subparts=level(split_levels, "subparts"))

    return SpinComposition(overall=count(list(cocos.values())),
                           per_split={split: count([levels]) for split, levels in sorted(cocos.items())})


class Quartiles(TypedDict):
    """A measure's spread in one group: count, mean, range and quartiles (None without values)."""

    n: int
    mean: float | None
    min: float | None
    q25: float | None
    median: float | None
    q75: float | None
    max: float | None


class Holes(TypedDict):
    """Supplementary 10.2 for one group: subparts, those with holes, their share, their mean holes."""

    subparts: int
    with_holes: int
    share: float | None
    mean_holes: float | None


class PartCategoryCounts(TypedDict):
    """Fig. 5 and 6 for one part category: its subpart annotations, and those of several polygons."""

    subparts: int
    multi_polygon: int


class SubpartStatistics(TypedDict):
    """``subparts.json``: quartiles of every measure per group (each super-category, ``Rigid``,
    ``Non-rigid``, ``Overall``), subparts per object, COCO size buckets, multi-polygon subparts and
    their shapes (Fig. 7), holes, counts per part category and the number of subpart annotations."""

    measures: dict[str, dict[str, Quartiles]]
    subparts_per_object: dict[str, Quartiles]
    shapes: dict[str, dict[str, dict[str, Quartiles]]]  # group → single|multi → extent|boundary_complexity
    sizes: dict[str, dict[str, int]]
    multi_polygon: dict[str, int]
    holes: dict[str, Holes]
    part_categories: dict[str, PartCategoryCounts]
    subparts: int


def _quartiles(values: Sequence[float]) -> Quartiles:
    if not values:
        return {"n": 0, "mean": None, "min": None, "q25": None, "median": None, "q75": None, "max": None}
    low, q25, median, q75, high = np.percentile(np.asarray(values, dtype=float), [0, 25, 50, 75, 100])
    return {"n": len(values), "mean": float(np.mean(values)), "min": float(low), "q25": float(q25),
            "median": float(median), "q75": float(q75), "max": float(high)}


def group_names(objects: Iterable[str]) -> list[str]:
    """The groups of the summary: each super-category present, ``Rigid`` and ``Non-rigid`` when any is, ``Overall``."""
    present = sorted(set(objects))
    kinds = [name for name, rigid in (("Rigid", True), ("Non-rigid", False)) if any((o in RIGID) == rigid
                                                                                  for o in present)]
    return [*present, *kinds, "Overall"]


def in_group(group: str, obj: str) -> bool:
    return group in (obj, "Overall", "Rigid" if obj in RIGID else "Non-rigid")


def grouped_values(rows: Sequence[Mapping[str, Any]], per_part: Sequence[Mapping[str, Any]]
                   ) -> dict[str, dict[str, list[float]]]:
    """measure → group (:func:`group_names`) → values."""
    groups = group_names([*(r["object"] for r in rows), *(r["object"] for r in per_part)])
    out: dict[str, dict[str, list[float]]] = {}
    for measure in MEASURES:
        source, key = (per_part, "subparts") if measure == "subparts_per_part" else (rows, measure)
        out[measure] = {group: [float(r[key]) for r in source if in_group(group, r["object"])] for group in groups}
    return out


def shape_values(rows: Sequence[Mapping[str, Any]], groups: Sequence[str] | None = None
                 ) -> dict[str, dict[str, list[float]]]:
    """Fig. 7's panels (``extent single``, ``extent multi``, ...) → group (by default those of the rows) → values."""
    groups = groups or group_names(r["object"] for r in rows)
    return {f"{measure} {kind}": {group: [float(r[measure]) for r in rows if in_group(group, r["object"])
                                          and (r["polygons"] > 1) == (kind == "multi")] for group in groups}
            for measure in SHAPES for kind in ("single", "multi")}


def summarize(rows: Sequence[Mapping[str, Any]], per_part: Sequence[Mapping[str, Any]],
              per_object: Sequence[Mapping[str, Any]] = ()) -> SubpartStatistics:
    """Quartiles and mean of every measure per group, subparts per object, size buckets, multi-polygon
    subparts and their shapes, holes and counts per part category."""
    groups = grouped_values(rows, per_part)
    names = list(groups["extent"])
    sizes = {group: {"small": 0, "medium": 0, "large": 0} for group in names}
    for row in rows:
        for group in names:
            if in_group(group, row["object"]):
                sizes[group][row["size"]] += 1
    shapes = shape_values(rows, names)
    return {
        "measures": {m: {g: _quartiles(v) for g, v in by_group.items()} for m, by_group in groups.items()},
        "subparts_per_object": {group: _quartiles([float(r["subparts"]) for r in per_object
                                                   if in_group(group, r["object"])])
                                for group in group_names(r["object"] for r in per_object)} if per_object else {},
        "shapes": {group: {kind: {measure: _quartiles(shapes[f"{measure} {kind}"][group]) for measure in SHAPES}
                           for kind in ("single", "multi")} for group in names},
        "sizes": sizes,
        "multi_polygon": {group: sum(r["polygons"] > 1 for r in rows if in_group(group, r["object"])) for group in names},
        "holes": {group: _holes([r for r in rows if in_group(group, r["object"])]) for group in names},
        "part_categories": {
            name: {"subparts": sum(1 for r in rows if f"{r['object']}-{r['part']}" == name),
                   "multi_polygon": sum(1 for r in rows if f"{r['object']}-{r['part']}" == name and r["polygons"] > 1)}
            for name in sorted({f"{r['object']}-{r['part']}" for r in rows})},
        "subparts": len(rows),
    }


def _holes(rows: Sequence[Mapping[str, Any]]) -> Holes:
    holed = [int(r["holes"]) for r in rows if r["holes"] > 0]
    return {"subparts": len(rows), "with_holes": len(holed), "share": len(holed) / len(rows) if rows else None,
            "mean_holes": float(np.mean(holed)) if holed else None}
