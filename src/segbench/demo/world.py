"""The demo world: a small, deterministic COCO 2017 + COCO-Stuff source tree for `segbench demo` and tests.

:func:`build_scenes` decides every image (regular cat/dog scenes per group plus a fixed set of edge
cases, each designed to trip one COCO-CD rule); :func:`generate_demo_world` rasterises them with
pycocotools and writes instances and stuff JSON, JPEGs whose pixels agree with the masks, and
``demo_world.json``, the designer's intent per image (an oracle for builder tests, set by hand and
never recomputed by the rules). Scene layout lives in :mod:`segbench.demo.scenes`.
"""

from __future__ import annotations

import io
import json
import logging
import random
from collections.abc import Callable, Mapping
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple, TypedDict

import numpy as np
from PIL import Image
from pydantic import BaseModel

from segbench.core import masks
from segbench.core.coco_documents import CocoImage, CocoRegion
from segbench.core.io import atomic_write_bytes, write_json
from segbench.demo.scenes import (
    INDOOR_SETTINGS,
    OUTDOOR_SETTINGS,
    Region,
    Scene,
    animal_region,
    layout_scene,
    rect,
    stuff_region,
    thing_region,
)

logger = logging.getLogger(__name__)

GROUPS = ("cat/indoor", "cat/outdoor", "dog/indoor", "dog/outdoor")
# Aligned groups about twice the others, as in COCO; enough for the demo's 10 val + 20 test per
# group and a ρ = 0.95 train split (dog/indoor leaves 10 after val/test, so 3 minority images).
DEFAULT_GROUP_SIZES = {"cat/indoor": 90, "cat/outdoor": 45, "dog/indoor": 40, "dog/outdoor": 95}
SPLITS = ("train2017", "val2017")
JPEG_QUALITY = 92
_UNLABELED = (128, 128, 128)
_CROWD_ID_BASE = 900100000000  # COCO numbers crowd annotations 9001 followed by the image id
_STUFF_ID_BASE = 10000000  # real COCO-Stuff annotation ids start here
class _Licence(TypedDict):
    id: int
    name: str
    url: str


_LICENSES: list[_Licence] = [
    {"id": 1, "name": "Attribution-NonCommercial-ShareAlike License",
     "url": "http://creativecommons.org/licenses/by-nc-sa/2.0/"},
    {"id": 2, "name": "Attribution-NonCommercial License", "url": "http://creativecommons.org/licenses/by-nc/2.0/"},
    {"id": 4, "name": "Attribution License", "url": "http://creativecommons.org/licenses/by/2.0/"},
]


class DemoWorld(BaseModel):
    """What :func:`generate_demo_world` wrote."""

    root: Path
    seed: int
    files: list[str]  # POSIX paths relative to root, sorted
    images: dict[str, int]  # split -> number of images
    groups: dict[str, int]  # regular images per group
    kept_by_group: dict[str, int]  # every image meant to be kept with a definite context, per group
    edge_cases: dict[str, int]  # edge-case name -> image id


# --- edge cases: each trips one rule; the intent below is set by hand --------------------------

EdgeBuilder = Callable[[random.Random, int, str], Scene]


def _room(rng: random.Random, species: str, extra: list[Region], w: int = 200, h: int = 100) -> tuple[list, list]:
    """A 200×100 room (neutral wall and floor); the animal stays right of x = 120, clear of ``extra``."""
    stuff = [stuff_region(rng, "wall-other", [rect(0, 0, w, 60)], (w, h)),
             stuff_region(rng, "floor-other", [rect(0, 60, w, h)], (w, h))]
    return stuff + extra, [animal_region(rng, species, (122, 28, 72, 68), (w, h))]


