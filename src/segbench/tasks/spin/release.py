"""The release of SPIN: one row per image with its object → part → subpart annotations nested.

Each annotation keeps its level, category, ``parent_id`` (-1 for a whole object), COCO RLE, area
and box, so the hierarchy is rebuilt without the native files. The source images are ImageNet's
(through PartImageNet), whose terms forbid redistribution: a row embeds its image only when the
maker says so (``--embed-restricted``, or ``[images]`` terms in ``release.toml``), and keeps the
ImageNet file name either way.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from segbench.core.masks import rle_to_bitmap
from segbench.core.release import gallery
from segbench.core.release.plan import ImagePolicy, Licence, ReleasePlan, Table
from segbench.core.release.rounds import rounds_of
from segbench.core.versioning import DatasetSource

SPLITS = ("train", "val", "test")
LEVELS = ("wholes", "parts", "subparts")
LEVEL_NAMES = ["whole", "part", "subpart"]
IMAGENET = Licence("other", "ImageNet terms of access: non-commercial research, no redistribution",
                   "https://www.image-net.org/download.php", False, "the images (ImageNet, through PartImageNet)")
PARTIMAGENET = Licence("other", "PartImageNet part annotations (see its release terms)",
                       "https://github.com/TACJu/PartImageNet", True, "the object and part masks", of_images=False)
CITATIONS = [
    "@inproceedings{myersdean2024spin,\n  title = {SPIN: Hierarchical Segmentation with Subpart Granularity in "
    "Natural Images},\n  booktitle = {ECCV},\n  year = {2024}\n}",
    "@inproceedings{he2022partimagenet,\n  title = {PartImageNet: A Large, High-Quality Dataset of Parts},\n"
    "  booktitle = {ECCV},\n  year = {2022}\n}",
]


def _read(source: DatasetSource, data_dir: str) -> dict[str, dict[str, Any]]:
    """split → level → the split's COCO JSON of that level."""
    return {split: {level: source.read_json(f"{data_dir}/spin_{split}_{level}.json") for level in LEVELS}
            for split in SPLITS}


