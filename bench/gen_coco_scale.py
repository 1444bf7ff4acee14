"""An annotation-only COCO 2017 + COCO-Stuff tree at COCO scale, for the COCO-CD scale benchmark.

Writes ``annotations/instances_{train,val}2017.json`` and ``annotations/stuff_{train,val}2017.json``
(no image pixels) shaped like the real files: ~118k + 5k images of varied COCO sizes, ~7.3 instance
annotations per image over the 80 COCO categories (star-shaped polygons of ~24 vertices, a few
``iscrowd`` ones as uncompressed RLE count lists), and ~11 COCO-Stuff annotations per image whose
compressed RLEs partition the image. Areas are pycocotools areas of the segmentations.

Cat and dog images are planned so that COCO-CD finds groups of realistic sizes: every image has a
*scene* (indoor, outdoor or neutral) that decides which stuff and thing categories it gets, and
each cat-only or dog-only image has a planned outcome (a context, or a foreground too small or too
large). Everything derives from ``(scale, seed)``; the tree is cached under
``bench/out/coco-scale-<hash>/`` and reused while the generator version is unchanged.

CLI: ``python bench/gen_coco_scale.py --scale 0.05 --seed 0`` prints a JSON summary.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from pycocotools import mask as mask_utils

from segbench.schemas.coco_cd import released_context_lists

GENERATOR_VERSION = 2  # bump when the generated files change, so stale caches are not reused
OUT_DIR = Path(__file__).resolve().parent / "out"
CATEGORIES_FILE = Path(__file__).resolve().parents[1] / "src/segbench/resources/coco_stuff_categories.json"
CHUNK = 5000  # images per generation chunk: bounds memory, and JSON is written chunk by chunk

# COCO 2017 figures the generator scales.
TRAIN_IMAGES, VAL_IMAGES = 118_287, 5_000
INSTANCES_PER_IMAGE = 7.3
CAT_IMAGES, DOG_IMAGES, BOTH_IMAGES = 4_100, 4_400, 250
CAT_ID, DOG_ID, OTHER_STUFF_ID = 17, 18, 183
# Planned outcome shares of cat-only / dog-only images. The counterfactual pools (cat outdoor, dog
# indoor) hold 592 images: 175 go to val + test and 417 remain, so ρ = 0.5 trains 417 per group and
# ρ = 0.95 gives the released COCO-CD train groups 792 / 42 / 42 / 792 exactly. The rest have a too
# small or too large foreground or no context evidence ("neutral" takes what is left).
OUTCOMES = ("indoor", "outdoor", "neutral", "small", "large")
CAT_OUTCOME_SHARES = (2400 / 3850, 592 / 3850, 0.0, 0.03, 0.005)
DOG_OUTCOME_SHARES = (592 / 4150, 2600 / 4150, 0.0, 0.035, 0.005)
SCENES = ("indoor", "outdoor", "neutral")
OTHER_SCENE_SHARES = (0.4, 0.5, 0.1)  # images without cat or dog
# (width, height, weight): COCO images have a long side of 640 and mostly 4:3 or 3:2.
SIZES = ((640, 480, 0.45), (640, 427, 0.2), (480, 640, 0.12), (427, 640, 0.08), (640, 360, 0.05))
SIZE_JITTER = 0.10  # the rest: long side 640, short side uniform in [240, 640]
CROWD_SHARE = 0.07  # images with one iscrowd annotation: ~1% of annotations, as in COCO
ANIMAL_CROWD_SHARE = 0.01  # cat/dog images whose first animal is an iscrowd annotation
MULTI_PART_SHARE = 0.1  # polygon annotations made of two polygons
STUFF_ID_BASE = 10_000_000  # real COCO-Stuff annotation ids start here
CROWD_ID_BASE = 900_100_000_000  # COCO numbers crowd annotations 9001 followed by the image id


@dataclass(frozen=True)
class Spec:
    """What decides the generated tree."""

    scale: float = 1.0
    seed: int = 0
    version: int = GENERATOR_VERSION

    def key(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:12]

    def root(self, out_dir: Path = OUT_DIR) -> Path:
        return out_dir / f"coco-scale-{self.key()}"


# --- categories and the pools scenes draw from ----------------------------------------------------

@dataclass
class Pools:
    """Category ids and draw weights per scene, for things (no cat/dog) and stuff."""

    things: list[dict]
    stuff: list[dict]
    thing_ids: dict[str, np.ndarray]
    thing_p: dict[str, np.ndarray]
    stuff_ids: np.ndarray  # every stuff category id, 92..183
    stuff_w: dict[str, np.ndarray]  # scene -> weight per entry of stuff_ids
    stuff_forced: dict[str, np.ndarray]  # scene -> ids one of which every image of the scene gets


def _context_of(name: str, lists: dict) -> str:
    for key in ("neutral", "indoor", "outdoor"):
        if name in lists[key]:
            return key
    return "unlisted"


def load_pools() -> Pools:
    data = json.loads(CATEGORIES_FILE.read_text())
    lists = {k: set(v) for k, v in released_context_lists().items() if k in ("indoor", "outdoor", "neutral")}
    pick = ("supercategory", "id", "name")
    things = [{k: c[k] for k in pick} for c in data["categories"] if c["kind"] == "thing" and c["in_coco_2017"]]
    stuff = [{k: c[k] for k in pick} for c in data["categories"] if c["kind"] == "stuff"]
    stuff.append({k: data["stuff_other"][k] for k in pick})
    # Things an image of a scene may hold: its own list plus unlisted ones (people, food, ...);
    # people are a quarter of COCO's instances, so they weigh most.
    thing_ctx = {c["id"]: _context_of(c["name"], lists) for c in things if c["id"] not in (CAT_ID, DOG_ID)}
    thing_ids, thing_p = {}, {}
    for scene in SCENES:
        allowed = {"indoor": ("indoor", "unlisted"), "outdoor": ("outdoor", "unlisted"),
                   "neutral": ("neutral", "unlisted")}[scene]
        ids = np.array([i for i, ctx in thing_ctx.items() if ctx in allowed])
        weights = np.where(ids == 1, 20.0, 1.0)
        thing_ids[scene], thing_p[scene] = ids, weights / weights.sum()
    stuff_ids = np.array([c["id"] for c in stuff])
    stuff_ctx = [_context_of(c["name"], lists) for c in stuff]
    table = {"indoor": {"indoor": 3, "neutral": 2, "unlisted": 1},
             "outdoor": {"outdoor": 3, "neutral": 1, "unlisted": 1},
             "neutral": {"neutral": 3, "unlisted": 1}}
    stuff_w = {}
    for scene, weights in table.items():
        w = np.array([weights.get(ctx, 0.0) for ctx in stuff_ctx], dtype=float)
        w[stuff_ids == OTHER_STUFF_ID] = 8.0  # COCO-Stuff's "other" (pixels under things) is almost everywhere
        stuff_w[scene] = w
    forced = {s: stuff_ids[[ctx == s for ctx in stuff_ctx]] for s in SCENES}
    return Pools(things, stuff, thing_ids, thing_p, stuff_ids, stuff_w, forced)


# --- the image table --------------------------------------------------------------------------------

@dataclass
class ImageTable:
    """One row per image (all arrays of the same length), sorted by split then id."""

    ids: np.ndarray
    width: np.ndarray
    height: np.ndarray
    val: np.ndarray  # bool
    animals: np.ndarray  # 0 none, 1 cat only, 2 dog only, 3 both
    outcome: np.ndarray  # index into OUTCOMES for cat-only / dog-only images, else -1
    scene: np.ndarray  # index into SCENES


def _sizes(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    weights = np.array([s[2] for s in SIZES] + [SIZE_JITTER])
    kind = rng.choice(len(weights), size=n, p=weights / weights.sum())
    width = np.array([s[0] for s in SIZES] + [640])[kind]
    height = np.array([s[1] for s in SIZES] + [640])[kind]
    jitter = kind == len(SIZES)
    short = rng.integers(240, 641, size=n)
    portrait = rng.random(n) < 0.25
    width = np.where(jitter & portrait, short, width)
    height = np.where(jitter & ~portrait, short, height)
    return width, height


def _planned_outcomes(rng: np.random.Generator, n: int, shares: tuple[float, ...]) -> np.ndarray:
    """Exact counts per outcome (largest shares first), shuffled: group sizes do not drift with the seed."""
    counts = [round(n * s) for s in shares]
    counts[OUTCOMES.index("neutral")] = n - sum(counts) + counts[OUTCOMES.index("neutral")]
    return rng.permutation(np.repeat(np.arange(len(OUTCOMES)), counts))


def image_table(spec: Spec) -> ImageTable:
    rng = np.random.default_rng([spec.seed, 0])
    n_train, n_val = round(TRAIN_IMAGES * spec.scale), round(VAL_IMAGES * spec.scale)
    n = n_train + n_val
    ids = rng.choice(np.arange(1, 581_930), size=n, replace=False)  # COCO 2017 ids are below 581930
    val = np.zeros(n, bool)
    val[rng.choice(n, size=n_val, replace=False)] = True
    both, cat, dog = (round(x * spec.scale) for x in (BOTH_IMAGES, CAT_IMAGES, DOG_IMAGES))
    animals = np.zeros(n, np.int8)
    order = rng.permutation(n)
    animals[order[:both]] = 3
    animals[order[both:cat]] = 1
    animals[order[cat : cat + dog - both]] = 2
    outcome = np.full(n, -1, np.int8)
    for code, shares in ((1, CAT_OUTCOME_SHARES), (2, DOG_OUTCOME_SHARES)):
        outcome[animals == code] = _planned_outcomes(rng, int((animals == code).sum()), shares)
    scene = rng.choice(3, size=n, p=OTHER_SCENE_SHARES).astype(np.int8)
    planned = outcome >= 0
    # A planned context is the scene; a planned foreground failure keeps the class's usual scene.
    by_outcome = np.array([0, 1, 2, -1, -1])[np.maximum(outcome, 0)]
    scene[planned] = np.where(by_outcome[planned] >= 0, by_outcome[planned], animals[planned] - 1)
    scene[animals == 3] = rng.integers(0, 2, size=int((animals == 3).sum()))
    width, height = _sizes(rng, n)
    sort = np.lexsort((ids, val))
    return ImageTable(ids[sort], width[sort], height[sort], val[sort], animals[sort], outcome[sort], scene[sort])


def image_records(table: ImageTable, rows: np.ndarray) -> list[dict]:
    records = []
    for i in rows.tolist():
        image_id, split = int(table.ids[i]), "val2017" if table.val[i] else "train2017"
        name = f"{image_id:012d}.jpg"
        records.append({
            "license": 1 + image_id % 8, "file_name": name,
            "coco_url": f"http://images.cocodataset.org/{split}/{name}",
            "height": int(table.height[i]), "width": int(table.width[i]),
            "date_captured": f"2013-11-{1 + image_id % 28:02d} {image_id % 24:02d}:{image_id % 60:02d}:"
                             f"{(image_id // 60) % 60:02d}",
            "flickr_url": f"http://farm{1 + image_id % 9}.staticflickr.com/{image_id}_z.jpg",
            "id": image_id,
        })
    return records


# --- segmentations ---------------------------------------------------------------------------------

def column_runs(top: np.ndarray, bottom: np.ndarray, x0: int, h: int, w: int) -> np.ndarray:
    """Uncompressed COCO RLE runs (column-major) of regions over columns ``x0 .. x0 + n - 1``.

    Row ``j`` of ``top`` / ``bottom`` (shape ``(k, n)``) gives, per column, the rows ``[top, bottom)``
    of region ``j``. Returns ``(k, 2n + 1)`` uint32 runs: zeros, ones, zeros, ..., zeros.
    """
    k, n = top.shape
    runs = np.empty((k, 2 * n + 1), np.uint32)
    runs[:, 0] = x0 * h + top[:, 0]
    runs[:, 1:-1:2] = bottom - top
    runs[:, 2:-1:2] = (h - bottom[:, :-1]) + top[:, 1:]
    runs[:, -1] = (h - bottom[:, -1]) + (w - x0 - n) * h
    return runs


def _walk(rng: np.random.Generator, rows: int, n: int, amplitude: int) -> np.ndarray:
    """Bounded random walks: boundaries that wander by at most ``amplitude`` pixels."""
    steps = rng.choice(np.array([-1, 0, 1]), size=(rows, n), p=(0.25, 0.5, 0.25))
    return np.clip(np.cumsum(steps, axis=1), -amplitude, amplitude)


def _partition(rng: np.random.Generator, length: int, parts: int, minimum: int) -> np.ndarray:
    """``parts`` sizes >= ``minimum`` summing to ``length``."""
    sizes = minimum + np.floor(rng.dirichlet(np.full(parts, 3.0)) * (length - minimum * parts)).astype(int)
    sizes[-1] = length - sizes[:-1].sum()
    return sizes


def stuff_regions(rng: np.random.Generator, h: int, w: int) -> list[tuple[np.ndarray, list[float]]]:
    """A partition of the image into ~11 regions: 3-4 column strips, each cut into 2-4 wavy bands.

    Returns (runs, bbox) per region. A strip of ``n`` columns gives RLE strings of about ``2n``
    characters, i.e. 100-600 like real COCO-Stuff annotations.
    """
    regions = []
    x0 = 0
    for width in _partition(rng, w, int(rng.integers(3, 5)), 16).tolist():
        k = int(rng.integers(2, 5))
        base = np.cumsum(_partition(rng, h, k, 24))[:-1]
        inner = base[:, None] + _walk(rng, k - 1, width, 8)  # gaps >= 24 rows: bands never cross
        bounds = np.vstack([np.zeros((1, width), int), inner, np.full((1, width), h)])
        for runs, top, bottom in zip(column_runs(bounds[:-1], bounds[1:], x0, h, w), bounds[:-1], bounds[1:], strict=True):
            y0 = int(top.min())
            regions.append((runs, [float(x0), float(y0), float(width), float(bottom.max() - y0)]))
        x0 += width
    return regions


def crowd_blob(rng: np.random.Generator, h: int, w: int, fraction: float) -> tuple[list[int], list[float]]:
    """An iscrowd region of about ``fraction`` of the image: uncompressed RLE counts and bbox."""
    side = max(8, int(np.sqrt(fraction * h * w)))
    n, rows = min(side, w - 2), min(side, h - 2)
    x0, y0 = int(rng.integers(0, w - n + 1)), int(rng.integers(0, h - rows + 1))
    pad = max(1, rows // 4)
    top = y0 + pad // 2 + _walk(rng, 1, n, pad // 2)
    bottom = y0 + rows - pad // 2 + _walk(rng, 1, n, pad // 2)
    counts = column_runs(top, bottom, x0, h, w)[0].tolist()
    return counts, [float(x0), float(top.min()), float(n), float(bottom.max() - top.min())]


def star_polygons(rng: np.random.Generator, cx, cy, rx, ry, w, h) -> list[list[float]]:
    """Star-shaped polygons (one per row of the argument arrays) with ~24 vertices, inside the image.

    Angles increase strictly and radii stay positive, so the polygons never self-intersect.
    """
    nv = np.clip(4 + np.round(rng.gamma(2.0, 10.0, size=len(cx))), 4, 200).astype(int)
    owner = np.repeat(np.arange(len(cx)), nv)
    step = np.arange(len(owner)) - np.repeat(np.cumsum(nv) - nv, nv)
    angle = 2 * np.pi * (step + 0.6 * rng.random(len(owner))) / nv[owner] + rng.random(len(cx))[owner] * 2 * np.pi
    radius = 1.0 + rng.uniform(-0.25, 0.25, size=len(owner))
    xs = np.clip(cx[owner] + rx[owner] * radius * np.cos(angle), 0, w[owner])
    ys = np.clip(cy[owner] + ry[owner] * radius * np.sin(angle), 0, h[owner])
    flat = np.round(np.column_stack([xs, ys]), 2).ravel().tolist()
    ends = 2 * np.cumsum(nv)
    return [flat[e - 2 * k : e] for e, k in zip(ends.tolist(), nv.tolist(), strict=True)]


def border_polygon(h: int, w: int) -> list[float]:
    """A polygon along the image border: a foreground covering the whole image."""
    return [0.0, 0.0, w / 2, 0.0, float(w), 0.0, float(w), h / 2, float(w), float(h), w / 2, float(h),
            0.0, float(h), 0.0, h / 2]


# --- one chunk of images ---------------------------------------------------------------------------

POLYGON, CROWD, BORDER = 0, 1, 2


@dataclass
class AnnPlan:
    """The instance annotations of a chunk, one entry per annotation, grouped by image (row)."""

    row: np.ndarray
    category: np.ndarray
    fraction: np.ndarray  # intended share of the image
    kind: np.ndarray  # POLYGON, CROWD or BORDER
    parts: np.ndarray  # polygons in the annotation (1 or 2)


def _log_uniform(rng: np.random.Generator, low: float, high: float, n: int) -> np.ndarray:
    return np.exp(rng.uniform(np.log(low), np.log(high), size=n))


def _animal_plan(rng: np.random.Generator, table: ImageTable, rows: np.ndarray) -> AnnPlan:
    animals, outcome = table.animals[rows], table.outcome[rows]
    extra = (rng.random(len(rows)) < 0.15).astype(int) + (rng.random(len(rows)) < 0.03)
    single = np.isin(outcome, [OUTCOMES.index("small"), OUTCOMES.index("large")])
    count = np.where(animals == 0, 0, np.where(animals == 3, 2, np.where(single, 1, 1 + extra)))
    row = np.repeat(np.arange(len(rows)), count)
    first = np.r_[True, row[1:] != row[:-1]] if len(row) else np.zeros(0, bool)
    category = np.where(animals[row] == 2, DOG_ID, CAT_ID)
    category[(animals[row] == 3) & ~first] = DOG_ID  # "both" images: one cat, then one dog
    fraction = _log_uniform(rng, 0.03, 0.4, len(row)) / count[row]
    small = outcome[row] == OUTCOMES.index("small")
    fraction[small] = _log_uniform(rng, 0.0008, 0.004, int(small.sum()))
    kind = np.where(outcome[row] == OUTCOMES.index("large"), BORDER, POLYGON)
    crowd = first & (kind == POLYGON) & ~small & (rng.random(len(row)) < ANIMAL_CROWD_SHARE)
    kind[crowd] = CROWD
    return AnnPlan(row, category, fraction, kind, np.ones(len(row), int))


def _other_plan(rng: np.random.Generator, table: ImageTable, rows: np.ndarray, pools: Pools,
                has_crowd: np.ndarray) -> AnnPlan:
    animal = table.animals[rows] > 0
    mean = np.where(animal, 5.0, INSTANCES_PER_IMAGE + 0.07)
    count = rng.negative_binomial(1.5, 1.5 / (1.5 + mean))
    count[~animal & (rng.random(len(rows)) < 0.01)] = 0  # ~1% of COCO images have no instances
    row = np.repeat(np.arange(len(rows)), count)
    scene = table.scene[rows][row]
    category = np.zeros(len(row), int)
    for index, name in enumerate(SCENES):
        mine = scene == index
        category[mine] = rng.choice(pools.thing_ids[name], size=int(mine.sum()), p=pools.thing_p[name])
    first = np.r_[True, row[1:] != row[:-1]] if len(row) else np.zeros(0, bool)
    crowd = first & ~has_crowd[row] & (rng.random(len(row)) < CROWD_SHARE)
    kind = np.where(crowd, CROWD, POLYGON)
    parts = np.where((kind == POLYGON) & (rng.random(len(row)) < MULTI_PART_SHARE), 2, 1)
    return AnnPlan(row, category, _log_uniform(rng, 0.0005, 0.25, len(row)), kind, parts)


def instance_plan(rng: np.random.Generator, table: ImageTable, rows: np.ndarray, pools: Pools) -> AnnPlan:
    animals = _animal_plan(rng, table, rows)
    has_crowd = np.zeros(len(rows), bool)
    has_crowd[animals.row[animals.kind == CROWD]] = True  # COCO has at most one crowd id per image
    other = _other_plan(rng, table, rows, pools, has_crowd)
    merged = [np.concatenate([getattr(animals, f), getattr(other, f)]) for f in AnnPlan.__dataclass_fields__]
    order = np.argsort(merged[0], kind="stable")  # animals first within each image
    return AnnPlan(*(m[order] for m in merged))


def plan_polygons(rng: np.random.Generator, plan: AnnPlan, h: np.ndarray, w: np.ndarray) -> list[list[float]]:
    """The star polygons of every POLYGON annotation part, in plan order."""
    ann = np.repeat(np.flatnonzero(plan.kind == POLYGON), plan.parts[plan.kind == POLYGON])
    ph, pw = h[plan.row[ann]], w[plan.row[ann]]
    area = plan.fraction[ann] / plan.parts[ann] * ph * pw
    aspect = np.exp(rng.uniform(-0.5, 0.5, size=len(ann)))
    rx = np.minimum(np.sqrt(area / np.pi) * aspect, pw / 2)
    ry = np.minimum(area / (np.pi * rx), ph / 2)
    cx = rx + rng.random(len(ann)) * (pw - 2 * rx)
    cy = ry + rng.random(len(ann)) * (ph - 2 * ry)
    return star_polygons(rng, cx, cy, rx, ry, pw, ph)


def _polygon_annotation(polys: list[list[float]], rles: list, h: int, w: int) -> tuple[float, list[float]]:
    """pycocotools area (of the union, for several parts) and bbox of one polygon annotation."""
    rle = rles[0] if len(rles) == 1 else mask_utils.merge(rles)
    xs = [x for p in polys for x in p[0::2]]
    ys = [y for p in polys for y in p[1::2]]
    bbox = [round(min(xs), 2), round(min(ys), 2), round(max(xs) - min(xs), 2), round(max(ys) - min(ys), 2)]
    return float(mask_utils.area(rle)), bbox


def image_instances(rng, plan: AnnPlan, span: range, polygons, image_id: int, h: int, w: int) -> list[dict]:
    """The instance annotations of one image (ids are set by the caller)."""
    shapes = []  # (kind, category, polygons or counts)
    for a in span:
        kind = int(plan.kind[a])
        if kind == CROWD:
            shapes.append((kind, int(plan.category[a]), crowd_blob(rng, h, w, float(plan.fraction[a]))))
        else:
            parts = [next(polygons) for _ in range(plan.parts[a])] if kind == POLYGON else [border_polygon(h, w)]
            shapes.append((kind, int(plan.category[a]), parts))
    flat = [p for kind, _, parts in shapes if kind != CROWD for p in parts]
    rles = iter(mask_utils.frPyObjects(flat, h, w)) if flat else iter(())
    out = []
    for kind, category, shape in shapes:
        if kind == CROWD:
            counts, bbox = shape
            seg, area, crowd = {"counts": counts, "size": [h, w]}, float(sum(counts[1::2])), 1
        else:
            area, bbox = _polygon_annotation(shape, [next(rles) for _ in shape], h, w)
            seg, crowd = shape, 0
        out.append({"segmentation": seg, "area": area, "iscrowd": crowd, "image_id": image_id,
                    "bbox": bbox, "category_id": category})
    return out


def image_stuff(rng: np.random.Generator, pools: Pools, scene: str, image_id: int, h: int, w: int) -> list[dict]:
    """COCO-Stuff annotations of one image: distinct categories, one of the scene's list among them."""
    regions = stuff_regions(rng, h, w)
    forced = int(rng.choice(pools.stuff_forced[scene]))
    weights = np.where(pools.stuff_ids == forced, 0.0, pools.stuff_w[scene])
    others = rng.choice(pools.stuff_ids, size=len(regions) - 1, replace=False, p=weights / weights.sum())
    categories = rng.permutation(np.r_[forced, others]).tolist()
    rles = mask_utils.frPyObjects([{"counts": runs, "size": [h, w]} for runs, _ in regions], h, w)
    return [{"segmentation": {"counts": rle["counts"].decode("ascii"), "size": [h, w]},
             "area": float(runs[1::2].sum()), "iscrowd": 0, "image_id": image_id, "bbox": bbox,
             "category_id": category}
            for (runs, bbox), rle, category in zip(regions, rles, categories, strict=True)]


