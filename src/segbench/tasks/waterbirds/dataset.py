"""Waterbirds-seg: CUB birds pasted on land or water places, with ρ-controlled splits (seed 002).

Pure steps, in build order: classify species as landbird or waterbird, read a CUB-200-2011 tree and
a Places tree, assign every bird a place type and a place image, composite bird and place into an
image and a label mask, and turn a split plan into COCO-style split files. The Prefect wrappers live
in ``segbench.flows.waterbirds.build``; the generic splitter in :mod:`segbench.core.splits`.

Groups are ``g = 2·y + a`` with y: landbird 0, waterbird 1 and a: land 0, water 1; the aligned
pairings are landbird·land (0) and waterbird·water (3).

Splits follow the Waterbirds construction (Sagawa et al. 2020, which seed 002 follows): test is CUB's
official test split and val a seeded ``val_fraction`` (0.2) of CUB's train split, the rest of which is
the train pool. In val and test half of each bird type goes on its aligned place type and half on the
other, and ``val_per_group`` / ``test_per_group`` images are drawn from each group. Train is drawn per
ρ: each bird type gives the same number of birds ``T`` (the train pool's smaller type, rounded down to
even), of which ``floor(ρ·T)`` go on the aligned place type and the rest on the other, so every ρ
trains on ``2T`` images, balanced over the four groups at ρ = 0.5. A bird can therefore be drawn on
land for one ρ and on water for another: every composite is its own image, with id ``2·(CUB image id)
+ place type`` (``cub_image_id`` and ``cub_split`` say where it came from).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
from PIL import Image

from segbench.core.coco_documents import CocoDocument
from segbench.core.errors import InputError, InsufficientDataError
from segbench.core.io import open_image, read_text
from segbench.core.splits import SplitPlan, check_rhos, check_seed, group_id, train_sizes
from segbench.schemas.waterbirds import SpeciesMatch, WaterbirdsParams
from segbench.tasks.flip.outputs import FlipImageKeys
from segbench.tasks.waterbirds import versions

CLASSES = ("landbird", "waterbird")
CONTEXTS = ("land", "water")
WATERBIRD_KEYWORDS = (
    "Albatross", "Auklet", "Cormorant", "Frigatebird", "Fulmar", "Gull", "Jaeger", "Kittiwake", "Pelican",
    "Puffin", "Tern", "Gadwall", "Grebe", "Mallard", "Merganser", "Guillemot", "Pacific_Loon",
)
CUB_FILES = ("images.txt", "image_class_labels.txt", "classes.txt", "train_test_split.txt")
_TOKEN_SPLIT = re.compile(r"[_.\s]+")

# --- species rule -------------------------------------------------------------------------------


def species_tokens(name: str) -> list[str]:
    """Lower-case name tokens without the CUB number: ``001.Black_footed_Albatross`` → black, footed, albatross."""
    tokens = [t for t in _TOKEN_SPLIT.split(name.lower()) if t]
    return tokens[1:] if tokens and tokens[0].isdigit() else tokens


def is_waterbird(species_name: str, *, match: SpeciesMatch = "tokens") -> bool:
    """Whether a CUB species is a waterbird.

    ``tokens`` (default) matches whole name tokens, a multi-token keyword (``Pacific_Loon``) as a
    consecutive run. ``substring`` reproduces the released construction: a case-insensitive
    substring test, which makes e.g. Eas*tern* Towhee a waterbird.
    """
    if match == "substring":
        lowered = species_name.lower()
        return any(k.lower() in lowered for k in WATERBIRD_KEYWORDS)
    if match != "tokens":
        raise ValueError(f"match must be 'tokens' or 'substring', got {match!r}")
    tokens = species_tokens(species_name)
    for keyword in WATERBIRD_KEYWORDS:
        key = species_tokens(keyword)
        if any(tokens[i : i + len(key)] == key for i in range(len(tokens) - len(key) + 1)):
            return True
    return False


def substring_mislabels(species: Iterable[str]) -> list[dict[str, Any]]:
    """Species whose type differs between substring and token matching, with the keywords that hit."""
    out = []
    for name in sorted(species):
        if is_waterbird(name, match="substring") != is_waterbird(name, match="tokens"):
            hits = sorted(k for k in WATERBIRD_KEYWORDS if k.lower() in name.lower())
            out.append({"species": name, "substring": CLASSES[1], "tokens": CLASSES[0], "keywords": hits})
    return out


# --- sources ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bird:
    """One CUB image: its id, relative path (``<class>/<file>.jpg``), species and official split."""

    image_id: int
    path: str
    species: str
    cub_split: str  # "train" or "test" (CUB's train_test_split.txt)


def _read_pairs(path: Path) -> dict[int, str]:
    text = read_text(path, hint="--cub-root must hold images.txt, classes.txt, ...")  # names a non-UTF-8 byte
    out = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split(maxsplit=1)
        if len(parts) != 2 or not parts[0].isdigit():
            raise InputError(f"line {number} is not '<id> <value>'", path=path)
        out[int(parts[0])] = parts[1].strip()
    return out


def read_cub(cub_root: Path) -> list[Bird]:
    """The birds of a CUB-200-2011 tree, sorted by image id.

    Raises:
        InputError: a list file is missing or malformed, or its ids disagree.
    """
    root = Path(cub_root)
    images, labels, classes, split = (_read_pairs(root / name) for name in CUB_FILES)
    birds = []
    for image_id, rel in sorted(images.items()):
        try:
            species = classes[int(labels[image_id])]
            is_train = split[image_id]
        except (KeyError, ValueError) as exc:
            raise InputError(f"image {image_id} lacks a class or split entry", path=root) from exc
        birds.append(Bird(image_id, rel, species, "train" if is_train == "1" else "test"))
    return birds


def read_places(places_root: Path, places: Sequence[str]) -> dict[str, list[str]]:
    """Place name → its image paths relative to ``places_root`` (``<place>/<file>.jpg``), sorted.

    Raises:
        InputError: a place folder is missing or holds no image.
    """
    out = {}
    for place in places:
        folder = Path(places_root) / place
        files = sorted(p.relative_to(places_root).as_posix() for p in folder.glob("*.jpg")) if folder.is_dir() else []
        if not files:
            raise InputError(f"no .jpg images for place {place!r}", path=folder,
                             hint="--places-root must hold one folder of Places365 images per place")
        out[place] = files
    return out


# --- assignment ---------------------------------------------------------------------------------


def bird_types(birds: Iterable[Bird], match: SpeciesMatch) -> dict[int, int]:
    """image id → y (0 landbird, 1 waterbird)."""
    return {b.image_id: int(is_waterbird(b.species, match=match)) for b in birds}


def composite_id(bird_id: int, a: int) -> int:
    """The image id of a bird composited on place type ``a``: ``2·bird + a``."""
    return 2 * bird_id + a


@dataclass(frozen=True)
class WaterbirdsPlan:
    """The splits (composite ids) and, for each composite, its bird and place type."""

    splits: SplitPlan
    composites: dict[int, tuple[int, int]]  # composite id → (bird id, place type a)


def plan_splits(types: Mapping[int, int], cub_split: Mapping[int, str], params: WaterbirdsParams,
                group_names: Sequence[str]) -> WaterbirdsPlan:
    """The Waterbirds construction of the module docstring, seeded by ``params.seed``.

    Args:
        types: bird id → y (0 landbird, 1 waterbird), the usable birds only.
        cub_split: bird id → ``train`` or ``test`` (CUB's train_test_split.txt).

    Raises:
        InputError: bad ρ values or seed.
        InsufficientDataError: a group of val or test, or a bird type of the train pool, is too small
            (names it, with what to change).
    """
    check_rhos(params.rhos, option="rho")
    check_seed(params.seed, option="seed")
    test_birds = sorted(b for b in types if cub_split[b] == "test")
    train_side = sorted(b for b in types if cub_split[b] == "train")
    val_birds = sorted(random.Random(f"{params.seed}:val").sample(train_side, round(params.val_fraction
                                                                                     * len(train_side))))
    held_out = set(val_birds)
    train_birds = [b for b in train_side if b not in held_out]
    composites: dict[int, tuple[int, int]] = {}

    def balanced(split: str, birds: Sequence[int], per_group: int) -> tuple[int, ...]:
        groups: dict[int, list[int]] = {g: [] for g in range(4)}
        for y in (0, 1):
            ids = [b for b in birds if types[b] == y]
            random.Random(f"{params.seed}:{split}:place:{y}").shuffle(ids)
            aligned = round(0.5 * len(ids))
            for rank, bird in enumerate(ids):
                a = y if rank < aligned else 1 - y
                groups[group_id(y, a)].append(composite_id(bird, a))
                composites[composite_id(bird, a)] = (bird, a)
        drawn = []
        for g, pool in groups.items():
            if len(pool) < per_group:
                source = "CUB's test split" if split == "test" else "the val share of CUB's train split"
                raise InsufficientDataError(
                    f"{split}: group {group_names[g]} has {len(pool)} images from {source} (half of each bird "
                    f"type goes on each place type); {per_group} per group are asked for",
                    hint=f"lower --{split}-per-group, " + ("raise --val-fraction, " if split == "val" else "")
                         + "or add source images")
            drawn += random.Random(f"{params.seed}:{split}:{g}").sample(sorted(pool), per_group)
        return tuple(sorted(drawn))

    val = balanced("val", val_birds, params.val_per_group)
    test = balanced("test", test_birds, params.test_per_group)
    by_type = {y: [b for b in train_birds if types[b] == y] for y in (0, 1)}
    per_class_total = 2 * (min(len(ids) for ids in by_type.values()) // 2)
    if per_class_total == 0:
        short = CLASSES[min(by_type, key=lambda y: len(by_type[y]))]
        raise InsufficientDataError(f"the train pool (CUB's train split less val) has {len(by_type[0])} landbirds "
                                    f"and {len(by_type[1])} waterbirds: too few {short}s for a train split",
                                    hint="lower --val-fraction, or add source images")
    train: dict[float, tuple[int, ...]] = {}
    for rho in sorted(params.rhos):
        n_aligned, _ = train_sizes(rho, per_class_total)
        ids: list[int] = []
        for y, birds in by_type.items():
            drawn = random.Random(f"{params.seed}:train:{rho!r}:{y}").sample(birds, per_class_total)
            for rank, bird in enumerate(drawn):
                a = y if rank < n_aligned else 1 - y
                ids.append(composite_id(bird, a))
                composites[composite_id(bird, a)] = (bird, a)
        train[rho] = tuple(sorted(ids))
    plan = SplitPlan(val=val, test=test, train=train, per_class_total=per_class_total)
    used = {*val, *test, *(i for ids in train.values() for i in ids)}
    return WaterbirdsPlan(splits=plan, composites={i: composites[i] for i in sorted(used)})


def assign_places(composites: Mapping[int, tuple[int, int]], places: Mapping[str, Sequence[str]],
                  params: WaterbirdsParams) -> dict[int, str]:
    """composite id → place image (relative path), drawn from the images of its place type.

    Each composite draws with its own ``Random(f"{seed}:place:{composite id}")``, so the choice does
    not depend on which other birds are present.
    """
    pool = {a: sorted(f for p in names for f in places[p])
            for a, names in ((0, params.land_places), (1, params.water_places))}
    return {i: random.Random(f"{params.seed}:place:{i}").choice(pool[a]) for i, (_, a) in sorted(composites.items())}


def place_name(place_file: str) -> str:
    """``forest/broadleaf/00001.jpg`` → ``forest/broadleaf``."""
    return place_file.rsplit("/", 1)[0]


# --- compositing --------------------------------------------------------------------------------


def composite(bird_rgb: np.ndarray, mask_gray: np.ndarray, place_rgb: np.ndarray, y: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """Paste the bird on the place.

    Args:
        bird_rgb: (H, W, 3) uint8. mask_gray: (H, W) uint8 segmentation; bird where > 127.
        place_rgb: (h, w, 3) uint8, resized (bilinear) to W × H. y: 0 landbird, 1 waterbird.

    Returns:
        ``(image, label)``: (H, W, 3) uint8 and (H, W) uint8 with 1 landbird, 2 waterbird, 0 elsewhere.
    """
    if bird_rgb.ndim != 3 or mask_gray.shape != bird_rgb.shape[:2]:
        raise ValueError(f"mask {mask_gray.shape} does not match bird image {bird_rgb.shape}")
    height, width = mask_gray.shape
    place = np.asarray(Image.fromarray(place_rgb).resize((width, height), Image.Resampling.BILINEAR))
    bird = mask_gray > 127
    image = np.where(bird[..., None], bird_rgb, place).astype(np.uint8)
    label = np.where(bird, y + 1, 0).astype(np.uint8)
    return image, label


def read_rgb(path: Path) -> np.ndarray:
    return np.asarray(open_image(path, mode="RGB"))


def read_gray(path: Path) -> np.ndarray:
    return np.asarray(open_image(path, mode="L"))


def segmentation_path(cub_root: Path, bird: Bird) -> Path:
    """CUB's segmentation of a bird: ``segmentations/<class>/<file>.png``."""
    return Path(cub_root) / "segmentations" / (bird.path.rsplit(".", 1)[0] + ".png")


def mask_size_error(image: Path, image_size: tuple[int, int], mask: Path, mask_size: tuple[int, int]) -> InputError:
    return InputError(f"the segmentation {mask} is {mask_size[0]}x{mask_size[1]} but its bird image {image} is "
                      f"{image_size[0]}x{image_size[1]}", path=mask,
                      hint="a bird's segmentation must have its image's size: restore the CUB segmentation")


def render(cub_root: Path, places_root: Path, bird: Bird, place_file: str, y: int) -> tuple[np.ndarray, np.ndarray]:
    """Composite one bird from the source trees.

    Raises:
        InputError: an image cannot be read, or the segmentation's size differs from its image's.
    """
    image_path, seg = Path(cub_root) / "images" / bird.path, segmentation_path(cub_root, bird)
    rgb, gray = read_rgb(image_path), read_gray(seg)
    if gray.shape != rgb.shape[:2]:
        raise mask_size_error(image_path, rgb.shape[1::-1], seg, gray.shape[::-1])
    return composite(rgb, gray, read_rgb(Path(places_root) / place_file), y)


# --- split files --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    """One Waterbirds-seg image: its id, the bird, its type, its place type and place image."""

    image_id: int
    bird: Bird
    y: int
    a: int
    place_file: str
    width: int
    height: int

    @property
    def group_id(self) -> int:
        return group_id(self.y, self.a)


class WaterbirdsImage(FlipImageKeys):
    species: str
    place: str
    place_file: str
    cub_image_id: int
    cub_split: str


def split_coco(records: Mapping[int, Record], ids: Iterable[int], description: str) -> CocoDocument:
    """A COCO-style split file; the segmentation is the label mask named by ``mask_file``."""
    images: list[WaterbirdsImage] = []
    for image_id in sorted(ids):
        r = records[image_id]
        stem = f"{image_id:012d}"
        images.append({
            "id": image_id, "file_name": r.bird.path, "width": r.width, "height": r.height,
            "group_id": r.group_id, "class": CLASSES[r.y], "context": CONTEXTS[r.a],
            "species": r.bird.species, "place": place_name(r.place_file), "place_file": r.place_file,
            "cub_image_id": r.bird.image_id, "cub_split": r.bird.cub_split, "image_file": f"images/{stem}.png",
            "mask_file": f"masks/{stem}.png",
        })
    return {
        "info": {"description": description, "version": versions.BUILD},
        "images": images,
        "annotations": [],
        "categories": [{"id": i + 1, "name": n, "supercategory": "bird"} for i, n in enumerate(CLASSES)],
    }


class SpeciesTable(TypedDict):
    """``species.json``."""

    match: SpeciesMatch
    keywords: list[str]
    species: dict[str, str]
    substring_mislabels: list[dict[str, Any]]


def species_table(birds: Iterable[Bird], match: SpeciesMatch) -> SpeciesTable:
    """``species.json``: species → bird type under the rule used, and the substring-mislabel report."""
    names = sorted({b.species for b in birds})
    return {
        "match": match,
        "keywords": list(WATERBIRD_KEYWORDS),
        "species": {n: CLASSES[int(is_waterbird(n, match=match))] for n in names},
        "substring_mislabels": substring_mislabels(names),
    }
