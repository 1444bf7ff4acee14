"""A build's COCO-format files as samples for ``segbench view``: one sample per image, its fields
from the image entry, and one label mask per file's field (each pixel the category id of the
annotation drawn on it; smaller annotations are drawn over larger ones, so a part shows on its whole).

Pure apart from the label masks it writes; FiftyOne itself is :mod:`segbench.fiftyone_app`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from segbench.core.errors import InputError
from segbench.core.io import atomic_write_bytes, png_bytes, read_json
from segbench.core.masks import rle_to_bitmap, segmentation_to_rle
from segbench.schemas.views import ViewDocument, ViewFile, ViewSample

# COCO's own image keys, which say nothing a viewer wants beside the image.
COCO_IMAGE_KEYS = {"id", "file_name", "width", "height", "license", "date_captured", "coco_url", "flickr_url"}


def coco_view(name: str, files: Sequence[ViewFile], masks: Path) -> ViewDocument:
    """The samples of ``files`` (images met in several files are one sample), with label masks
    written under ``masks/<field>/<split>/<image id>.png``."""
    samples: dict[Path, ViewSample] = {}
    targets: dict[str, dict[int, str]] = {}
    for file in files:
        try:
            _add_file(file, read_json(file.path, hint="rebuild the dataset"), samples, targets, masks)
        except (KeyError, TypeError, ValueError) as exc:  # a damaged file: say which, not a traceback
            raise InputError(f"not a COCO file segbench wrote ({type(exc).__name__}: {exc})", path=file.path,
                             hint="rebuild the dataset") from exc
    return ViewDocument(name=name, samples=list(samples.values()), mask_targets=targets)


def _add_file(file: ViewFile, document: Any, samples: dict[Path, ViewSample], targets: dict[str, dict[int, str]],
              masks: Path) -> None:
    targets.setdefault(file.field, {}).update({int(c["id"]): str(c["name"]) for c in document["categories"]})
    by_image: dict[Any, list[Mapping[str, Any]]] = {}
    for annotation in document["annotations"]:
        by_image.setdefault(annotation["image_id"], []).append(annotation)
    for image in document["images"]:
        path = (file.images / f"{image[file.image_key]}{file.image_suffix}").resolve()
        sample = samples.setdefault(path, ViewSample(filepath=path))
        if file.split not in sample.tags:
            sample.tags.append(file.split)
        sample.fields.update(image_fields(image, file.image_key))
        label_mask = draw(by_image.get(image["id"], []), int(image["height"]), int(image["width"]))
        target = masks / file.field / file.split / f"{image['id']}.png"
        sample.masks[file.field] = atomic_write_bytes(target, png_bytes(label_mask), durable=False)


def image_fields(image: Mapping[str, Any], image_key: str) -> dict[str, Any]:
    """The image entry's own fields: scalars and lists as they are, a nested table one level flat
    (``plan`` → ``plan_instruction``, ...), COCO's bookkeeping left out."""
    fields: dict[str, Any] = {"image_id": image["id"]}
    for key, value in image.items():
        if key in COCO_IMAGE_KEYS or key == image_key:
            continue
        if isinstance(value, Mapping):
            fields.update({f"{key}_{inner}": item for inner, item in value.items() if _plain(item)})
        elif _plain(value):
            fields[key] = value
    return fields


def _plain(value: Any) -> bool:
    scalar = (str, int, float, bool, type(None))
    return isinstance(value, scalar) or (isinstance(value, list) and all(isinstance(v, scalar) for v in value))


def draw(annotations: Iterable[Mapping[str, Any]], height: int, width: int) -> np.ndarray:
    """A label mask: each annotation's category id on its pixels, the larger ones first."""
    bitmaps = [(rle_to_bitmap(segmentation_to_rle(a["segmentation"], height, width)).astype(bool), int(a["category_id"]))
               for a in annotations]
    largest = max((category for _, category in bitmaps), default=0)
    label_mask = np.zeros((height, width), dtype=np.uint8 if largest < 256 else np.uint16)
    for bitmap, category in sorted(bitmaps, key=lambda pair: -int(pair[0].sum())):
        label_mask[bitmap] = category
    return label_mask
