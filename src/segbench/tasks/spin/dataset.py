"""The SPIN files: image selection under the per-super-category cap, and the three COCO levels.

Output, per split (PartImageNet's own train / val / test), named as spin-api reads them::

    spin_<split>_wholes.json    one object per image; categories = the 158 ImageNet classes (ids 0-157
                                by wnid, each with its ``supercategory`` name and ``supercategory_id``
                                0-10 in PartImageNet order; the file's ``supercategories`` lists the
                                11); each annotation carries both ``category_id`` and ``supercategory_id``
    spin_<split>_parts.json     PartImageNet's parts; categories ``<Super>-<Part>`` with SPIN part
                                names (ids = PartImageNet's 0-39); ``parent_id`` = the whole's id
    spin_<split>_subparts.json  the resolved crowd subparts; categories ``<Super>-<Part>-<Subpart>``
                                (ids 1.. in the order of the sorted names, at most 255); each has
                                ``part_category_id``; ``parent_id`` = the part annotation's id

The ids fit spin-api's 8-bit label maps and its background ids: 0 for subparts, 40 for parts, 158
for wholes. ``parent_id`` is the hierarchy; category names are for display.
    images/<split>/<stem>.JPEG  ``file_name`` is the stem, as spin-api opens ``<dir>/<split>/<stem>.JPEG``

Masks are compressed RLE with ``counts`` as str. Part annotations keep PartImageNet's ids (the
crowd's answers refer to them); wholes and subparts are numbered from 1 in a sorted order, so the
same inputs always give the same ids.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pycocotools import mask as mask_utils

from segbench.core.coco_documents import CocoAnnotation, CocoImage
from segbench.core.errors import AnnotationError, ImportPolicy, InputError
from segbench.core.masks import CocoRle, rle_area, segmentation_to_rle
from segbench.core.splits import apportion
from segbench.schemas.spin import ResolvedSubpart, Taxonomy
from segbench.schemas.spin_results import SpinFilters
from segbench.tasks.spin import versions
from segbench.tasks.spin.partimagenet import (
    AMBIGUOUS_PARTS,
    SourceImage,
    imagenet_classes,
    part_categories,
    supercategories,
)

log = logging.getLogger(__name__)

# axes labelled; 4: wholes are the 158 ImageNet classes with their super-category
LEVELS = ("wholes", "parts", "subparts")


def coco_name(split: str, level: str) -> str:
    return f"spin_{split}_{level}.json"


# --- selection -------------------------------------------------------------------------------------

def decomposable_part_count(image: SourceImage) -> int:
    """Distinct parts of the image from SPIN's part taxonomy (the ambiguous part classes left out)."""
    return len({p.category.id for p in image.parts if p.category.spin_category not in AMBIGUOUS_PARTS})


def filter_counts(source_images: Mapping[int, SourceImage], without_parts: Mapping[str, int],
                  kept: Iterable[int]) -> SpinFilters:
    """What each §8.3 filter did, in order: background-only images removed, ambiguous part classes
    excluded from the subpart taxonomy (annotations of the kept images), images over the cap per
    super-category and split, and what is left."""
    kept = set(kept)
    over: dict[str, dict[str, int]] = {}
    for image in source_images.values():
        if image.image_id not in kept:
            by_split = over.setdefault(image.supercategory, {})
            by_split[image.split] = by_split.get(image.split, 0) + 1
    ambiguous = {name: 0 for name in AMBIGUOUS_PARTS}
    for image_id in kept:
        for part in source_images[image_id].parts:
            if part.category.spin_category in ambiguous:
                ambiguous[part.category.spin_category] += 1
    return SpinFilters(background_only_images=dict(without_parts), background_only_total=sum(without_parts.values()),
                       ambiguous_part_annotations=ambiguous,
                       over_cap={sup: dict(sorted(v.items())) for sup, v in sorted(over.items())},
                       over_cap_total=len(source_images) - len(kept), kept_images=len(kept))


def select_images(images: Iterable[SourceImage], *, cap: int, seed: int) -> list[int]:
    """The image ids kept under the per-super-category cap, sorted.

    SPIN samples each capped super-category stratified by split (so the train / val / test shares
    stay PartImageNet's) and prefers images with more distinct parts of the part taxonomy, the
    ambiguous part classes not counted (seed, supplementary 8.3).
    Among images with equally many parts the order is a shuffle seeded by ``seed``, the
    super-category and the split, so adding a super-category never changes another's choice.
    """
    groups: dict[str, dict[str, list[SourceImage]]] = {}
    for image in images:
        groups.setdefault(image.supercategory, {}).setdefault(image.split, []).append(image)
    kept: list[int] = []
    for supercategory, by_split in sorted(groups.items()):
        sizes = {split: len(members) for split, members in by_split.items()}
        if sum(sizes.values()) <= cap:
            kept += [image.image_id for members in by_split.values() for image in members]
            continue
        for split, quota in sorted(apportion(cap, dict(sorted(sizes.items()))).items()):
            members = sorted(by_split[split], key=lambda i: i.image_id)
            random.Random(f"{seed}:{supercategory}:{split}").shuffle(members)
            members.sort(key=lambda i: -decomposable_part_count(i))  # stable: keeps the shuffle
            kept += [image.image_id for image in members[:quota]]
    return sorted(kept)