def chunk_annotations(spec: Spec, index: int, table: ImageTable, rows: np.ndarray,
                      pools: Pools) -> tuple[list[dict], list[dict]]:
    """Instance and stuff annotations (without ids) of the images ``rows``; seeded by the chunk."""
    rng = np.random.default_rng([spec.seed, 1, index])
    h, w = table.height[rows], table.width[rows]
    plan = instance_plan(rng, table, rows, pools)
    polygons = iter(plan_polygons(rng, plan, h, w))
    starts = np.searchsorted(plan.row, np.arange(len(rows) + 1)).tolist()
    instances, stuff = [], []
    for i, row in enumerate(rows.tolist()):
        image_id, hi, wi = int(table.ids[row]), int(h[i]), int(w[i])
        instances += image_instances(rng, plan, range(starts[i], starts[i + 1]), polygons, image_id, hi, wi)
        stuff += image_stuff(rng, pools, SCENES[table.scene[row]], image_id, hi, wi)
    return instances, stuff


# --- files -----------------------------------------------------------------------------------------

class CocoWriter:
    """Streams one COCO file: the head with the images, then annotations chunk by chunk.

    Keys come in the order of the real files (info, licenses, images, annotations, categories).
    """

    def __init__(self, path: Path, info: dict, images: list[dict], categories: list[dict]) -> None:
        self.path, self.categories, self.count = path, categories, 0
        self.handle = path.open("w", encoding="ascii")
        licenses = [{"url": f"http://creativecommons.org/licenses/{i}/2.0/", "id": i, "name": f"License {i}"}
                    for i in range(1, 9)]
        head = json.dumps({"info": info, "licenses": licenses, "images": images})
        self.handle.write(head[:-1] + ', "annotations": [')

    def add(self, annotations: list[dict]) -> None:
        if annotations:
            self.handle.write((", " if self.count else "") + json.dumps(annotations)[1:-1])
            self.count += len(annotations)

    def close(self) -> None:
        self.handle.write('], "categories": ' + json.dumps(self.categories) + "}")
        self.handle.close()


