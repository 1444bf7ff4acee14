"""The release of a ρ-controlled flip dataset (COCO-CD, Waterbirds-seg): configs ``rho_<ρ>`` × train/val/test.

A row is one image: the image and its mask (a PNG label map, 0 background, 1.. the class ids),
class and context as ClassLabels, ``group_id`` (2·y + a), and what the dataset adds (COCO-CD's
evidence shares, Waterbirds-seg's species and place). The native files are the split JSONs the
official evaluators read, the masks beside them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from segbench.core.release import gallery
from segbench.core.release.plan import ImagePolicy, Licence, Table
from segbench.core.versioning import DatasetSource
from segbench.tasks.flip.inputs import read_split

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class FlipLayout:
    """What differs between the flip datasets' rows."""

    data_dir: str  # data/coco_cd
    class_names: tuple[str, str]
    context_field: str  # the column name of a, and the image entry's key
    context_names: tuple[str, str]
    extra: Callable[[Mapping[str, Any]], dict[str, Any]]  # image entry → its dataset's own columns
    licence: Callable[[Mapping[str, Any]], Licence]  # image entry → its image's licence
    has_images: bool = True  # False for a build made without images (masks only)


def features(layout: FlipLayout, extra: Mapping[str, Any]) -> Any:
    from datasets import ClassLabel, Features, Image, Value

    return Features({
        "image_id": Value("int64"),
        "image": Image(),
        "mask": Image(),
        "class": ClassLabel(names=list(layout.class_names)),
        layout.context_field: ClassLabel(names=list(layout.context_names)),
        "group_id": Value("int8"),
        "width": Value("int32"),
        "height": Value("int32"),
        **extra,
        "source_file": Value("string"),
        "license_id": Value("string"),
    })


def configs(source: DatasetSource, data_dir: str) -> list[str]:
    """The ``rho_<ρ>`` folders of a build, by ρ."""
    manifest = source.read_json(f"{data_dir}/manifest.json")
    return sorted(manifest["counts"]["splits"], key=lambda name: float(name.removeprefix("rho_")))


def tables(source: DatasetSource, layout: FlipLayout, policy: ImagePolicy) -> tuple[list[Table], dict]:
    """The tables of every config and split, and the ids each split holds."""
    out, chosen = [], {}
    for config in configs(source, layout.data_dir):
        for split in SPLITS:
            relpath = f"{layout.data_dir}/splits/{config}/{split}.json"
            images = read_split(source, relpath)
            chosen.setdefault(config, {})[split] = [int(image["id"]) for image in images]
            out.append(Table(config, split, len(images), _rows(source, layout, images, policy)))
    return out, chosen


def _rows(source: DatasetSource, layout: FlipLayout, images: list[dict], policy: ImagePolicy) -> Callable[[], Iterator[dict]]:
    def rows() -> Iterator[dict]:
        for image in images:
            licence = policy.licence(layout.licence(image))
            image_file, mask_file = image["image_file"], image["mask_file"]
            yield {
                "image_id": int(image["id"]),
                "image": ({"bytes": source.read_bytes(f"{layout.data_dir}/{image_file}"),
                           "path": Path(image_file).name} if layout.has_images and policy.embed(licence) else None),
                "mask": {"bytes": source.read_bytes(f"{layout.data_dir}/{mask_file}"), "path": Path(mask_file).name},
                "class": layout.class_names.index(image["class"]),
                layout.context_field: layout.context_names.index(image[layout.context_field]),
                "group_id": int(image["group_id"]),
                "width": int(image["width"]),
                "height": int(image["height"]),
                **layout.extra(image),
                "source_file": image["file_name"],
                "license_id": licence.id,
            }
    return rows


def native_files(source: DatasetSource, data_dir: str) -> dict[str, str]:
    """The split JSONs and the masks and images they name, as the official evaluators read them."""
    files = {}
    for config in configs(source, data_dir):
        for split in SPLITS:
            files[f"native/splits/{config}/{split}.json"] = f"{data_dir}/splits/{config}/{split}.json"
    for folder in ("masks", "images"):
        for name in source.listdir(f"{data_dir}/{folder}"):
            files[f"native/{folder}/{name}"] = f"{data_dir}/{folder}/{name}"
    return files


def gallery_writer(source: DatasetSource, layout: FlipLayout, group_names: list[str], policy: ImagePolicy,
                   per_group: int = 6) -> Callable[[Path], list[str]]:
    """Writes one sheet per config × split: a row per group, the masks overlaid."""
    def write(folder: Path) -> list[str]:
        written = []
        for config in configs(source, layout.data_dir):
            for split in SPLITS:
                images = read_split(source, f"{layout.data_dir}/splits/{config}/{split}.json")
                tiles = []
                for group, group_name in enumerate(group_names):
                    chosen = [image for image in images if image["group_id"] == group][:per_group]
                    for image in chosen:
                        if not policy.embed(policy.licence(layout.licence(image))):
                            tiles.append((None, f"{group_name}\nid {image['id']} (withheld)"))
                            continue
                        mask = np.asarray(gallery.decode(source.read_bytes(
                            f"{layout.data_dir}/{image['mask_file']}")))[..., 0] > 0
                        picture = (gallery.decode(source.read_bytes(f"{layout.data_dir}/{image['image_file']}"))
                                   if layout.has_images else gallery.Image.new("RGB", mask.shape[::-1], "lightgray"))
                        tiles.append((gallery.overlay(picture, [(mask, gallery.PALETTE[group])]),
                                      f"{group_name}\nid {image['id']}"))
                    tiles.extend((None, "") for _ in range(per_group - len(chosen)))
                sheet = gallery.sheet(f"{config} {split}: one row per group, mask overlaid", tiles, columns=per_group)
                written.append(gallery.save(sheet, folder, f"{config}_{split}.png"))
        return written
    return write
