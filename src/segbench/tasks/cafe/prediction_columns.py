"""The usual COCO results and ground-truth files, validated column by column instead of item by item.

:func:`segbench.tasks.cafe.cgf1_inputs.load_predictions` checks every prediction in a Python loop
that names the first broken item. Almost every file breaks no rule, and most of that loop's time is
per-item bookkeeping, so :func:`usual_columns` first tries the whole file at once: one pass per
field, type tests on sets of types, sizes compared as arrays. It accepts only files in which every
item takes the loop's fast path (plain JSON types, compressed RLEs of the image's size), and returns
``None`` for anything else, so that the loop runs and names what is wrong: both give the same result.
The ground truth's images and annotations are tried the same way (:func:`usual_images`,
:func:`usual_annotations`, :func:`usual_compressed`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from itertools import chain
from typing import Any

import numpy as np

_INT = frozenset({int})
_NUMBER = frozenset({int, float})


def usual_columns(data: list[Any], images: Mapping[int, Mapping[str, Any]], known_image_ids: set[int] | None,
                  ) -> tuple[dict[int, list[int]], list[int], list[float], list[bytes], np.ndarray, list[int],
                             Counter[int]] | None:
    """``(by_image, category ids, scores, counts, (n, 2) sizes, kept item indices, ignored)`` of the
    predictions whose image is in ``images``, or ``None`` when some item needs the per-item checks."""
    try:
        image_ids = [p["image_id"] for p in data]
        categories = [p["category_id"] for p in data]
        scores = [p["score"] for p in data]
        if not (set(map(type, image_ids)) <= _INT and set(map(type, categories)) <= _INT
                and set(map(type, scores)) <= _NUMBER and all(map(math.isfinite, scores))):
            return None
        segmentations = [p["segmentation"] for p in data]
    except (KeyError, TypeError, OverflowError):  # not an object, a missing key, an int beyond floats
        return None
    if known_image_ids is not None and not known_image_ids.issuperset(image_ids):
        return None
    kept = [j for j, image_id in enumerate(image_ids) if image_id in images]
    ignored = Counter(i for i in image_ids if i not in images) if len(kept) < len(data) else Counter()
    rles = _compressed_rles([segmentations[j] for j in kept], [image_ids[j] for j in kept], images)
    if rles is None:
        return None
    by_image: dict[int, list[int]] = {}
    for index, j in enumerate(kept):
        by_image.setdefault(image_ids[j], []).append(index)
    return (by_image, [categories[j] for j in kept], [float(scores[j]) for j in kept], *rles, kept, ignored)


def usual_images(entries: list[Any]) -> dict[int, Any] | None:
    """``id -> entry`` (the last entry winning) when every entry has an integer ``id``, positive integer
    ``height`` and ``width`` and an ``is_instance_exhaustive``; else ``None``."""
    try:
        ids = [img["id"] for img in entries]
        heights = [img["height"] for img in entries]
        widths = [img["width"] for img in entries]
        for img in entries:
            img["is_instance_exhaustive"]  # noqa: B018 -- a KeyError sends the file to the checks that name it
    except (KeyError, TypeError):
        return None
    if not (set(map(type, ids)) <= _INT and set(map(type, heights)) <= _INT and set(map(type, widths)) <= _INT):
        return None
    if entries and (min(heights) <= 0 or min(widths) <= 0):
        return None
    return dict(zip(ids, entries, strict=True))


def usual_annotations(annotations: list[Any], images: Mapping[int, Any]) -> bool:
    """Whether every annotation is an object with ``id``, ``image_id`` (of a listed image),
    ``category_id``, ``segmentation`` and ``iscrowd``."""
    try:
        for key in ("id", "category_id", "segmentation", "iscrowd"):
            for ann in annotations:
                ann[key]  # noqa: B018 -- a KeyError sends the file to the checks that name it
        return images.keys() >= {ann["image_id"] for ann in annotations}
    except (KeyError, TypeError):  # not an object, a missing key, an unhashable image_id
        return False


def usual_compressed(annotations: list[Any], images: Mapping[int, Mapping[str, Any]],
                     ) -> tuple[list[bytes], np.ndarray] | None:
    """``(counts, (n, 2) sizes)`` of every annotation when each segmentation is a compressed RLE
    (``counts`` a string) of its image's size; else ``None``."""
    return _compressed_rles([ann["segmentation"] for ann in annotations], [ann["image_id"] for ann in annotations],
                            images)


def _compressed_rles(segs: list[Any], image_ids: list[int], images: Mapping[int, Mapping[str, Any]],
                     ) -> tuple[list[bytes], np.ndarray] | None:
    """``(counts as bytes, (n, 2) sizes)`` when every segmentation is a compressed RLE (``counts`` a
    string) of its image's size; else ``None``."""
    if not set(map(type, segs)) <= {dict}:
        return None
    counts = [seg.get("counts") for seg in segs]
    sizes = [seg.get("size") for seg in segs]
    if not (set(map(type, counts)) <= {str} and set(map(type, sizes)) <= {list} and all(len(s) == 2 for s in sizes)):
        return None
    if not _same_sizes(sizes, image_ids, images):
        return None
    return [c.encode("utf-8", "replace") for c in counts], np.asarray(sizes, dtype=np.int64).reshape(-1, 2)


def _same_sizes(sizes: list[list[Any]], image_ids: list[int], images: Mapping[int, Mapping[str, Any]]) -> bool:
    """Whether every ``size`` (a 2-list) holds plain ints equal to its image's ``[height, width]``."""
    if not set(map(type, chain.from_iterable(sizes))) <= _INT:
        return False
    shapes = {i: [img["height"], img["width"]] for i, img in images.items()}
    return sizes == [shapes[i] for i in image_ids]  # one comparison in C; the types are checked above
