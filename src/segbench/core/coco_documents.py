"""The COCO documents segbench writes, as types.

Each dataset's split and export files are COCO documents whose images carry the dataset's own keys
(its class, context, edit or source); those extend :class:`CocoImage`. Masks are compressed RLEs
(:class:`CocoRle`), which :mod:`segbench.core.masks` turns into bitmaps. Readers of a COCO file
accept more than these (:mod:`segbench.core.coco` checks what they need); these types say what
segbench writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# typing_extensions' TypedDict: pydantic validates one (a CAFE target's mask) only in this form before 3.12.
from typing_extensions import NotRequired, TypedDict


class CocoRle(TypedDict):
    """A compressed COCO RLE as JSON holds it: ``[height, width]`` and the counts string."""

    size: list[int]
    counts: str


class PycocoRle(TypedDict):
    """A compressed RLE as pycocotools takes it: the counts as bytes."""

    size: list[int]
    counts: bytes


class CocoInfo(TypedDict, total=False):
    description: str
    version: str
    subset: str


class CocoImage(TypedDict):
    id: int
    file_name: str
    width: int
    height: int


class CocoRegion(TypedDict):
    """An annotation before it is numbered."""

    image_id: int
    category_id: int
    segmentation: CocoRle | list[list[float]]
    area: float
    bbox: list[float]
    iscrowd: int


class CocoAnnotation(CocoRegion):
    id: int
    parent_id: NotRequired[int]  # SPIN: the part a subpart belongs to, the object a part belongs to


class CocoCategory(TypedDict):
    id: int
    name: str
    supercategory: NotRequired[str]


class CocoDocument(TypedDict):
    info: CocoInfo
    licenses: NotRequired[list[dict[str, Any]]]
    images: Sequence[CocoImage]
    annotations: Sequence[CocoAnnotation]
    categories: Sequence[CocoCategory]
