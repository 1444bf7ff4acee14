"""The release of COCO-CD: its rows, native files, licences and the facts its card states."""

from __future__ import annotations

import json
from typing import Any

from segbench.core.release.licences import COCO_ANNOTATIONS, coco_licence
from segbench.core.release.plan import ImagePolicy, Licence, ReleasePlan
from segbench.core.release.rounds import rounds_of
from segbench.core.versioning import DatasetSource
from segbench.tasks.coco_cd.audit import GROUP_NAMES
from segbench.tasks.flip import release as flip

CITATIONS = [
    "@misc{cococd,\n  title = {Right Regions, Wrong Labels: Semantic Label Flips in Segmentation under "
    "Correlation Shift}\n}",
    "@inproceedings{lin2014coco,\n  title = {Microsoft COCO: Common Objects in Context},\n  author = {Lin, "
    "Tsung-Yi and others},\n  booktitle = {ECCV},\n  year = {2014}\n}",
    "@inproceedings{caesar2018cocostuff,\n  title = {COCO-Stuff: Thing and Stuff Classes in Context},\n  author = "
    "{Caesar, Holger and Uijlings, Jasper and Ferrari, Vittorio},\n  booktitle = {CVPR},\n  year = {2018}\n}",
]


def plan(source: DatasetSource, data_dir: str, policy: ImagePolicy) -> ReleasePlan:
    """The release plan of the COCO-CD build in ``data_dir`` (``data/coco_cd``)."""
    from datasets import Value

    manifest = source.read_json(f"{data_dir}/manifest.json")
    evidence = {int(row["image_id"]): row for row in
                map(json.loads, source.read_bytes(f"{data_dir}/context.jsonl").decode("utf-8").splitlines())}
    splits = {(config, split): source.read_json(f"{data_dir}/splits/{config}/{split}.json")
              for config in flip.configs(source, data_dir) for split in flip.SPLITS}
    licence_table = [row for data in splits.values() for row in data.get("licenses", [])]

    def licence_of(image: dict[str, Any]) -> Licence:
        return coco_licence(image.get("license"), licence_table)

    def extra(image: dict[str, Any]) -> dict[str, Any]:
        row = evidence.get(int(image["id"]), {})
        return {name: float(row.get(name, 0.0)) for name in ("fg_ratio", "indoor_share", "indoor_area",
                                                              "outdoor_area")}

    params = manifest["params"]
    layout = flip.FlipLayout(data_dir=data_dir, class_names=tuple(params["classes"]), context_field="context",
                             context_names=("indoor", "outdoor"), extra=extra, licence=licence_of,
                             has_images=params.get("write_images", True))
    tables, chosen = flip.tables(source, layout, policy)
    image_licences, licences = {}, {}
    for data in splits.values():
        for image in data["images"]:
            licence = policy.licence(licence_of(image))
            image_licences[str(image["id"])] = licence.id
            licences[licence.applies_to] = licence
    counts = manifest["counts"]
    return ReleasePlan(
        name="coco_cd", pretty_name="COCO-CD (context-debiased cat/dog segmentation)",
        summary=("Cat and dog images from COCO, each labelled indoor or outdoor from COCO-Stuff pixel evidence, "
                 "with train splits whose class–context correlation ρ is set by construction and balanced "
                 "validation and test splits, for measuring semantic label flips under correlation shift."),
        features=flip.features(layout, {name: Value("float32") for name in ("fg_ratio", "indoor_share",
                                                                              "indoor_area", "outdoor_area")}),
        tables=tables, native=flip.native_files(source, data_dir),
        version=manifest["build_key"], created=manifest["created_at"],
        sources={**manifest["inputs"], "images (sources.json)": _sources_hash(source, data_dir)},
        selection={name: counts[name] for name in ("source_images", "with_target_class", "both_classes",
                                                   "invalid_segmentation", "fg_too_small", "fg_too_large", "kept",
                                                   "usable") if name in counts}
        | {f"context {name}": value for name, value in counts.get("context", {}).items()},
        seed=manifest.get("seed"), chosen_ids=chosen, rounds=rounds_of(source, {"coco_cd"}),
        machine_tools=["COCO-Stuff stuff annotations (the context rule: indoor when the indoor share ≥ "
                       f"{params['context_share']} and indoor area ≥ {params['context_min_area']:.0%})"],
        collection=("Images and instance masks are COCO 2017 (train and val); stuff masks are COCO-Stuff 2017. "
                    "No new images were collected."),
        preprocessing=(f"Images with exactly one of {', '.join(params['classes'])} are kept when their foreground "
                       f"fraction at {params['size']}² lies in ({params['fg_min']}, {params['fg_max']}); images and "
                       f"masks are resized to {params['size']}×{params['size']}; context is read from COCO-Stuff "
                       "pixels (the curated indoor and outdoor lists); unknown context is excluded. Splits are "
                       f"drawn with seed {manifest.get('seed')}: ρ ∈ {params['rhos']}, {params['val_per_group']} "
                       f"val and {params['test_per_group']} test images per group."),
        annotation_protocol=("Labels are derived, not annotated: class from COCO instances, context from COCO-Stuff "
                             "evidence; a human context audit checks a sample of the validation split."),
        biases=[f"Train splits correlate class and context by construction (ρ ∈ {params['rhos']}); val and test "
                "are balanced over the four groups.",
                "Context is a binary indoor/outdoor rule over COCO-Stuff classes; scenes that mix both or show "
                "neither are excluded, so ambiguous scenes are under-represented.",
                "COCO's cats are more often indoors and its dogs outdoors; the balanced splits are drawn from "
                "the smaller groups' supply."],
        limitations=["Two classes and one binary context: a probe of label flips, not a general benchmark.",
                     "Masks come from COCO polygons (coarse at boundaries).",
                     "COCO-Stuff stuff labels decide the context; their errors carry over."],
        use_cases=["Measuring semantic label flips of segmentation models under correlation shift.",
                   "Comparing training regimes across ρ."],
        licences=[COCO_ANNOTATIONS, *sorted(licences.values(), key=lambda lic: lic.applies_to)],
        image_licences=image_licences, citations=CITATIONS, source_datasets=["coco", "coco-stuff"],
        annotations_creators=["expert-generated", "machine-generated"],
        gallery=flip.gallery_writer(source, layout, list(GROUP_NAMES), policy),
        has_images=layout.has_images,
        load_example='ds = load_dataset(path, "rho_0.95")\nrow = ds["test"][0]  # row["image"], row["mask"]: PIL images',
    )


def _sources_hash(source: DatasetSource, data_dir: str) -> str:
    from segbench.core.io import sha256_bytes

    return sha256_bytes(source.read_bytes(f"{data_dir}/sources.json"))
