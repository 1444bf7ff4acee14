"""Scene records of the demo world: which objects and stuff regions go where, under which names.

A :class:`Scene` describes one demo image completely: size, split, stuff regions in paint order,
things painted on top (cats and dogs with named parts), and the designer's intended COCO-CD outcome.
This module only lays scenes out (pure geometry and names, polygons in pixel coordinates); turning
them into masks, JPEGs and COCO files is :mod:`segbench.demo.world`'s job, and other demo
generators (captions, parts, crowd answers, edits) read the same records.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

Polygon = tuple[float, ...]
RGB = tuple[int, int, int]

INDOOR_SETTINGS = ("living room", "bedroom", "kitchen")
OUTDOOR_SETTINGS = ("park", "street", "beach", "snowfield")


@dataclass(frozen=True)
class Detail:
    """A small painted feature inside a region (an eye, a stripe, a screen); not a mask of its own."""

    name: str
    polygon: Polygon
    colour: RGB


@dataclass(frozen=True)
class Region:
    """One named object or stuff region; its mask is the union of ``polygons``.

    ``part_names`` (animals only) names each polygon: torso, head, ear, tail, leg, snout.
    """

    name: str
    kind: str  # "thing" or "stuff"
    polygons: tuple[Polygon, ...]
    colour: RGB
    texture: float = 5.0  # std-dev of the grey noise painted over the region
    part_names: tuple[str, ...] = ()
    details: tuple[Detail, ...] = ()
    iscrowd: bool = False
    description: str = ""


@dataclass(frozen=True)
class Scene:
    """One demo image: layout plus the designer's intent (set by hand, never recomputed)."""

    image_id: int
    split: str  # "train2017" or "val2017"
    width: int
    height: int
    setting: str
    stuff: tuple[Region, ...]
    things: tuple[Region, ...]
    expected_kept: bool
    expected_context: str  # "indoor", "outdoor" or "unknown"
    group: str | None = None  # "cat/indoor", ... for regular images
    edge_case: str | None = None
    design: dict[str, Any] = field(default_factory=dict)  # designed numbers of an edge case
    stuff_annotated: bool = True  # False: the image is listed in the stuff file with no annotations

    @property
    def classes(self) -> list[str]:
        """The target classes (cat, dog) present, sorted."""
        return sorted({t.name for t in self.things if t.name in ("cat", "dog")})


# --- geometry -------------------------------------------------------------------------------------

def rect(x0: float, y0: float, x1: float, y1: float) -> Polygon:
    """An axis-aligned rectangle; with integer corners COCO rasterises exactly (x1-x0)·(y1-y0) pixels."""
    return (x0, y0, x1, y0, x1, y1, x0, y1)


def ellipse(cx: float, cy: float, rx: float, ry: float, n: int = 20) -> Polygon:
    return tuple(v for k in range(n) for v in (cx + rx * math.cos(2 * math.pi * k / n),
                                               cy + ry * math.sin(2 * math.pi * k / n)))


def _place(poly: Polygon, box: tuple[float, float, float, float], size: tuple[int, int],
           mirror: bool = False) -> Polygon:
    """Map a unit-square polygon into ``box = (x0, y0, w, h)``, clamped to the image."""
    x0, y0, w, h = box
    out: list[float] = []
    for u, v in zip(poly[0::2], poly[1::2], strict=True):
        u = 1 - u if mirror else u
        out += [round(min(max(x0 + u * w, 0.0), size[0]), 2), round(min(max(y0 + v * h, 0.0), size[1]), 2)]
    return tuple(out)


def _jitter(rng: random.Random, colour: RGB, amount: int = 12) -> RGB:
    return tuple(min(255, max(0, c + rng.randint(-amount, amount))) for c in colour)  # type: ignore[return-value]


# --- looks ----------------------------------------------------------------------------------------

