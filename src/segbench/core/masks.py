"""Mask operations on COCO segmentations: polygon / RLE / bitmap, area, IoU, nearest resize.

All rasterisation goes through pycocotools: PIL's polygon fill differs from COCO's on ~3.5% of
pixels, and every COCO tool downstream rasterises the COCO way. Functions here know nothing of
files; they raise ``ValueError`` stating the rule broken, and callers that know the file and item
wrap it in an :class:`~segbench.core.errors.AnnotationError`.

Shapes: a bitmap is ``uint8`` or ``bool`` of shape ``(H, W)``; an RLE is a dict
``{"size": [H, W], "counts": str}`` (compressed, JSON-ready).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from PIL import Image
from pycocotools import mask as mask_utils

from segbench.core.coco_documents import CocoRle, PycocoRle

# pycocotools' area() overflows a uint8 counter on lists of >= 256 RLEs under numpy 2.
_AREA_CHUNK = 255


def _to_str_rle(rle: Mapping[str, Any]) -> CocoRle:
    counts = rle["counts"]
    return {"size": [int(rle["size"][0]), int(rle["size"][1])],
            "counts": counts.decode("ascii") if isinstance(counts, bytes) else counts}


def _to_bytes_rle(rle: Mapping[str, Any]) -> PycocoRle:
    counts = rle["counts"]
    return {"size": list(rle["size"]), "counts": counts.encode("ascii") if isinstance(counts, str) else counts}


def validate_polygons(polygons: Sequence[Sequence[float]], height: int, width: int) -> None:
    """Check COCO polygons: each a flat ``[x1, y1, x2, y2, ...]`` with >= 3 finite points.

    Points may lie on the image border; points farther than one pixel outside are rejected.
    """
    if not polygons:
        raise ValueError("segmentation has no polygon")
    for index, poly in enumerate(polygons):
        if not isinstance(poly, (list, tuple)) or not all(isinstance(v, (int, float)) for v in poly):
            raise ValueError(f"polygon {index} is not a flat list of numbers")
        if len(poly) % 2:
            raise ValueError(f"polygon {index} has an odd number of coordinates ({len(poly)})")
        if len(poly) < 6:
            raise ValueError(f"polygon {index} has {len(poly) // 2} points; a polygon needs at least 3")
        if not all(math.isfinite(v) for v in poly):
            raise ValueError(f"polygon {index} has a non-finite coordinate")
        xs, ys = poly[0::2], poly[1::2]
        if min(xs) < -1 or min(ys) < -1 or max(xs) > width + 1 or max(ys) > height + 1:
            raise ValueError(f"polygon {index} lies outside the {width}x{height} image")


def segmentation_to_rle(segmentation: Any, height: int, width: int) -> CocoRle:
    """Any COCO segmentation (polygons, uncompressed or compressed RLE) as one compressed RLE.

    Raises:
        ValueError: the segmentation is malformed or does not fit the image size.
    """
    if isinstance(segmentation, list):
        validate_polygons(segmentation, height, width)
        rle = mask_utils.merge(mask_utils.frPyObjects(segmentation, height, width))
        return _to_str_rle(rle)
    if not isinstance(segmentation, dict) or "counts" not in segmentation or "size" not in segmentation:
        raise ValueError("segmentation is neither a polygon list nor an RLE with 'size' and 'counts'")
    size = segmentation["size"]
    if not (isinstance(size, (list, tuple)) and len(size) == 2 and [int(s) for s in size] == [height, width]):
        raise ValueError(f"RLE size {size} does not match the image size [{height}, {width}]")
    counts = segmentation["counts"]
    if isinstance(counts, list):
        if not all(isinstance(c, int) and c >= 0 for c in counts) or sum(counts) != height * width:
            raise ValueError(f"uncompressed RLE counts must be non-negative and sum to {height * width}")
        return _to_str_rle(mask_utils.frPyObjects(segmentation, height, width))
    if not isinstance(counts, (str, bytes)) or not counts:
        raise ValueError("RLE counts must be a non-empty string")
    # pycocotools decodes without bounds checks (corrupt counts can write past the buffer), so the
    # runs are checked here first: a valid RLE covers exactly H*W pixels.
    if int(np.sum(rle_runs(counts))) != height * width:
        raise ValueError(f"RLE counts do not cover the {width}x{height} image exactly")
    return _to_str_rle(segmentation)


def check_box(box: Any) -> None:
    """Raises ValueError unless ``box`` is a COCO box: four finite numbers ``[x, y, w, h]``, ``w, h >= 0``."""
    if (not isinstance(box, (list, tuple)) or len(box) != 4
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in box)):
        raise ValueError(f"bbox {box!r} is not [x, y, width, height]")
    if box[2] < 0 or box[3] < 0:
        raise ValueError(f"bbox {box!r} has a negative width or height")


def boxes_to_rle(boxes: Sequence[Any], height: int, width: int) -> CocoRle:
    """The union of COCO boxes ``[x, y, w, h]`` rasterised at the image's size (the parts outside it dropped),
    as one compressed RLE: how a box detector's detections of one category become one mask.

    Raises:
        ValueError: a box is not four finite numbers with a non-negative width and height.
    """
    for box in boxes:
        check_box(box)
    rles = mask_utils.frPyObjects(np.asarray(boxes, dtype=np.float64).reshape(-1, 4), height, width)
    return _to_str_rle(mask_utils.merge(rles))


def rle_runs(counts: str | bytes) -> np.ndarray:
    """The run lengths of a compressed COCO RLE string (pycocotools' ``rleFrString``), validated."""
    s = counts.decode("ascii") if isinstance(counts, bytes) else counts
    runs: list[int] = []
    pos = 0
    while pos < len(s):
        value, shift, more = 0, 0, True
        while more:
            if pos >= len(s):
                raise ValueError("RLE counts string ends inside a number")
            c = ord(s[pos]) - 48
            if not 0 <= c < 64:
                raise ValueError(f"RLE counts contain an invalid character {s[pos]!r}")
            value |= (c & 0x1F) << (5 * shift)
            more = bool(c & 0x20)
            pos += 1
            shift += 1
            if not more and (c & 0x10):
                value |= -1 << (5 * shift)
        if len(runs) > 2:
            value += runs[-2]
        if value < 0:
            raise ValueError("RLE counts contain a negative run")
        runs.append(value)
    return np.asarray(runs, dtype=np.int64)


def rle_to_bitmap(rle: Mapping[str, Any]) -> np.ndarray:
    """Decode a compressed RLE to a ``uint8`` bitmap of shape ``(H, W)`` with values 0/1."""
    return mask_utils.decode(_to_bytes_rle(rle))


def bitmap_to_rle(bitmap: np.ndarray) -> CocoRle:
    """Encode a ``(H, W)`` bitmap (any dtype; non-zero is foreground) as a compressed RLE."""
    return _to_str_rle(mask_utils.encode(np.asfortranarray(bitmap.astype(np.uint8) != 0, dtype=np.uint8)))


def rle_area(rles: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """Pixel area of each RLE, shape ``(N,)`` int64."""
    out = [mask_utils.area([_to_bytes_rle(r) for r in rles[i : i + _AREA_CHUNK]])
           for i in range(0, len(rles), _AREA_CHUNK)]
    return np.concatenate(out).astype(np.int64) if out else np.zeros(0, dtype=np.int64)


def rle_iou(dets: Sequence[Mapping[str, Any]], gts: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """IoU matrix of shape ``(len(dets), len(gts))`` between two lists of RLEs (no crowd rule)."""
    if not dets or not gts:
        return np.zeros((len(dets), len(gts)))
    return np.asarray(mask_utils.iou([_to_bytes_rle(d) for d in dets], [_to_bytes_rle(g) for g in gts],
                                     [0] * len(gts)))


def union_rle(rles: Sequence[Mapping[str, Any]]) -> CocoRle:
    """The union of RLEs of one image as one RLE."""
    return _to_str_rle(mask_utils.merge([_to_bytes_rle(r) for r in rles], intersect=False))


def resize_nearest(bitmap: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Resize a label map or mask to ``size = (width, height)`` with nearest neighbour (PIL's).

    PIL's NEAREST matches the released COCO-CD build, so foreground ratios agree with it.
    Values are preserved exactly; the dtype must be uint8 or bool.
    """
    as_bool = bitmap.dtype == bool
    # pycocotools decodes column-major; PIL copies a non-C-contiguous array 3-4x slower.
    image = Image.fromarray(np.ascontiguousarray(bitmap, dtype=np.uint8))
    out = np.asarray(image.resize(size, resample=Image.Resampling.NEAREST))
    return out.astype(bool) if as_bool else out


def resized_fraction(bitmap: np.ndarray, size: tuple[int, int]) -> float:
    """The nonzero fraction of ``resize_nearest(bitmap, size)``, to the last bit, without resizing.

    PIL's nearest neighbour takes, per axis, one source row (column) for each output row (column),
    so the resized mask counts source pixel (r, c) once per pair of output row and column that took
    it: the count is ``rows_weight @ mask @ cols_weight``, exact in float64 (integers below 2**53).
    """
    height, width = bitmap.shape
    rows = np.bincount(_nearest_sources(height, size[1]), minlength=height).astype(np.float64)
    cols = np.bincount(_nearest_sources(width, size[0]), minlength=width).astype(np.float64)
    count = rows @ np.not_equal(bitmap, 0).astype(np.float64) @ cols
    return float(count) / (size[0] * size[1])


@functools.lru_cache(maxsize=1024)
def _nearest_sources(length: int, new_length: int) -> np.ndarray:
    """The source index PIL's NEAREST resize takes for each of ``new_length`` outputs (asked of PIL itself)."""
    indices = np.arange(length, dtype=np.int32).reshape(1, length)
    picked = Image.fromarray(indices, mode="I").resize((new_length, 1), resample=Image.Resampling.NEAREST)
    return np.asarray(picked)[0].astype(np.intp)


def intersection_area(a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
    """Pixels two RLEs of one image share."""
    return int(mask_utils.area(mask_utils.merge([_to_bytes_rle(a), _to_bytes_rle(b)], intersect=True)))