# --- taxonomy and resolved crowd records -----------------------------------------------------------

@dataclass(frozen=True)
class SubpartCategory:
    id: int
    name: str
    object: str
    part: str
    subpart: str


MAX_SUBPART_ID = 255  # spin-api rasterises subparts into uint8 maps with 0 as background
BACKGROUND = {"subparts": 0, "parts": 40, "wholes": 158}  # spin-api's background id per level


def subpart_categories(taxonomy: Taxonomy) -> list[SubpartCategory]:
    """The taxonomy's subpart categories, ids 1.. in the order of the sorted category names.

    Sorting by name (not taxonomy order) keeps an id stable when an edit reorders the taxonomy.

    Raises:
        InputError: more than 255 subpart categories (spin-api's 8-bit maps cannot hold them).
    """
    found = {sub.category: (entry.object, entry.part, sub.name) for entry in taxonomy.parts for sub in entry.subparts}
    if len(found) > MAX_SUBPART_ID:
        raise InputError(f"the taxonomy has {len(found)} subpart categories; spin-api's 8-bit label maps hold "
                         f"{MAX_SUBPART_ID} besides the background", hint="edit the taxonomy down (the paper's has 203)")
    return [SubpartCategory(i, name, *found[name]) for i, name in enumerate(sorted(found), start=1)]


def whole_categories() -> list[dict[str, Any]]:
    """The 158 ImageNet classes as whole categories, ids 0-157 in wnid order, with their super-category."""
    supers = supercategories()
    return [{"id": i, "name": c.name, "wnid": c.wnid, "supercategory": c.supercategory,
             "supercategory_id": supers.index(c.supercategory)}
            for i, c in enumerate(sorted(imagenet_classes().values(), key=lambda c: c.wnid))]


def decomposable_parts(taxonomy: Taxonomy) -> set[tuple[str, str]]:
    """The (object, part) pairs that have subparts, i.e. that the crowd is asked about."""
    return {(entry.object, entry.part) for entry in taxonomy.parts if entry.subparts}


def _record_problem(record: ResolvedSubpart, images: Mapping[int, SourceImage],
                    categories: Mapping[str, SubpartCategory]) -> str | None:
    image = images[record.image_id]
    part = next((p for p in image.parts if p.ann_id == record.part_ann_id), None)
    if part is None:
        return f"part annotation {record.part_ann_id} is not a part of image {image.image_id}"
    if (record.object, record.part) != (image.supercategory, part.category.spin_name):
        return f"names {record.object}-{record.part} but the part is {image.supercategory}-{part.category.spin_name}"
    category = categories.get(record.category)
    if category is None:
        return f"category {record.category!r} is not in the taxonomy"
    if (category.object, category.part) != (record.object, record.part):
        return f"category {category.name} belongs to {category.object}-{category.part}"
    return None


def subpart_annotations(resolved: Sequence[ResolvedSubpart], images: Mapping[int, SourceImage],
                        categories: Sequence[SubpartCategory], *, policy: ImportPolicy, path: str | Path
                        ) -> tuple[list[CocoAnnotation], int]:
    """COCO annotations for the resolved subparts of the selected ``images``.

    Records of images outside the selection are left out and counted (a smaller cap than the
    annotated one is allowed). Ids are numbered from 1 by (image, part, category).

    Returns:
        (annotations, number of records outside the selection).

    Raises:
        AnnotationError: (fail policy) a record names a part of another image or
            object, a category outside the taxonomy, repeats a (part, category), or has a mask
            that is invalid, empty or of the wrong size.
    """
    by_name = {c.name: c for c in categories}
    outside, seen, rows = 0, set(), []
    for index, record in enumerate(resolved):
        item = f"record {index} (part {record.part_ann_id}, {record.category})"
        if record.image_id not in images:
            outside += 1
            continue
        problem = _record_problem(record, images, by_name)
        image = images[record.image_id]
        rle = None
        if problem is None:
            try:
                rle = segmentation_to_rle(record.segmentation.model_dump(), image.height, image.width)
            except ValueError as exc:
                problem = f"invalid segmentation: {exc}"
        key = (record.part_ann_id, record.category)
        if problem is None and key in seen:
            problem = "a second record for the same part and category"
        if rle is not None and problem is None and int(rle_area([rle])[0]) == 0:
            problem = "empty mask"
        if problem is not None or rle is None:
            policy.handle(AnnotationError(problem or "no mask", path=path, item=item, hint="re-run the crowd import"))
            continue
        seen.add(key)
        rows.append((image.image_id, record.part_ann_id, by_name[record.category].id, rle))
    rows.sort(key=lambda r: r[:3])
    if outside:
        log.info("left out %d resolved subparts of images outside the selection", outside)
    return [_annotation(i, image_id, cat_id, rle, parent_id=part_id)
            for i, (image_id, part_id, cat_id, rle) in enumerate(rows, start=1)], outside