# Stuff colour and texture strength; every stuff class a scene can use is listed here.
STUFF_LOOK: dict[str, tuple[RGB, float]] = {
    "wall-other": ((214, 206, 188), 4), "wall-panel": ((196, 170, 130), 5), "wall-brick": ((160, 82, 62), 10),
    "wall-wood": ((150, 105, 65), 8), "wall-tile": ((205, 215, 220), 5), "floor-wood": ((140, 95, 55), 9),
    "floor-tile": ((190, 190, 180), 6), "floor-other": ((165, 150, 130), 5), "floor-marble": ((225, 222, 215), 5),
    "floor-stone": ((150, 145, 140), 9), "carpet": ((120, 60, 70), 14), "rug": ((150, 40, 50), 14),
    "mat": ((90, 110, 70), 12), "curtain": ((70, 90, 140), 8), "shelf": ((115, 80, 45), 6),
    "cabinet": ((175, 130, 85), 6), "cupboard": ((185, 150, 100), 6), "counter": ((95, 95, 100), 6),
    "window-blind": ((235, 232, 210), 4), "door-stuff": ((125, 85, 50), 5), "ceiling-other": ((240, 240, 236), 3),
    "window-other": ((170, 205, 235), 4), "sky-other": ((135, 190, 235), 3), "clouds": ((245, 245, 250), 5),
    "tree": ((40, 110, 45), 16), "grass": ((85, 160, 60), 16), "pavement": ((150, 150, 145), 8),
    "road": ((80, 80, 85), 7), "building-other": ((175, 160, 145), 6), "sand": ((215, 195, 140), 10),
    "sea": ((40, 100, 160), 9), "snow": ((245, 248, 252), 4), "mountain": ((105, 95, 85), 10),
    "bush": ((50, 120, 50), 14), "house": ((190, 120, 90), 6), "banner": ((200, 40, 120), 4),
    "cardboard": ((180, 140, 90), 6), "food-other": ((210, 170, 60), 12),
}

