"""The release of CAFE: one row per verified pair, in configs ``all``, ``SM``, ``CC`` and ``OC``.

A row holds the edited image, the target mask (a PNG, and its COCO RLE as the SA-Co file has it),
q+ and q-, the edit type, the source (dataset, image and annotation ids, file name: the source
image itself is not part of the build), the edit plan as JSON, the planner and the editor, and the
verification votes per question with their agreement. The native files are the SA-Co ``CAFE*.json``
files, as SAM3's evaluator reads them (it reads no image, so the edits live in the parquet alone).
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from segbench.core.io import png_bytes
from segbench.core.masks import rle_to_bitmap
from segbench.core.release import gallery
from segbench.core.release.licences import COCO_ANNOTATIONS
from segbench.core.release.plan import ImagePolicy, Licence, ReleasePlan, Table
from segbench.core.release.rounds import rounds_of
from segbench.core.versioning import DatasetSource
from segbench.schemas.edits import EditType
from segbench.schemas.rounds import ItemAnswer
from segbench.tasks.cafe.export import NEGATIVE_ID_OFFSET
from segbench.tasks.cafe.verification import verdict

SPLIT = "test"
CONFIGS = {"all": "CAFE", "SM": "CAFE_SM", "CC": "CAFE_CC", "OC": "CAFE_OC"}
# An edit is a derivative of its source photo and carries that photo's terms. COCO (and LVIS, which
# annotates COCO's photos) records a Flickr licence per photo that the build does not keep, so a row
# names COCO's licence table as one reference (`source_image_id` finds the photo's entry in it).
_COCO_PHOTOS = ("LicenseRef-COCO-Flickr", "the source photo's Flickr licence, per photo (COCO's `licenses` table: "
                "CC BY, BY-SA, BY-NC, BY-NC-SA, BY-ND or BY-NC-ND 2.0, or no known restriction)",
                "https://cocodataset.org/#termsofuse")
SOURCE_LICENCES = {
    "coco": Licence(*_COCO_PHOTOS, True, "edited images whose source photo is COCO's"),
    "lvis": Licence(*_COCO_PHOTOS, True, "edited images whose source photo is COCO's, annotated by LVIS"),
    # SA-Co is gated on the Hub: its images are not redistributed without the maker's say-so.
    "saco": Licence("LicenseRef-SA-Co", "SA-Co terms (gated)", "https://github.com/facebookresearch/sam3", False,
                    "edited images whose source is SA-Co"),
}
MASK_LICENCES = {
    "coco": COCO_ANNOTATIONS,
    "lvis": Licence("cc-by-4.0", "LVIS annotations: Creative Commons Attribution 4.0", "https://www.lvisdataset.org/",
                    True, "target masks copied from LVIS", of_images=False),
    "saco": Licence("LicenseRef-SA-Co", "SA-Co terms (gated)", "https://github.com/facebookresearch/sam3", True,
                    "target masks copied from SA-Co", of_images=False),
}
UNKNOWN_SOURCE = Licence("unknown", "unknown source terms", None, False, "edited images of another source")
UNKNOWN_MASKS = Licence("unknown", "unknown source terms", None, True, "target masks of another source",
                        of_images=False)
CITATIONS = ["@misc{cafe,\n  title = {From Pixels to Concepts: Do Segmentation Models Understand What They "
             "Segment?},\n  howpublished = {\\url{https://github.com/T-S-Liang/CAFE}}\n}"]
DESCRIPTIONS = {
    "pair_id": "the pair's id: the positive image entry's id in the SA-Co files (its misleading twin has this id "
               "+ 1,000,000,000)",
    "image": "the edited image (JPEG); null when its source's terms forbid redistribution",
    "target_mask": "the target M as a PNG at the image's size: 255 inside the target, 0 outside",
    "target_rle": "M as COCO RLE (`size` [height, width], `counts` compressed), as the SA-Co file stores it",
    "target_area": "M's area in pixels",
    "target_bbox": "M's box [x, y, width, height] in pixels",
    "q_pos": "the valid prompt q+: it names the target, whose mask is given",
    "q_neg": "the misleading prompt q-: valid for nothing in the image, so a model should return no mask",
    "edit_type": "the counterfactual: SM Superficial Mimicry, CC Context Conflict, OC Ontological Conflict",
    "object_name": "the target's category name in its source",
    "source": "the source dataset of the photo and the mask (coco, lvis or saco)",
    "source_image_id": "the photo's image id in its source",
    "source_annotation_id": "the target's annotation id in its source",
    "source_file_name": "the photo's file name in its source (the photo itself is not in the release)",
    "edit_plan": "the plan the editor followed, a JSON object as a string (json.loads it)",
    "edit_seed": "the seed of the edit (-1 when the candidate record has none)",
    "planner": "the language model (or offline provider) that planned the edit and wrote q+ and q-",
    "editor": "the image editor that made the edit",
    "votes": "the people's answers per verification question: yes and no counts, the majority (null on a tie) "
             "and the share of answers that agree with it",
    "width": "the edited image's width in pixels",
    "height": "the edited image's height in pixels",
    "license_id": "the edited image's licence: its source photo's (see `LICENSES.md`)",
}

GALLERY_TILE = 220  # a gallery sheet's tile side in pixels


def _votes(answers: dict[str, Any]) -> dict[str, list[dict]]:
    """item id → per question: yes, no, the majority and the agreement."""
    tallies: dict[str, dict[str, Counter]] = {}
    for answer in answers.get("answers", []):
        for control, choice in sorted(answer.get("choices", {}).items()):
            tallies.setdefault(str(answer["item_id"]), {}).setdefault(control, Counter()).update(choice)
    decided = {str(item["item_id"]): item for item in answers.get("items", [])}
    out = {}
    for item_id, controls in tallies.items():
        item = decided.get(item_id, {})
        out[item_id] = [{"question": control, "yes": counts.get("yes", 0), "no": counts.get("no", 0),
                         "majority": item.get("majority", {}).get(control),
                         "agreement": item.get("agreement", {}).get(control)}
                        for control, counts in sorted(controls.items())]
    return out


def rejections(answers: dict[str, Any], candidate_ids: set[int]) -> dict[str, int]:
    """Why candidates were not verified: reason (``edit_clean: no``, ``mask_fits: tie``) → candidates.

    A candidate fails for every reason that applies, so the counts can add up to more than the rejected."""
    reasons: Counter[str] = Counter()
    by_item = {str(item["item_id"]): ItemAnswer.model_validate(item) for item in answers.get("items", [])}
    for candidate in sorted(candidate_ids):
        verified, why = verdict(by_item.get(str(candidate)))
        if not verified:
            reasons.update(why)
    return dict(sorted(reasons.items()))


def _batches(params: dict[str, Any]) -> list[tuple[str, str]]:
    """(candidates folder, answers file) of each round the export read: a chain of top-ups, or one round."""
    if "rounds" in params:
        return [(batch["candidates"], batch["answers"]) for batch in params["rounds"].values()]
    return [(params["candidates"], f"{params.get('answers_of', params['round'])}.answers.json")]


def plan(source: DatasetSource, data_dir: str, policy: ImagePolicy) -> ReleasePlan:
    from segbench.core.release.features import ClassLabel, Features, Image, List, Value

    manifest = source.read_json(f"{data_dir}/manifest.json")
    params = manifest["params"]
    data_root = str(Path(data_dir).parent)
    batches = _batches(params)
    candidates_manifests = [source.read_json(f"{data_root}/{folder}/manifest.json") for folder, _ in batches]
    candidates_manifest = candidates_manifests[-1]
    cparams = candidates_manifest["params"]
    candidates: dict[int, dict] = {}
    answers: dict[str, Any] = {"items": [], "answers": []}
    for folder, answers_file in batches:
        batch = {int(row["id"]): row for row in map(json.loads, source.read_bytes(
            f"{data_root}/{folder}/candidates.jsonl").decode("utf-8").splitlines()) if row}
        candidates |= batch
        path = f"{data_root}/rounds/{answers_file}"
        if source.exists(path):
            # Each round's answers for its own batch's candidates: its gold items are not released.
            ours = {str(number) for number in batch}
            data = source.read_json(path)
            for key in ("items", "answers"):
                answers[key] += [entry for entry in data.get(key, []) if str(entry.get("item_id")) in ours]
    votes = _votes(answers)
    edit_types = [t.name for t in EditType]
    features = Features({
        "pair_id": Value("int64"),
        "image": Image(),
        "target_mask": Image(),
        "target_rle": {"size": List(Value("int32")), "counts": Value("string")},
        "target_area": Value("float64"),
        "target_bbox": List(Value("float32")),
        "q_pos": Value("string"),
        "q_neg": Value("string"),
        "edit_type": ClassLabel(names=edit_types),
        "object_name": Value("string"),
        "source": Value("string"),
        "source_image_id": Value("int64"),
        "source_annotation_id": Value("int64"),
        "source_file_name": Value("string"),
        "edit_plan": Value("string"),
        "edit_seed": Value("int64"),
        "planner": Value("string"),
        "editor": Value("string"),
        "votes": List({"question": Value("string"), "yes": Value("int32"), "no": Value("int32"),
                       "majority": Value("string"), "agreement": Value("float32")}),
        "width": Value("int32"),
        "height": Value("int32"),
        "license_id": Value("string"),
    })
    planner = f"{cparams['provider']}/{cparams['provider_model']} (prompt version {cparams['prompt_version']})"
    editor = f"{cparams['editor']}/{cparams['editor_model']}"

    def licence_of(image: dict) -> Licence:
        return policy.licence(SOURCE_LICENCES.get(image.get("source", ""), UNKNOWN_SOURCE))


    @functools.cache  # each SA-Co file is read once, whatever asks for its pairs
    def pairs(subset: str) -> list[tuple[dict, dict, dict]]:
        data = source.read_json(f"{data_dir}/{subset}.json")
        by_id = {int(image["id"]): image for image in data["images"]}
        masks = {int(a["image_id"]): a for a in data["annotations"]}
        return [(image, by_id[int(image["id"]) + NEGATIVE_ID_OFFSET], masks[int(image["id"])])
                for image in sorted(data["images"], key=lambda im: int(im["id"]))
                if int(image["id"]) < NEGATIVE_ID_OFFSET]

    def rows_of(subset: str) -> Iterator[dict]:
        for positive, negative, annotation in pairs(subset):
            licence = licence_of(positive)
            pair_id = int(positive["id"])
            rle = annotation["segmentation"]
            image_bytes = source.read_bytes(f"{data_dir}/images/{positive['file_name']}")
            yield {
                "pair_id": pair_id,
                "image": {"bytes": image_bytes, "path": positive["file_name"]} if policy.embed(licence) else None,
                "target_mask": {"bytes": png_bytes((rle_to_bitmap(rle) * 255).astype(np.uint8)),
                                "path": f"{Path(positive['file_name']).stem}_mask.png"},
                "target_rle": {"size": [int(v) for v in rle["size"]], "counts": rle["counts"]},
                "target_area": float(annotation["area"]), "target_bbox": [float(v) for v in annotation["bbox"]],
                "q_pos": positive["text_input"], "q_neg": negative["text_input"],
                "edit_type": edit_types.index(EditType(positive["edit_type"]).name),
                "object_name": positive["object_name"], "source": positive["source"],
                "source_image_id": int(positive["source_image_id"]),
                "source_annotation_id": int(positive["source_annotation_id"]),
                "source_file_name": positive["source_file_name"],
                "edit_plan": json.dumps(positive["plan"], sort_keys=True, ensure_ascii=False),
                "edit_seed": int(candidates.get(pair_id, {}).get("edit_seed", -1)),
                "planner": planner, "editor": editor, "votes": votes.get(str(pair_id), []),
                "width": int(positive["width"]), "height": int(positive["height"]), "license_id": licence.id,
            }

    tables = []
    for config, subset in CONFIGS.items():
        count = len(pairs(subset))
        tables.append(Table(config, SPLIT, count, functools.partial(rows_of, subset)))

    def write_gallery(out: Path) -> list[str]:
        written = []
        for config, subset in CONFIGS.items():
            if config == "all":
                continue
            tiles = []
            for positive, negative, annotation in pairs(subset)[:12]:
                caption = f"q+ {positive['text_input']}\nq- {negative['text_input']}"
                mask = rle_to_bitmap(annotation["segmentation"]).astype(bool)
                if policy.embed(licence_of(positive)):
                    picture = gallery.decode(source.read_bytes(f"{data_dir}/images/{positive['file_name']}"))
                    tiles.append((gallery.overlay(picture, [(mask, gallery.PALETTE[0])], alpha=0.0, tile=GALLERY_TILE),
                                  caption))
                else:  # the target drawn on a grey canvas: the image itself stays out of every file
                    canvas = gallery.withheld_canvas(mask.shape[1], mask.shape[0])
                    tiles.append((gallery.overlay(canvas, [(mask, gallery.PALETTE[4])], tile=GALLERY_TILE),
                                  f"image withheld: q+ {positive['text_input']}\nq- {negative['text_input']}"))
            sheet = gallery.sheet(f"CAFE {config} ({EditType[config].value}): edited image, target outlined",
                                  tiles, columns=4, size=GALLERY_TILE)
            written.append(gallery.save(sheet, out, f"{config}.png"))
        return written

    counts = manifest["counts"]
    mix = ", ".join(f"{abbr} {share:.1%}" for abbr, share in sorted(cparams["edit_mix"].items()))
    native = {f"native/{subset}.json": f"{data_dir}/{subset}.json" for subset in CONFIGS.values()}
    sources_used = sorted({positive.get("source", "") for positive, _, _ in pairs("CAFE")})
    return ReleasePlan(
        name="cafe", pretty_name="CAFE (counterfactual image–prompt pairs)",
        summary=("Counterfactual edits of real images — Superficial Mimicry, Context Conflict and Ontological "
                 "Conflict — each with a valid prompt q+ whose target mask is given and a misleading prompt q- "
                 "that should find nothing, verified by people; for testing whether promptable segmenters "
                 "understand what they segment."),
        features=features, descriptions=DESCRIPTIONS, tables=tables, native=native,
        version=manifest["build_key"], created=manifest["created_at"],
        sources={**candidates_manifest["inputs"], **manifest["inputs"]},
        selection={"candidates": sum(m["counts"]["candidates"] for m in candidates_manifests),
                   **{f"candidates {k}": sum(m["counts"]["by_edit_type"].get(k, 0) for m in candidates_manifests)
                      for k in candidates_manifest["counts"]["by_edit_type"]},
                   **({"verification rounds": ", ".join(params["rounds"])} if "rounds" in params else {}),
                   "not verified": counts["not_verified"],
                   **{f"not verified, {reason}": n for reason, n in rejections(answers, set(candidates)).items()},
                   **({"verified beyond the target": counts["beyond_target"]} if counts.get("beyond_target") else {}),
                   "verified pairs": counts["samples"],
                   **{f"verified {k}": v for k, v in counts["by_edit_type"].items()},
                   **{f"released / target, {row['source']} {row['edit_type']}": f"{row['exported']} / {row['target']}"
                      for row in counts.get("targets", [])}},
        seed=candidates_manifest.get("seed"), chosen_ids={config: {SPLIT: [int(p["id"]) for p, _, _ in pairs(subset)]}
                                                           for config, subset in CONFIGS.items()},
        rounds=rounds_of(source, {folder for folder, _ in batches}),
        machine_tools=[f"edit planner: {planner}", f"image editor: {editor}"],
        collection=("Source images and target masks come from the source datasets named under Sources; each target "
                    "is edited once by the image editor following a plan that fixes q+ and q-."),
        preprocessing=(f"Targets are the sole instance of their category covering {cparams['min_area_fraction']:.0%}–"
                       f"{cparams['max_area_fraction']:.0%} of the image; edit types are drawn with the mix "
                       f"{mix} (seed {cparams['seed']}); edited images are JPEG quality "
                       f"{cparams['jpeg_quality']}."),
        annotation_protocol=(f"People verify each edit: {params['verified_rule']}; only verified pairs are "
                             "released."),
        biases=["Targets are sole, mid-sized instances: small, crowded or occluded objects are absent.",
                "The planner chooses the misleading concepts; its vocabulary shapes q-.",
                "Edits carry the editor's artefacts, which a model may pick up."],
        limitations=["The target mask is the source's mask: an edit that moves the object's outline is rejected "
                     "by the mask_fits question, not re-annotated.",
                     "Source images are referenced, not included."],
        use_cases=["Measuring target-aware false positives (AFPR) and cgF1 of promptable segmenters."],
        licences=[*(policy.licence(SOURCE_LICENCES.get(s, UNKNOWN_SOURCE)) for s in sources_used),
                  *(policy.annotations(MASK_LICENCES.get(s, UNKNOWN_MASKS)) for s in sources_used)],
        maker_covers="the prompts q+ and q-, the edit plans and the verification answers this release adds",
        citations=CITATIONS, source_datasets=sources_used,
        manipulation=(f"Each image is its source photo edited once by {editor}, inside or around the target mask as "
                      "the edit type asks (a texture or pattern on the object, a new background, or a new material); "
                      f"edited images are saved as JPEG quality {cparams['jpeg_quality']}."),
        datasheet_answers={
            "used": "Its paper (cited in the card) evaluates promptable segmenters with cgF1 and the target-aware "
                    "false-positive rates.",
            "instances": "One edited photo with one target object: a valid prompt q+ for it and a misleading "
                         "prompt q- that matches nothing in the image.",
            "labels": "Yes: the target mask M for q+; q- has no mask by construction; the edit type.",
            "relationships": "Each pair keeps its source photo's and annotation's ids; the `all` config holds "
                             "the pairs of SM, CC and OC together.",
            "splits": "CAFE is a test set: one split, `test`."},
        annotations_creators=["crowdsourced", "machine-generated"], gallery=write_gallery,
        load_example=f'ds = load_dataset(path, "all", split="{SPLIT}")\nrow = ds[0]  # row["image"], row["q_pos"], '
                     'row["q_neg"], row["target_mask"]',
    )
