"""CAFE in the SA-Co format that SAM3's cgF1 evaluator reads unmodified, and its schema check.

Every verified sample gives two image entries over the same edited file (seed 000, Sec. 3 and the
released CAFE files):

* the positive image: ``id``, ``file_name``, ``text_input`` = q+, ``edit_type``,
  ``is_instance_exhaustive: 1`` and exactly one annotation, the target mask M (RLE,
  ``iscrowd: 0``); it also carries provenance (source, source image and annotation ids, the plan);
* its misleading twin: ``id`` = positive id + 1,000,000,000, ``fp_source_id`` = positive id, the
  same ``file_name``, ``text_input`` = q-, no annotation.

One category entry serves every mask, as in SA-Co files. :func:`validate_saco` checks a written
file against these rules and returns typed errors naming the file and the entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import numpy as np

from segbench.core.coco_documents import CocoAnnotation, CocoCategory, CocoDocument, CocoImage
from segbench.core.errors import AnnotationError, InputError
from segbench.core.io import read_json
from segbench.core.masks import rle_runs, rle_to_bitmap
from segbench.schemas.cafe import Candidate
from segbench.schemas.edits import EditType

NEGATIVE_ID_OFFSET = 1_000_000_000
CATEGORY: CocoCategory = {"id": 1, "name": "object", "supercategory": "object"}


class _Shared(TypedDict):
    """What a positive entry and its negative twin share."""

    file_name: str
    width: int
    height: int
    edit_type: str
    is_instance_exhaustive: int


class SacoImage(CocoImage):
    """An SA-Co image entry: an image with one prompt. A positive entry names its source; its
    negative twin (the same image, prompt q-) names the positive entry (``fp_source_id``)."""

    edit_type: str
    is_instance_exhaustive: int
    text_input: str
    source: NotRequired[str]
    source_image_id: NotRequired[int]
    source_annotation_id: NotRequired[int]
    source_file_name: NotRequired[str]
    object_name: NotRequired[str]
    plan: NotRequired[dict[str, Any]]
    fp_source_id: NotRequired[int]
EDIT_TYPE_VALUES = tuple(t.value for t in EditType)
SUBSETS: dict[str, EditType | None] = {"CAFE": None, "CAFE_SM": EditType.SM, "CAFE_CC": EditType.CC,
                                       "CAFE_OC": EditType.OC}


def export_file_name(candidate: Candidate) -> str:
    """The edited image's name in the export (its candidates-folder name, without the folder)."""
    return Path(candidate.image).name


def saco_document(candidates: Sequence[Candidate], *, subset: str, version: str) -> CocoDocument:
    """The SA-Co COCO document of ``candidates`` (positive images, twins, one mask each)."""
    images: list[SacoImage] = []
    annotations: list[CocoAnnotation] = []
    for c in sorted(candidates, key=lambda c: c.id):
        name, plan, target = export_file_name(c), c.plan, c.target
        common: _Shared = {"file_name": name, "width": target.width, "height": target.height,
                  "edit_type": plan.edit_type.value, "is_instance_exhaustive": 1}
        images.append({"id": c.id, **common, "text_input": plan.q_pos, "source": target.source,
                       "source_image_id": target.image_id, "source_annotation_id": target.annotation_id,
                       "source_file_name": target.file_name, "object_name": target.object_name,
                       "plan": plan.model_dump(mode="json", exclude_none=True)})
        images.append({"id": c.id + NEGATIVE_ID_OFFSET, **common, "text_input": plan.q_neg, "fp_source_id": c.id})
        annotations.append({"id": c.id, "image_id": c.id, "category_id": CATEGORY["id"],
                            "segmentation": target.segmentation, "area": target.area, "bbox": list(target.bbox),
                            "iscrowd": 0})
    return {"info": {"description": "CAFE: counterfactual image-prompt pairs (SA-Co format)", "subset": subset,
                     "version": version},
            "licenses": [], "categories": [{**CATEGORY}], "images": images, "annotations": annotations}


def subset_documents(candidates: Sequence[Candidate], *, version: str) -> dict[str, CocoDocument]:
    """File stem (``CAFE``, ``CAFE_SM``, ...) → document: all samples, then one per edit type."""
    return {stem: saco_document([c for c in candidates if edit is None or c.plan.edit_type is edit],
                                subset=stem, version=version)
            for stem, edit in SUBSETS.items()}


# --- schema check ----------------------------------------------------------------------------------

