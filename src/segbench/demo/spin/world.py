"""A small PartImageNet-style world for the SPIN demo and tests, generated offline.

Objects of four super-categories are drawn from templates (parts and their subparts as polygons in
the unit box of the object), placed with seeded jitter on noisy backgrounds, and saved as real JPEGs
named like ImageNet files (``<wnid>_<n>.JPEG``) with COCO part annotations per split, in the layout
``partimagenet.py`` reads. Some images lose a part (as a viewpoint would hide it) and one image per
split has no part at all (SPIN drops those). The subparts drawn are kept as the truth
(``demo_truth.json``) so a simulated crowd can answer from it and tests can check resolved masks.
"""

from __future__ import annotations

import io
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from segbench.core.io import atomic_write_bytes, read_json, write_json
from segbench.core.masks import rle_area, segmentation_to_rle
from segbench.schemas.spin import Taxonomy
from segbench.tasks.spin.partimagenet import imagenet_classes, part_categories

TRUTH_NAME = "demo_truth.json"
SPLIT_SIZES = {"train": 6, "val": 2, "test": 2}  # images per super-category and split
Box = tuple[float, float, float, float]


def _rect(x0: float, y0: float, x1: float, y1: float) -> list[float]:
    return [x0, y0, x1, y0, x1, y1, x0, y1]


def _ellipse(cx: float, cy: float, rx: float, ry: float, points: int = 16) -> list[float]:
    out: list[float] = []
    for k in range(points):
        angle = 2 * math.pi * k / points
        out += [cx + rx * math.cos(angle), cy + ry * math.sin(angle)]
    return out


@dataclass(frozen=True)
class PartTemplate:
    name: str  # PartImageNet's part name
    polygons: tuple[list[float], ...]
    subparts: dict[str, tuple[list[float], ...]]


# (wnid, object box aspect width/height, parts); subpart polygons lie inside their part's polygons.
# Subpart names are those of the shipped taxonomy (the SPIN paper's, supplementary §8.2).
TEMPLATES: dict[str, tuple[str, float, tuple[PartTemplate, ...]]] = {
    "Quadruped": ("n02099601", 1.6, (
        PartTemplate("Body", (_rect(0.2, 0.3, 0.8, 0.65),), {
            "Back": (_rect(0.25, 0.32, 0.75, 0.42),), "Belly": (_rect(0.3, 0.53, 0.7, 0.63),)}),
        PartTemplate("Head", (_rect(0.8, 0.08, 1.0, 0.42),), {
            "Eyes": (_rect(0.86, 0.16, 0.92, 0.24),), "Nose": (_rect(0.94, 0.3, 0.99, 0.38),),
            "Ears": ([0.81, 0.09, 0.86, 0.09, 0.835, 0.2],)}),
        PartTemplate("Foot", (_rect(0.24, 0.65, 0.34, 1.0), _rect(0.66, 0.65, 0.76, 1.0)), {
            "Claws": (_rect(0.24, 0.92, 0.34, 1.0), _rect(0.66, 0.92, 0.76, 1.0)),
            "Knee/Elbow": (_rect(0.25, 0.74, 0.33, 0.8),)}),
        PartTemplate("Tail", (_rect(0.0, 0.3, 0.2, 0.37),), {}),
    )),
    "Car": ("n02930766", 1.8, (
        PartTemplate("Body", (_rect(0.0, 0.2, 1.0, 0.66),), {
            "Window": (_rect(0.2, 0.25, 0.45, 0.4), _rect(0.55, 0.25, 0.8, 0.4)),
            "Door": (_rect(0.3, 0.42, 0.6, 0.64),), "Light": (_rect(0.92, 0.44, 0.99, 0.54),)}),
        PartTemplate("Tier", (_ellipse(0.2, 0.82, 0.1, 0.17), _ellipse(0.8, 0.82, 0.1, 0.17)), {
            "Rim": (_ellipse(0.2, 0.82, 0.05, 0.085), _ellipse(0.8, 0.82, 0.05, 0.085))}),
        PartTemplate("Side Mirror", (_rect(0.84, 0.08, 0.94, 0.19),), {
            "Mirror Glass": (_rect(0.855, 0.1, 0.925, 0.17),)}),
    )),
    "Bottle": ("n04557648", 0.45, (
        PartTemplate("Body", (_rect(0.1, 0.3, 0.9, 1.0),), {
            "Label": (_rect(0.1, 0.5, 0.9, 0.75),), "Base": (_rect(0.1, 0.9, 0.9, 1.0),)}),
        PartTemplate("Mouth", (_rect(0.3, 0.0, 0.7, 0.3),), {"Cap": (_rect(0.3, 0.0, 0.7, 0.12),)}),
    )),
    "Bird": ("n01855672", 1.4, (
        PartTemplate("Head", (_ellipse(0.8, 0.22, 0.13, 0.16),), {
            "Eyes": (_ellipse(0.83, 0.18, 0.03, 0.04),),
            "Beak": ([0.86, 0.22, 0.92, 0.25, 0.86, 0.29],)}),
        PartTemplate("Body", (_ellipse(0.45, 0.52, 0.3, 0.16),), {
            "Breast": (_ellipse(0.62, 0.56, 0.07, 0.08),), "Back": (_rect(0.3, 0.4, 0.55, 0.46),)}),
        PartTemplate("Wing", ([0.3, 0.33, 0.55, 0.33, 0.4, 0.05],), {}),
        PartTemplate("Foot", (_rect(0.4, 0.69, 0.44, 1.0), _rect(0.5, 0.69, 0.54, 1.0)), {
            "Toes": (_rect(0.4, 0.94, 0.44, 1.0), _rect(0.5, 0.94, 0.54, 1.0))}),
        PartTemplate("Tail", ([0.0, 0.45, 0.15, 0.48, 0.15, 0.56],), {}),
    )),
}
_COLOURS = {"Quadruped": (150, 100, 60), "Car": (40, 80, 170), "Bottle": (60, 150, 80), "Bird": (200, 200, 190)}