# --- COCO files --------------------------------------------------------------------------------------

def _annotation(ann_id: int, image_id: int, category_id: int, rle: CocoRle, *, parent_id: int | None
                ) -> CocoAnnotation:
    bbox = mask_utils.toBbox({"size": rle["size"], "counts": rle["counts"].encode("ascii")}).tolist()
    out: CocoAnnotation = {"id": ann_id, "image_id": image_id, "category_id": category_id, "segmentation": rle,
           "area": int(rle_area([rle])[0]), "bbox": [float(v) for v in bbox], "iscrowd": 0}
    if parent_id is not None:
        out["parent_id"] = parent_id
    return out


class SpinImage(CocoImage):
    supercategory: str
    object_class: str
    wnid: str
    split: str


def _image_entry(image: SourceImage) -> SpinImage:
    return {"id": image.image_id, "file_name": image.stem, "width": image.width, "height": image.height,
            "supercategory": image.supercategory, "object_class": image.object_class, "wnid": image.wnid,
            "split": image.split}


def level_categories(subparts: Sequence[SubpartCategory]) -> dict[str, list[dict[str, Any]]]:
    parts = part_categories()
    return {
        "wholes": whole_categories(),
        "parts": [{"id": p.id, "name": p.spin_category, "supercategory": p.supercategory}
                  for p in sorted(parts.values(), key=lambda p: p.id)],
        "subparts": [{"id": c.id, "name": c.name, "supercategory": f"{c.object}-{c.part}",
                      "part_category_id": _part_category_id(c)} for c in subparts],
    }


def _part_category_id(category: SubpartCategory) -> int | None:
    for part in part_categories().values():
        if (part.supercategory, part.spin_name) == (category.object, category.part):
            return part.id
    return None


def spin_cocos(images: Mapping[int, SourceImage], subparts: Sequence[CocoAnnotation],
               categories: Sequence[SubpartCategory], *, description: str = "SPIN") -> dict[str, dict[str, Any]]:
    """The three COCO dicts per split: ``{"<split>": {"wholes": ..., "parts": ..., "subparts": ...}}``.

    ``images`` are the selected images; ``subparts`` the annotations of :func:`subpart_annotations`.
    """
    cats = level_categories(categories)
    class_id = {c["wnid"]: c["id"] for c in cats["wholes"]}
    unknown = sorted({image.wnid for image in images.values() if image.wnid not in class_id})
    if unknown:
        raise InputError(f"images of classes outside PartImageNet's 158: {', '.join(unknown)}",
                         hint="a SPIN whole is one of the 158 ImageNet classes; leave those images out")
    supers = [{"id": i, "name": name} for i, name in enumerate(supercategories())]
    whole_id = {image_id: i for i, image_id in enumerate(sorted(images), start=1)}
    split_of = {image_id: image.split for image_id, image in images.items()}
    out: dict[str, dict[str, Any]] = {}
    for split in sorted({image.split for image in images.values()}):
        ids = sorted(i for i in images if split_of[i] == split)
        entries = [_image_entry(images[i]) for i in ids]
        wholes, parts = [], []
        for image_id in ids:
            image = images[image_id]
            whole = _annotation(whole_id[image_id], image_id, class_id[image.wnid], image.object_rle, parent_id=None)
            wholes.append(whole | {"supercategory_id": supercategories().index(image.supercategory)})
            parts += [_annotation(p.ann_id, image_id, p.category.id, p.rle, parent_id=whole_id[image_id])
                      for p in image.parts]
        subs = [ann for ann in subparts if split_of[ann["image_id"]] == split]
        out[split] = {
            level: {"info": {"description": f"{description} {split} {level}", "version": versions.DATASET},
                    "licenses": [], "images": entries, "categories": cats[level], "annotations": anns}
            | ({"supercategories": supers} if level == "wholes" else {})
            for level, anns in (("wholes", wholes), ("parts", parts), ("subparts", subs))
        }
    return out


def image_destination(image: SourceImage) -> str:
    """Where the image goes inside the dataset directory, as spin-api expects it."""
    if image.path.suffix.lower() not in (".jpeg", ".jpg"):
        raise InputError(f"expected a JPEG image, found {image.path.suffix!r}", path=image.path,
                         hint="PartImageNet images are ImageNet JPEGs")
    return f"images/{image.split}/{image.stem}.JPEG"
