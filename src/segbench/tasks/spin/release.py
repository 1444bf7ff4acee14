"""The release of SPIN: one row per image with its object → part → subpart annotations nested.

Each annotation keeps its level, category, ``parent_id`` (-1 for a whole object), COCO RLE, area
and box, so the hierarchy is rebuilt without the native files. The source images are ImageNet's
(through PartImageNet), whose terms forbid redistribution: a row embeds its image only when the
maker says so (``--embed-restricted``, or ``[images]`` terms in ``release.toml``). Either way it
keeps the image's file name and sha256, and the release ships ``reattach_images.py``, which fills
the image column from a local PartImageNet or ImageNet copy and checks each file's sha256.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from segbench.core.masks import intersection_area, rle_to_bitmap
from segbench.core.release import gallery
from segbench.core.release.plan import ImagePolicy, Licence, ReleasePlan, Table
from segbench.core.release.rounds import rounds_of
from segbench.core.versioning import DatasetSource

SPLITS = ("train", "val", "test")
LEVELS = ("wholes", "parts", "subparts")
LEVEL_NAMES = ["whole", "part", "subpart"]
IMAGENET = Licence("LicenseRef-ImageNet", "ImageNet terms of access: non-commercial research, no redistribution",
                   "https://www.image-net.org/download.php", False, "the images (ImageNet, through PartImageNet)")
PARTIMAGENET = Licence("LicenseRef-PartImageNet", "PartImageNet part annotations (see its release terms)",
                       "https://github.com/TACJu/PartImageNet", True, "the object and part masks, copied from "
                       "PartImageNet", of_images=False)
CITATIONS = [
    "@inproceedings{myersdean2024spin,\n  title = {SPIN: Hierarchical Segmentation with Subpart Granularity in "
    "Natural Images},\n  author = {Myers-Dean, Josh and Reynolds, Jarek and Price, Brian and Fan, Yifei and "
    "Gurari, Danna},\n  booktitle = {ECCV},\n  year = {2024}\n}",
    "@inproceedings{he2022partimagenet,\n  title = {PartImageNet: A Large, High-Quality Dataset of Parts},\n"
    "  author = {He, Ju and Yang, Shuo and Yang, Shaokang and Kortylewski, Adam and Yuan, Xiaoding and Chen, "
    "Jie-Neng and Liu, Shuai and Yang, Cheng and Yu, Qihang and Yuille, Alan},\n  booktitle = {ECCV},\n"
    "  year = {2022}\n}",
]
REATTACH = "reattach_images.py"
HUB_SPLIT = {"train": "train", "val": "validation", "test": "test"}
DESCRIPTIONS = {
    "image_id": "the image's id in the SPIN files (the same in every level's file)",
    "image": "the ImageNet photo (JPEG); null when withheld for its licence (fill it with reattach_images.py)",
    "file_name": "the image's path in the build: <split>/<ImageNet file name>",
    "image_sha256": "the sha256 of the image file, so a local copy can be checked before it is attached",
    "object_class": "the ImageNet class of the photo (e.g. goose)",
    "supercategory": "the PartImageNet super-category (e.g. Bird), whose parts and subparts are annotated",
    "wnid": "the ImageNet WordNet id of object_class",
    "width": "the image's width in pixels",
    "height": "the image's height in pixels",
    "annotations": "the object → part → subpart masks: per annotation its id, level (whole, part or subpart), "
                   "category (Supercategory-Part-Subpart), category_id, parent_id (the enclosing level's "
                   "annotation id; -1 for a whole), COCO RLE, area in pixels and box [x, y, width, height]",
    "license_id": "the image's licence (`LICENSES.md` names it)",
}

GALLERY_TILE = 200  # a gallery sheet's tile side in pixels


def containment(files: dict[str, dict[str, Any]]) -> tuple[int, int, float]:
    """How far subparts lie inside their parent part: (wholly inside, subparts with a parent, mean share inside).

    Subparts are not clipped to their part: a crowd polygon may cross the part's edge. This measures it."""
    inside, total, shares = 0, 0, []
    for levels in files.values():
        parts = {int(a["id"]): a["segmentation"] for a in levels["parts"]["annotations"]}
        for a in levels["subparts"]["annotations"]:
            parent = parts.get(int(a.get("parent_id", -1)))
            area = float(a["area"])
            if parent is None or area <= 0:
                continue
            share = min(1.0, intersection_area(a["segmentation"], parent) / area)
            inside += share >= 1.0
            total += 1
            shares.append(share)
    return inside, total, (sum(shares) / len(shares) if shares else 1.0)


