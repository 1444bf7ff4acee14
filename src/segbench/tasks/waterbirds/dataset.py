"""Waterbirds-seg: CUB birds pasted on land or water places, with ρ-controlled splits (seed 002).

Pure steps, in build order: classify species as landbird or waterbird, read a CUB-200-2011 tree and
a Places tree, assign every bird a place type and a place image, composite bird and place into an
image and a label mask, and turn a split plan into COCO-style split files. The Prefect wrappers live
in ``segbench.flows.waterbirds.build``; the generic splitter in :mod:`segbench.core.splits`.

Groups are ``g = 2·y + a`` with y: landbird 0, waterbird 1 and a: land 0, water 1; the aligned
pairings are landbird·land (0) and waterbird·water (3).

Pools (the place is assigned, not observed): every bird image is composited exactly once, so no
bird appears in two splits. Within each bird type the images are shuffled with the seed and the
first ``aligned_share`` of them (default 2/3) get the aligned place type, the rest the other one.
Two thirds keep every ρ in [0.5, 1] feasible under the splitter's matched totals: the aligned group
(≈ 2n/3) can always supply the ``ρ·2m`` items a class needs when the counterfactual group (≈ n/3)
sets ``m``.
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
from segbench.core.errors import InputError
from segbench.core.io import open_image, read_text
from segbench.core.splits import group_id
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


def assign_contexts(types: Mapping[int, int], *, seed: int, aligned_share: float = 2 / 3) -> dict[int, int]:
    """image id → place type a (0 land, 1 water); see the module docstring.

    Per bird type the sorted ids are shuffled with ``Random(f"{seed}:context:{y}")`` and the first
    ``round(aligned_share · n)`` get the aligned place type (land for landbirds, water for waterbirds).
    """
    out = {}
    for y in (0, 1):
        ids = sorted(i for i, t in types.items() if t == y)
        random.Random(f"{seed}:context:{y}").shuffle(ids)
        n_aligned = round(aligned_share * len(ids))
        for rank, image_id in enumerate(ids):
            out[image_id] = y if rank < n_aligned else 1 - y
    return out


def assign_places(contexts: Mapping[int, int], places: Mapping[str, Sequence[str]], params: WaterbirdsParams
                  ) -> dict[int, str]:
    """image id → place image (relative path), drawn from the images of its place type.

    Each bird draws with its own ``Random(f"{seed}:place:{id}")``, so the choice does not depend on
    which other birds are present.
    """
    pool = {a: sorted(f for p in names for f in places[p])
            for a, names in ((0, params.land_places), (1, params.water_places))}
    return {i: random.Random(f"{params.seed}:place:{i}").choice(pool[a]) for i, a in sorted(contexts.items())}


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
    """One Waterbirds-seg item: the bird, its type, its assigned place type and place image."""

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
            "cub_split": r.bird.cub_split, "image_file": f"images/{stem}.png", "mask_file": f"masks/{stem}.png",
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