# Thing template (unit-square polygons), colour, width as a fraction of the image, aspect h/w,
# anchor (ground: stands on the floor, wall: hangs above the horizon, sky: flies).
_R = rect
TEMPLATES: dict[str, tuple[Polygon, ...]] = {
    "box": (_R(0, 0, 1, 1),),
    "screen": (_R(0, 0, 1, 0.85), _R(0.4, 0.85, 0.6, 1)),
    "disc": (ellipse(0.5, 0.5, 0.5, 0.5),),
    "sofa": (_R(0, 0.35, 0.15, 1), _R(0.85, 0.35, 1, 1), _R(0.08, 0, 0.92, 0.6), _R(0.1, 0.55, 0.9, 0.9)),
    "bed": (_R(0, 0, 0.12, 1), _R(0.1, 0.45, 1, 0.85), _R(0.9, 0.55, 1, 1)),
    "chair": (_R(0.1, 0, 0.25, 1), _R(0.1, 0.5, 0.9, 0.62), _R(0.78, 0.62, 0.9, 1)),
    "table": (_R(0, 0, 1, 0.15), _R(0.08, 0.15, 0.16, 1), _R(0.84, 0.15, 0.92, 1)),
    "vehicle": (_R(0, 0.35, 1, 0.8), (0.2, 0.35, 0.3, 0.0, 0.7, 0.0, 0.8, 0.35),
                ellipse(0.22, 0.8, 0.12, 0.2), ellipse(0.78, 0.8, 0.12, 0.2)),
    "bike": (ellipse(0.2, 0.7, 0.2, 0.3), ellipse(0.8, 0.7, 0.2, 0.3), (0.2, 0.7, 0.45, 0.3, 0.8, 0.7, 0.5, 0.75),
             _R(0.42, 0.15, 0.5, 0.35)),
    "sign": (_R(0.42, 0.35, 0.58, 1), ellipse(0.5, 0.2, 0.45, 0.2)),
    "light": (_R(0.42, 0.5, 0.58, 1), _R(0.2, 0, 0.8, 0.5)),
    "hydrant": (_R(0.25, 0.25, 0.75, 1), ellipse(0.5, 0.25, 0.25, 0.2), _R(0.1, 0.45, 0.9, 0.6)),
    "bench": (_R(0, 0, 1, 0.3), _R(0, 0.45, 1, 0.6), _R(0.05, 0.6, 0.12, 1), _R(0.88, 0.6, 0.95, 1)),
    "board": (ellipse(0.5, 0.5, 0.5, 0.22),),
    "kite": ((0.5, 0, 1, 0.4, 0.5, 1, 0, 0.4),),
    "person": (ellipse(0.5, 0.1, 0.14, 0.1), _R(0.3, 0.2, 0.7, 0.6), _R(0.32, 0.6, 0.46, 1), _R(0.54, 0.6, 0.68, 1)),
    "plant": ((0.3, 0.6, 0.7, 0.6, 0.65, 1, 0.35, 1), ellipse(0.5, 0.33, 0.45, 0.3)),
}
THINGS: dict[str, tuple[str, RGB, float, float, str]] = {
    "couch": ("sofa", (96, 70, 120), 0.38, 0.55, "ground"), "tv": ("screen", (25, 25, 30), 0.24, 0.65, "wall"),
    "chair": ("chair", (140, 90, 50), 0.14, 1.4, "ground"), "bed": ("bed", (200, 200, 230), 0.45, 0.45, "ground"),
    "dining table": ("table", (150, 100, 60), 0.3, 0.45, "ground"),
    "clock": ("disc", (240, 240, 240), 0.09, 1.0, "wall"),
    "refrigerator": ("box", (225, 225, 230), 0.18, 2.0, "ground"), "oven": ("box", (60, 60, 60), 0.2, 1.0, "ground"),
    "microwave": ("box", (200, 200, 205), 0.15, 0.6, "wall"), "sink": ("box", (190, 190, 200), 0.18, 0.35, "wall"),
    "teddy bear": ("disc", (150, 100, 50), 0.1, 1.2, "ground"), "laptop": ("screen", (70, 70, 80), 0.14, 0.7, "wall"),
    "book": ("box", (180, 40, 40), 0.05, 1.4, "wall"), "cell phone": ("box", (20, 20, 25), 0.12, 1.8, "ground"),
    "car": ("vehicle", (200, 30, 30), 0.36, 0.5, "ground"), "truck": ("vehicle", (30, 60, 160), 0.4, 0.6, "ground"),
    "bus": ("box", (230, 180, 20), 0.5, 0.55, "ground"), "bicycle": ("bike", (40, 120, 200), 0.25, 0.6, "ground"),
    "motorcycle": ("bike", (30, 30, 30), 0.25, 0.6, "ground"), "bench": ("bench", (120, 80, 40), 0.3, 0.45, "ground"),
    "fire hydrant": ("hydrant", (220, 40, 30), 0.07, 1.6, "ground"),
    "traffic light": ("light", (40, 40, 40), 0.07, 3.0, "ground"),
    "stop sign": ("sign", (200, 20, 20), 0.1, 2.5, "ground"),
    "surfboard": ("board", (250, 120, 40), 0.3, 0.35, "ground"), "kite": ("kite", (230, 50, 150), 0.1, 1.0, "sky"),
    "skis": ("board", (30, 200, 220), 0.35, 0.2, "ground"), "snowboard": ("board", (240, 90, 200), 0.3, 0.3, "ground"),
    "person": ("person", (70, 90, 160), 0.12, 2.6, "ground"),
    "potted plant": ("plant", (40, 140, 60), 0.12, 1.5, "ground"),
}