def _exact(species: str, indoor: tuple | None, outdoor: tuple | None, indoor_name: str = "curtain") -> EdgeBuilder:
    """An exact-area case: an indoor box (curtain or rug) and/or a window of sky, corners in pixels.

    Boxes with integer corners rasterise to exactly (x1-x0)·(y1-y0) pixels, nothing covers them,
    so the stuff areas are the designed numbers.
    """
    def make(rng: random.Random, image_id: int, split: str) -> Scene:
        boxes = [stuff_region(rng, indoor_name, [rect(*indoor)], (200, 100))] if indoor else []
        boxes += [stuff_region(rng, "sky-other", [rect(*outdoor)], (200, 100))] if outdoor else []
        stuff, things = _room(rng, species, boxes)
        design = {"indoor_area": (indoor[2] - indoor[0]) * (indoor[3] - indoor[1]) if indoor else 0,
                  "outdoor_area": (outdoor[2] - outdoor[0]) * (outdoor[3] - outdoor[1]) if outdoor else 0,
                  "image_area": 200 * 100}
        setting = "room with a window" if outdoor else "room"
        return Scene(image_id, split, 200, 100, setting, tuple(stuff), tuple(things), True, "", design=design)
    return make


def _layout(setting: str, species: list[str], w: int, h: int, **kwargs: Any) -> EdgeBuilder:
    def make(rng: random.Random, image_id: int, split: str) -> Scene:
        return layout_scene(rng, image_id=image_id, split=split, setting=setting, species=species,
                            width=w, height=h, **kwargs)
    return make


def _close_up(rng: random.Random, image_id: int, split: str) -> Scene:
    cat = animal_region(rng, "cat", (0, 0, 240, 180), (240, 180), close_up=True)
    return Scene(image_id, split, 240, 180, "close-up", (), (cat,), False, "")


def _with_thing(name: str, box: tuple, species: str, top: str, bottom: str, w: int = 200, h: int = 100,
                animal: tuple = (122, 28, 72, 68)) -> EdgeBuilder:
    """Two stuff bands (``top`` over ``bottom``), one thing in ``box`` and the animal clear of it."""
    def make(rng: random.Random, image_id: int, split: str) -> Scene:
        line = round(0.62 * h)
        stuff = [stuff_region(rng, top, [rect(0, 0, w, line)], (w, h)),
                 stuff_region(rng, bottom, [rect(0, line, w, h)], (w, h))]
        things = [thing_region(rng, name, box, (w, h)), animal_region(rng, species, animal, (w, h))]
        return Scene(image_id, split, w, h, f"{name} by a {top}", tuple(stuff), tuple(things), True, "")
    return make


def _no_stuff(rng: random.Random, image_id: int, split: str) -> Scene:
    scene = layout_scene(rng, image_id=image_id, split=split, setting="bedroom", species=["cat"],
                         width=240, height=180, n_things=0)
    return replace(scene, stuff_annotated=False)


class EdgeCase(NamedTuple):
    split: str
    make: EdgeBuilder
    expected_kept: bool
    expected_context: str
    note: str