def _info(kind: str) -> dict:
    return {"description": f"COCO 2017 {kind} (segbench scale benchmark, synthetic annotations)",
            "url": "http://cocodataset.org", "version": "1.0", "year": 2017,
            "contributor": "segbench bench/gen_coco_scale.py", "date_created": "2017/09/01"}


def write_split(spec: Spec, table: ImageTable, pools: Pools, annotations: Path, val: bool,
                next_ids: dict[str, int]) -> None:
    """Both files of one split; ``next_ids`` carries the annotation ids on from split to split."""
    split = "val2017" if val else "train2017"
    rows = np.flatnonzero(table.val == val)
    images = image_records(table, rows)
    instances = CocoWriter(annotations / f"instances_{split}.json", _info("instances"), images, pools.things)
    stuff = CocoWriter(annotations / f"stuff_{split}.json", _info("Stuff"), images, pools.stuff)
    for start in range(0, len(rows), CHUNK):
        chunk = rows[start : start + CHUNK]
        things, regions = chunk_annotations(spec, int(chunk[0]), table, chunk, pools)
        for ann in things:
            if ann["iscrowd"]:
                ann["id"] = CROWD_ID_BASE + ann["image_id"]
            else:
                ann["id"], next_ids["instances"] = next_ids["instances"], next_ids["instances"] + 1
        for ann in regions:
            ann["id"], next_ids["stuff"] = next_ids["stuff"], next_ids["stuff"] + 1
        instances.add(things)
        stuff.add(regions)
    instances.close()
    stuff.close()