# Per setting: walls/sky, floors/ground, extra stuff choices, things of the setting's context, extras.
SETTINGS: dict[str, dict[str, tuple[str, ...]]] = {
    "living room": {"top": ("wall-other", "wall-panel", "wall-brick"), "bottom": ("floor-wood", "carpet"),
                    "items": ("curtain", "shelf", "window-blind", "door-stuff"),
                    "things": ("couch", "tv", "chair", "clock"), "extras": ("person", "potted plant")},
    "bedroom": {"top": ("wall-other", "wall-wood"), "bottom": ("floor-wood", "carpet", "floor-other"),
                "items": ("curtain", "window-blind", "shelf"), "things": ("bed", "clock", "teddy bear", "laptop"),
                "extras": ("potted plant",)},
    "kitchen": {"top": ("wall-tile", "wall-other"), "bottom": ("floor-tile", "floor-marble"),
                "items": ("cabinet", "cupboard", "shelf"),
                "things": ("refrigerator", "oven", "microwave", "dining table", "sink"), "extras": ("person",)},
    "park": {"top": ("sky-other",), "bottom": ("grass",), "items": ("tree", "bush", "clouds"),
             "things": ("bench", "bicycle", "kite"), "extras": ("person",)},
    "street": {"top": ("sky-other",), "bottom": ("road",), "items": ("building-other", "pavement"),
               "things": ("car", "bicycle", "fire hydrant", "traffic light", "stop sign", "truck", "bus"),
               "extras": ("person",)},
    "beach": {"top": ("sky-other",), "bottom": ("sand",), "items": ("sea", "clouds"),
              "things": ("surfboard", "kite"), "extras": ("person",)},
    "snowfield": {"top": ("sky-other",), "bottom": ("snow",), "items": ("mountain", "clouds"),
                  "things": ("skis", "snowboard"), "extras": ("person",)},
}

CAT_COATS: dict[str, RGB] = {"orange": (224, 128, 44), "blue-grey": (110, 115, 135), "black": (32, 30, 32)}
DOG_COATS: dict[str, RGB] = {"golden": (218, 165, 80), "chocolate": (95, 55, 30), "black": (28, 28, 28)}

# Unit-square animal parts facing right. Cats: round head, pointed ears, thin raised tail.
# Dogs: longer body and legs, snout, floppy ears, thick tail.
_ANIMAL_PARTS: dict[str, tuple[tuple[str, Polygon], ...]] = {
    "cat": (("torso", ellipse(0.42, 0.62, 0.3, 0.2)), ("head", ellipse(0.76, 0.36, 0.15, 0.19)),
            ("ear", (0.63, 0.28, 0.66, 0.02, 0.74, 0.2)), ("ear", (0.78, 0.2, 0.86, 0.02, 0.89, 0.28)),
            ("tail", (0.15, 0.58, 0.11, 0.64, 0.02, 0.45, 0.04, 0.12, 0.09, 0.12, 0.08, 0.44)),
            ("leg", _R(0.2, 0.7, 0.27, 1)), ("leg", _R(0.3, 0.7, 0.37, 1)),
            ("leg", _R(0.5, 0.7, 0.57, 1)), ("leg", _R(0.6, 0.7, 0.67, 1))),
    "dog": (("torso", ellipse(0.42, 0.52, 0.32, 0.2)), ("head", ellipse(0.76, 0.28, 0.12, 0.16)),
            ("snout", ellipse(0.88, 0.36, 0.1, 0.07)), ("ear", ellipse(0.69, 0.36, 0.045, 0.14)),
            ("ear", ellipse(0.8, 0.34, 0.035, 0.11)), ("tail", (0.14, 0.46, 0.16, 0.54, 0.03, 0.3, 0.06, 0.25)),
            ("leg", _R(0.17, 0.62, 0.25, 1)), ("leg", _R(0.29, 0.62, 0.37, 1)),
            ("leg", _R(0.52, 0.62, 0.6, 1)), ("leg", _R(0.63, 0.62, 0.71, 1))),
}
_ANIMAL_DETAILS: dict[str, tuple[tuple[str, Polygon, RGB], ...]] = {
    "cat": (("eye", ellipse(0.71, 0.33, 0.025, 0.03, 8), (90, 170, 60)),
            ("eye", ellipse(0.81, 0.33, 0.025, 0.03, 8), (90, 170, 60)),
            ("nose", (0.745, 0.42, 0.775, 0.42, 0.76, 0.45), (230, 140, 150))),
    "dog": (("eye", ellipse(0.78, 0.25, 0.022, 0.03, 8), (15, 10, 5)),
            ("nose", ellipse(0.96, 0.35, 0.025, 0.025, 8), (10, 10, 10))),
}