@dataclass(frozen=True)
class DemoSpinWorld:
    root: Path
    truth_path: Path


def _part_category(supercategory: str, name: str) -> Any:
    return next(c for c in part_categories().values() if (c.supercategory, c.name) == (supercategory, name))


def _place(polygon: Sequence[float], box: Box) -> list[float]:
    x0, y0, x1, y1 = box
    return [round(x0 + v * (x1 - x0), 2) if i % 2 == 0 else round(y0 + v * (y1 - y0), 2)
            for i, v in enumerate(polygon)]


def _object_box(rng: random.Random, width: int, height: int, aspect: float) -> Box:
    box_h = rng.uniform(0.55, 0.75) * height
    box_w = min(box_h * aspect, 0.85 * width)
    box_h = box_w / aspect
    x0 = rng.uniform(0.05 * width, 0.95 * width - box_w)
    y0 = rng.uniform(0.05 * height, 0.95 * height - box_h)
    return (x0, y0, x0 + box_w, y0 + box_h)


def _jpeg(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def _draw(rng: random.Random, width: int, height: int, supercategory: str,
          placed: Sequence[tuple[list[list[float]], dict[str, list[list[float]]]]]) -> Image.Image:
    background = tuple(rng.randrange(150, 230) for _ in range(3))
    image = Image.new("RGB", (width, height), background)
    draw = ImageDraw.Draw(image)
    for _ in range(30):  # texture, so the JPEG is not a flat colour
        x, y = rng.uniform(0, width), rng.uniform(0, height)
        draw.ellipse([x, y, x + 4, y + 4], fill=tuple(max(0, c - 30) for c in background))
    base = _COLOURS[supercategory]
    for shade, (polygons, subparts) in enumerate(placed):
        colour = tuple(min(255, c + 15 * shade) for c in base)
        for poly in polygons:
            draw.polygon(poly, fill=colour)
        for k, sub_polys in enumerate(subparts.values()):
            for poly in sub_polys:
                draw.polygon(poly, fill=tuple(max(0, c - 40 - 25 * k) for c in colour))
    return image


def generate_demo_spin(root: str | Path, *, seed: int = 0, split_sizes: dict[str, int] | None = None) -> DemoSpinWorld:
    """Write the demo PartImageNet root under ``root`` and its subpart truth; returns both paths."""
    root = Path(root)
    rng = random.Random(seed)
    sizes = split_sizes or SPLIT_SIZES
    image_id, ann_id, truth = 0, 0, []
    for split, per_super in sizes.items():
        images, annotations = [], []
        for supercategory, (wnid, aspect, parts) in sorted(TEMPLATES.items()):
            for _ in range(per_super):
                image_id += 1
                width, height = rng.randrange(160, 200), rng.randrange(120, 150)
                box = _object_box(rng, width, height, aspect)
                # A hidden part, as a viewpoint hides it: never the first, so one part always stays.
                hidden = {parts[rng.randrange(1, len(parts))].name} if rng.random() < 0.3 else set()
                placed = []
                file_name = f"{wnid}_{1000 + image_id}.JPEG"
                images.append({"id": image_id, "file_name": file_name, "width": width, "height": height})
                for template in parts:
                    if template.name in hidden:
                        continue
                    ann_id += 1
                    polygons = [_place(p, box) for p in template.polygons]
                    subparts = {name: [_place(p, box) for p in polys] for name, polys in template.subparts.items()}
                    placed.append((polygons, subparts))
                    category = _part_category(supercategory, template.name)
                    rle = segmentation_to_rle(polygons, height, width)
                    annotations.append({"id": ann_id, "image_id": image_id, "category_id": category.id,
                                        "segmentation": polygons, "area": int(rle_area([rle])[0]),
                                        "bbox": _bbox(polygons), "iscrowd": 0})
                    truth += [{"image_id": image_id, "part_ann_id": ann_id, "object": supercategory,
                               "object_class": imagenet_classes()[wnid].name, "part": category.spin_name,
                               "subpart": name, "category": f"{supercategory}-{category.spin_name}-{name}",
                               "polygons": polys} for name, polys in sorted(subparts.items())]
                atomic_write_bytes(root / "images" / split / file_name,
                                   _jpeg(_draw(rng, width, height, supercategory, placed)), durable=False)
        image_id += 1  # one image per split with nothing annotated: the reader must leave it out
        empty_name = f"n02930766_{1000 + image_id}.JPEG"
        images.append({"id": image_id, "file_name": empty_name, "width": 64, "height": 48})
        atomic_write_bytes(root / "images" / split / empty_name, _jpeg(Image.new("RGB", (64, 48), (90, 90, 90))),
                           durable=False)
        categories = [{"id": c.id, "name": c.source_name, "supercategory": c.supercategory}
                      for c in sorted(part_categories().values(), key=lambda c: c.id)]
        write_json(root / "annotations" / f"{split}.json",
                   {"images": images, "annotations": annotations, "categories": categories})
    truth_path = write_json(root / TRUTH_NAME, truth, indent=1)
    return DemoSpinWorld(root=root, truth_path=truth_path)


def _bbox(polygons: Sequence[Sequence[float]]) -> list[float]:
    xs = [v for p in polygons for v in p[0::2]]
    ys = [v for p in polygons for v in p[1::2]]
    return [min(xs), min(ys), round(max(xs) - min(xs), 2), round(max(ys) - min(ys), 2)]


def read_truth(path: str | Path) -> list[dict[str, Any]]:
    return read_json(path)


def demo_taxonomy() -> Taxonomy:
    """The taxonomy the demo objects are drawn with: exactly the subparts of the templates."""
    entries = []
    for supercategory, (_, _, parts) in sorted(TEMPLATES.items()):
        for template in parts:
            category = _part_category(supercategory, template.name)
            subs = [{"name": name, "category": f"{supercategory}-{category.spin_name}-{name}", "objects": None,
                     "provenance": {"proposed_by": None, "edit": "added", "by": "demo"}}
                    for name in sorted(template.subparts)]
            entries.append({"object": supercategory, "part": category.spin_name, "partimagenet_id": category.id,
                            "subparts": subs})
    return Taxonomy.model_validate({
        "provider": {"name": "demo", "model": "templates", "question_version": "1"},
        "edits": {"file": "none", "sha256": "0" * 64}, "parts": entries})


def truth_resolved(truth: Sequence[dict[str, Any]], sizes: dict[int, tuple[int, int]]) -> list[dict[str, Any]]:
    """The resolved records a perfect crowd would produce: the truth polygons as RLE masks.

    Args:
        sizes: image id → (height, width).
    """
    out = []
    for row in truth:
        height, width = sizes[row["image_id"]]
        rle = segmentation_to_rle(row["polygons"], height, width)
        out.append({key: row[key] for key in ("image_id", "part_ann_id", "object", "object_class", "part",
                                              "subpart", "category")}
                   | {"segmentation": rle, "area": int(rle_area([rle])[0]), "polygons": len(row["polygons"]),
                      "workers": ["worker:truth"], "agreement": 1.0, "rule": "truth"})
    return out
