"""COCO-CD: cat/dog COCO images with an indoor/outdoor context and ρ-controlled splits (seed 002).

Pure steps, in build order: load and merge the sources, select exclusive cat/dog images with a
plausible foreground, label their context from pixel evidence, group them, and turn a split plan
into COCO files, label masks and resized images. The Prefect wrappers live in
``segbench.flows.coco_cd.build``; the generic splitter in :mod:`segbench.core.splits`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
from PIL import Image

from segbench.core.coco import CocoIndex, annotation_rle
from segbench.core.coco_documents import CocoAnnotation, CocoDocument
from segbench.core.errors import AnnotationError, ImportPolicy, InputError
from segbench.core.io import image_size, open_image, source_path
from segbench.core.masks import resize_nearest, resized_fraction, rle_to_bitmap, union_rle
from segbench.core.splits import group_id
from segbench.schemas.coco_cd import CocoCdParams, ContextRecord
from segbench.tasks.coco_cd import versions
from segbench.tasks.coco_cd.context import UNKNOWN, classify_context, indoor_share
from segbench.tasks.coco_cd.sources import Evidence, Instances
from segbench.tasks.flip.outputs import FlipImageKeys

SOURCE_SPLITS = ("train2017", "val2017")
CONTEXTS = ("indoor", "outdoor")


class Sources:
    """The reduced instances and the context evidence of each COCO-Stuff file, with the paths they came from."""

    def __init__(self, instances: Instances, stuff: list[Evidence], files: dict[str, Path]) -> None:
        self.instances = instances
        self.stuff = stuff
        self.files = files


def source_files(coco_root: Path, stuff_root: Path) -> dict[str, Path]:
    """The input files by label. COCO-Stuff files may sit in ``stuff_root`` or its ``annotations/``.

    Raises:
        InputError: a file is missing (names every path tried).
    """
    files = {}
    for split in SOURCE_SPLITS:
        path = coco_root / "annotations" / f"instances_{split}.json"
        if not path.is_file():
            raise InputError("COCO instances file not found", path=path,
                             hint="--coco-root must hold annotations/instances_{train,val}2017.json")
        files[f"instances_{split}"] = path
        tried = [stuff_root / f"stuff_{split}.json", stuff_root / "annotations" / f"stuff_{split}.json"]
        found = next((p for p in tried if p.is_file()), None)
        if found is None:
            raise InputError(f"COCO-Stuff file not found (tried {tried[0]} and {tried[1]})",
                             path=tried[0], hint="--stuff-root must hold stuff_{train,val}2017.json")
        files[f"stuff_{split}"] = found
    return files


def class_annotations(
    instances: CocoIndex, classes: Sequence[str], annotations: Iterable[dict] | None = None
) -> dict[int, dict[str, list[dict]]]:
    """image id → class name → its annotations of the target classes (among ``annotations``, or all)."""
    wanted = {instances.category_id(name): name for name in classes}
    out: dict[int, dict[str, list[dict]]] = {}
    for ann in instances.annotations if annotations is None else annotations:
        name = wanted.get(ann["category_id"])
        if name is not None:
            out.setdefault(ann["image_id"], {}).setdefault(name, []).append(ann)
    return out


def foreground_ratio(image: dict[str, Any], anns: Iterable[dict], size: int, *, path: str) -> float:
    """Fraction of the union foreground after a nearest-neighbour resize to ``size × size``."""
    union = union_rle([annotation_rle(ann, image, path=path) for ann in anns])
    return resized_fraction(rle_to_bitmap(union), (size, size))


def select_candidates(
    instances: CocoIndex, params: CocoCdParams, policy: ImportPolicy
) -> tuple[dict[int, tuple[str, float]], dict[str, int]]:
    """Images with exactly one target class and a foreground fraction inside (fg_min, fg_max).

    Returns:
        ``{image_id: (class, fg_ratio)}`` and counts of every reason an image was left out.
    """
    by_image = class_annotations(instances, params.classes)
    kept: dict[int, tuple[str, float]] = {}
    counts = {"with_target_class": len(by_image), "both_classes": 0, "fg_too_small": 0, "fg_too_large": 0,
              "invalid_segmentation": 0}
    for image_id in sorted(by_image):
        per_class = by_image[image_id]
        if len(per_class) > 1:
            counts["both_classes"] += 1
            continue
        (label, anns), = per_class.items()
        try:
            ratio = foreground_ratio(instances.images[image_id], anns, params.size, path=instances.path_of(image_id))
        except AnnotationError as error:
            policy.handle(error)
            counts["invalid_segmentation"] += 1
            continue
        if ratio <= params.fg_min:
            counts["fg_too_small"] += 1
        elif ratio >= params.fg_max:
            counts["fg_too_large"] += 1
        else:
            kept[image_id] = (label, ratio)
    counts["kept"] = len(kept)
    return kept, counts


def context_evidence(sources: Sources, image_ids: Iterable[int]) -> dict[int, list[float]]:
    """image id → [indoor area, outdoor area] from the curated thing classes and COCO-Stuff, summed in that order."""
    totals = {image_id: [0.0, 0.0] for image_id in image_ids}
    for evidence in [sources.instances.evidence, *sources.stuff]:
        for image_id, (indoor, outdoor) in evidence.items():
            if image_id in totals:
                totals[image_id][0] += indoor
                totals[image_id][1] += outdoor
    return totals


def context_records(
    sources: Sources, candidates: dict[int, tuple[str, float]], params: CocoCdParams
) -> list[ContextRecord]:
    """One :class:`ContextRecord` per candidate image, sorted by image id."""
    evidence = context_evidence(sources, candidates)
    records = []
    for image_id in sorted(candidates):
        image = sources.instances.images[image_id]
        label, ratio = candidates[image_id]
        indoor, outdoor = evidence[image_id]
        records.append(ContextRecord(
            image_id=image_id, split=image["split"], file_name=image["file_name"], label=label,
            width=image["width"], height=image["height"], fg_ratio=ratio,
            indoor_area=indoor, outdoor_area=outdoor, indoor_share=indoor_share(indoor, outdoor),
            context=classify_context(indoor, outdoor, image["width"] * image["height"],
                                     share=params.context_share, min_area=params.context_min_area),
        ))
    return records


def coverage_table(records: Sequence[ContextRecord], classes: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Seed 002 Table 4: share of retained images per context label, per class and overall."""
    table = {}
    for name in [*classes, "all"]:
        rows = [r for r in records if name == "all" or r.label == name]
        counts = {c: sum(r.context == c for r in rows) for c in (*CONTEXTS, UNKNOWN)}
        table[name] = {"images": len(rows), **counts,
                       **{f"{c}_share": (counts[c] / len(rows) if rows else None) for c in counts}}
    return table