def validate_saco(path: str | Path) -> list[AnnotationError]:
    """Check an SA-Co CAFE file; an empty list means it is valid.

    Raises:
        InputError: the file is missing or not JSON, or lacks ``images`` / ``annotations`` /
            ``categories`` lists (nothing else can be checked then).
    """
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict) or not all(isinstance(data.get(k), list) for k in ("images", "annotations",
                                                                                      "categories")):
        raise InputError("an SA-Co file needs 'images', 'annotations' and 'categories' lists", path=path)
    errors: list[AnnotationError] = []

    def fail(item: str, message: str) -> None:
        errors.append(AnnotationError(message, path=path, item=item, hint="rebuild with segbench build cafe"))

    category_ids = {c.get("id") for c in data["categories"] if isinstance(c, dict) and isinstance(c.get("name"), str)}
    if not category_ids:
        fail("categories", "needs at least one category with an id and a name")
    images = _check_images(data["images"], fail)
    _check_twins(images, fail)
    per_image: dict[int, int] = {}
    seen: set[int] = set()
    for ann in data["annotations"]:
        where = f"annotation {ann.get('id') if isinstance(ann, dict) else ann!r}"
        if not isinstance(ann, dict) or not _is_int(ann.get("id")) or ann["id"] in seen:
            fail(where, "needs a unique integer id")
            continue
        seen.add(ann["id"])
        image = images.get(ann["image_id"]) if "image_id" in ann else None
        if image is None:
            fail(where, f"refers to unknown image {ann.get('image_id')!r}")
            continue
        per_image[image["id"]] = per_image.get(image["id"], 0) + 1
        if ann.get("category_id") not in category_ids:
            fail(where, f"category_id {ann.get('category_id')!r} is not in 'categories'")
        if ann.get("iscrowd") != 0:
            fail(where, f"iscrowd must be 0, got {ann.get('iscrowd')!r}")
        _check_mask(ann, image, where, fail)
    for image_id, image in sorted(images.items()):
        n = per_image.get(image_id, 0)
        if "fp_source_id" in image and n:
            fail(f"image {image_id}", f"a misleading (negative) image has {n} annotations; it must have none")
        elif "fp_source_id" not in image and n != 1:
            fail(f"image {image_id}", f"a positive image has {n} annotations; it must have exactly one (M)")
    return errors


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_images(raw: list[Any], fail) -> dict[int, dict[str, Any]]:
    images: dict[int, dict[str, Any]] = {}
    for image in raw:
        where = f"image {image.get('id') if isinstance(image, dict) else image!r}"
        if not isinstance(image, dict) or not _is_int(image.get("id")) or image["id"] in images:
            fail(where, "needs a unique integer id")
            continue
        problems = []
        if not isinstance(image.get("file_name"), str) or not image["file_name"]:
            problems.append("has no file_name")
        if not (_is_int(image.get("width")) and _is_int(image.get("height")) and image["width"] > 0
                and image["height"] > 0):
            problems.append("needs positive integer width and height")
        if not isinstance(image.get("text_input"), str) or not image["text_input"].strip():
            problems.append("has no text_input (the prompt)")
        if image.get("edit_type") not in EDIT_TYPE_VALUES:
            problems.append(f"edit_type {image.get('edit_type')!r} is not one of {', '.join(EDIT_TYPE_VALUES)}")
        if image.get("is_instance_exhaustive") != 1:
            problems.append("is_instance_exhaustive must be 1 (cgF1 counts only exhaustive pairs)")
        for problem in problems:
            fail(where, problem)
        if not problems:
            images[image["id"]] = image
    return images


def _check_twins(images: dict[int, dict[str, Any]], fail) -> None:
    twins: dict[int, int] = {}
    for image_id, image in sorted(images.items()):
        if "fp_source_id" not in image:
            if image_id >= NEGATIVE_ID_OFFSET:
                fail(f"image {image_id}", f"a positive image id must be below {NEGATIVE_ID_OFFSET}")
            continue
        source = images.get(image["fp_source_id"])
        where = f"image {image_id}"
        if source is None or "fp_source_id" in source:
            fail(where, f"fp_source_id {image['fp_source_id']!r} is not a positive image of this file")
            continue
        if image_id != source["id"] + NEGATIVE_ID_OFFSET:
            fail(where, f"a misleading twin's id must be its positive id + {NEGATIVE_ID_OFFSET}")
        for key in ("file_name", "edit_type", "width", "height"):
            if image.get(key) != source.get(key):
                fail(where, f"{key} differs from its positive image {source['id']}")
        if image["text_input"] == source["text_input"]:
            fail(where, f"q- equals q+ ({image['text_input']!r})")
        twins[source["id"]] = twins.get(source["id"], 0) + 1
    for image_id, image in sorted(images.items()):
        if "fp_source_id" not in image and twins.get(image_id, 0) != 1:
            fail(f"image {image_id}", f"a positive image needs exactly one misleading twin, "
                                      f"has {twins.get(image_id, 0)}")


def _check_mask(ann: dict[str, Any], image: dict[str, Any], where: str, fail) -> None:
    rle = ann.get("segmentation")
    if not isinstance(rle, dict) or not isinstance(rle.get("counts"), str) or rle.get("size") != [image["height"],
                                                                                                  image["width"]]:
        fail(where, "segmentation must be a compressed RLE {'size': [height, width], 'counts': str} of its image")
        return
    try:
        if int(np.sum(rle_runs(rle["counts"]))) != image["height"] * image["width"]:
            raise ValueError("the runs do not cover the image")
    except ValueError as exc:
        fail(where, f"RLE counts are invalid: {exc}")
        return
    bitmap = rle_to_bitmap(rle)
    area = int(bitmap.sum())
    if area == 0:
        fail(where, "the mask is empty")
        return
    if not isinstance(ann.get("area"), (int, float)) or abs(float(ann["area"]) - area) > 0.5:
        fail(where, f"area {ann.get('area')!r} differs from the mask's {area} pixels")
    xs, ys = np.flatnonzero(bitmap.any(0)), np.flatnonzero(bitmap.any(1))
    bbox = [float(xs[0]), float(ys[0]), float(xs[-1] - xs[0] + 1), float(ys[-1] - ys[0] + 1)]
    got = ann.get("bbox")
    if (not isinstance(got, list) or len(got) != 4 or not all(isinstance(v, (int, float)) for v in got)
            or any(abs(float(a) - b) > 1.0 for a, b in zip(got, bbox, strict=True))):
        fail(where, f"bbox {got!r} does not fit the mask (expected {bbox})")