_T, _V = "train2017", "val2017"
EDGE_CASES: dict[str, EdgeCase] = {
    "cat_and_dog": EdgeCase(_T, _layout("living room", ["cat", "dog"], 300, 200, n_things=1), False, "indoor",
                            "both cat and dog: excluded"),
    "no_cat_no_dog": EdgeCase(_T, _layout("street", [], 300, 200, n_things=2), False, "outdoor",
                              "neither cat nor dog, only other things: excluded"),
    "foreground_too_small": EdgeCase(_V, _layout("park", ["cat"], 320, 240, animal_width=18, n_things=1), False,
                                     "outdoor", "a tiny cat, foreground < 1% at 512x512: excluded"),
    "foreground_too_large": EdgeCase(_T, _close_up, False, "unknown", "a cat covering the whole image: excluded"),
    "neutral_evidence_only": EdgeCase(_T, _exact("dog", None, None), True, "unknown",
                                      "only walls and floor (neutral): unknown"),
    "no_stuff_annotations": EdgeCase(_V, _no_stuff, True, "unknown", "listed in the stuff file, no annotations"),
    "indoor_things_only": EdgeCase(_T, _with_thing("tv", (20, 15, 80, 50), "cat", "wall-other", "floor-wood",
                                                   240, 160, (132, 70, 100, 80)), True, "indoor",
                                   "a tv is the only evidence (stuff all neutral): indoor"),
    "outdoor_things_only": EdgeCase(_T, _with_thing("car", (10, 80, 100, 50), "dog", "house", "floor-stone",
                                                    240, 160, (132, 70, 100, 80)), True, "outdoor",
                                    "a car is the only evidence (stuff all neutral): outdoor"),
    "share_exactly_half": EdgeCase(_V, _exact("cat", (5, 5, 45, 55), (55, 5, 95, 55)), True, "indoor",
                                   "indoor share exactly 0.5 (2000 / 4000 px), both >= 2%: indoor"),
    "share_0.49": EdgeCase(_T, _exact("dog", (5, 5, 25, 54), (55, 5, 75, 56)), True, "outdoor",
                           "indoor share 0.49 (980 / 2000 px): outdoor"),
    "share_0.51": EdgeCase(_T, _exact("cat", (5, 5, 25, 56), (55, 5, 75, 54)), True, "indoor",
                           "indoor share 0.51 (1020 / 2000 px): indoor"),
    "indoor_area_2pct": EdgeCase(_T, _exact("cat", (20, 70, 40, 90), None, "rug"), True, "indoor",
                                 "indoor area exactly 2% (400 of 20000 px), no outdoor: indoor"),
    "indoor_area_1pct": EdgeCase(_T, _exact("dog", (20, 75, 40, 85), None, "rug"), True, "unknown",
                                 "indoor area 1% (200 of 20000 px), no outdoor: unknown"),
    "outdoor_share_small_area": EdgeCase(_T, _exact("cat", (20, 75, 30, 85), (55, 10, 75, 25), "rug"), True,
                                         "unknown", "outdoor share 0.75 but outdoor area 1.5% (300 px): unknown"),
    "neutral_thing_only": EdgeCase(_T, _with_thing("cell phone", (30, 30, 30, 54), "dog", "wall-other",
                                                   "floor-other"), True, "unknown",
                                   "a cell phone (neutral thing), wall and floor: unknown"),
    "unlisted_only": EdgeCase(_T, _with_thing("person", (30, 25, 28, 72), "cat", "banner", "cardboard"), True,
                              "unknown", "only classes on no list (person, banner, cardboard): unknown"),
    "crowd_cat": EdgeCase(_T, _layout("park", ["cat"], 240, 180, n_things=1, crowd_animal=True), True, "outdoor",
                          "the cat is an iscrowd RLE annotation: kept"),
    "two_cats": EdgeCase(_T, _layout("living room", ["cat", "cat"], 300, 200, n_things=1), True, "indoor",
                         "two cats, no dog: kept"),
    "two_dogs": EdgeCase(_V, _layout("park", ["dog", "dog"], 300, 200, n_things=1), True, "outdoor",
                         "two dogs, no cat: kept"),
}


# --- scenes ---------------------------------------------------------------------------------------

def _check_params(group_sizes: Mapping[str, int] | None, val_fraction: float) -> dict[str, int]:
    sizes = dict(DEFAULT_GROUP_SIZES if group_sizes is None else group_sizes)
    if sorted(sizes) != sorted(GROUPS):
        raise ValueError(f"group_sizes must have exactly the keys {list(GROUPS)}, got {sorted(sizes)}")
    if any(not isinstance(n, int) or n < 0 for n in sizes.values()):
        raise ValueError(f"group sizes must be non-negative integers, got {sizes}")
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
    return sizes