def generate(spec: Spec, root: Path) -> dict:
    """Write the tree under ``root`` (replacing it) and return a summary with counts and sizes."""
    started = time.perf_counter()
    staging = root.with_name(root.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "annotations").mkdir(parents=True)
    pools, table = load_pools(), image_table(spec)
    next_ids = {"instances": 1, "stuff": STUFF_ID_BASE}
    for val in (False, True):
        write_split(spec, table, pools, staging / "annotations", val, next_ids)
    files = sorted((staging / "annotations").glob("*.json"))
    summary = {
        "spec": asdict(spec),
        "seconds": round(time.perf_counter() - started, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "file_mb": {f.name: round(f.stat().st_size / 2**20, 1) for f in files},
        "images": {"train2017": int((~table.val).sum()), "val2017": int(table.val.sum())},
        "instance_annotations": next_ids["instances"] - 1,  # crowd ones excluded
        "stuff_annotations": next_ids["stuff"] - STUFF_ID_BASE,
        "cat_images": int(np.isin(table.animals, [1, 3]).sum()),
        "dog_images": int(np.isin(table.animals, [2, 3]).sum()),
        "cat_and_dog_images": int((table.animals == 3).sum()),
    }
    (staging / "generation.json").write_text(json.dumps(summary, indent=1) + "\n")
    shutil.rmtree(root, ignore_errors=True)
    staging.rename(root)
    return summary


def ensure_tree(spec: Spec, *, regenerate: bool = False, out_dir: Path = OUT_DIR) -> tuple[Path, dict, bool]:
    """The cached tree for ``spec`` (generated if absent): root, summary, whether it was generated now."""
    root = spec.root(out_dir)
    marker = root / "generation.json"  # written last, so its presence means the tree is complete
    if marker.is_file() and not regenerate:
        return root, json.loads(marker.read_text()), False
    return root, generate(spec, root), True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of COCO 2017's size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--regenerate", action="store_true", help="ignore a cached tree")
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR)
    args = parser.parse_args(argv)
    root, summary, generated = ensure_tree(Spec(args.scale, args.seed), regenerate=args.regenerate,
                                           out_dir=args.out_dir)
    print(json.dumps({"root": str(root), "generated": generated, **summary}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
