"""The COCO documents segbench writes, as types.

Each dataset's split and export files are COCO documents whose images carry the dataset's own keys
(its class, context, edit or source); those extend :class:`CocoImage`. Readers of a COCO file
accept more than these (:mod:`segbench.core.coco` checks what they need); these types say what
segbench writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NotRequired, TypedDict

from segbench.core.masks import CocoRle


class CocoInfo(TypedDict, total=False):
    description: str
    version: str
    subset: str


class CocoImage(TypedDict):
    id: int
    file_name: str
    width: int
    height: int


class CocoAnnotation(TypedDict):
    id: int
    image_id: int
    category_id: int
    segmentation: CocoRle | list[list[float]]
    area: float
    bbox: list[float]
    iscrowd: int
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
