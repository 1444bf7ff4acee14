"""Loading, validating, indexing and merging COCO-format files.

A :class:`CocoIndex` is the validated content of one COCO file (instances, COCO-Stuff, or any
COCO-style source) with lookups by id. Structural problems of the file itself raise
:class:`~segbench.core.errors.InputError`; problems of one image or annotation go through the caller's
:class:`~segbench.core.errors.ImportPolicy` (fail, or skip and report).

Segmentations are not decoded here (a COCO-Stuff file holds ~1.3M of them and most builders need
only areas); :func:`annotation_rle` decodes and validates one when it is needed.
"""

from __future__ import annotations

import math
from collections.abc import Container, Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from segbench.core.errors import AnnotationError, ImportPolicy, InputError
from segbench.core.io import read_json
from segbench.core.masks import CocoRle, segmentation_to_rle


class CocoIndex:
    """A validated COCO file: images, categories and annotations indexed by id.

    A plain class rather than a dataclass on purpose: Prefect walks dataclasses and containers
    passed between tasks, which is slow for a million annotations; plain objects are passed as is.
    """

    def __init__(
        self,
        *,
        path: str,
        images: dict[int, dict[str, Any]],
        categories: dict[int, dict[str, Any]],
        annotations: list[dict[str, Any]],
        info: dict[str, Any] | None = None,
        licenses: list[Any] | None = None,
    ) -> None:
        self.path = path
        self.images = images
        self.categories = categories
        self.annotations = annotations
        self.info = info or {}
        self.licenses = licenses or []
        self.split_paths: dict[str, str] = {}  # split -> file, for indices merged from several

    @cached_property
    def anns_by_image(self) -> dict[int, list[dict[str, Any]]]:
        """image id → its annotations (built on first use: a COCO-Stuff file rarely needs it)."""
        out: dict[int, list[dict[str, Any]]] = {}
        for ann in self.annotations:
            out.setdefault(ann["image_id"], []).append(ann)
        return out

    def category_id(self, name: str) -> int:
        """The id of the category called ``name``; :class:`InputError` listing the names if absent."""
        for cat_id, cat in self.categories.items():
            if cat["name"] == name:
                return cat_id
        raise InputError(
            f"no category named {name!r} (has: {', '.join(sorted(c['name'] for c in self.categories.values()))})",
            path=self.path,
            hint="check the class names in the parameters against this file",
        )

    def path_of(self, image_id: int) -> str:
        """The file an image came from (its split's file when merged)."""
        return self.split_paths.get(self.images[image_id].get("split", ""), self.path)

    def category_names(self) -> dict[int, str]:
        return {cat_id: cat["name"] for cat_id, cat in self.categories.items()}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_top_level(data: Any, path: Path) -> None:
    if not isinstance(data, dict):
        raise InputError("a COCO file must hold a JSON object", path=path)
    for key in ("images", "annotations", "categories"):
        if not isinstance(data.get(key), list):
            raise InputError(
                f"missing or non-list key {key!r}",
                path=path,
                hint="is this a COCO annotation file (instances_*.json / stuff_*.json)?",
            )


def load_categories(raw: list[Any], path: Path) -> dict[int, dict[str, Any]]:
    categories: dict[int, dict[str, Any]] = {}
    for cat in raw:
        if not isinstance(cat, dict) or not _is_int(cat.get("id")) or not isinstance(cat.get("name"), str):
            raise InputError(f"category {cat!r} needs an integer 'id' and a string 'name'", path=path)
        if cat["id"] in categories:
            raise InputError(f"category id {cat['id']} appears twice", path=path)
        categories[cat["id"]] = cat
    return categories


def image_problem(img: Any) -> str | None:
    if not isinstance(img, dict) or not _is_int(img.get("id")):
        return "image record has no integer 'id'"
    for key in ("width", "height"):
        if not _is_int(img.get(key)) or img[key] <= 0:
            return f"image {img['id']} has no positive integer {key!r}"
    if not isinstance(img.get("file_name"), str) or not img["file_name"]:
        return f"image {img['id']} has no 'file_name'"
    return None


def bbox_problem(bbox: Any, width: int, height: int, slack: float = 1.0) -> str | None:
    """Why an annotation's ``bbox`` ([x, y, w, h]) cannot describe an object of a ``width × height``
    image (``None`` when it can, or when there is none): not four finite numbers, a negative size, or
    reaching more than ``slack`` pixels outside the image (COCO's own boxes stay within rounding)."""
    if bbox is None:
        return None
    numbers = isinstance(bbox, list) and len(bbox) == 4 and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in bbox)
    if not numbers:
        return f"bbox {bbox!r} is not four finite numbers [x, y, width, height]"
    x, y, w, h = bbox
    if w < 0 or h < 0 or x < -slack or y < -slack or x + w > width + slack or y + h > height + slack:
        return f"bbox {bbox} reaches outside the {width}×{height} image"
    return None


def annotation_problem(ann: Any, images: Container[Any], categories: Container[Any]) -> str | None:
    if not isinstance(ann, dict) or not _is_int(ann.get("id")):
        return "annotation has no integer 'id'"
    if ann.get("image_id") not in images:
        return f"refers to unknown image {ann.get('image_id')!r}"
    if ann.get("category_id") not in categories:
        return f"refers to unknown category {ann.get('category_id')!r}"
    area = ann.get("area")
    if not isinstance(area, (int, float)) or isinstance(area, bool) or not math.isfinite(area) or area < 0:
        return f"has no valid 'area' ({area!r})"
    if "segmentation" not in ann:
        return "has no 'segmentation'"
    return None


