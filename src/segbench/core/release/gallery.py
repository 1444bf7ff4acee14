"""Contact sheets for a person: tiles of images with their masks, captions under each tile.

Pillow only, with its built-in font, so a sheet's PNG bytes depend on the data alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from segbench.core.io import atomic_write_bytes, open_image, png_bytes

TILE = 160
CAPTION = 26
# Distinct, colour-blind-safe colours (Okabe–Ito) for masks and levels.
PALETTE = [(230, 159, 0), (86, 180, 233), (0, 158, 115), (240, 228, 66), (0, 114, 178), (213, 94, 0),
           (204, 121, 167)]


WITHHELD = (214, 214, 214)  # the canvas a withheld image's masks are drawn on


def decode(data: bytes) -> Image.Image:
    return open_image(data, mode="RGB")


def withheld_canvas(width: int, height: int) -> Image.Image:
    """A neutral canvas of an image's size, for drawing the masks of an image the release withholds."""
    return Image.new("RGB", (max(1, width), max(1, height)), WITHHELD)


def palette_png(labels: np.ndarray, colours: Sequence[tuple[int, int, int]]) -> bytes:
    """A label map as a palette PNG: the pixel values stay the class indices (0 background, black), and a
    viewer shows each class in its colour instead of a black image."""
    image = Image.fromarray(labels.astype(np.uint8), mode="L").convert("P")
    flat = [0, 0, 0, *(value for colour in colours for value in colour)]
    image.putpalette(flat + [0] * (768 - len(flat)))
    return png_bytes(image)


def overlay(image: Image.Image, masks: Sequence[tuple[np.ndarray, tuple[int, int, int]]],
            alpha: float = 0.45, outline: bool = True) -> Image.Image:
    """``image`` with each boolean mask filled in its colour (and outlined)."""
    pixels = np.asarray(image.convert("RGB"), dtype=np.float32).copy()
    for mask, colour in masks:
        if mask.shape != pixels.shape[:2]:
            continue  # a mask of another size cannot be drawn on this image
        pixels[mask] = (1 - alpha) * pixels[mask] + alpha * np.asarray(colour, dtype=np.float32)
        if outline:
            edge = mask & ~_eroded(_eroded(mask))  # two pixels wide: visible on a thumbnail
            pixels[edge] = colour
    return Image.fromarray(pixels.round().astype(np.uint8))


def _eroded(mask: np.ndarray) -> np.ndarray:
    inner = mask.copy()
    inner[1:, :] &= mask[:-1, :]
    inner[:-1, :] &= mask[1:, :]
    inner[:, 1:] &= mask[:, :-1]
    inner[:, :-1] &= mask[:, 1:]
    return inner


def _fit(image: Image.Image, size: int) -> Image.Image:
    image = image.copy()
    image.thumbnail((size, size), Image.Resampling.BILINEAR)
    tile = Image.new("RGB", (size, size), (245, 245, 245))
    tile.paste(image, ((size - image.width) // 2, (size - image.height) // 2))
    return tile


def sheet(title: str, tiles: Sequence[tuple[Image.Image | None, str]], *, columns: int = 6, size: int = TILE) -> Image.Image:
    """A grid of tiles with a caption (up to two lines) under each and a title on top; a ``None`` tile stays blank."""
    font = ImageFont.load_default()
    rows = max(1, -(-len(tiles) // columns))
    width = columns * size
    canvas = Image.new("RGB", (width, 24 + rows * (size + CAPTION)), "white")
    draw = ImageDraw.Draw(canvas)
    draw.text((6, 6), title, fill="black", font=font)
    for index, (image, caption) in enumerate(tiles):
        x, y = (index % columns) * size, 24 + (index // columns) * (size + CAPTION)
        if image is not None:
            canvas.paste(_fit(image, size - 4), (x + 2, y))
        for line_no, line in enumerate(_caption_lines(caption, size // 6)):
            draw.text((x + 4, y + size - 2 + 12 * line_no), line, fill="black", font=font)
    if not tiles:
        draw.text((6, 40), "(no items)", fill="gray", font=font)
    return canvas


def _caption_lines(caption: str, width: int) -> list[str]:
    """At most two lines of ``width`` characters; a line that is cut ends in "..." so the cut shows."""
    lines = caption.splitlines()
    out = [line if len(line) <= width else line[: width - 3] + "..." for line in lines[:2]]
    if len(lines) > 2 and out:
        out[-1] = out[-1][: width - 3] + "..."
    return out


def save(image: Image.Image, folder: Path, name: str) -> str:
    atomic_write_bytes(folder / name, png_bytes(image), durable=False)
    return name


def table_image(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], *, column_width: int = 180
                ) -> Image.Image:
    """A plain table as a picture (for vocabularies, where there is no image to show)."""
    font = ImageFont.load_default()
    line = 14
    canvas = Image.new("RGB", (max(1, len(header)) * column_width + 12, 40 + line * (len(rows) + 1)), "white")
    draw = ImageDraw.Draw(canvas)
    draw.text((6, 6), title, fill="black", font=font)
    for col, name in enumerate(header):
        draw.text((6 + col * column_width, 26), name, fill=(0, 114, 178), font=font)
    for row_no, row in enumerate(rows, start=1):
        for col, cell in enumerate(row):
            draw.text((6 + col * column_width, 26 + row_no * line), str(cell)[: column_width // 6], fill="black",
                      font=font)
    return canvas
