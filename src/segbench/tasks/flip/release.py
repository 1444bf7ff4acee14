"""The release of a ρ-controlled flip dataset (COCO-CD, Waterbirds-seg): configs ``rho_<ρ>`` × train/val/test.

A row is one image: the image and its mask (a palette PNG label map: 0 background, 1 and 2 the
classes, shown in colour by any viewer), class and context as ClassLabels, ``group_id`` (2·y + a),
and what the dataset adds (COCO-CD's evidence shares, Waterbirds-seg's species and place). Splits
take the Hub's names (``validation``); the native files keep the build's (``val.json``): the split
JSONs the official evaluators read and the masks beside them. No evaluator reads an image, so
images live in the parquet alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from segbench.core.io import open_image
from segbench.core.release import gallery
from segbench.core.release.licences import expression
from segbench.core.release.plan import ImagePolicy, Licence, Table
from segbench.core.release.plan import columns as columns_of
from segbench.core.versioning import DatasetSource
from segbench.tasks.flip.inputs import read_split
from segbench.tasks.flip.qualitative import CLASS_COLOURS

SPLITS = ("train", "val", "test")
HUB_SPLIT = {"train": "train", "val": "validation", "test": "test"}  # the build's split → the Hub's name
SHARED_FOLDER = "balanced"  # data/balanced/: the validation and test files every ρ config shares
HEADLINE_CONFIG = "rho_0.95"  # the papers' headline correlation (seed 002, Tables 1-3)


@dataclass(frozen=True)
class FlipLayout:
    """What differs between the flip datasets' rows."""

    data_dir: str  # data/coco_cd
    class_names: tuple[str, str]
    context_field: str  # the column name of a, and the image entry's key
    context_names: tuple[str, str]
    extra: Callable[[Mapping[str, Any]], Mapping[str, object]]  # image entry → its dataset's own columns
    licence: Callable[[Mapping[str, Any]], list[Licence]]  # image entry → its licences (a composite: each part's)
    image: str  # what the image column holds (its size, how it was made)
    size: str  # what width and height measure
    has_images: bool = True  # False for a build made without images (masks only)


def columns(layout: FlipLayout, extra: list[tuple[str, Any, str]]) -> tuple[Any, dict[str, str]]:
    """The features of a flip dataset's rows and what each holds."""
    from segbench.core.release.features import ClassLabel, Image, Value

    classes = ", ".join(f"{i + 1} {name}" for i, name in enumerate(layout.class_names))
    return columns_of(
        ("image_id", Value("int64"), "the image's id in the build (its source's id), unique within a config"),
        ("image", Image(), f"{layout.image}; null when its licence forbids redistribution"),
        ("mask", Image(), f"the segmentation label map at the image's size, a palette PNG: 0 background, {classes}; "
                          "read it as a single-channel array of those values"),
        ("class", ClassLabel(names=list(layout.class_names)), "the image's one foreground class (y)"),
        (layout.context_field, ClassLabel(names=list(layout.context_names)), "the image's context (a)"),
        ("group_id", Value("int8"), "the group 2·y + a: " + ", ".join(
            f"{2 * y + a} {cls} {ctx}" for y, cls in enumerate(layout.class_names)
            for a, ctx in enumerate(layout.context_names))),
        ("width", Value("int32"), f"{layout.size} width in pixels"),
        ("height", Value("int32"), f"{layout.size} height in pixels"),
        *extra,
        ("source_file", Value("string"), "the source image's file name, relative to its source's image folder"),
        ("license_id", Value("string"), "the image's licence as an SPDX expression (a composite joins its parts' "
                                        "licences with AND); `LICENSES.md` names each"),
    )


def configs(source: DatasetSource, data_dir: str) -> list[str]:
    """The ``rho_<ρ>`` folders of a build, by ρ."""
    manifest = source.read_json(f"{data_dir}/manifest.json")
    return sorted(manifest["counts"]["splits"], key=lambda name: float(name.removeprefix("rho_")))


def tables(source: DatasetSource, layout: FlipLayout, policy: ImagePolicy) -> tuple[list[Table], dict]:
    """The tables of every config and split (by their Hub names), and the ids each split holds.

    Val and test are drawn once for every ρ (:mod:`segbench.core.splits`): when every config holds the
    same images there, the release writes them once, under ``data/balanced/``, and each config's
    ``validation`` and ``test`` point at those files."""
    out: list[Any] = []
    chosen: dict[Any, Any] = {}
    names = configs(source, layout.data_dir)
    splits = {(config, split): read_split(source, f"{layout.data_dir}/splits/{config}/{split}.json")
              for config in names for split in SPLITS}
    for config in names:
        for split in SPLITS:
            images = splits[(config, split)]
            shared = split != "train" and all(splits[(other, split)] == images for other in names)
            chosen.setdefault(config, {})[HUB_SPLIT[split]] = [int(image["id"]) for image in images]
            out.append(Table(config, HUB_SPLIT[split], len(images), _rows(source, layout, images, policy),
                             folder=SHARED_FOLDER if shared and len(names) > 1 else None))
    return out, chosen


