"""The release of COCO-CD: its rows, native files, licences and the facts its card states."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from segbench.core.errors import InputError
from segbench.core.release.licences import COCO_ANNOTATIONS, COCO_STUFF_ANNOTATIONS, coco_licence
from segbench.core.release.plan import ImagePolicy, Licence, ReleasePlan
from segbench.core.release.rounds import rounds_of
from segbench.core.versioning import DatasetSource
from segbench.schemas.coco_cd import AuditTable
from segbench.tasks.coco_cd.audit import GROUP_NAMES
from segbench.tasks.coco_cd.audit import KIND as AUDIT_KIND
from segbench.tasks.flip import release as flip

CITATIONS = [
    "@misc{cococd,\n  title = {Right Regions, Wrong Labels: Semantic Label Flips in Segmentation under "
    "Correlation Shift},\n  howpublished = {\\url{https://github.com/acharaakshit/label-flips}}\n}",
    "@inproceedings{lin2014coco,\n  title = {Microsoft COCO: Common Objects in Context},\n  author = {Lin, "
    "Tsung-Yi and Maire, Michael and Belongie, Serge and Hays, James and Perona, Pietro and Ramanan, Deva and "
    "Doll{\\'a}r, Piotr and Zitnick, C. Lawrence},\n  booktitle = {ECCV},\n  year = {2014}\n}",
    "@inproceedings{caesar2018cocostuff,\n  title = {COCO-Stuff: Thing and Stuff Classes in Context},\n  author = "
    "{Caesar, Holger and Uijlings, Jasper and Ferrari, Vittorio},\n  booktitle = {CVPR},\n  year = {2018}\n}",
]


def plan(source: DatasetSource, data_dir: str, policy: ImagePolicy) -> ReleasePlan:
    """The release plan of the COCO-CD build in ``data_dir`` (``data/coco_cd``)."""
    from segbench.core.release.features import Value

    manifest = source.read_json(f"{data_dir}/manifest.json")
    evidence = {int(row["image_id"]): row for row in
                map(json.loads, source.read_bytes(f"{data_dir}/context.jsonl").decode("utf-8").splitlines())}
    splits = {(config, split): source.read_json(f"{data_dir}/splits/{config}/{split}.json")
              for config in flip.configs(source, data_dir) for split in flip.SPLITS}
    licence_table = [row for data in splits.values() for row in data.get("licenses", [])]

    def licences_of(image: Mapping[str, Any]) -> list[Licence]:
        return [coco_licence(image.get("license"), licence_table)]

    def extra(image: Mapping[str, Any]) -> dict[str, float | str | None]:
        row = evidence.get(int(image["id"]), {})
        return {**{name: float(row.get(name) or 0.0) for name in ("fg_ratio", "indoor_share", "indoor_area",
                                                                   "outdoor_area")},
                "coco_url": image.get("coco_url"), "flickr_url": image.get("flickr_url")}

    params = manifest["params"]
    size = params["size"]
    layout = flip.FlipLayout(
        data_dir=data_dir, class_names=tuple(params["classes"]), context_field="context",
        context_names=("indoor", "outdoor"), extra=extra, licence=licences_of,
        image=f"the COCO image resized to {size}×{size} (PNG; the aspect ratio is not kept)",
        size="the original COCO image's", has_images=params.get("write_images", True))
    tables, chosen = flip.tables(source, layout, policy)
    image_terms = {lic.id: lic for data in splits.values() for image in data["images"]
                   for lic in flip.image_licences(layout, policy, image)}
    features, descriptions = flip.columns(layout, [
        ("fg_ratio", Value("float32"), f"the foreground's fraction of the image at {size}×{size} (0–1)"),
        ("indoor_share", Value("float32"), "indoor evidence ÷ (indoor + outdoor evidence), from COCO-Stuff pixels "
                                           "(0–1; the context rule compares it with "
                                           f"{params['context_share']})"),
        ("indoor_area", Value("float32"), "pixels of indoor COCO-Stuff classes, at the original image size"),
        ("outdoor_area", Value("float32"), "pixels of outdoor COCO-Stuff classes, at the original image size"),
        ("coco_url", Value("string"), "the image's COCO download address, where the source records it (null "
                                      "otherwise)"),
        ("flickr_url", Value("string"), "the photo's Flickr address, where the source records it: credit its "
                                        "author there (null otherwise)"),
    ])
    counts = manifest["counts"]
    rounds = rounds_of(source, {"coco_cd"})
    data_root = str(Path(data_dir).parent)
    coverage_path = f"{data_dir}/tables/context_coverage.json"
    coverage = source.read_json(coverage_path) if source.exists(coverage_path) else {}
    return ReleasePlan(
        name="coco_cd", pretty_name="COCO-CD (context-debiased cat/dog segmentation)",
        summary=("Cat and dog images from COCO, each labelled indoor or outdoor from COCO-Stuff pixel evidence, "
                 "with train splits whose class–context correlation ρ is set by construction and balanced "
                 "validation and test splits, for measuring semantic label flips under correlation shift."),
        features=features, descriptions=descriptions,
        tables=tables, native=flip.native_files(source, data_dir),
        version=manifest["build_key"], created=manifest["created_at"],
        sources={**manifest["inputs"], "images (sources.json)": _sources_hash(source, data_dir)},
        selection={name: counts[name] for name in ("source_images", "with_target_class", "both_classes",
                                                   "invalid_segmentation", "fg_too_small", "fg_too_large", "kept",
                                                   "usable") if name in counts}
        | {f"context {name}": value for name, value in counts.get("context", {}).items()},
        seed=manifest.get("seed"), chosen_ids=chosen, rounds=rounds,
        machine_tools=["COCO-Stuff stuff annotations (the context rule: indoor when the indoor share ≥ "
                       f"{params['context_share']} and indoor area ≥ {params['context_min_area']:.0%})"],
        collection=("Images and instance masks are COCO 2017 (train and val); stuff masks are COCO-Stuff 2017. "
                    "No new images were collected."),
        preprocessing=(f"Images with exactly one of {', '.join(params['classes'])} are kept when their foreground "
                       f"fraction at {size}² lies in ({params['fg_min']}, {params['fg_max']}); images and "
                       f"masks are resized to {size}×{size}; context is read from COCO-Stuff "
                       "pixels (the curated indoor and outdoor lists); unknown context is excluded. Splits are "
                       f"drawn with seed {manifest.get('seed')}: ρ ∈ {flip.rho_set(params['rhos'])}, "
                       f"{params['val_per_group']} "
                       f"val and {params['test_per_group']} test images per group."),
        annotation_protocol=("Labels are derived, not annotated: class from COCO instances, context from COCO-Stuff "
                             "evidence; a human context audit checks a sample of the validation split."),
        biases=[f"Train splits correlate class and context by construction (ρ ∈ {flip.rho_set(params['rhos'])}); "
                "val and test "
                "are balanced over the four groups.",
                "Context is a binary indoor/outdoor rule over COCO-Stuff classes; scenes that mix both or show "
                "neither are excluded, so ambiguous scenes are under-represented.",
                *_supply(coverage, params["classes"])],
        limitations=["Two classes and one binary context: a probe of label flips, not a general benchmark.",
                     "Masks come from COCO polygons (coarse at boundaries).",
                     "COCO-Stuff stuff labels decide the context; their errors carry over."],
        use_cases=["Measuring semantic label flips of segmentation models under correlation shift.",
                   "Comparing training regimes across ρ."],
        licences=[*sorted(image_terms.values(), key=lambda lic: lic.applies_to), policy.annotations(COCO_ANNOTATIONS),
                  policy.annotations(COCO_STUFF_ANNOTATIONS)],
        maker_covers="the group ids and the split selection this release adds",
        citations=CITATIONS, source_datasets=["coco", "coco-stuff"],
        annotations_creators=["crowdsourced", "machine-generated"],  # COCO's masks were drawn by a crowd
        gallery=flip.gallery_writer(source, layout, list(GROUP_NAMES), policy, tables),
        has_images=layout.has_images, default_config=flip.default_config(source, data_dir),
        findings=_audit_findings(source, data_root, rounds),
        datasheet_answers={
            "used": "Its paper (cited in the card) trains segmentation models at each ρ and measures their label "
                    "flips on the balanced test split.",
            "instances": "One photo from COCO showing a cat or a dog (exactly one of the two classes).",
            "labels": "Yes: the class (cat or dog), the context (indoor or outdoor) and a per-pixel mask.",
            "relationships": "`group_id` joins class and context (2·y + a); the same image can appear in "
                             "several ρ configs (val and test are the same images in every config).",
            "missing": "Images whose context is unknown (too little or mixed evidence) are left out."},
        load_example=f'ds = load_dataset(path, "{flip.default_config(source, data_dir)}")\n'
                     'row = ds["test"][0]  # row["image"], row["mask"]: PIL images',
    )


def _supply(coverage: dict[str, Any], classes: list[str]) -> list[str]:
    """How context splits within each class in the usable images: the supply the balanced splits draw from."""
    shares = [f"{name}: {row['indoor']} indoor, {row['outdoor']} outdoor, {row['unknown']} unknown"
              for name, row in coverage.items() if name in classes]
    return [f"Context within each class among the usable images ({'; '.join(shares)}); the balanced splits draw "
            "the rarer groups from the smaller supply."] if shares else []


def _audit_findings(source: DatasetSource, data_root: str, rounds: list) -> list[str]:
    """What each ingested context audit found: agreement with the rule and the ambiguous share."""
    findings = []
    for round_ in rounds:
        if round_.kind != AUDIT_KIND:
            continue
        relpath = f"{data_root}/coco_cd_audit/{round_.key}.json"
        if not source.exists(relpath):  # ingested, but its report not written
            continue
        try:
            overall = AuditTable.model_validate(source.read_json(relpath)).overall
        except ValidationError as exc:
            raise InputError(f"not an audit report: {exc.errors(include_url=False)[0]['msg']}", path=relpath,
                             hint=f"ingest round {round_.key} again to rewrite it") from None
        agreement = "n/a" if overall.agreement is None else f"{overall.agreement:.1%}"
        ambiguous = "n/a" if overall.ambiguous_share is None else f"{overall.ambiguous_share:.1%}"
        findings.append(f"Context audit `{round_.key}`: people's majority label agreed with the automatic context "
                        f"on {overall.agree} of {overall.judged} judged validation images ({agreement}); "
                        f"{overall.ambiguous} of {overall.answered} answered images were called ambiguous "
                        f"({ambiguous}); {overall.no_majority} had no majority of the people"
                        + (f" ({overall.settled_by_model} given a label by the aggregation model)."
                           if overall.settled_by_model else "."))
    return findings


def _sources_hash(source: DatasetSource, data_dir: str) -> str:
    from segbench.core.io import sha256_bytes

    return sha256_bytes(source.read_bytes(f"{data_dir}/sources.json"))