def load_coco(path: str | Path, *, policy: ImportPolicy) -> CocoIndex:
    """Read and validate a COCO file.

    Raises:
        InputError: the file is missing, not JSON, lacks ``images`` / ``annotations`` /
            ``categories``, or has a malformed or duplicate category.
        AnnotationError: (under a fail-fast policy) an image or annotation breaks a rule:
            missing fields, duplicate ids, unknown image or category, invalid area.
    """
    path = Path(path)
    data = read_json(path)
    _check_top_level(data, path)
    categories = load_categories(data["categories"], path)

    images: dict[int, dict[str, Any]] = {}
    for img in data["images"]:
        problem = image_problem(img)
        if problem is None and img["id"] in images:
            problem = f"image id {img['id']} appears twice"
        if problem:
            item = f"image {img.get('id')}" if isinstance(img, dict) else "image"
            policy.handle(AnnotationError(problem, path=path, item=item, hint="fix or remove the image record"))
            continue
        images[img["id"]] = img

    annotations: list[dict[str, Any]] = []
    seen: set[int] = set()
    for ann in data["annotations"]:
        # Fast path for the common valid annotation (a COCO-Stuff file has ~1.3M); the full check
        # below runs only to explain what is wrong.
        try:
            area = ann["area"]
            valid = (type(ann["id"]) is int and ann["image_id"] in images and ann["category_id"] in categories
                     and (type(area) is float or type(area) is int) and 0 <= area < math.inf
                     and "segmentation" in ann and ann["id"] not in seen)
        except (KeyError, TypeError):
            valid = False
        if valid:
            seen.add(ann["id"])
            annotations.append(ann)
            continue
        problem = annotation_problem(ann, images, categories) or "annotation id appears twice"
        if problem:
            item = f"annotation {ann.get('id')}" if isinstance(ann, dict) else "annotation"
            policy.handle(AnnotationError(problem, path=path, item=item, hint="fix or remove the annotation"))

    return CocoIndex(
        path=str(path),
        images=images,
        categories=categories,
        annotations=annotations,
        info=data.get("info") if isinstance(data.get("info"), dict) else {},
        licenses=data.get("licenses") if isinstance(data.get("licenses"), list) else [],
    )


def merge_splits(indices: Sequence[tuple[str, CocoIndex]]) -> CocoIndex:
    """Merge COCO files of several splits (e.g. train2017 and val2017) into one index.

    Each image keeps its source split in ``split`` and gets ``file_name`` = ``<split>/<file_name>``
    (the path under the COCO root). Inputs are not modified.

    Raises:
        InputError: the files disagree on categories, or an image or annotation id appears in two.
    """
    if not indices:
        raise InputError("nothing to merge")
    first_split, first = indices[0]
    images: dict[int, dict[str, Any]] = {}
    annotations: list[dict[str, Any]] = []
    ann_split: dict[int, str] = {}
    for split, index in indices:
        if index.category_names() != first.category_names():
            raise InputError(
                f"categories differ from those of {first_split} ({first.path})",
                path=index.path,
                hint="merge files of the same COCO release",
            )
        for image_id, img in index.images.items():
            if image_id in images:
                raise InputError(
                    f"image id {image_id} appears in both {images[image_id]['split']} and {split}",
                    path=index.path,
                    hint="image ids must be unique across the merged splits",
                )
            images[image_id] = {**img, "split": split, "file_name": f"{split}/{img['file_name']}"}
        for ann in index.annotations:
            if ann["id"] in ann_split:
                raise InputError(
                    f"annotation id {ann['id']} appears in both {ann_split[ann['id']]} and {split}",
                    path=index.path,
                )
            ann_split[ann["id"]] = split
            annotations.append(ann)
    merged = CocoIndex(
        path=" + ".join(index.path for _, index in indices),
        images=images,
        categories=dict(first.categories),
        annotations=annotations,
        info=first.info,
        licenses=first.licenses,
    )
    merged.split_paths = {split: index.path for split, index in indices}
    return merged


def annotation_rle(ann: dict[str, Any], image: dict[str, Any], *, path: str) -> CocoRle:
    """The annotation's segmentation as one compressed RLE, validated against its image.

    Raises:
        AnnotationError: naming the file and the annotation, with the rule broken.
    """
    try:
        return segmentation_to_rle(ann["segmentation"], image["height"], image["width"])
    except ValueError as exc:
        raise AnnotationError(
            f"invalid segmentation: {exc}",
            path=path,
            item=f"image {image['id']} / annotation {ann['id']}",
            hint="fix or remove the annotation, or build with --on-error skip",
        ) from exc


def areas_by_image(
    annotations: Iterable[dict[str, Any]], weight_of: dict[int, int]
) -> dict[int, list[float]]:
    """Sum annotation areas per image into slots: ``weight_of[category_id]`` picks the slot (0/1).

    Categories absent from ``weight_of`` are ignored. Returns ``{image_id: [slot0, slot1]}``.
    """
    out: dict[int, list[float]] = {}
    for ann in annotations:
        slot = weight_of.get(ann["category_id"])
        if slot is not None:
            out.setdefault(ann["image_id"], [0.0, 0.0])[slot] += float(ann["area"])
    return out
