"""Typed, reducing reads of large COCO files: decode only the fields a builder needs.

:func:`load_coco` materialises every record of a file as Python dicts (a COCO-Stuff file holds
~1.3M annotations with their segmentations). A builder that keeps a small part of a file uses
these instead: :func:`read_coco` splits the file into its records left undecoded
(:class:`msgspec.Raw`, views into the file's bytes), :func:`valid_images` and
:func:`valid_annotations` decode each record into a small typed struct with only the checked
fields (unknown fields are skipped, segmentations stay undecoded), and the builder decodes in full
only the records it keeps (:func:`as_dict`). The rules and messages are those of
:mod:`segbench.core.coco`: a record the typed decoding refuses is checked again as plain JSON, so it
is either accepted exactly as :func:`load_coco` would accept it or refused with the same message,
followed by the JSON path of the field at fault.

Drop the :class:`RawCoco` (and every ``Raw`` taken from it) once the file is reduced: they keep the
file's bytes alive.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Container, Iterator
from pathlib import Path
from typing import Annotated, Any

import msgspec

from segbench.core.coco import annotation_problem, image_problem, load_categories
from segbench.core.errors import AnnotationError, ImportPolicy, InputError
from segbench.core.io import not_utf8, read_bytes, without_bom

Positive = Annotated[int, msgspec.Meta(gt=0)]


class RawCoco(msgspec.Struct):
    """A COCO file with its images and annotations left undecoded."""

    images: list[msgspec.Raw]
    annotations: list[msgspec.Raw]
    categories: list[Any]
    info: Any = None
    licenses: Any = None


class ImageFields(msgspec.Struct):
    """The checked fields of an image record."""

    id: int
    width: Positive
    height: Positive
    file_name: Annotated[str, msgspec.Meta(min_length=1)]


class AnnotationFields(msgspec.Struct):
    """The checked fields of an annotation; the segmentation is only required, not decoded."""

    id: int
    image_id: int
    category_id: int
    area: Annotated[float, msgspec.Meta(ge=0)]
    segmentation: msgspec.Raw


_RAW_COCO = msgspec.json.Decoder(RawCoco)
_IMAGE = msgspec.json.Decoder(ImageFields)
_ANNOTATION = msgspec.json.Decoder(AnnotationFields)
_TOP_KEY = re.compile(r"`\$\.(\w+)`|required field `(\w+)`")


def read_coco(path: str | Path) -> RawCoco:
    """The file's records, undecoded, and its categories.

    Raises:
        InputError: the file is missing, not UTF-8, not JSON, not an object, or lacks a list of
            ``images`` / ``annotations`` / ``categories`` (names the key and the JSON path).
    """
    path = Path(path)
    data = without_bom(read_bytes(path))
    try:
        return _RAW_COCO.decode(data)
    except msgspec.ValidationError as exc:
        key = _TOP_KEY.search(str(exc))
        if key is None:
            raise InputError("a COCO file must hold a JSON object", path=path) from exc
        raise InputError(
            f"missing or non-list key {key.group(1) or key.group(2)!r} ({exc})",
            path=path,
            hint="is this a COCO annotation file (instances_*.json / stuff_*.json)?",
        ) from exc
    except RecursionError:
        raise InputError("JSON nested too deeply to read", path=path,
                         hint="is this a COCO annotation file? its records nest a few levels at most") from None
    except msgspec.DecodeError as exc:
        try:
            bytes(data).decode("utf-8")
        except UnicodeDecodeError as not_text:
            raise not_utf8(not_text, path) from not_text
        raise InputError(f"not valid JSON ({exc})", path=path, hint="re-download or regenerate the file") from exc


def categories_of(raw: RawCoco, path: str | Path) -> dict[int, dict[str, Any]]:
    """The file's categories by id (as :func:`segbench.core.coco.load_coco` checks them)."""
    return load_categories(raw.categories, Path(path))