def stuff_region(rng: random.Random, name: str, polygons: list[Polygon], size: tuple[int, int]) -> Region:
    """A stuff region of class ``name``; polygons are clamped to the ``size = (width, height)`` image."""
    colour, texture = STUFF_LOOK[name]
    clamped = tuple(_place(p, (0, 0, 1, 1), size) for p in polygons)
    return Region(name, "stuff", clamped, _jitter(rng, colour), texture)


def thing_region(rng: random.Random, name: str, box: tuple[float, float, float, float],
                 size: tuple[int, int], *, crowd: int = 0) -> Region:
    """A thing from its template in ``box = (x0, y0, w, h)``; ``crowd`` > 1 makes an iscrowd group."""
    template, colour, *_ = THINGS[name]
    x0, y0, w, h = box
    if crowd > 1:  # several copies side by side, annotated as one crowd region
        step = w / crowd
        polys = tuple(_place(p, (x0 + i * step, y0, step * 1.1, h), size) for i in range(crowd)
                      for p in TEMPLATES[template])
    else:
        polys = tuple(_place(p, box, size) for p in TEMPLATES[template])
    details: tuple[Detail, ...] = ()
    if name in ("tv", "laptop"):
        details = (Detail("screen", _place(_R(0.07, 0.07, 0.93, 0.78), box, size), (40, 70, 120)),)
    return Region(name, "thing", polys, _jitter(rng, colour, 20), 4.0, details=details, iscrowd=crowd > 1,
                  description=f"a group of {name}s" if crowd > 1 else name)


def animal_region(rng: random.Random, species: str, box: tuple[float, float, float, float],
                  size: tuple[int, int], *, close_up: bool = False, iscrowd: bool = False) -> Region:
    """A cat or dog with named parts in ``box``; ``close_up`` makes the torso fill the whole box."""
    coats = CAT_COATS if species == "cat" else DOG_COATS
    coat = rng.choice(sorted(coats))
    mirror = rng.random() < 0.5
    parts = list(_ANIMAL_PARTS[species])
    if close_up:
        parts = [("torso", _R(0, 0, 1, 1))] + [p for p in parts if p[0] in ("head", "ear", "snout")]
    polys = tuple(_place(p, box, size, mirror) for _, p in parts)
    details = [Detail(n, _place(p, box, size, mirror), c) for n, p, c in _ANIMAL_DETAILS[species]]
    if species == "cat" and coat == "orange":  # tabby stripes across the torso
        details += [Detail("stripe", _place(_R(u, 0.45, u + 0.04, 0.8), box, size, mirror), (170, 85, 25))
                    for u in (0.3, 0.4, 0.5)]
    return Region(species, "thing", polys, _jitter(rng, coats[coat], 8), 8.0, tuple(n for n, _ in parts),
                  tuple(details), iscrowd, f"{coat} {species} facing {'left' if mirror else 'right'}")


# --- regular layouts ------------------------------------------------------------------------------