def build_scenes(*, seed: int = 0, group_sizes: Mapping[str, int] | None = None,
                 val_fraction: float = 0.15) -> list[Scene]:
    """Every scene of the demo world, sorted by image id (no files are written).

    Args:
        seed: the world's seed; the same seed gives the same scenes.
        group_sizes: regular images per group ``"cat/indoor"``, ... (default :data:`DEFAULT_GROUP_SIZES`).
            The edge cases of :data:`EDGE_CASES` are always added.
        val_fraction: share of each group's regular images put in ``val2017``.

    Raises:
        ValueError: unknown or missing groups, negative sizes, or a fraction outside [0, 1).
    """
    sizes = _check_params(group_sizes, val_fraction)
    rng = random.Random(seed)
    ids = iter(rng.sample(range(1, 581930), sum(sizes.values()) + len(EDGE_CASES)))
    edge_rng = random.Random(f"segbench-demo-edge-{seed}")  # edge cases look the same whatever the group sizes
    scenes = []
    for name, case in EDGE_CASES.items():
        scene = case.make(edge_rng, next(ids), case.split)
        scenes.append(replace(scene, expected_kept=case.expected_kept, expected_context=case.expected_context,
                              edge_case=name, design={**scene.design, "note": case.note}))
    for group in GROUPS:
        species, context = group.split("/")
        n = sizes[group]
        val = set(rng.sample(range(n), round(n * val_fraction)))
        for i in range(n):
            width, height = rng.randint(200, 320), rng.randint(160, 260)
            if rng.random() < 0.2:  # portrait, at most 1.5 times taller than wide so animals stay > 2%
                width = rng.randint(180, 240)
                height = rng.randint(round(1.1 * width), min(320, round(1.5 * width)))
            setting = rng.choice(INDOOR_SETTINGS if context == "indoor" else OUTDOOR_SETTINGS)
            scene = layout_scene(rng, image_id=next(ids), split=SPLITS[i in val], setting=setting,
                                 species=[species] * (2 if rng.random() < 0.12 else 1), width=width, height=height)
            scenes.append(replace(scene, group=group))
    return sorted(scenes, key=lambda s: s.image_id)


# --- rendering ------------------------------------------------------------------------------------

def _bitmap(polygons: tuple, height: int, width: int) -> tuple[masks.CocoRle, np.ndarray]:
    rle = masks.segmentation_to_rle([list(p) for p in polygons], height, width)
    return rle, masks.rle_to_bitmap(rle).astype(bool)


def _bbox(mask: np.ndarray) -> list[float]:
    xs, ys = np.flatnonzero(mask.any(0)), np.flatnonzero(mask.any(1))
    if not len(xs):
        raise ValueError("a demo region rasterises to an empty mask")
    return [float(xs[0]), float(ys[0]), float(xs[-1] - xs[0] + 1), float(ys[-1] - ys[0] + 1)]


