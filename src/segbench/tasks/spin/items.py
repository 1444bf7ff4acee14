"""The SPIN annotation items: one per image–object–part, showing the image with the part outlined.

SPIN's interface (seed, Sec. 3.1) presents each image–object pair with one of its parts outlined by
a polygon and asks, subpart by subpart, whether it is present and where. An item here is that
image–part pair: a :class:`~segbench.schemas.rounds.RoundItem` whose image is a PNG overlay under
the data root and whose ``data`` names the object, its ImageNet class and the SPIN part, and carries
the part mask (``part_rle``) every answer must lie inside, so a round's ingest can check and resolve
its answers without the source annotations. :func:`part_contexts` gives the same masks by item id.

The round itself (label config, launch, ingest) is not built here.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw
from scipy import ndimage

from segbench.core.io import atomic_write_bytes, open_image, png_bytes
from segbench.core.masks import rle_to_bitmap
from segbench.schemas.rounds import RoundItem
from segbench.schemas.spin import PartContext
from segbench.tasks.spin.partimagenet import PartAnnotation, SourceImage

OVERLAY_DIR = "spin/tasks"  # relative to the data root
OUTLINE_COLOUR = (255, 215, 0)
OUTLINE_WIDTH = 2


def item_id(image: SourceImage, part: PartAnnotation) -> str:
    """``<stem>-<part annotation id>``: readable, and unique because part ids are."""
    return f"{image.stem}-{part.ann_id}"


def _selected_parts(images: Iterable[SourceImage], decomposable: set[tuple[str, str]] | None
                    ) -> list[tuple[SourceImage, PartAnnotation]]:
    out = []
    for image in sorted(images, key=lambda i: i.image_id):
        for part in image.parts:
            if decomposable is None or (image.supercategory, part.category.spin_name) in decomposable:
                out.append((image, part))
    return out


def _outlined(image: SourceImage, part: PartAnnotation) -> Image.Image:
    canvas = open_image(image.path, mode="RGB", item=f"image {image.image_id}", hint="restore the PartImageNet image")
    if part.polygons:
        draw = ImageDraw.Draw(canvas)
        for poly in part.polygons:
            points = list(zip(poly[0::2], poly[1::2], strict=True))
            draw.line([*points, points[0]], fill=OUTLINE_COLOUR, width=OUTLINE_WIDTH, joint="curve")
        return canvas
    # An RLE part has no polygon: outline its boundary pixels instead (mask minus its erosion).
    mask = rle_to_bitmap(part.rle).astype(bool)
    edge = mask & ~ndimage.binary_erosion(mask, iterations=OUTLINE_WIDTH)
    pixels = np.asarray(canvas).copy()
    pixels[edge] = OUTLINE_COLOUR
    return Image.fromarray(pixels)


def round_items(images: Iterable[SourceImage], data_root: str | Path, *,
                decomposable: set[tuple[str, str]] | None = None) -> dict[tuple[str, str], list[RoundItem]]:
    """Render one overlay per image–part and return the items grouped by (super-category, SPIN part).

    Args:
        images: the selected images.
        data_root: overlays go to ``<data_root>/spin/tasks/<stem>-<part_ann_id>.png``.
        decomposable: the (super-category, SPIN part) pairs that have subparts in the taxonomy;
            other parts (tails, bird wings, bicycle seats) get no item. ``None`` keeps every part.

    Returns:
        ``{(object, part): [RoundItem, ...]}``, keys and items sorted; ``data`` is exactly
        ``{"image_id", "part_ann_id", "object", "object_class", "part", "part_rle"}`` (``part_rle``: the
        part's compressed COCO RLE, ``{"size": [h, w], "counts": str}``).

    Raises:
        InputError: an image cannot be read.
    """
    data_root = Path(data_root)
    grouped: dict[tuple[str, str], list[RoundItem]] = {}
    for image, part in _selected_parts(images, decomposable):
        key = item_id(image, part)
        relative = f"{OVERLAY_DIR}/{key}.png"
        atomic_write_bytes(data_root / relative, png_bytes(_outlined(image, part)), durable=False)
        grouped.setdefault((image.supercategory, part.category.spin_name), []).append(RoundItem(
            item_id=key, image=relative, width=image.width, height=image.height,
            data={"image_id": image.image_id, "part_ann_id": part.ann_id, "object": image.supercategory,
                  "object_class": image.object_class, "part": part.category.spin_name,
                  "part_rle": {"size": [int(v) for v in part.rle["size"]], "counts": part.rle["counts"]}},
        ))
    return {k: sorted(v, key=lambda item: item.item_id) for k, v in sorted(grouped.items())}


def part_contexts(images: Iterable[SourceImage], *, decomposable: set[tuple[str, str]] | None = None
                  ) -> dict[str, PartContext]:
    """The part mask and image size of every item, by item id (same selection as :func:`round_items`)."""
    return {
        item_id(image, part): PartContext(
            image_id=image.image_id, part_ann_id=part.ann_id, height=image.height, width=image.width,
            part_rle=part.rle, object=image.supercategory, object_class=image.object_class,
            part=part.category.spin_name)
        for image, part in _selected_parts(images, decomposable)
    }
