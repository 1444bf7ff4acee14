"""Reading a PartImageNet root: images, their ImageNet class and super-category, and part masks.

Expected layout (that of the PartImageNet release)::

    <root>/annotations/train.json     COCO: images, part annotations (polygons or RLE), categories 0-39
    <root>/annotations/val.json
    <root>/annotations/test.json
    <root>/images/train/<wnid>_<n>.JPEG
    <root>/images/val/...   <root>/images/test/...

Every image shows one object. Its ImageNet class is the wnid in the file stem (``n02930766_37217``
→ ``n02930766`` = cab); its super-category comes from the shipped wnid table (SPIN's
``object_mapping.json``) and must agree with the super-category of its part categories. Part names
are SPIN's (PartImageNet's animal "Body" is SPIN's "Torso", "Foot" is "Legs", "Hand" is "Arm",
"Tier" is "Tire"); the object mask is the union of its parts. Images without any part annotation
are left out and counted, as SPIN does (seed, supplementary 8.3).

Only reading and validating lives here; selection and the SPIN files are in ``dataset.py``,
the annotation items in ``items.py``.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from segbench.core.coco import annotation_rle, load_coco
from segbench.core.errors import AnnotationError, ImportPolicy, InputError
from segbench.core.masks import CocoRle, rle_area, union_rle

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")
# SPIN leaves these part classes undecomposed: their subpart boundaries are ambiguous (seed,
# supplementary 8.3). They stay in the parts files; they get no subparts and do not count when the
# cap prefers images with more parts.
AMBIGUOUS_PARTS = ("Biped-Tail", "Bird-Tail", "Quadruped-Tail", "Bird-Wing", "Bicycle-Seat")
BACKGROUND_NAME = "background"  # a category some PartImageNet exports add; its annotations are no part
_STEM = re.compile(r"^(n\d{8})_\d+$")


@dataclass(frozen=True)
class PartCategory:
    id: int
    supercategory: str
    name: str
    spin_name: str

    @property
    def source_name(self) -> str:
        """The name in PartImageNet's files, e.g. ``Quadruped Body``."""
        return f"{self.supercategory} {self.name}"

    @property
    def spin_category(self) -> str:
        """SPIN's part category name, e.g. ``Quadruped-Torso``."""
        return f"{self.supercategory}-{self.spin_name}"


@dataclass(frozen=True)
class ImageNetClass:
    wnid: str
    name: str
    supercategory: str


@dataclass(frozen=True)
class PartAnnotation:
    """One part of the image's object: ``rle`` is a compressed RLE, ``polygons`` the source polygons
    in pixels (empty when the source gave an RLE)."""

    ann_id: int
    category: PartCategory
    rle: CocoRle
    area: int
    polygons: tuple[tuple[float, ...], ...] = ()


@dataclass(frozen=True)
class SourceImage:
    """One PartImageNet image with its object and parts (sorted by part annotation id)."""

    image_id: int
    split: str
    stem: str
    path: Path
    width: int
    height: int
    wnid: str
    object_class: str
    supercategory: str
    parts: tuple[PartAnnotation, ...] = field(default=())

    @cached_property
    def object_rle(self) -> CocoRle:
        """The object mask: the union of its parts."""
        return union_rle([part.rle for part in self.parts])


@dataclass
class PartImageNetSource:
    """What :func:`read_partimagenet` found: images by id plus counts of what was left out."""

    root: Path
    images: dict[int, SourceImage]
    annotation_files: dict[str, Path]
    without_parts: dict[str, int]


@cache
def part_categories() -> dict[int, PartCategory]:
    """The 40 PartImageNet part categories with SPIN's names, by PartImageNet id."""
    data = json.loads(resources.files("segbench.resources").joinpath("spin/partimagenet.json").read_text())
    return {p["id"]: PartCategory(p["id"], p["supercategory"], p["name"], p["spin_name"]) for p in data["parts"]}


@cache
def supercategories() -> tuple[str, ...]:
    """The 11 super-categories in PartImageNet's order."""
    data = json.loads(resources.files("segbench.resources").joinpath("spin/partimagenet.json").read_text())
    return tuple(data["supercategories"])


@cache
def imagenet_classes() -> dict[str, ImageNetClass]:
    """The 158 ImageNet classes of PartImageNet by wnid (name = first WordNet lemma)."""
    data = json.loads(resources.files("segbench.resources").joinpath("spin/imagenet_classes.json").read_text())
    return {c["wnid"]: ImageNetClass(c["wnid"], c["name"], c["supercategory"]) for c in data["classes"]}


def annotation_path(root: Path, split: str) -> Path:
    return Path(root) / "annotations" / f"{split}.json"


def _check_categories(categories: dict[int, dict[str, Any]], path: Path) -> None:
    known = part_categories()
    for cat_id, cat in sorted(categories.items()):
        if _is_background(cat):
            continue
        expected = known.get(cat_id)
        if expected is None:
            raise InputError(f"category id {cat_id} ({cat['name']!r}) is not a PartImageNet part category (0-39)",
                             path=path, hint="is this a PartImageNet annotation file?")
        if cat["name"] != expected.source_name:
            raise InputError(f"category {cat_id} is named {cat['name']!r}; PartImageNet calls it "
                             f"{expected.source_name!r}", path=path,
                             hint="PartImageNet files keep the release's category ids and names")


