"""The release of Waterbirds-seg: its rows, native files, licences and the facts its card states."""

from __future__ import annotations

from typing import Any

from segbench.core.release.plan import ImagePolicy, Licence, ReleasePlan
from segbench.core.release.rounds import rounds_of
from segbench.core.versioning import DatasetSource
from segbench.tasks.flip import release as flip
from segbench.tasks.waterbirds.dataset import CLASSES, CONTEXTS

# CUB-200-2011 and Places365 are for non-commercial research; WILDS redistributes Waterbirds on those terms.
CUB = Licence("other", "CUB-200-2011: non-commercial research and educational use",
              "https://www.vision.caltech.edu/datasets/cub_200_2011/", True, "the bird images (CUB-200-2011)")
PLACES = Licence("other", "Places365: non-commercial research and educational use", "http://places2.csail.mit.edu/",
                 True, "the place images (Places365)")

CITATIONS = [
    "@misc{cococd,\n  title = {Right Regions, Wrong Labels: Semantic Label Flips in Segmentation under "
    "Correlation Shift}\n}",
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
    from datasets import Value

    manifest = source.read_json(f"{data_dir}/manifest.json")
    params, counts = manifest["params"], manifest["counts"]

    def extra(image: dict[str, Any]) -> dict[str, Any]:
        return {"species": image["species"], "place_name": image["place"], "place_file": image["place_file"],
                "cub_split": image["cub_split"]}

    layout = flip.FlipLayout(data_dir=data_dir, class_names=CLASSES, context_field="context", context_names=CONTEXTS,
                             extra=extra, licence=lambda image: CUB)
    tables, chosen = flip.tables(source, layout, policy)
    return ReleasePlan(
        name="waterbirds", pretty_name="Waterbirds-seg",
        summary=("CUB-200-2011 birds composited onto land or water places from Places365, with a segmentation "
                 "mask per image and train splits whose bird-type–place correlation ρ is set by construction "
                 "(balanced val and test), for measuring semantic label flips under correlation shift."),
        features=flip.features(layout, {name: Value("string") for name in ("species", "place_name", "place_file",
                                                                            "cub_split")}),
        tables=tables, native=flip.native_files(source, data_dir) | {
            "native/species.json": f"{data_dir}/species.json"},
        version=manifest["build_key"], created=manifest["created_at"], sources=dict(manifest["inputs"]),
        selection={"birds": counts["birds"], **{f"class {k}": v for k, v in counts["per_class"].items()},
                   **{f"pool {k}": v for k, v in counts["per_group"].items()}},
        seed=manifest.get("seed"), chosen_ids=chosen, rounds=rounds_of(source, {"waterbirds", "waterbirds_seg"}),
        machine_tools=[f"species → bird type by name ({params['species_match']} match on the waterbird keywords)"],
        collection="Bird images and masks are CUB-200-2011; backgrounds are Places365 images. No new images were "
                   "collected.",
        preprocessing=(f"Each bird is cut out with its CUB mask and pasted onto one place image; "
                       f"{params['aligned_share']:.0%} of each bird type get the aligned place type. Land places: "
                       f"{', '.join(params['land_places'])}; water places: {', '.join(params['water_places'])}. "
                       f"Splits are drawn with seed {manifest.get('seed')}: ρ ∈ {params['rhos']}, "
                       f"{params['val_per_group']} val and {params['test_per_group']} test images per group."),
        annotation_protocol="Labels are derived: bird type from the CUB species name, place type from the "
                            "Places365 category, the mask from CUB's segmentation.",
        biases=[f"Train splits correlate bird type and place by construction (ρ ∈ {params['rhos']}); val and test "
                "are balanced over the four groups.",
                "Composites: the bird's edges and lighting do not match its background, a cue a model can learn.",
                "Bird type is a keyword rule over species names."],
        limitations=["Synthetic composites, not photographs of birds in those places.",
                     "Two classes and two place types."],
        use_cases=["Measuring semantic label flips of segmentation models under correlation shift."],
        licences=[CUB, PLACES], image_licences={}, citations=CITATIONS, source_datasets=["cub-200-2011", "places365"],
        annotations_creators=["machine-generated"],
        gallery=flip.gallery_writer(source, layout, GROUP_NAMES, policy),
        load_example='ds = load_dataset(path, "rho_0.95")\nrow = ds["test"][0]  # row["image"], row["mask"]: PIL images',
    )