def group_of_records(records: Sequence[ContextRecord], params: CocoCdParams) -> dict[int, int]:
    """image id → group id 2·y + a for images with a known context (y by class order, a 0 indoor)."""
    return {r.image_id: group_id(params.classes.index(r.label), CONTEXTS.index(r.context))
            for r in records if r.context != UNKNOWN}


def check_image_files(
    coco_root: Path, records: Iterable[ContextRecord], policy: ImportPolicy
) -> list[ContextRecord]:
    """Records whose image file exists, opens and has the annotated size (others go to the policy).

    Only the header is read, so this is cheap; it runs before splits are drawn so that a skipped
    image never leaves a hole in a split.
    """
    usable = []
    for record in records:
        item = f"image {record.image_id}"
        hint = "restore the image file, or build with --on-error skip"
        try:
            path = image_path(coco_root, record.file_name, record.image_id)
            size = image_size(path, item=item, hint=hint, error=AnnotationError)
        except AnnotationError as error:
            policy.handle(error)
            continue
        if size != (record.width, record.height):
            policy.handle(AnnotationError(f"image is {size[0]}x{size[1]} but annotated as "
                                          f"{record.width}x{record.height}", path=path, item=item, hint=hint))
            continue
        usable.append(record)
    return usable


def split_coco(
    instances: CocoIndex,
    records: dict[int, ContextRecord],
    ids: Iterable[int],
    params: CocoCdParams,
    description: str,
) -> CocoDocument:
    """A COCO file of the given images with their target-class annotations (cat 1, dog 2).

    Images and annotations keep every key of their source records (``license``, ``coco_url``...),
    which the types below do not list.
    """
    class_ids = {instances.category_id(name): index + 1 for index, name in enumerate(params.classes)}
    images: list[FlipImageKeys] = []
    annotations: list[CocoAnnotation] = []
    for image_id in sorted(ids):
        record = records[image_id]
        stem = f"{image_id:012d}"
        images.append(cast(FlipImageKeys, {
            **instances.images[image_id],
            "class": record.label, "context": record.context,
            "group_id": group_id(params.classes.index(record.label), CONTEXTS.index(record.context)),
            "image_file": f"images/{stem}.png", "mask_file": f"masks/{stem}.png",
        }))
        for ann in sorted(instances.anns_by_image.get(image_id, []), key=lambda a: a["id"]):
            if ann["category_id"] in class_ids:
                annotations.append(cast(CocoAnnotation, {**ann, "category_id": class_ids[ann["category_id"]]}))
    return {
        "info": {"description": description, "version": versions.BUILD},
        "licenses": instances.licenses,
        "images": images,
        "annotations": annotations,
        "categories": [{"id": i + 1, "name": n, "supercategory": "animal"} for i, n in enumerate(params.classes)],
    }


def label_mask(instances: CocoIndex, image_id: int, params: CocoCdParams) -> np.ndarray:
    """The ``size × size`` uint8 label map: background 0, first class 1, second class 2 (wins overlaps)."""
    image = instances.images[image_id]
    label = np.zeros((image["height"], image["width"]), dtype=np.uint8)
    by_class = class_annotations(instances, params.classes, instances.anns_by_image.get(image_id, [])).get(image_id, {})
    for value, name in enumerate(params.classes, start=1):
        if by_class.get(name):
            rle = union_rle([annotation_rle(a, image, path=instances.path_of(image_id)) for a in by_class[name]])
            label[rle_to_bitmap(rle).astype(bool)] = value
    return resize_nearest(label, (params.size, params.size))


def image_path(coco_root: Path, file_name: str, image_id: int) -> Path:
    """The image file a merged COCO record names (``<split>/<file_name>``), inside its split's folder.

    Raises:
        AnnotationError: the source's ``file_name`` is absolute or climbs out of the split's image
            folder (names the image and the ``file_name``).
    """
    split, _, name = file_name.partition("/")
    return source_path(coco_root / split, name, item=f"image {image_id} (file_name {name!r})",
                       error=AnnotationError)


def resized_image(path: Path, size: int) -> Image.Image:
    """The source image as RGB, resized to ``size × size`` (bilinear).

    Raises:
        InputError: the file cannot be decoded (whatever Pillow raised).
    """
    image = open_image(path, mode="RGB", hint="restore the image file and rebuild")
    return image.resize((size, size), resample=Image.Resampling.BILINEAR)