def _is_background(category: dict[str, Any]) -> bool:
    return str(category.get("name", "")).strip().lower() == BACKGROUND_NAME


def _polygons(segmentation: Any) -> tuple[tuple[float, ...], ...]:
    if isinstance(segmentation, list):
        return tuple(tuple(float(v) for v in poly) for poly in segmentation)
    return ()


def _image_record(img: dict[str, Any], anns: list[dict[str, Any]], split: str, root: Path, path: Path
                  ) -> SourceImage:
    """Validate one image and its parts; raises :class:`AnnotationError` naming the rule broken."""
    item = f"image {img['id']} ({img['file_name']})"
    stem = Path(img["file_name"]).stem
    match = _STEM.match(stem)
    if match is None:
        raise AnnotationError(f"file name {img['file_name']!r} is not <wnid>_<number>", path=path, item=item,
                              hint="PartImageNet names images after their ImageNet file, e.g. n02930766_37217.JPEG")
    wnid = match.group(1)
    parts = []
    for ann in sorted(anns, key=lambda a: a["id"]):
        rle = annotation_rle(ann, img, path=str(path))
        area = int(rle_area([rle])[0])
        if area == 0:
            raise AnnotationError(f"part annotation {ann['id']} has an empty mask", path=path, item=item,
                                  hint="remove the annotation")
        parts.append(PartAnnotation(ann["id"], part_categories()[ann["category_id"]], rle, area,
                                    _polygons(ann["segmentation"])))
    supers = sorted({p.category.supercategory for p in parts})
    if len(supers) > 1:
        raise AnnotationError(f"parts of several super-categories ({', '.join(supers)}); an image shows one object",
                              path=path, item=item, hint="fix the part categories of this image")
    known = imagenet_classes().get(wnid)
    if known is not None and supers and known.supercategory != supers[0]:
        raise AnnotationError(f"ImageNet class {wnid} ({known.name}) is a {known.supercategory} but its parts are "
                              f"{supers[0]} parts", path=path, item=item, hint="fix the part categories")
    supercategory = known.supercategory if known is not None else (supers[0] if supers else "")
    return SourceImage(
        image_id=img["id"], split=split, stem=stem, path=root / "images" / split / img["file_name"],
        width=img["width"], height=img["height"], wnid=wnid,
        object_class=known.name if known is not None else wnid, supercategory=supercategory, parts=tuple(parts),
    )


def read_partimagenet(root: str | Path, *, policy: ImportPolicy, splits: tuple[str, ...] = SPLITS,
                      check_images: bool = True) -> PartImageNetSource:
    """Read and validate the annotation files of a PartImageNet root.

    Args:
        policy: what to do with a bad image or annotation (fail, or skip and record it).
        check_images: also require every kept image file to exist.

    Returns:
        The images with at least one part, by image id, and per split the number left out for
        having none (no annotation, or only the background's: SPIN removed 29 such images).

    Raises:
        InputError: a split file is missing or malformed, a category is not PartImageNet's, or an
            image or annotation id appears in two splits.
        AnnotationError: (fail policy) an image or annotation breaks a rule (bad file name, invalid
            or empty mask, parts of two super-categories, class and parts disagree, missing image).
    """
    root = Path(root)
    images: dict[int, SourceImage] = {}
    ann_split: dict[int, str] = {}
    files, without_parts = {}, {}
    for split in splits:
        path = annotation_path(root, split)
        if not path.is_file():
            raise InputError(f"no {split} annotation file", path=path,
                             hint="a PartImageNet root holds annotations/{train,val,test}.json and images/<split>/")
        index = load_coco(path, policy=policy)
        _check_categories(index.categories, path)
        files[split], without_parts[split] = path, 0
        for image_id in sorted(index.images):
            img = index.images[image_id]
            background = {cid for cid, cat in index.categories.items() if _is_background(cat)}
            anns = [a for a in index.anns_by_image.get(image_id, []) if a.get("category_id") not in background]
            if image_id in images:
                raise InputError(f"image id {image_id} appears in both {images[image_id].split} and {split}",
                                 path=path, hint="image ids must be unique across the splits")
            for ann in anns:
                if ann["id"] in ann_split:
                    raise InputError(f"annotation id {ann['id']} appears in both {ann_split[ann['id']]} and {split}",
                                     path=path, hint="annotation ids must be unique across the splits")
                ann_split[ann["id"]] = split
            if not anns:
                without_parts[split] += 1
                continue
            try:
                record = _image_record(img, anns, split, root, path)
                if check_images and not record.path.is_file():
                    raise AnnotationError("image file not found", path=record.path, item=f"image {image_id}",
                                          hint=f"put the image under images/{split}/")
            except AnnotationError as error:
                policy.handle(error)
                continue
            images[image_id] = record
    if any(without_parts.values()):
        log.info("left out %d images without part annotations", sum(without_parts.values()))
    return PartImageNetSource(root=root, images=images, annotation_files=files, without_parts=without_parts)
