"""The release of Waterbirds-seg: its rows, native files, licences and the facts its card states."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from segbench.core.release.plan import ImagePolicy, Licence, ReleasePlan
from segbench.core.release.rounds import rounds_of
from segbench.core.versioning import DatasetSource
from segbench.tasks.flip import release as flip
from segbench.tasks.waterbirds.dataset import CLASSES, CONTEXTS

# CUB-200-2011 and Places365 are for non-commercial research; WILDS redistributes Waterbirds on those terms.
# Each image is a composite, so it carries both (its row's license_id joins them with AND).
CUB = Licence("LicenseRef-CUB-200-2011", "CUB-200-2011: non-commercial research and educational use",
              "https://www.vision.caltech.edu/datasets/cub_200_2011/", True, "the birds pasted into each image "
              "(CUB-200-2011)")
PLACES = Licence("LicenseRef-Places365", "Places365: non-commercial research and educational use",
                 "http://places2.csail.mit.edu/", True, "the place behind each bird (Places365)")
CUB_MASKS = Licence(CUB.id, CUB.name, CUB.url, True, "the masks, CUB-200-2011's bird segmentations", of_images=False)

CITATIONS = [
    "@misc{cococd,\n  title = {Right Regions, Wrong Labels: Semantic Label Flips in Segmentation under "
    "Correlation Shift},\n  howpublished = {\\url{https://github.com/acharaakshit/label-flips}}\n}",
    "@inproceedings{sagawa2020dro,\n  title = {Distributionally Robust Neural Networks for Group Shifts},\n  author = "
    "{Sagawa, Shiori and Koh, Pang Wei and Hashimoto, Tatsunori B. and Liang, Percy},\n  booktitle = {ICLR},\n"
    "  year = {2020}\n}",
    "@techreport{wah2011cub,\n  title = {The Caltech-UCSD Birds-200-2011 Dataset},\n  author = {Wah, C. and Branson, "
    "S. and Welinder, P. and Perona, P. and Belongie, S.},\n  institution = {California Institute of Technology},\n"
    "  year = {2011}\n}",
]
GROUP_NAMES = [f"{bird} on {place}" for bird in CLASSES for place in CONTEXTS]


def plan(source: DatasetSource, data_dir: str, policy: ImagePolicy) -> ReleasePlan:
    """The release plan of the Waterbirds-seg build in ``data_dir`` (``data/waterbirds_seg``)."""
    from segbench.core.release.features import Value

    manifest = source.read_json(f"{data_dir}/manifest.json")
    params, counts = manifest["params"], manifest["counts"]

    def extra(image: Mapping[str, Any]) -> dict[str, str]:
        return {"species": image["species"], "place_name": image["place"], "place_file": image["place_file"],
                "cub_split": image["cub_split"]}

    layout = flip.FlipLayout(data_dir=data_dir, class_names=CLASSES, context_field="context", context_names=CONTEXTS,
                             extra=extra, licence=lambda image: [CUB, PLACES],
                             image="a CUB bird cut out with its mask and pasted onto a Places365 photo (PNG)",
                             size="the composite's")
    tables, chosen = flip.tables(source, layout, policy)
    features, descriptions = flip.columns(layout, [
        ("species", Value("string"), "the CUB-200-2011 species folder of the bird (e.g. 001.Black_footed_Albatross)"),
        ("place_name", Value("string"), "the Places365 category of the background"),
        ("place_file", Value("string"), "the background's file, relative to the Places365 image folder"),
        ("cub_split", Value("string"), "the bird's split in CUB-200-2011's official train/test list"),
    ])
    return ReleasePlan(
        name="waterbirds", pretty_name="Waterbirds-seg",
        summary=("CUB-200-2011 birds composited onto land or water places from Places365, with a segmentation "
                 "mask per image and train splits whose bird-type–place correlation ρ is set by construction "
                 "(balanced val and test), for measuring semantic label flips under correlation shift."),
        features=features, descriptions=descriptions,
        tables=tables, native=flip.native_files(source, data_dir) | {
            "native/species.json": f"{data_dir}/species.json"},
        version=manifest["build_key"], created=manifest["created_at"], sources=dict(manifest["inputs"]),
        selection={"birds": counts["birds"], **{f"class {k}": v for k, v in counts["per_class"].items()},
                   **{f"images {k}": v for k, v in counts["per_group"].items()}},
        seed=manifest.get("seed"), chosen_ids=chosen, rounds=rounds_of(source, {"waterbirds", "waterbirds_seg"}),
        machine_tools=[f"species → bird type by name ({params['species_match']} match on the waterbird keywords)"],
        collection="Bird images and masks are CUB-200-2011; backgrounds are Places365 images. No new images were "
                   "collected.",
        preprocessing=(f"Each bird is cut out with its CUB mask and pasted onto a place image, following the "
                       f"Waterbirds construction: test comes from CUB's test split and val from "
                       f"{params['val_fraction']:.0%} of its train split, with half of each bird type on each "
                       f"place type; each ρ's train split puts a share ρ of each bird type on its aligned place "
                       f"type, with the same number of images at every ρ. Land places: "
                       f"{', '.join(params['land_places'])}; water places: {', '.join(params['water_places'])}. "
                       f"Splits are drawn with seed {manifest.get('seed')}: ρ ∈ {flip.rho_set(params['rhos'])}, "
                       f"{params['val_per_group']} val and {params['test_per_group']} test images per group."),
        annotation_protocol="Labels are derived: bird type from the CUB species name, place type from the "
                            "Places365 category, the mask from CUB's segmentation.",
        biases=[f"Train splits correlate bird type and place by construction (ρ ∈ {flip.rho_set(params['rhos'])}); "
                "val and test "
                "are balanced over the four groups.",
                "Composites: the bird's edges and lighting do not match its background, a cue a model can learn.",
                "Bird type is a keyword rule over species names."],
        limitations=["Synthetic composites, not photographs of birds in those places.",
                     "Two classes and two place types."],
        use_cases=["Measuring semantic label flips of segmentation models under correlation shift."],
        licences=[policy.licence(CUB), policy.licence(PLACES), policy.annotations(CUB_MASKS)],
        maker_covers="the bird-type and place-type labels, group ids and split selection this release adds",
        citations=CITATIONS, source_datasets=["cub-200-2011", "places365"],
        annotations_creators=["machine-generated"],
        gallery=flip.gallery_writer(source, layout, GROUP_NAMES, policy, tables),
        default_config=flip.default_config(source, data_dir),
        manipulation=("Each image is a composite: a CUB bird cut out along its segmentation mask and pasted onto a "
                      "Places365 photo of a land or water place."),
        datasheet_answers={
            "used": "Its paper (cited in the card; it defines COCO-CD too) trains segmentation models at each ρ "
                    "and measures their label flips on the balanced test split.",
            "instances": "One composite image: a bird from CUB-200-2011 on a land or water place from "
                         "Places365.",
            "labels": "Yes: the bird type (landbird or waterbird), the place type (land or water) and a "
                      "per-pixel mask of the bird.",
            "relationships": "`group_id` joins bird type and place type (2·y + a); the same composite can "
                             "appear in several ρ configs."},
        load_example=f'ds = load_dataset(path, "{flip.default_config(source, data_dir)}")\n'
                     'row = ds["test"][0]  # row["image"], row["mask"]: PIL images',
    )