def _read(source: DatasetSource, data_dir: str) -> dict[str, dict[str, Any]]:
    """split → level → the split's COCO JSON of that level."""
    return {split: {level: source.read_json(f"{data_dir}/spin_{split}_{level}.json") for level in LEVELS}
            for split in SPLITS}


def plan(source: DatasetSource, data_dir: str, policy: ImagePolicy) -> ReleasePlan:
    from segbench.core.release.features import ClassLabel, Features, Image, List, Value

    manifest = source.read_json(f"{data_dir}/manifest.json")
    files = _read(source, data_dir)
    image_files = {split: {Path(name).stem: name for name in source.listdir(f"{data_dir}/images/{split}")}
                   for split in SPLITS}
    licence = policy.licence(IMAGENET)
    features = Features({
        "image_id": Value("int64"), "image": Image(), "file_name": Value("string"), "image_sha256": Value("string"),
        "object_class": Value("string"), "supercategory": Value("string"), "wnid": Value("string"),
        "width": Value("int32"), "height": Value("int32"),
        "annotations": List({
            "id": Value("int64"), "level": ClassLabel(names=LEVEL_NAMES), "category": Value("string"),
            "category_id": Value("int64"), "parent_id": Value("int64"),
            "rle": {"size": List(Value("int32")), "counts": Value("string")},
            "area": Value("float64"), "bbox": List(Value("float32")),
        }),
        "license_id": Value("string"),
    })
    outputs = manifest.get("outputs", {})

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

    def file_of(split: str, image: dict) -> str | None:
        return image_files[split].get(Path(image["file_name"]).stem)

    def rows_of(split: str) -> Iterator[dict]:
        annotations = annotations_of(split)
        for image in sorted(files[split]["wholes"]["images"], key=lambda im: int(im["id"])):
            name = file_of(split, image)
            embedded = name is not None and policy.embed(licence)
            yield {"image_id": int(image["id"]),
                   "image": ({"bytes": source.read_bytes(f"{data_dir}/images/{split}/{name}"), "path": name}
                             if embedded else None),
                   "file_name": f"{split}/{name or image['file_name']}",
                   "image_sha256": outputs.get(f"images/{split}/{name}") if name else None,
                   "object_class": image.get("object_class", ""),
                   "supercategory": image.get("supercategory", ""), "wnid": image.get("wnid", ""),
                   "width": int(image["width"]), "height": int(image["height"]),
                   "annotations": annotations.get(int(image["id"]), []), "license_id": licence.id}

    def write_gallery(out: Path) -> list[str]:
        """One sheet per super-category: each image as three tiles, wholes, parts and subparts, so no level
        hides another (on a grey canvas where the image is withheld)."""
        written = []
        by_class: dict[str, list[tuple[str, dict]]] = {}
        for split in SPLITS:
            for image in sorted(files[split]["wholes"]["images"], key=lambda im: int(im["id"])):
                by_class.setdefault(image.get("supercategory", "") or "unknown", []).append((split, image))
        annotations = {split: annotations_of(split) for split in SPLITS}
        for supercategory, images in sorted(by_class.items()):
            tiles: list[tuple[Any, str]] = []
            for split, image in images[:4]:
                name = file_of(split, image)
                shown = name is not None and policy.embed(licence)
                base = (gallery.decode(source.read_bytes(f"{data_dir}/images/{split}/{name}")) if shown
                        else gallery.withheld_canvas(int(image["width"]), int(image["height"])))
                note = "" if shown else ", no image"
                for level_no, level in enumerate(LEVEL_NAMES):
                    layers = [(rle_to_bitmap(a["rle"]).astype(bool), gallery.PALETTE[(level_no * 2 + i) % 7])
                              for i, a in enumerate(a for a in annotations[split].get(int(image["id"]), [])
                                                    if a["level"] == level_no)]
                    tiles.append((gallery.overlay(base, layers, tile=GALLERY_TILE),
                                  f"{image.get('object_class', '')} {image['id']}\n{level}s: {len(layers)}{note}"))
            title = (f"SPIN {supercategory}: each image as wholes, parts and subparts"
                     + ("" if policy.embed(licence) else " (images withheld: masks on grey)"))
            written.append(gallery.save(gallery.sheet(title, tiles, columns=3, size=GALLERY_TILE), out,
                                        f"{supercategory}.png"))
        return written

    composition = manifest["counts"]["composition"]
    filters = manifest["counts"]["filters"]
    native = {f"native/spin_{split}_{level}.json": f"{data_dir}/spin_{split}_{level}.json"
              for split in SPLITS for level in LEVELS}
    taxonomy = f"{Path(data_dir).parent}/taxonomy.yaml"
    if source.exists(taxonomy):
        native["native/taxonomy.yaml"] = taxonomy
    inside, with_parent, mean_share = containment(files)
    withheld = not policy.embed(licence)
    return ReleasePlan(
        name="spin", pretty_name="SPIN (SubPartImageNet)",
        summary=("Natural images with an object → part → subpart hierarchy of masks: PartImageNet's objects and "
                 "parts, and subparts drawn by a crowd under a taxonomy proposed by a language model and edited "
                 "by people; for hierarchical segmentation and its metrics (SpCS, SeCS)."),
        features=features, descriptions=DESCRIPTIONS,
        tables=[Table("default", HUB_SPLIT[split], len(files[split]["wholes"]["images"]),
                      functools.partial(rows_of, split)) for split in SPLITS],
        native=native, version=manifest["build_key"], created=manifest["created_at"], sources=dict(manifest["inputs"]),
        selection={"kept images": filters["kept_images"], "background-only images": filters["background_only_total"],
                   "over the per-supercategory cap": filters["over_cap_total"],
                   **{f"ambiguous {name}": n for name, n in filters["ambiguous_part_annotations"].items()},
                   **{f"{level} annotations": composition["overall"][level]["annotations"] for level in LEVELS}},
        seed=manifest.get("seed"),
        chosen_ids={"default": {HUB_SPLIT[split]: sorted(int(im["id"]) for im in files[split]["wholes"]["images"])
                                for split in SPLITS}},
        rounds=rounds_of(source, {"spin"}),
        machine_tools=["subpart taxonomy proposed by a language model (WordNet offline), then edited by people"],
        collection="Images, objects and parts are PartImageNet's (ImageNet images); subparts are drawn by a crowd.",
        preprocessing=(f"At most {manifest['params']['cap_per_supercategory']} images per supercategory (seed "
                       f"{manifest.get('seed')}); images with only background are dropped; parts whose subparts are "
                       "ambiguous are flagged."),
        annotation_protocol=("One crowd round per object part: workers draw each subpart of the taxonomy that "
                             "applies to the object as polygons; answers are merged per subpart. Subparts are not "
                             "clipped to their parent part."),
        biases=["The supercategories are PartImageNet's: animals and vehicles dominate.",
                "The taxonomy's subparts are those a language model proposed and people kept."],
        limitations=["Subpart polygons are coarse at small scales.",
                     f"Subparts are not clipped to their part: {inside} of {with_parent} subparts lie wholly inside "
                     f"their parent part; on average {mean_share:.1%} of a subpart's pixels do."],
        use_cases=["Hierarchical semantic segmentation at object, part and subpart granularity."],
        licences=[policy.annotations(PARTIMAGENET), licence],
        maker_covers="the subpart masks, the taxonomy and the hierarchy this release adds",
        citations=CITATIONS, source_datasets=["imagenet", "partimagenet"],
        annotations_creators=["crowdsourced", "expert-generated"], gallery=write_gallery,
        extra_files={REATTACH: reattach_script()},
        notes=(f"The images are withheld (ImageNet's terms forbid redistribution): `image` is null. Put them back "
               f"from your own PartImageNet or ImageNet copy with `python {REATTACH} /path/to/images` (Python with "
               "pyarrow, which `datasets` installs): it finds each `file_name`'s image by name, checks its "
               "`image_sha256`, and rewrites the parquet files with the images embedded."
               if withheld else f"`{REATTACH}` can re-attach images to a release made without them."),
        datasheet_answers={
            "used": "Its paper (cited in the card) benchmarks hierarchical segmentation models with mIoU and its "
                    "SpCS and SeCS metrics.",
            "instances": "One ImageNet photo of an object with its whole-object, part and subpart masks.",
            "labels": "Yes: masks at three levels, each with its category and its parent annotation.",
            "relationships": "Each annotation's `parent_id` names the annotation of the level above it "
                             "(subpart → part → whole)."},
        load_example='ds = load_dataset(path, split="validation")\nrow = ds[0]  # row["annotations"]: wholes, '
                     'parts, subparts',
    )


def reattach_script() -> bytes:
    """The re-attach script shipped in the release (kept as a resource file of this package)."""
    from importlib.resources import files

    return files("segbench.resources").joinpath(REATTACH).read_bytes()
