"""Captions for the demo world, in COCO captions format, for the valid-vocabulary build.

Each demo image gets 3-5 captions written from its scene record (setting, animals with their coat
and pose, things, stuff), through varied templates and the everyday words people use for the
animals (kitten, puppy, pup, ...), so noun mining finds the class names, their synonyms and
hyponyms, their parts and the scene nouns. Deterministic: the same seed gives the same bytes.
Scene layout lives in :mod:`segbench.demo.world`; nothing here draws pixels.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from segbench.core.io import write_json
from segbench.demo.scenes import Region, Scene
from segbench.demo.world import SPLITS, build_scenes

# Words a captioner would use; several per class so mining sees synonyms and hyponyms.
ANIMAL_WORDS = {
    "cat": ("cat", "cat", "kitten", "kitty", "tabby cat", "house cat"),
    "dog": ("dog", "dog", "puppy", "pup", "doggy", "retriever", "terrier"),
}
ANIMAL_PARTS = {"cat": ("tail", "ears", "whiskers", "paws"), "dog": ("tail", "ears", "snout", "paws")}
# COCO-Stuff class -> caption words (merged classes lose their "-other" / "-stuff" suffixes).
STUFF_WORDS = {
    "wall-other": "wall", "wall-panel": "panelled wall", "wall-brick": "brick wall", "wall-wood": "wooden wall",
    "wall-tile": "tiled wall", "floor-wood": "wooden floor", "floor-other": "floor", "floor-tile": "tile floor",
    "floor-marble": "marble floor", "floor-stone": "stone floor", "carpet": "carpet", "curtain": "curtains",
    "shelf": "shelf", "window-blind": "window blinds", "door-stuff": "door", "cabinet": "cabinets",
    "cupboard": "cupboard", "sky-other": "sky", "grass": "grass", "tree": "trees", "bush": "bushes",
    "clouds": "clouds", "road": "road", "building-other": "buildings", "pavement": "sidewalk", "sand": "sand",
    "sea": "sea", "snow": "snow", "mountain": "mountains", "rug": "rug", "house": "house", "banner": "banner",
    "cardboard": "cardboard box",
}
TEMPLATES = (
    "{a_animal} {pose} in {a_setting}.",
    "{A_animal} sitting near {a_thing} in {the_setting}.",
    "There is {a_animal} next to {a_thing} and {a_stuff}.",
    "{A_animal} with its {part} up, {stuff} in the background.",
    "A photo of {a_animal} in front of {a_stuff}.",
    "{A_thing} and {a_animal} in {a_setting}.",
    "Close-up of {a_animal}'s {part} by {the_stuff}.",
    "{A_animal} resting on {the_stuff} of {the_setting}.",
)
POSES = ("facing left", "facing right", "looking at the camera", "standing", "lying down", "sitting")


def _article(phrase: str) -> str:
    plural = phrase.endswith("s") and not phrase.endswith("ss")
    if plural:
        return f"some {phrase}"
    return f"{'an' if phrase[0] in 'aeiou' else 'a'} {phrase}"


def _animal_phrase(rng: random.Random, region: Region) -> tuple[str, str]:
    """(noun phrase, pose) of a cat or dog, from its description "orange cat facing left"."""
    words = region.description.split(" facing ")
    coat = words[0].removesuffix(region.name).strip()
    noun = rng.choice(ANIMAL_WORDS[region.name])
    if region.name == "dog" and coat == "golden" and rng.random() < 0.4:
        noun = "golden retriever"  # a breed name: a hyponym of dog for the judge
        coat = ""
    pose = f"facing {words[1]}" if len(words) > 1 and rng.random() < 0.5 else rng.choice(POSES)
    return (f"{coat} {noun}".strip() if rng.random() < 0.7 else noun), pose


def scene_captions(scene: Scene, rng: random.Random, *, n: int) -> list[str]:
    """``n`` different captions of one scene (fewer if the templates run out)."""
    animals = [r for r in scene.things if r.name in ANIMAL_WORDS]
    things = [r.description or r.name for r in scene.things if r.name not in ANIMAL_WORDS]
    stuff = sorted({STUFF_WORDS.get(r.name, r.name.split("-")[0]) for r in scene.stuff})
    captions: list[str] = []
    for template in rng.sample(TEMPLATES, len(TEMPLATES)):
        if len(captions) == n:
            break
        if not animals and ("animal" in template or "part" in template):
            continue
        animal = rng.choice(animals) if animals else None
        phrase, pose = _animal_phrase(rng, animal) if animal else ("", "")
        thing = rng.choice(things) if things else "a chair"
        stuff_word = rng.choice(stuff) if stuff else "floor"
        values = {
            "a_animal": _article(phrase) if phrase else "", "pose": pose,
            "part": rng.choice(ANIMAL_PARTS[animal.name]) if animal else "",
            "a_thing": _article(thing), "a_stuff": _article(stuff_word), "stuff": stuff_word,
            "the_stuff": f"the {stuff_word}", "a_setting": _article(scene.setting),
            "the_setting": f"the {scene.setting}",
        }
        values |= {"A_animal": values["a_animal"].capitalize(), "A_thing": values["a_thing"].capitalize()}
        text = template.format(**values)
        captions.append(text[0].upper() + text[1:])
    return captions


def captions_document(scenes: Sequence[Scene], split: str, *, seed: int) -> dict:
    """The COCO captions JSON of one split: ``images`` and 3-5 ``annotations`` per image."""
    images, annotations = [], []
    for scene in sorted((s for s in scenes if s.split == split), key=lambda s: s.image_id):
        rng = random.Random(f"segbench-demo-captions-{seed}-{scene.image_id}")
        images.append({"id": scene.image_id, "file_name": f"{scene.image_id:012d}.jpg",
                       "width": scene.width, "height": scene.height})
        for i, caption in enumerate(scene_captions(scene, rng, n=rng.randint(3, 5))):
            # COCO caption ids are unique across splits; derive them from the image id.
            annotations.append({"id": scene.image_id * 10 + i, "image_id": scene.image_id, "caption": caption})
    return {"info": {"description": "segbench demo world captions", "version": "1.0"},
            "licenses": [], "images": images, "annotations": annotations}


def generate_demo_captions(root: str | Path, *, seed: int = 0, scenes: Sequence[Scene] | None = None) -> list[Path]:
    """Write ``annotations/captions_{train,val}2017.json`` for the demo world under ``root``.

    Args:
        root: the demo world root (the folder :func:`~segbench.demo.world.generate_demo_world` wrote).
        seed: the world's seed; the scenes are rebuilt from it unless ``scenes`` is given.

    Returns:
        The written files, train first.
    """
    scenes = list(scenes) if scenes is not None else build_scenes(seed=seed)
    out = caption_files(root)
    for split, path in zip(SPLITS, out, strict=True):
        write_json(path, captions_document(scenes, split, seed=seed))
    return out


def caption_files(root: str | Path) -> list[Path]:
    """Where :func:`generate_demo_captions` writes the captions of the world under ``root``, train first."""
    return [Path(root) / "annotations" / f"captions_{split}.json" for split in SPLITS]
