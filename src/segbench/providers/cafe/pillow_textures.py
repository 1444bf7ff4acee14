"""Procedural textures of the offline compositor: surface patterns (SM), scenes (CC), materials (OC).

Each renderer turns a word from an :class:`~segbench.schemas.edits.EditPlan` ("watermelon",
"snowy mountain slope", "amethyst crystal") into pixels: a keyword table picks a recipe, and an
unknown word gets a recipe derived from its hash, so every word renders, and always the same way.
Randomness comes only from :func:`word_rng` (numpy's PCG64, seeded from the word and the edit
seed), so the same inputs give the same bytes. Patterns and materials return colour *and* a
structure the editor multiplies with the target's shading; compositing and mask rules live in
``pillow_editor.py``.
"""

from __future__ import annotations

import colorsys
import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from PIL import Image, ImageDraw

RGB = tuple[int, int, int]
R = TypeVar("R")


def word_rng(word: str, seed: int, salt: str) -> np.random.Generator:
    """A generator that depends only on ``(salt, word, seed)``."""
    digest = hashlib.sha256(f"{salt}|{word.strip().lower()}|{seed}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "big"))


def lookup(text: str, table: Sequence[tuple[tuple[str, ...], R]]) -> R | None:
    """The recipe of the first table row with a keyword in ``text`` (matched at word starts)."""
    lowered = text.lower()
    for keywords, recipe in table:
        if any(re.search(rf"\b{re.escape(k)}", lowered) for k in keywords):
            return recipe
    return None


def smooth_noise(rng: np.random.Generator, height: int, width: int, cells: int) -> np.ndarray:
    """Value noise in [0, 1]: a ``cells``-wide random grid upsampled bicubically to H×W."""
    gh = max(2, round(cells * height / max(height, width)))
    gw = max(2, round(cells * width / max(height, width)))
    grid = Image.fromarray(rng.random((gh, gw)).astype(np.float32), "F")
    out = np.asarray(grid.resize((width, height), Image.Resampling.BICUBIC), dtype=np.float32)
    low, high = float(out.min()), float(out.max())
    return (out - low) / (high - low) if high > low else np.zeros_like(out)


def hash_colour(word: str, salt: str, saturation: float, value: float, hue_shift: float = 0.0) -> RGB:
    hue = int.from_bytes(hashlib.sha256(f"{salt}|{word.lower()}".encode()).digest()[:2], "big") / 65536
    r, g, b = colorsys.hsv_to_rgb((hue + hue_shift) % 1.0, saturation, value)
    return round(r * 255), round(g * 255), round(b * 255)


def _mix(a: RGB, b: RGB, t: np.ndarray) -> np.ndarray:
    """Per-pixel blend of two colours by ``t`` in [0, 1] → H×W×3 float."""
    lo, hi = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return lo + (hi - lo) * t[..., None]


def _ramp(dark: RGB, base: RGB, light: RGB, t: np.ndarray) -> np.ndarray:
    """A three-stop colour ramp: dark at 0, base at 0.5, light at 1."""
    t = np.clip(t, 0.0, 1.0)
    return np.where((t < 0.5)[..., None], _mix(dark, base, t * 2), _mix(base, light, t * 2 - 1))


# -- SM: surface patterns ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Pattern:
    kind: str  # "stripes", "spots", "rings" (rosettes), "checks" or "blotches"
    ground: RGB
    mark: RGB
    scale: float = 1 / 6  # period as a fraction of the target's smaller side
    duty: float = 0.45  # stripes: the mark's share of a period
    wave: float = 0.0  # stripes: how much they meander


PATTERNS: tuple[tuple[tuple[str, ...], Pattern], ...] = (
    (("watermelon",), Pattern("stripes", (150, 200, 95), (35, 95, 40), scale=1 / 7, wave=0.35)),
    (("zebra",), Pattern("stripes", (235, 235, 228), (22, 22, 22), scale=1 / 8, duty=0.5, wave=0.25)),
    (("tiger",), Pattern("stripes", (222, 128, 36), (28, 22, 16), scale=1 / 6, duty=0.28, wave=0.3)),
    (("leopard", "jaguar"), Pattern("rings", (212, 168, 92), (58, 38, 20), scale=1 / 7)),
    (("cheetah", "ladybug", "ladybird"), Pattern("spots", (215, 170, 90), (30, 24, 18), scale=1 / 9)),
    (("dalmatian", "cow", "holstein"), Pattern("spots", (242, 240, 234), (24, 24, 24), scale=1 / 5)),
    (("giraffe",), Pattern("spots", (238, 214, 165), (150, 84, 38), scale=1 / 4)),
    (("strawberry",), Pattern("spots", (205, 32, 42), (238, 208, 92), scale=1 / 14)),
    (("checker", "chess", "plaid", "tartan", "gingham"), Pattern("checks", (238, 234, 224), (190, 38, 40))),
    (("camouflage", "camo", "military"), Pattern("blotches", (96, 104, 66), (58, 50, 36), scale=1 / 3)),
    (("polka",), Pattern("spots", (200, 30, 60), (245, 245, 245), scale=1 / 8)),
    (("honeycomb", "bee"), Pattern("stripes", (235, 185, 30), (30, 25, 15), scale=1 / 6, duty=0.4)),
)
LADYBUG = Pattern("spots", (200, 30, 25), (20, 20, 20), scale=1 / 6)


def pattern_for(word: str) -> Pattern:
    """The pattern recipe of ``word``; unknown words get a kind and colours from their hash."""
    if re.search(r"\blady ?b", word.lower()):
        return LADYBUG
    found = lookup(word, PATTERNS)
    if found is not None:
        return found
    kinds = ("stripes", "spots", "checks", "blotches")
    kind = kinds[int(hashlib.sha256(word.lower().encode()).hexdigest(), 16) % len(kinds)]
    return Pattern(kind, hash_colour(word, "ground", 0.45, 0.9), hash_colour(word, "ground", 0.75, 0.35, 0.08))


def render_pattern(pattern: Pattern, height: int, width: int, rng: np.random.Generator) -> np.ndarray:
    """An H×W×3 float colour field of ``pattern`` laid over a target box of that size."""
    period = max(4.0, pattern.scale * min(height, width))
    angle = rng.uniform(-0.5, 0.5) + (math.pi / 2 if pattern.kind == "stripes" and height > width else 0.0)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    u = (xx * math.cos(angle) + yy * math.sin(angle)) / period
    v = (-xx * math.sin(angle) + yy * math.cos(angle)) / period
    if pattern.kind == "stripes":
        u = u + pattern.wave * np.sin(2 * math.pi * v / 3 + rng.uniform(0, 2 * math.pi))
        mark = ((u - np.floor(u)) < pattern.duty).astype(np.float32)
    elif pattern.kind == "checks":
        mark = ((np.floor(u) + np.floor(v)) % 2).astype(np.float32)
    elif pattern.kind == "blotches":
        mark = smooth_noise(rng, height, width, max(3, round(max(height, width) / period))) > 0.5
        mark = mark.astype(np.float32)
    else:
        mark = _draw_spots(height, width, period, rng, rings=pattern.kind == "rings")
    return _mix(pattern.ground, pattern.mark, mark)


def _draw_spots(height: int, width: int, period: float, rng: np.random.Generator, *, rings: bool) -> np.ndarray:
    canvas = Image.new("L", (width, height), 0)
    draw = ImageDraw.Draw(canvas)
    count = max(3, round(width * height / period**2 * 0.8))
    for x, y, r in zip(rng.uniform(0, width, count), rng.uniform(0, height, count),
                       rng.uniform(0.22, 0.42, count) * period, strict=True):  # fmt: skip
        box = (x - r, y - r * rng.uniform(0.75, 1.0), x + r, y + r)
        if rings:  # a leopard's rosette: a broken dark ring
            draw.arc(box, start=float(rng.uniform(0, 90)), end=float(rng.uniform(250, 340)), fill=255,
                     width=max(1, round(r / 3)))  # fmt: skip
        else:
            draw.ellipse(box, fill=255)
    return np.asarray(canvas, dtype=np.float32) / 255.0


# -- CC: scenes ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scene:
    sky_top: RGB
    sky_low: RGB
    ground_far: RGB
    ground_near: RGB
    horizon: float = 0.5  # fraction of the height where the ground starts
    feature: str = "none"  # "mountains", "buildings", "trees", "dunes", "sea", "stars", "bubbles"
    grain: float = 14.0  # texture amplitude on the ground, in grey levels


SCENES: tuple[tuple[tuple[str, ...], Scene], ...] = (
    (("underwater", "reef", "coral", "seabed", "sea floor", "ocean floor"),
     Scene((8, 40, 92), (34, 112, 150), (150, 140, 104), (118, 106, 80), 0.78, "bubbles")),
    (("space", "galaxy", "orbit", "moon", "planet", "star"),
     Scene((4, 4, 16), (18, 14, 42), (96, 96, 100), (62, 62, 66), 0.8, "stars", 22)),
    (("snow", "ski", "glacier", "arctic", "antarctic", "winter", "frozen", "ice"),
     Scene((104, 148, 206), (204, 222, 240), (232, 238, 246), (250, 252, 255), 0.45, "mountains", 6)),
    (("beach", "seaside", "coast", "shore", "tropical", "island"),
     Scene((64, 138, 214), (176, 214, 240), (226, 204, 150), (236, 216, 168), 0.5, "sea", 10)),
    (("desert", "dune", "sahara", "canyon"),
     Scene((120, 168, 220), (236, 214, 170), (222, 170, 100), (196, 136, 72), 0.45, "dunes", 12)),
    (("forest", "jungle", "woods", "rainforest"),
     Scene((120, 160, 150), (170, 196, 160), (62, 96, 44), (44, 70, 30), 0.55, "trees", 18)),
    (("city", "street", "urban", "downtown", "road", "traffic"),
     Scene((150, 166, 186), (206, 210, 214), (92, 92, 96), (70, 70, 74), 0.55, "buildings", 8)),
    (("lava", "volcan", "fire", "hell"),
     Scene((40, 10, 8), (180, 60, 20), (52, 36, 32), (30, 20, 18), 0.55, "mountains", 20)),
    (("ocean", "sea", "lake", "river", "water", "surf"),
     Scene((70, 140, 210), (180, 214, 236), (40, 100, 150), (28, 80, 126), 0.45, "none", 10)),
    (("night",), Scene((6, 10, 34), (30, 40, 80), (24, 30, 28), (14, 18, 16), 0.6, "stars", 6)),
    (("grass", "field", "meadow", "farm", "savanna", "park", "pasture", "garden"),
     Scene((84, 150, 222), (190, 220, 240), (110, 160, 70), (84, 136, 50), 0.45, "none", 16)),
    (("mountain", "hill", "cliff", "rock"),
     Scene((96, 146, 206), (196, 218, 236), (120, 116, 104), (96, 92, 84), 0.5, "mountains", 14)),
    (("kitchen", "room", "office", "indoor", "house", "bedroom"),
     Scene((214, 206, 190), (226, 218, 202), (150, 112, 76), (130, 94, 62), 0.6, "none", 8)),
)  # fmt: skip
FEATURES = (("mountain", "mountains"), ("slope", "mountains"), ("city", "buildings"), ("skyline", "buildings"),
            ("forest", "trees"), ("tree", "trees"), ("star", "stars"), ("night", "stars"))  # fmt: skip


def scene_for(words: str) -> Scene:
    """The scene recipe of ``words``; a keyword for a feature ("mountain", "city") adds it."""
    found = lookup(words, SCENES)
    if found is None:
        found = Scene(hash_colour(words, "sky", 0.5, 0.8), hash_colour(words, "sky", 0.2, 0.95),
                      hash_colour(words, "ground", 0.45, 0.6), hash_colour(words, "ground", 0.5, 0.45))  # fmt: skip
    feature = lookup(words, tuple(((k,), f) for k, f in FEATURES))
    if feature is not None and found.feature in ("none", "mountains"):
        return Scene(**{**found.__dict__, "feature": feature})
    return found


def render_scene(scene: Scene, height: int, width: int, rng: np.random.Generator) -> Image.Image:
    """A W×H RGB image of ``scene``: sky and ground gradients, texture, then the feature on top."""
    y = np.arange(height, dtype=np.float32)[:, None] / max(1, height - 1)
    horizon = scene.horizon
    sky = _mix(scene.sky_top, scene.sky_low, np.broadcast_to(np.clip(y / horizon, 0, 1), (height, width)))
    ground_t = np.broadcast_to(np.clip((y - horizon) / max(1e-6, 1 - horizon), 0, 1), (height, width))
    ground = _mix(scene.ground_far, scene.ground_near, ground_t)
    grain = (smooth_noise(rng, height, width, 24) - 0.5) + 0.5 * (rng.random((height, width)) - 0.5)
    ground = ground + scene.grain * grain[..., None]
    sky = sky + 3.0 * (smooth_noise(rng, height, width, 6) - 0.5)[..., None]  # faint clouds
    pixels = np.where((y >= horizon)[..., None], ground, sky)
    image = Image.fromarray(np.clip(np.rint(pixels), 0, 255).astype(np.uint8), "RGB")
    _draw_feature(ImageDraw.Draw(image), scene, width, height, rng)
    return image


def _draw_feature(draw: ImageDraw.ImageDraw, scene: Scene, w: int, h: int, rng: np.random.Generator) -> None:
    hy = scene.horizon * h
    shade = tuple(round(c * 0.75) for c in scene.ground_far)
    if scene.feature == "mountains":
        for x in rng.uniform(-0.1 * w, 1.1 * w, 5):
            half, top = rng.uniform(0.15, 0.3) * w, hy - rng.uniform(0.12, 0.3) * h
            draw.polygon([(x - half, hy), (x, top), (x + half, hy)], fill=shade)
            cap = 0.3  # the snow cap: the top 30 % of the peak
            draw.polygon([(x - half * cap, top + (hy - top) * cap), (x, top), (x + half * cap, top + (hy - top) * cap)],
                         fill=(246, 248, 252))  # fmt: skip
    elif scene.feature == "buildings":
        x = -rng.uniform(0, 0.05) * w
        while x < w:
            bw, bh = rng.uniform(0.06, 0.14) * w, rng.uniform(0.15, 0.4) * h
            grey = int(rng.integers(70, 130))
            draw.rectangle([x, hy - bh, x + bw, hy], fill=(grey, grey, grey + 8))
            for wy in np.arange(hy - bh + 4, hy - 6, 9):
                for wx in np.arange(x + 3, x + bw - 5, 8):
                    if rng.random() < 0.5:
                        draw.rectangle([float(wx), float(wy), float(wx) + 3, float(wy) + 4], fill=(236, 222, 150))
            x += bw + rng.uniform(0, 0.02) * w
    elif scene.feature == "trees":
        for x in np.sort(rng.uniform(0, w, max(6, w // 30))):
            th, tw = rng.uniform(0.2, 0.4) * h, rng.uniform(0.03, 0.06) * w
            green = (int(rng.integers(20, 50)), int(rng.integers(60, 100)), int(rng.integers(25, 45)))
            draw.rectangle([x - tw / 6, hy - th * 0.3, x + tw / 6, hy + 2], fill=(70, 48, 30))
            draw.polygon([(x - tw, hy - th * 0.25), (x, hy - th), (x + tw, hy - th * 0.25)], fill=green)
    elif scene.feature == "dunes":
        for k in range(3):
            base, amp, freq = hy + k * 0.12 * (h - hy), rng.uniform(4, 12), rng.uniform(1.5, 3.0)
            phase = rng.uniform(0, 2 * math.pi)
            crest = [(x, base - amp * math.sin(freq * 2 * math.pi * x / w + phase)) for x in range(0, w + 8, 8)]
            tone = tuple(round(c * (0.92 + 0.04 * k)) for c in scene.ground_far)
            draw.polygon([*crest, (w, h), (0, h)], fill=tone)
    elif scene.feature == "sea":
        draw.rectangle([0, hy - 0.12 * h, w, hy], fill=(40, 110, 170))
        for _ in range(max(4, w // 40)):
            x, y = rng.uniform(0, w), rng.uniform(hy - 0.12 * h, hy)
            draw.line([(x, y), (x + rng.uniform(6, 16), y)], fill=(200, 230, 245))
    elif scene.feature in ("stars", "bubbles"):
        top = hy if scene.feature == "bubbles" else 0.9 * hy
        for x, y, r in zip(rng.uniform(0, w, max(12, w * h // 900)), rng.uniform(0, top, max(12, w * h // 900)),
                           rng.uniform(0.5, 2.5, max(12, w * h // 900)), strict=True):  # fmt: skip
            if scene.feature == "stars":
                draw.ellipse([x - r / 2, y - r / 2, x + r / 2, y + r / 2], fill=(250, 250, 235))
            else:
                draw.ellipse([x - 2 * r, y - 2 * r, x + 2 * r, y + 2 * r], outline=(170, 220, 240))


# -- OC: materials ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Material:
    kind: str  # "facets", "marble", "metal", "wood", "stone", "glass"
    dark: RGB
    base: RGB
    light: RGB


MATERIALS: tuple[tuple[tuple[str, ...], Material], ...] = (
    (("amethyst",), Material("facets", (52, 16, 82), (148, 86, 200), (238, 214, 255))),
    (("ruby",), Material("facets", (70, 6, 16), (190, 24, 48), (255, 190, 200))),
    (("emerald", "jade"), Material("facets", (8, 60, 34), (30, 150, 90), (190, 250, 210))),
    (("crystal", "quartz", "diamond", "ice", "gem"),
     Material("facets", (90, 120, 150), (190, 220, 240), (255, 255, 255))),
    (("glass",), Material("glass", (90, 140, 150), (190, 225, 230), (255, 255, 255))),
    (("marble",), Material("marble", (96, 96, 104), (222, 219, 212), (250, 250, 247))),
    (("gold", "golden"), Material("metal", (84, 56, 8), (212, 168, 52), (255, 242, 176))),
    (("bronze", "brass"), Material("metal", (62, 36, 14), (168, 108, 52), (242, 204, 150))),
    (("copper",), Material("metal", (70, 28, 14), (184, 96, 58), (250, 196, 164))),
    (("silver", "chrome", "steel", "metal", "iron", "alumin", "tin"), Material("metal", (40, 42, 46), (160, 164, 170),
                                                                              (250, 250, 252))),
    (("wood", "oak", "timber", "bamboo"), Material("wood", (84, 50, 22), (156, 106, 58), (204, 156, 100))),
    (("stone", "granite", "rock", "concrete", "cement", "sandstone"), Material("stone", (70, 70, 68), (142, 140, 134),
                                                                               (206, 204, 198))),
    (("clay", "terracotta", "ceramic", "porcelain", "plaster"), Material("stone", (110, 58, 34), (196, 120, 82),
                                                                          (238, 200, 170))),
)  # fmt: skip


def material_for(words: str) -> Material:
    """The material recipe of ``words``; unknown words get a matte stone-like material in a hash hue."""
    found = lookup(words, MATERIALS)
    if found is not None:
        return found
    return Material("stone", hash_colour(words, "mat", 0.6, 0.3), hash_colour(words, "mat", 0.45, 0.65),
                    hash_colour(words, "mat", 0.2, 0.95))  # fmt: skip


def render_material(material: Material, shade: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """An H×W×3 float rendering of ``material`` lit by ``shade`` (H×W in [0, 1], the target's form)."""
    height, width = shade.shape
    period = max(6.0, min(height, width) / 5)
    if material.kind == "facets":
        cells = _facet_values(height, width, period, rng)
        return _ramp(material.dark, material.base, material.light, 0.55 * shade + 0.5 * cells - 0.05)
    if material.kind == "metal":
        # Polished metal: a contrast-stretched shade plus a tight specular highlight and soft reflections.
        reflect = smooth_noise(rng, height, width, 4)
        t = 0.1 + 0.75 * shade**1.6 + 0.25 * shade**10 + 0.15 * (reflect - 0.5)
        return _ramp(material.dark, material.base, material.light, t)
    if material.kind == "glass":
        return _ramp(material.dark, material.base, material.light, 0.45 + 0.4 * shade + 0.3 * shade**12)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    warp = smooth_noise(rng, height, width, 5)
    if material.kind == "marble":
        angle = rng.uniform(0, math.pi)
        along = (xx * math.cos(angle) + yy * math.sin(angle)) / period
        veins = np.exp(-np.abs(np.sin(math.pi * (along + 2.5 * warp))) * 9)  # thin dark veins
        return _ramp(material.dark, material.base, material.light, 0.45 + 0.45 * shade - 0.45 * veins)
    if material.kind == "wood":
        cx, cy = rng.uniform(-0.5, 1.5) * width, -rng.uniform(0.5, 2.0) * height  # rings' centre off the target
        radius = np.hypot(xx - cx, yy - cy) / (period / 3) + 3.0 * warp
        rings = 0.5 + 0.5 * np.sin(2 * math.pi * radius)
        return _ramp(material.dark, material.base, material.light, 0.2 + 0.5 * shade + 0.25 * rings)
    speckle = rng.random((height, width)).astype(np.float32)
    return _ramp(material.dark, material.base, material.light, 0.15 + 0.55 * shade + 0.2 * warp + 0.15 * speckle)


def _facet_values(height: int, width: int, period: float, rng: np.random.Generator) -> np.ndarray:
    """Flat facets: each pixel takes the brightness of its nearest random seed (Voronoi cells)."""
    count = int(np.clip(width * height / period**2 * 1.5, 6, 80))
    sx, sy = rng.uniform(0, width, count), rng.uniform(0, height, count)
    values = rng.uniform(0.0, 1.0, count)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    nearest: np.ndarray = np.zeros((height, width), dtype=np.int64)
    best: np.ndarray = np.full((height, width), np.inf, dtype=np.float32)
    for k in range(count):  # one pass per seed keeps memory at H×W, not H×W×count
        d = (xx - sx[k]) ** 2 + (yy - sy[k]) ** 2
        closer = d < best
        best = np.where(closer, d, best)
        nearest = np.where(closer, k, nearest)
    return values[nearest].astype(np.float32)
