"""The CAFE demo sources: small COCO-, LVIS- and SA-Co/Gold-style files over real JPEGs, and
simulated verification verdicts.

Scenes come from the demo world's layout (:func:`segbench.demo.scenes.layout_scene`: a
cat or a dog with the things of an indoor or outdoor setting) and are rasterised by
:func:`segbench.demo.world.render_scene`, so every mask is exact and the images look the
same as the rest of the demo. The three files differ the way the real sources do:

* ``coco`` — COCO instances (names like ``dining table``, ``iscrowd`` on every annotation);
* ``lvis`` — LVIS-style names (``dining_table``, ``kite_(toy)``), no ``iscrowd`` field, per-image
  ``neg_category_ids`` / ``not_exhaustive_category_ids``;
* ``saco`` — SA-Co/Gold-style: one ``object`` category, one image entry per (photo, noun phrase)
  with the phrase in ``text_input`` and that phrase's masks.

The verdicts of the verification round are simulated (seeded): most samples pass, about one in
six fails one of the four questions, and each simulated worker errs with a small probability.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, TypedDict

from segbench.core.coco_documents import (
    CocoAnnotation,
    CocoCategory,
    CocoDocument,
    CocoImage,
    CocoInfo,
    CocoRegion,
    CocoRle,
)
from segbench.core.io import atomic_write_bytes, write_json
from segbench.demo.crowd import simulate_results
from segbench.demo.scenes import INDOOR_SETTINGS, OUTDOOR_SETTINGS, Scene, layout_scene
from segbench.demo.world import render_scene
from segbench.schemas.cafe import Candidate, SourceSpec
from segbench.schemas.rounds import Round
from segbench.tasks.cafe.verification import CONTROLS, LABELS

DEFAULT_SIZES = {"coco": 12, "lvis": 6, "saco": 6}
ID_BASE = {"coco": 1, "lvis": 100_001, "saco": 200_001}  # distinct photos per source
WIDTH, HEIGHT = 320, 240
FAILURE_SHARE = 1 / 6  # samples whose truth fails one question
_LVIS_SENSE = {"kite": "kite_(toy)", "mouse": "mouse_(computer_equipment)"}


def _category_ids() -> tuple[dict[str, int], list[CocoCategory]]:
    """Every COCO-Stuff name → id (what render_scene needs) and the COCO thing categories."""
    data = json.loads(resources.files("segbench.resources").joinpath("coco_stuff_categories.json").read_text())
    ids = {c["name"]: c["id"] for c in data["categories"]} | {data["stuff_other"]["name"]: data["stuff_other"]["id"]}
    things: list[CocoCategory] = [{"id": c["id"], "name": c["name"], "supercategory": c["supercategory"]}
                                  for c in data["categories"] if c["kind"] == "thing" and c["in_coco_2017"]]
    return ids, things


def demo_scenes(source: str, count: int, *, seed: int) -> list[Scene]:
    """``count`` scenes for ``source``, settings cycling through indoor and outdoor ones."""
    settings = [s for pair in zip(INDOOR_SETTINGS + INDOOR_SETTINGS[:1], OUTDOOR_SETTINGS, strict=True) for s in pair]
    scenes = []
    for number in range(count):
        rng = random.Random(f"{seed}:{source}:{number}")
        scenes.append(layout_scene(rng, image_id=ID_BASE[source] + number, split="val2017",
                                   setting=settings[number % len(settings)], species=[rng.choice(["cat", "dog"])],
                                   width=WIDTH, height=HEIGHT, n_things=2))
    return scenes


class _LvisImage(CocoImage):
    neg_category_ids: list[int]
    not_exhaustive_category_ids: list[int]


class _LvisAnnotation(TypedDict):
    id: int
    image_id: int
    category_id: int
    segmentation: CocoRle | list[list[float]]
    area: float
    bbox: list[float]


class _LvisCategory(CocoCategory):
    synonyms: list[str]
    frequency: str


class _LvisDocument(TypedDict):
    info: CocoInfo
    licenses: list[dict[str, Any]]
    images: list[_LvisImage]
    annotations: list[_LvisAnnotation]
    categories: list[_LvisCategory]


class _PhraseImage(CocoImage):
    text_input: str
    is_instance_exhaustive: int


def _image(scene: Scene) -> CocoImage:
    return {"id": scene.image_id, "file_name": f"{scene.image_id:012d}.jpg", "width": scene.width,
            "height": scene.height}


def _coco(scenes: Sequence[Scene], rendered: list[list[CocoRegion]], things: list[CocoCategory]) -> CocoDocument:
    annotations: list[CocoAnnotation] = [{**ann, "id": scene.image_id * 100 + i} for scene, anns in zip(scenes, rendered, strict=True)
                   for i, ann in enumerate(anns, start=1)]
    return {"info": {"description": "segbench CAFE demo (COCO style)"}, "licenses": [],
            "images": [_image(s) for s in scenes], "annotations": annotations, "categories": things}


def _lvis(scenes: Sequence[Scene], rendered: list[list[CocoRegion]], things: list[CocoCategory]) -> _LvisDocument:
    categories: list[_LvisCategory] = [{"id": c["id"], "name": _LVIS_SENSE.get(c["name"], c["name"].replace(" ", "_")),
                   "synonyms": [c["name"].replace(" ", "_")], "frequency": "f"} for c in things]
    annotations: list[_LvisAnnotation] = [
        {"image_id": ann["image_id"], "category_id": ann["category_id"], "segmentation": ann["segmentation"],
         "area": ann["area"], "bbox": ann["bbox"], "id": scene.image_id * 100 + i}
        for scene, anns in zip(scenes, rendered, strict=True) for i, ann in enumerate(anns, start=1)
        if not ann["iscrowd"]]  # LVIS has no crowd regions
    images: list[_LvisImage] = [{**_image(s), "neg_category_ids": [], "not_exhaustive_category_ids": []}
                                for s in scenes]
    return {"info": {"description": "segbench CAFE demo (LVIS style)"}, "licenses": [], "images": images,
            "annotations": annotations, "categories": categories}


def _saco(scenes: Sequence[Scene], rendered: list[list[CocoRegion]], names: Mapping[int, str]) -> CocoDocument:
    images: list[_PhraseImage] = []
    annotations: list[CocoAnnotation] = []
    for scene, anns in zip(scenes, rendered, strict=True):
        for phrase in sorted({names[a["category_id"]] for a in anns}):
            entry_id = len(images) + 1
            images.append({**_image(scene), "id": entry_id, "text_input": phrase, "is_instance_exhaustive": 1})
            for ann in anns:
                if names[ann["category_id"]] == phrase:
                    annotations.append({**ann, "id": len(annotations) + 1, "image_id": entry_id, "category_id": 1})
    return {"info": {"description": "segbench CAFE demo (SA-Co/Gold style)"}, "licenses": [], "images": images,
            "annotations": annotations, "categories": [{"id": 1, "name": "object"}]}


def generate_demo_cafe(root: Path, *, seed: int = 0, sizes: Mapping[str, int] | None = None) -> list[SourceSpec]:
    """Write the demo sources under ``root`` and return their specs.

    Layout: ``<source>/annotations.json`` and ``<source>/images/<id:012d>.jpg`` for each source in
    ``sizes`` (default :data:`DEFAULT_SIZES`). The same arguments give byte-identical files.
    """
    sizes = dict(DEFAULT_SIZES if sizes is None else sizes)
    ids, things = _category_ids()
    names = {c["id"]: c["name"] for c in things}
    specs = []
    for source, count in sorted(sizes.items()):
        scenes = demo_scenes(source, count, seed=seed)
        rendered = []
        for scene in scenes:
            jpeg, instances, _ = render_scene(scene, seed=seed, category_ids=ids)
            atomic_write_bytes(root / source / "images" / f"{scene.image_id:012d}.jpg", jpeg, durable=False)
            rendered.append(instances)
        document = (_saco(scenes, rendered, names) if source == "saco" else
                    _lvis(scenes, rendered, things) if source == "lvis" else _coco(scenes, rendered, things))
        write_json(root / source / "annotations.json", document)
        specs.append(SourceSpec(name=source, annotations=root / source / "annotations.json",
                                images=root / source / "images"))
    return specs


def simulated_truth(candidates: Sequence[Candidate], *, seed: int) -> dict[str, dict[str, str]]:
    """Item id → control → the true answer: yes, except one failed question on ~1/6 of the samples."""
    truth = {}
    for candidate in candidates:
        rng = random.Random(f"{seed}:truth:{candidate.key}")
        answers = {control: "yes" for control in CONTROLS}
        if rng.random() < FAILURE_SHARE:
            answers[rng.choice(CONTROLS)] = "no"
        truth[str(candidate.id)] = answers
    return truth


def simulated_rows(round_: Round, truth: Mapping[str, Mapping[str, str]], *, workers: int = 3, noise: float = 0.05,
                   seed: int = 0) -> list[dict[str, str]]:
    """Results rows with one ``Answer.<control>`` column per question, from simulated workers."""
    merged: dict[str, dict[str, str]] = {}
    for number, control in enumerate(CONTROLS):
        per_control = {item: answers[control] for item, answers in truth.items()}
        for row in simulate_results(round_, per_control, control=control, labels=LABELS, workers=workers,
                                    noise=noise, seed=seed * len(CONTROLS) + number):
            merged.setdefault(row["AssignmentId"], {}).update(row)
    return [merged[key] for key in merged]