def _indoor_stuff(rng: random.Random, setting: str, w: int, h: int, yh: int) -> list[Region]:
    look, out = SETTINGS[setting], []

    def add(name: str, poly: Polygon) -> None:
        out.append(stuff_region(rng, name, [poly], (w, h)))

    floor = rng.choice(look["bottom"])
    add(rng.choice(look["top"]), rect(0, 0, w, yh))
    add(floor, rect(0, yh, w, h))
    if rng.random() < 0.3:
        add("ceiling-other", rect(0, 0, w, round(0.08 * h)))
    items = rng.sample(look["items"], rng.choice((1, 2)))
    for i, item in enumerate(items):  # wall items in separate halves so neither hides the other
        part = w / len(items)
        x0 = round(i * part + rng.uniform(0.05, 0.3) * part)
        x1 = round(min(x0 + rng.uniform(0.45, 0.65) * part, (i + 1) * part))
        y0 = round(rng.uniform(0.1, 0.2) * h)
        y1 = yh if item in ("curtain", "door-stuff", "cabinet", "cupboard") else round(y0 + 0.6 * (yh - y0))
        add(item, rect(x0, y0, x1, y1))
    if rng.random() < 0.25:  # a window with a view of the sky: a little outdoor evidence indoors
        x0, y0 = round(rng.uniform(0.05, 0.75) * w), round(rng.uniform(0.1, 0.2) * h)
        x1, y1 = x0 + round(0.14 * w), y0 + round(0.22 * h)
        add("window-other", rect(x0, y0, x1, y1))
        add("sky-other", rect(x0 + 3, y0 + 3, x1 - 3, y1 - 3))
    if floor != "carpet" and rng.random() < 0.7:
        add(rng.choice(("rug", "mat")),
            ellipse(rng.uniform(0.3, 0.7) * w, yh + 0.55 * (h - yh), rng.uniform(0.2, 0.3) * w, 0.3 * (h - yh)))
    return out


def _outdoor_stuff(rng: random.Random, setting: str, w: int, h: int, yh: int) -> list[Region]:
    look, out = SETTINGS[setting], []

    def add(name: str, poly: Polygon) -> None:
        out.append(stuff_region(rng, name, [poly], (w, h)))

    add("sky-other", rect(0, 0, w, yh))
    add(look["bottom"][0], rect(0, yh, w, h))
    if rng.random() < 0.6:
        cx, cy = rng.uniform(0.1, 0.9) * w, rng.uniform(0.1, 0.3) * yh
        add("clouds", ellipse(cx, cy, rng.uniform(0.08, 0.15) * w, 0.08 * yh))
    if setting == "park":
        for name in rng.sample(("tree", "tree", "bush"), 2):
            r = rng.uniform(0.1, 0.18) * w
            add(name, ellipse(rng.uniform(0.1, 0.9) * w, yh - 0.5 * r, r, 0.9 * r))
    elif setting == "street":
        for i in range(rng.randint(2, 3)):
            x0 = round(i * w / 3 + rng.uniform(0, 0.05) * w)
            add("building-other", rect(x0, round(rng.uniform(0.1, 0.5) * yh), x0 + round(0.28 * w), yh))
            if rng.random() < 0.3:  # a door: a little indoor evidence outdoors
                add("door-stuff", rect(x0 + round(0.1 * w), yh - round(0.14 * h), x0 + round(0.16 * w), yh))
        add("pavement", rect(0, yh, w, round(yh + 0.25 * (h - yh))))
    elif setting == "beach":
        add("sea", rect(0, yh, w, round(yh + 0.3 * (h - yh))))
    else:
        peak = rng.uniform(0.3, 0.7) * w
        add("mountain", (peak - 0.5 * w, yh, peak, rng.uniform(0.2, 0.4) * yh, peak + 0.5 * w, yh))
    return out


def _slots(rng: random.Random, weights: list[float], width: int) -> list[tuple[float, float]]:
    jittered = [wt * rng.uniform(0.8, 1.2) for wt in weights]
    total, x, out = sum(jittered), 0.0, []
    for wt in jittered:
        out.append((x + 2, x + wt / total * width - 2))  # 2 px gaps keep masks apart
        x += wt / total * width
    return out