def image_licences(layout: FlipLayout, policy: ImagePolicy, image: Mapping[str, Any]) -> list[Licence]:
    """The licences an image carries: each part's, or the maker's statement for every part."""
    stated = [policy.licence(licence) for licence in layout.licence(image)]
    return list({licence.id: licence for licence in stated}.values())


def shows_image(layout: FlipLayout, policy: ImagePolicy, image: Mapping[str, Any]) -> bool:
    """Whether the release holds an image's bytes: the build has images and every part may be passed on."""
    return layout.has_images and all(map(policy.embed, image_licences(layout, policy, image)))


def rho_set(rhos: list[float]) -> str:
    """The built correlations as a set, ``{0.5, 0.95}`` (a list in brackets reads as an interval)."""
    return "{" + ", ".join(f"{rho:g}" for rho in rhos) + "}"


def default_config(source: DatasetSource, data_dir: str) -> str:
    """The papers' headline config when the build has it, else its strongest correlation."""
    names = configs(source, data_dir)
    return HEADLINE_CONFIG if HEADLINE_CONFIG in names else names[-1]


def _rows(source: DatasetSource, layout: FlipLayout, images: list[dict], policy: ImagePolicy) -> Callable[[], Iterator[dict]]:
    def rows() -> Iterator[dict]:
        for image in images:
            licences = image_licences(layout, policy, image)
            image_file, mask_file = image["image_file"], image["mask_file"]
            yield {
                "image_id": int(image["id"]),
                "image": ({"bytes": source.read_bytes(f"{layout.data_dir}/{image_file}"),
                           "path": Path(image_file).name}
                          if shows_image(layout, policy, image) else None),
                "mask": {"bytes": gallery.palette_png_of(source.read_bytes(f"{layout.data_dir}/{mask_file}"), CLASS_COLOURS),
                         "path": Path(mask_file).name},
                "class": layout.class_names.index(image["class"]),
                layout.context_field: layout.context_names.index(image[layout.context_field]),
                "group_id": int(image["group_id"]),
                "width": int(image["width"]),
                "height": int(image["height"]),
                **layout.extra(image),
                "source_file": image["file_name"],
                "license_id": expression(licences),
            }
    return rows


def native_files(source: DatasetSource, data_dir: str) -> dict[str, str]:
    """The split JSONs and the masks they name, as the official evaluators read them."""
    files = {}
    for config in configs(source, data_dir):
        for split in SPLITS:
            files[f"native/splits/{config}/{split}.json"] = f"{data_dir}/splits/{config}/{split}.json"
    for name in source.listdir(f"{data_dir}/masks"):
        files[f"native/masks/{name}"] = f"{data_dir}/masks/{name}"
    return files


def gallery_writer(source: DatasetSource, layout: FlipLayout, group_names: list[str], policy: ImagePolicy,
                   tables: list[Table], per_group: int = 6) -> Callable[[Path], list[str]]:
    """Writes one sheet per split file (a split every config shares is drawn once): a row per group, the
    mask in its class's colour (on a grey canvas where the image is withheld)."""
    build_split = {hub: split for split, hub in HUB_SPLIT.items()}

    def write(folder: Path) -> list[str]:
        written: list[str] = []
        for table in tables:
            name = f"{table.folder or table.config}_{table.split}.png"
            if name in written:
                continue
            config, split = table.config, build_split[table.split]
            images = read_split(source, f"{layout.data_dir}/splits/{config}/{split}.json")
            tiles: list[tuple[Any, str]] = []
            for group, group_name in enumerate(group_names):
                chosen = [image for image in images if image["group_id"] == group][:per_group]
                for image in chosen:
                    mask = np.asarray(open_image(source.read_bytes(f"{layout.data_dir}/{image['mask_file']}"),
                                                 mode="L")) > 0
                    shown = shows_image(layout, policy, image)
                    picture = (gallery.decode(source.read_bytes(f"{layout.data_dir}/{image['image_file']}"))
                               if shown else gallery.withheld_canvas(mask.shape[1], mask.shape[0]))
                    colour = CLASS_COLOURS[group // 2]
                    note = "" if shown else (" (image withheld)" if layout.has_images else " (mask only)")
                    tiles.append((gallery.overlay(picture, [(mask, colour)]),
                                  f"{group_name}\nid {image['id']}{note}"))
                tiles.extend((None, "") for _ in range(per_group - len(chosen)))
            where = "every ρ config" if table.folder else config
            title = f"{where}, {table.split}: one row per group, mask overlaid"
            sheet = gallery.sheet(title, tiles, columns=per_group)
            written.append(gallery.save(sheet, folder, name))
        return written
    return write
