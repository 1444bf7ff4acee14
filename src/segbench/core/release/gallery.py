"""Contact sheets for a person: tiles of images with their masks, captions under each tile.

Pillow only, with its built-in font, so a sheet's PNG bytes depend on the data alone.
"""

from __future__ import annotations

import zlib
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
    image.putpalette(_palette(colours))
    return png_bytes(image)


def palette_png_of(png: bytes, colours: Sequence[tuple[int, int, int]]) -> bytes:
    """:func:`palette_png` of a label map stored as a PNG, without decoding it when it is 8-bit grey.

    An 8-bit grey PNG and an 8-bit palette PNG store their pixels the same way (one byte each), so the
    grey file becomes a palette file by its header's colour type and a PLTE chunk, with the same pixel
    bytes. Any other PNG (other depths, ancillary chunks whose meaning depends on the colour type) is
    decoded and encoded anew.
    """
    chunks = _png_chunks(png)
    ihdr = chunks[0][1] if chunks and chunks[0][0] == b"IHDR" else b""
    plain = {kind for kind, _ in chunks} <= {b"IHDR", b"IDAT", b"IEND"}
    if len(ihdr) != 13 or ihdr[8:10] != bytes([8, 0]) or not plain:
        return palette_png(np.asarray(open_image(png, mode="L")), colours)
    palette = bytes(_palette(colours))
    out = [PNG_SIGNATURE, _png_chunk(b"IHDR", ihdr[:9] + bytes([3]) + ihdr[10:]), _png_chunk(b"PLTE", palette)]
    out += [_png_chunk(kind, data) for kind, data in chunks[1:]]
    return b"".join(out)


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _palette(colours: Sequence[tuple[int, int, int]]) -> list[int]:
    """256 RGB entries: black for 0, the colours for 1.., black after (every index a byte can hold is valid)."""
    flat = [0, 0, 0, *(value for colour in colours for value in colour)]
    return flat + [0] * (768 - len(flat))


def _png_chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    """A PNG's ``(type, data)`` chunks; empty when the bytes are not a well-formed PNG."""
    if not png.startswith(PNG_SIGNATURE):
        return []
    chunks, at = [], len(PNG_SIGNATURE)
    while at + 12 <= len(png):
        length = int.from_bytes(png[at:at + 4], "big")
        kind, data = png[at + 4:at + 8], png[at + 8:at + 8 + length]
        if len(data) != length or zlib.crc32(kind + data) != int.from_bytes(png[at + 8 + length:at + 12 + length],
                                                                            "big"):
            return []
        chunks.append((kind, data))
        at += 12 + length
        if kind == b"IEND":
            return chunks
    return []


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")


def overlay(image: Image.Image, masks: Sequence[tuple[np.ndarray, tuple[int, int, int]]],
            alpha: float = 0.45, outline: bool = True, *, tile: int | None = TILE) -> Image.Image:
    """``image`` shrunk to fit a sheet's ``tile`` (``None``: kept at its size), with each boolean mask (of
    the image's size) filled in its colour and outlined. Shrinking first keeps the work to the tile's
    pixels and the outline two of them wide, so it shows."""
    full = image.size
    image = image.convert("RGB") if image.mode != "RGB" else image.copy()
    if tile is not None:
        image.thumbnail((tile - 4, tile - 4), Image.Resampling.BILINEAR)
    pixels = np.asarray(image, dtype=np.float32).copy()
    for mask, colour in masks:
        if mask.shape != (full[1], full[0]):
            continue  # a mask of another size cannot be drawn on this image
        if image.size != full:
            mask = np.asarray(Image.fromarray(mask).resize(image.size, Image.Resampling.NEAREST))
        pixels[mask] = (1 - alpha) * pixels[mask] + alpha * np.asarray(colour, dtype=np.float32)
        if outline:
            edge = mask & ~_eroded(_eroded(mask))
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
    # zlib's fastest level: on a sheet of photos level 6 saves about an eighth of the bytes in three times the time
    atomic_write_bytes(folder / name, png_bytes(image, compress_level=1), durable=False)
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