def render_scene(scene: Scene, *, seed: int, category_ids: Mapping[str, int]
                 ) -> tuple[bytes, list[CocoRegion], list[CocoRegion]]:
    """Rasterise one scene: JPEG bytes, instance annotations and stuff annotations (without ids).

    Stuff is painted in order (later regions cover earlier ones), then things; pixels under a thing
    belong to COCO-Stuff's ``other`` class, so the stuff annotations partition the labelled pixels.
    """
    h, w = scene.height, scene.width
    label = np.zeros((h, w), np.uint8)  # COCO-Stuff ids (92-183) fit in a byte; 0 is unlabeled
    paint = np.zeros((h, w), np.int32)  # index into colours/textures: one palette lookup at the end
    colours, textures = [_UNLABELED], [3.0]

    def fill(where: np.ndarray, colour: tuple, strength: float) -> None:
        paint[where] = len(colours)
        colours.append(colour)
        textures.append(strength)

    for region in scene.stuff:
        _, mask = _bitmap(region.polygons, h, w)
        label[mask] = category_ids[region.name]
        fill(mask, region.colour, region.texture)
    instances: list[CocoRegion] = []
    for region in scene.things:
        rle, mask = _bitmap(region.polygons, h, w)
        label[mask] = category_ids["other"]
        fill(mask, region.colour, region.texture)
        for detail in region.details:  # clipped to the mask so the annotation stays the truth
            fill(_bitmap((detail.polygon,), h, w)[1] & mask, detail.colour, region.texture)
        instances.append({"image_id": scene.image_id, "category_id": category_ids[region.name],
                          "segmentation": rle if region.iscrowd else [list(p) for p in region.polygons],
                          "area": float(masks.rle_area([rle])[0]), "bbox": _bbox(mask), "iscrowd": int(region.iscrowd)})
    noise = np.random.default_rng([seed, scene.image_id]).standard_normal((h, w), dtype=np.float32)
    shade = noise * np.asarray(textures, np.float32)[paint]
    pixels = np.clip(np.asarray(colours, np.float32)[paint] + shade[..., None], 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    # Fixed quality and subsampling, no EXIF: the bytes depend on the pixels only.
    Image.fromarray(pixels, "RGB").save(buffer, format="JPEG", quality=JPEG_QUALITY, subsampling=0)
    stuff: list[CocoRegion] = []
    if scene.stuff_annotated:
        for cls in np.unique(label[label > 0]).tolist():
            mask = label == cls
            stuff_rle = masks.bitmap_to_rle(mask)
            stuff.append({"image_id": scene.image_id, "category_id": int(cls), "segmentation": stuff_rle,
                          "area": float(masks.rle_area([stuff_rle])[0]), "bbox": _bbox(mask), "iscrowd": 0})
    return buffer.getvalue(), instances, stuff


# --- files ----------------------------------------------------------------------------------------

def _categories() -> tuple[list[dict], list[dict]]:
    data = json.loads(resources.files("segbench.resources").joinpath("coco_stuff_categories.json").read_text())

    def pick(c: dict) -> dict:
        return {"id": c["id"], "name": c["name"], "supercategory": c["supercategory"]}

    things = [pick(c) for c in data["categories"] if c["kind"] == "thing" and c["in_coco_2017"]]
    stuff = [pick(c) for c in data["categories"] if c["kind"] == "stuff"] + [pick(data["stuff_other"])]
    return things, stuff


class _SourceImage(CocoImage):
    license: int
    date_captured: str


class _OracleThing(TypedDict):
    name: str
    description: str
    iscrowd: bool
    parts: list[str]


class OracleRecord(TypedDict):
    """One image of ``demo_world.json``: how it was made and what a build should make of it."""

    image_id: int
    file_name: str
    split: str
    width: int
    height: int
    setting: str
    classes: list[str]
    group: str | None
    edge_case: str | None
    design: dict[str, Any]
    expected_kept: bool
    expected_context: str
    stuff_annotated: bool
    stuff: list[str]
    things: list[_OracleThing]


def _image_record(scene: Scene) -> _SourceImage:
    i = scene.image_id  # capture dates derived from the id keep files free of the clock
    return {"id": i, "file_name": f"{i:012d}.jpg", "width": scene.width, "height": scene.height,
            "license": _LICENSES[i % len(_LICENSES)]["id"],
            "date_captured": f"2013-11-{1 + i % 28:02d} {i % 24:02d}:{i % 60:02d}:{(i // 60) % 60:02d}"}


def _oracle_record(scene: Scene) -> OracleRecord:
    return {"image_id": scene.image_id, "file_name": f"{scene.image_id:012d}.jpg", "split": scene.split,
            "width": scene.width, "height": scene.height, "setting": scene.setting, "classes": scene.classes,
            "group": scene.group, "edge_case": scene.edge_case, "design": scene.design,
            "expected_kept": scene.expected_kept, "expected_context": scene.expected_context,
            "stuff_annotated": scene.stuff_annotated, "stuff": [r.name for r in scene.stuff],
            "things": [{"name": r.name, "description": r.description, "iscrowd": r.iscrowd,
                        "parts": list(r.part_names)} for r in scene.things]}


def generate_demo_world(root: Path, *, seed: int = 0, group_sizes: Mapping[str, int] | None = None,
                        val_fraction: float = 0.15) -> DemoWorld:
    """Write the demo COCO + COCO-Stuff tree under ``root`` (see the module docstring).

    Files: ``annotations/{instances,stuff}_{train,val}2017.json``, ``{train,val}2017/{id:012d}.jpg``
    and ``demo_world.json``. The same arguments give byte-identical files.

    Raises:
        ValueError: bad ``group_sizes`` or ``val_fraction`` (see :func:`build_scenes`).
    """
    root = Path(root)
    scenes = build_scenes(seed=seed, group_sizes=group_sizes, val_fraction=val_fraction)
    thing_cats, stuff_cats = _categories()
    category_ids = {c["name"]: c["id"] for c in thing_cats + stuff_cats}
    ann_rng = random.Random(f"segbench-demo-annotations-{seed}")
    files: list[str] = []
    per_split: dict[str, dict[str, list]] = {s: {"images": [], "instances": [], "stuff": []} for s in SPLITS}
    for scene in scenes:
        jpeg, instances, stuff = render_scene(scene, seed=seed, category_ids=category_ids)
        relative = f"{scene.split}/{scene.image_id:012d}.jpg"
        atomic_write_bytes(root / relative, jpeg)
        files.append(relative)
        bucket = per_split[scene.split]
        bucket["images"].append(_image_record(scene))
        bucket["instances"] += instances
        bucket["stuff"] += stuff
    plain = [a for s in SPLITS for a in per_split[s]["instances"] if not a["iscrowd"]]
    for ann, ann_id in zip(plain, sorted(ann_rng.sample(range(1, 2232120), len(plain))), strict=True):
        ann["id"] = ann_id
    next_stuff_id = _STUFF_ID_BASE
    for split in SPLITS:
        bucket = per_split[split]
        for ann in bucket["instances"]:
            ann.setdefault("id", _CROWD_ID_BASE + ann["image_id"])  # scenes hold at most one crowd
        for ann in bucket["stuff"]:
            ann["id"], next_stuff_id = next_stuff_id, next_stuff_id + 1
        name = split.removesuffix("2017")
        for kind, cats, info in (("instances", thing_cats, "COCO 2017"), ("stuff", stuff_cats, "COCO-Stuff 2017")):
            relative = f"annotations/{kind}_{name}2017.json"
            write_json(root / relative, {
                "info": {"description": f"segbench demo world ({info} format)", "version": "1.0", "year": 2017,
                         "contributor": "segbench", "url": "", "date_created": "2017/09/01"},
                "licenses": _LICENSES, "images": bucket["images"], "categories": cats,
                "annotations": bucket[kind]})
            files.append(relative)
    write_json(root / "demo_world.json", {
        "seed": seed, "group_sizes": _check_params(group_sizes, val_fraction), "val_fraction": val_fraction,
        "edge_cases": {s.edge_case: s.image_id for s in scenes if s.edge_case},
        "images": [_oracle_record(s) for s in scenes]}, indent=1)
    files.append("demo_world.json")
    world = DemoWorld(
        root=root, seed=seed, files=sorted(files),
        images={s: len(per_split[s]["images"]) for s in SPLITS},
        groups={g: sum(s.group == g for s in scenes) for g in GROUPS},
        kept_by_group={g: sum(s.expected_kept and s.expected_context != "unknown"
                              and f"{s.classes[0]}/{s.expected_context}" == g for s in scenes) for g in GROUPS},
        edge_cases={s.edge_case: s.image_id for s in scenes if s.edge_case})
    logger.info("demo world: %d images (%s) under %s", len(scenes), world.images, root)
    return world
