"""A small synthetic CUB-200-2011 + Places source for the demo and the tests.

Writes a CUB-like tree (``classes.txt``, ``images.txt``, ``image_class_labels.txt``,
``train_test_split.txt``, ``images/<class>/<file>.jpg``, ``segmentations/<class>/<file>.png``) with
bird-shaped masks (ellipse body, head, beak, tail) on plain backgrounds, and a Places-like tree with
green/brown land textures and blue water waves. Species include waterbird keywords and the names
that substring matching mislabels, so the species rule shows in the demo. Byte-identical by seed.
"""

from __future__ import annotations

import io
import logging
import random
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from segbench.core.io import atomic_write_bytes, atomic_write_text

log = logging.getLogger(__name__)

# (CUB class folder, body colour); three waterbird species and three landbirds (two of which the
# released substring rule calls waterbirds).
SPECIES = (
    ("001.Black_footed_Albatross", (60, 55, 50)),
    ("050.Eared_Grebe", (90, 70, 40)),
    ("141.Artic_Tern", (230, 230, 235)),
    ("017.Cardinal", (200, 30, 40)),
    ("194.Eastern_Towhee", (40, 30, 30)),
    ("088.Western_Meadowlark", (220, 190, 60)),
)
LAND_PLACES = ("bamboo_forest", "forest/broadleaf")
WATER_PLACES = ("ocean", "lake/natural")
BIRD_SIZE = 128
PLACE_SIZE = (160, 120)  # not the bird size, so compositing has to resize


def _jpeg(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=92)
    return buffer.getvalue()


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()


def draw_bird(rng: random.Random, colour: tuple[int, int, int]) -> tuple[Image.Image, Image.Image]:
    """One bird image and its segmentation (255 bird, 0 elsewhere), ``BIRD_SIZE`` square."""
    background = tuple(rng.randrange(150, 230) for _ in range(3))
    image = Image.new("RGB", (BIRD_SIZE, BIRD_SIZE), background)
    mask = Image.new("L", (BIRD_SIZE, BIRD_SIZE), 0)
    cx, cy = rng.randrange(45, 83), rng.randrange(50, 80)
    w, h = rng.randrange(22, 34), rng.randrange(13, 20)
    facing = rng.choice((-1, 1))
    head_x, head_y, r = cx + facing * (w - 2), cy - h, rng.randrange(8, 12)
    shapes = [
        ("ellipse", [cx - w, cy - h, cx + w, cy + h]),  # body
        ("ellipse", [head_x - r, head_y - r, head_x + r, head_y + r]),  # head
        ("polygon", [(head_x + facing * r, head_y - 3), (head_x + facing * (r + 10), head_y),
                     (head_x + facing * r, head_y + 3)]),  # beak
        ("polygon", [(cx - facing * (w - 4), cy - 4), (cx - facing * (w + 16), cy - 10),
                     (cx - facing * (w + 16), cy + 8)]),  # tail
    ]
    for target, fill in ((ImageDraw.Draw(image), colour), (ImageDraw.Draw(mask), 255)):
        for kind, xy in shapes:
            getattr(target, kind)(xy, fill=fill if kind != "polygon" or fill == 255 else (230, 160, 30))
    return image, mask


def draw_place(rng: np.random.Generator, water: bool) -> Image.Image:
    """A land texture (green/brown noise with stripes) or a water scene (blue waves)."""
    width, height = PLACE_SIZE
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float64)
    noise = rng.normal(0, 12, (height, width))
    if water:
        phase, freq = rng.uniform(0, 2 * np.pi), rng.uniform(0.15, 0.35)
        wave = 20 * np.sin(freq * yy + 0.05 * xx + phase)
        rgb = np.stack([30 + 0.3 * wave + noise, 90 + 0.6 * wave + noise, 170 + wave + noise], axis=-1)
    else:
        stripes = 25 * np.sin(rng.uniform(0.2, 0.6) * xx + rng.uniform(0, 6))
        rgb = np.stack([80 + 0.5 * stripes + noise, 110 + stripes + noise, 45 + 0.3 * stripes + noise], axis=-1)
    return Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8))


def bird_roots(root: str | Path) -> tuple[Path, Path]:
    """The CUB-like and Places-like folders :func:`generate_demo_birds` writes under ``root``."""
    return Path(root) / "cub", Path(root) / "places"


def generate_demo_birds(root: str | Path, *, seed: int = 0, birds_per_species: int = 30,
                        images_per_place: int = 8) -> tuple[Path, Path]:
    """Write ``root/cub`` and ``root/places``; returns their paths.

    Every fourth bird of a species is in CUB's test split (``train_test_split.txt`` value 0).
    """
    cub, places = bird_roots(root)
    classes, images, labels, split = [], [], [], []
    image_id = 0
    for class_id, (folder, colour) in enumerate(SPECIES, start=1):
        classes.append(f"{class_id} {folder}")
        stem = folder.split(".", 1)[1]
        for k in range(1, birds_per_species + 1):
            image_id += 1
            image, mask = draw_bird(random.Random(f"{seed}:bird:{image_id}"), colour)
            rel = f"{folder}/{stem}_{k:04d}"
            atomic_write_bytes(cub / "images" / f"{rel}.jpg", _jpeg(image), durable=False)
            atomic_write_bytes(cub / "segmentations" / f"{rel}.png", _png(mask), durable=False)
            images.append(f"{image_id} {rel}.jpg")
            labels.append(f"{image_id} {class_id}")
            split.append(f"{image_id} {0 if k % 4 == 0 else 1}")
    for name, lines in (("classes.txt", classes), ("images.txt", images), ("image_class_labels.txt", labels),
                        ("train_test_split.txt", split)):
        atomic_write_text(cub / name, "\n".join(lines) + "\n")
    for index, place in enumerate((*LAND_PLACES, *WATER_PLACES)):
        rng = np.random.default_rng([seed, index])
        for k in range(1, images_per_place + 1):
            image = draw_place(rng, water=place in WATER_PLACES)
            atomic_write_bytes(places / place / f"{k:08d}.jpg", _jpeg(image), durable=False)
    log.info("wrote %d synthetic birds to %s and %d place images to %s",
             image_id, cub, 4 * images_per_place, places)
    return cub, places