def _thing_box(rng: random.Random, name: str, slot: tuple[float, float], w: int, h: int, yh: int,
               copies: int = 1) -> tuple[float, float, float, float]:
    _, _, frac, aspect, anchor = THINGS[name]
    frac, aspect = frac * copies, aspect / copies  # a crowd: copies side by side in one box
    room = {"ground": 0.55 * h, "wall": 0.75 * yh, "sky": 0.4 * yh}[anchor]
    bw = min(frac * w, 0.9 * (slot[1] - slot[0]), room / aspect)
    bh = bw * aspect
    x0 = slot[0] + rng.uniform(0, slot[1] - slot[0] - bw)
    if anchor == "ground":
        y0 = min(rng.uniform(yh + 0.3 * (h - yh), h - 2), h - 2) - bh
    elif anchor == "wall":
        y0 = rng.uniform(0.1 * yh, max(0.1 * yh, yh - bh - 0.05 * h))
    else:
        y0 = rng.uniform(0.05 * yh, 0.5 * yh)
    return (x0, max(2.0, y0), bw, bh)


def layout_scene(rng: random.Random, *, image_id: int, split: str, setting: str, species: list[str],
                 width: int, height: int, animal_width: float | None = None, n_things: int | None = None,
                 crowd_animal: bool = False) -> Scene:
    """A regular scene: stuff of the setting, ``species`` animals and context things side by side.

    Each object gets its own horizontal slot, so no mask hides another and every annotation is the
    visible region. The intent is the setting's context; callers replace it for edge cases.
    """
    indoor = setting in INDOOR_SETTINGS
    yh = round(rng.uniform(0.45, 0.6) * height)
    stuff = (_indoor_stuff if indoor else _outdoor_stuff)(rng, setting, width, height, yh)
    look = SETTINGS[setting]
    if n_things is None:
        n_things = rng.choice((1, 1, 2, 2, 3)) - (len(species) > 1)
    names = rng.sample(look["things"], min(max(n_things, 0), len(look["things"])))
    if names and rng.random() < 0.25:
        names.append(rng.choice(look["extras"]))
    names = names[: max(0, (3 if width < 240 else 4) - len(species))]  # keep animals big enough to count
    objects = [("animal", s) for s in species] + [("thing", n) for n in names]
    rng.shuffle(objects)
    # Slot widths: large furniture and vehicles get more room than small things, and the animals
    # together always more than all things, so the foreground stays well inside COCO-CD's (1%, 99%).
    weights = {name: max(1.0, 5 * THINGS[name][2]) for kind, name in objects if kind == "thing"}
    animal_weight = max(3.2, 1.5 * sum(weights[n] for k, n in objects if k == "thing") / max(1, len(species)))
    slots = _slots(rng, [animal_weight if kind == "animal" else weights[name] for kind, name in objects], width)
    crowd_done = crowd_animal
    things = []
    for (kind, name), slot in zip(objects, slots, strict=True):
        if kind == "animal":
            bw = animal_width or (slot[1] - slot[0]) * rng.uniform(0.75, 0.92)
            bh = min(bw * rng.uniform(0.62, 0.8), 0.62 * height)
            bw = min(bw, bh / 0.62)
            bottom = rng.uniform(0.9 * height, height - 2)
            box = (slot[0] + rng.uniform(0, max(0.0, slot[1] - slot[0] - bw)), max(2.0, bottom - bh), bw, bh)
            things.append(animal_region(rng, name, box, (width, height), iscrowd=crowd_animal))
        else:
            crowd = 0
            if not crowd_done and name == "person" and rng.random() < 0.5:
                crowd, crowd_done = 3, True  # at most one crowd per image (COCO ids them by image)
            box = _thing_box(rng, name, slot, width, height, yh, max(crowd, 1))
            things.append(thing_region(rng, name, box, (width, height), crowd=crowd))
    return Scene(image_id=image_id, split=split, width=width, height=height, setting=setting, stuff=tuple(stuff),
                 things=tuple(things), expected_kept=True, expected_context="indoor" if indoor else "outdoor")