def as_dict(record: msgspec.Raw) -> Any:
    """One record decoded in full, as plain JSON values (what :func:`load_coco` would hold).

    A number msgspec cannot hold (``1e999``) is read as the standard library reads it (infinity),
    so the record's checks name the field; a record nested too deep to decode is ``None``.
    """
    try:
        return msgspec.json.decode(record)
    except msgspec.ValidationError:
        return json.loads(bytes(record))
    except RecursionError:
        return None


def _where(exc: msgspec.ValidationError, prefix: str) -> str:
    """msgspec's message with its JSON path made absolute (``$.area`` → ``$.annotations[7].area``)."""
    text = str(exc)
    message, _, at = text.partition(" - at `$")
    return f"{prefix}{at.rstrip('`')}: {message}" if at else f"{prefix}: {message}"


def valid_images(raw: RawCoco, path: str | Path, policy: ImportPolicy) -> Iterator[tuple[ImageFields, msgspec.Raw]]:
    """Each valid image record (typed fields, undecoded record), in file order; bad ones go to ``policy``."""
    seen: set[int] = set()
    for position, record in enumerate(raw.images):
        try:
            image = _IMAGE.decode(record)
            problem = f"image id {image.id} appears twice" if image.id in seen else None
            plain = None
        except msgspec.ValidationError as exc:
            plain = as_dict(record)
            problem = image_problem(plain)
            if problem is None:  # valid as plain JSON (e.g. a width written 640.0)
                image = ImageFields(id=plain["id"], width=plain["width"], height=plain["height"],
                                    file_name=plain["file_name"])
                problem = f"image id {image.id} appears twice" if image.id in seen else None
            else:
                problem = f"{problem} (at {_where(exc, f'$.images[{position}]')})"
        if problem:
            plain = as_dict(record) if plain is None else plain
            item = f"image {plain.get('id')}" if isinstance(plain, dict) else "image"
            policy.handle(AnnotationError(problem, path=path, item=item, hint="fix or remove the image record"))
            continue
        seen.add(image.id)
        yield image, record


def valid_annotations(
    raw: RawCoco, path: str | Path, policy: ImportPolicy, images: Container[int], categories: Container[int]
) -> Iterator[tuple[AnnotationFields, msgspec.Raw]]:
    """Each valid annotation (typed fields, undecoded record), in file order; bad ones go to ``policy``.

    ``images`` holds the ids of the file's valid images, ``categories`` its category ids.
    """
    seen: set[int] = set()
    for position, record in enumerate(raw.annotations):
        where = f"$.annotations[{position}]"
        ann: AnnotationFields | None
        try:
            ann = _ANNOTATION.decode(record)
        except msgspec.ValidationError as exc:
            ann, where = _plain_annotation(record), _where(exc, where)
        if (ann is not None and ann.id not in seen and ann.image_id in images and ann.category_id in categories
                and math.isfinite(ann.area)):
            seen.add(ann.id)
            yield ann, record
            continue
        plain = as_dict(record)
        problem = annotation_problem(plain, images, categories) or "annotation id appears twice"
        item = f"annotation {plain.get('id')}" if isinstance(plain, dict) else "annotation"
        policy.handle(AnnotationError(f"{problem} (at {where})", path=path, item=item,
                                      hint="fix or remove the annotation"))


def _plain_annotation(record: msgspec.Raw) -> AnnotationFields | None:
    """The fields of an annotation the typed decoding refused but plain JSON rules accept (e.g. ``"id": 5.0``)."""
    plain = as_dict(record)
    try:
        valid = (isinstance(plain["id"], int) and not isinstance(plain["id"], bool)
                 and isinstance(plain["area"], (int, float)) and not isinstance(plain["area"], bool)
                 and plain["area"] >= 0 and "segmentation" in plain)
        return AnnotationFields(id=plain["id"], image_id=plain["image_id"], category_id=plain["category_id"],
                                area=float(plain["area"]), segmentation=msgspec.Raw()) if valid else None
    except (KeyError, TypeError):
        return None