def plan(source: DatasetSource, data_dir: str, policy: ImagePolicy) -> ReleasePlan:
    from datasets import ClassLabel, Features, Image, List, Value

    manifest = source.read_json(f"{data_dir}/manifest.json")
    files = _read(source, data_dir)
    image_files = {split: {Path(name).stem: name for name in source.listdir(f"{data_dir}/images/{split}")}
                   for split in SPLITS}
    licence = policy.licence(IMAGENET)
    features = Features({
        "image_id": Value("int64"), "image": Image(), "file_name": Value("string"), "object_class": Value("string"),
        "supercategory": Value("string"), "wnid": Value("string"), "width": Value("int32"), "height": Value("int32"),
        "annotations": List({
            "id": Value("int64"), "level": ClassLabel(names=LEVEL_NAMES), "category": Value("string"),
            "category_id": Value("int64"), "parent_id": Value("int64"),
            "rle": {"size": List(Value("int32")), "counts": Value("string")},
            "area": Value("float64"), "bbox": List(Value("float32")),
        }),
        "license_id": Value("string"),
    })

    def annotations_of(split: str) -> dict[int, list[dict]]:
        by_image: dict[int, list[dict]] = {}
        for level_no, level in enumerate(LEVELS):
            data = files[split][level]
            names = {c["id"]: c["name"] for c in data["categories"]}
            for a in sorted(data["annotations"], key=lambda a: a["id"]):
                by_image.setdefault(int(a["image_id"]), []).append({
                    "id": int(a["id"]), "level": level_no, "category": names.get(a["category_id"], ""),
                    "category_id": int(a["category_id"]), "parent_id": int(a.get("parent_id", -1)),
                    "rle": {"size": [int(v) for v in a["segmentation"]["size"]],
                            "counts": a["segmentation"]["counts"]},
                    "area": float(a["area"]), "bbox": [float(v) for v in a["bbox"]]})
        return by_image

    def image_bytes(split: str, image: dict) -> tuple[bytes, str] | None:
        name = image_files[split].get(Path(image["file_name"]).stem)
        return (source.read_bytes(f"{data_dir}/images/{split}/{name}"), name) if name else None

    def rows_of(split: str) -> Iterator[dict]:
        annotations = annotations_of(split)
        for image in sorted(files[split]["wholes"]["images"], key=lambda im: int(im["id"])):
            found = image_bytes(split, image) if policy.embed(licence) else None
            yield {"image_id": int(image["id"]),
                   "image": {"bytes": found[0], "path": found[1]} if found else None,
                   "file_name": image["file_name"], "object_class": image.get("object_class", ""),
                   "supercategory": image.get("supercategory", ""), "wnid": image.get("wnid", ""),
                   "width": int(image["width"]), "height": int(image["height"]),
                   "annotations": annotations.get(int(image["id"]), []), "license_id": licence.id}

    def write_gallery(out: Path) -> list[str]:
        written = []
        for split in SPLITS:
            annotations = annotations_of(split)
            tiles: list[tuple[Any, str]] = []
            for image in sorted(files[split]["wholes"]["images"], key=lambda im: int(im["id"]))[:12]:
                found = image_bytes(split, image) if policy.embed(licence) else None
                caption = f"{image.get('object_class', '')}\nid {image['id']}"
                if not found:
                    tiles.append((None, caption + " (withheld)"))
                    continue
                layers = [(rle_to_bitmap(a["rle"]).astype(bool), gallery.PALETTE[a["level"]])
                          for a in sorted(annotations.get(int(image["id"]), []), key=lambda a: a["level"])]
                tiles.append((gallery.overlay(gallery.decode(found[0]), layers), caption))
            title = f"SPIN {split}: wholes (orange), parts (blue) and subparts (green)"
            written.append(gallery.save(gallery.sheet(title, tiles, columns=6), out, f"{split}.png"))
        return written

    composition = manifest["counts"]["composition"]
    filters = manifest["counts"]["filters"]
    native = {f"native/spin_{split}_{level}.json": f"{data_dir}/spin_{split}_{level}.json"
              for split in SPLITS for level in LEVELS}
    if policy.embed(licence):
        native |= {f"native/images/{split}/{name}": f"{data_dir}/images/{split}/{name}"
                   for split in SPLITS for name in image_files[split].values()}
    taxonomy = f"{Path(data_dir).parent}/taxonomy.yaml"
    if source.exists(taxonomy):
        native["native/taxonomy.yaml"] = taxonomy
    return ReleasePlan(
        name="spin", pretty_name="SPIN (SubPartImageNet)",
        summary=("Natural images with an object → part → subpart hierarchy of masks: PartImageNet's objects and "
                 "parts, and subparts drawn by a crowd under a taxonomy proposed by a language model and edited "
                 "by people; for hierarchical segmentation and its metrics (SpCS, SeCS)."),
        features=features, tables=[Table("default", split, len(files[split]["wholes"]["images"]),
                                         lambda split=split: rows_of(split)) for split in SPLITS],
        native=native, version=manifest["build_key"], created=manifest["created_at"], sources=dict(manifest["inputs"]),
        selection={"kept images": filters["kept_images"], "background-only images": filters["background_only_total"],
                   "over the per-supercategory cap": filters["over_cap_total"],
                   **{f"ambiguous {name}": n for name, n in filters["ambiguous_part_annotations"].items()},
                   **{f"{level} annotations": composition["overall"][level]["annotations"] for level in LEVELS}},
        seed=manifest.get("seed"),
        chosen_ids={"default": {split: sorted(int(im["id"]) for im in files[split]["wholes"]["images"])
                                for split in SPLITS}},
        rounds=rounds_of(source, {"spin"}),
        machine_tools=["subpart taxonomy proposed by a language model (WordNet offline), then edited by people"],
        collection="Images, objects and parts are PartImageNet's (ImageNet images); subparts are drawn by a crowd.",
        preprocessing=(f"At most {manifest['params']['cap_per_supercategory']} images per supercategory (seed "
                       f"{manifest.get('seed')}); images with only background are dropped; parts whose subparts are "
                       "ambiguous are flagged."),
        annotation_protocol=("One crowd round per object part: workers draw each subpart of the taxonomy as polygons; "
                             "answers are merged per subpart and clipped to their parent part."),
        biases=["The supercategories are PartImageNet's: animals and vehicles dominate.",
                "The taxonomy's subparts are those a language model proposed and people kept."],
        limitations=["Subpart polygons are coarse at small scales.", "Images are not redistributed by default."],
        use_cases=["Hierarchical semantic segmentation at object, part and subpart granularity."],
        licences=[PARTIMAGENET, licence], image_licences={}, citations=CITATIONS,
        source_datasets=["imagenet", "partimagenet"], annotations_creators=["crowdsourced", "expert-generated"],
        gallery=write_gallery,
        load_example='ds = load_dataset(path, split="val")\nrow = ds[0]  # row["annotations"]: wholes, parts, subparts',
    )
