"""Reading and validating what a SPIN evaluation takes: ground truth, taxonomy, predictions, answers.

Ground truth: ``<dataset dir>/dataset/spin_{split}_{wholes,parts,subparts}.json`` (COCO, RLE; every part
annotation's ``parent_id`` is its whole's annotation id, every subpart's its part's) and, when present,
``<dataset dir>/taxonomy.yaml`` (only used for the subparts it restricts to some object classes).

Predictions: one COCO results file per level, a list of
``{image_id, category_id, segmentation, score?, prompt?: "general"|"specific", gt_id?}``, or a box model's
detections with ``bbox`` instead of ``segmentation`` (several per category: their union is its mask). ``gt_id`` (the
ground-truth annotation the prompt named) is preferred; without it the prediction answers the entity
(image_id, category_id). ``prompt`` defaults to ``general``. Answers (recognition):
``[{image_id, category_id | gt_id, level, prompt?, answer: str, truth?: "yes"|"no"}]``.

Each bad item is an :class:`~segbench.core.errors.AnnotationError` naming the file and the item, handled by
the caller's :class:`~segbench.core.errors.ImportPolicy` (fail, or skip and report; a skipped prediction is an
abstention). Metrics live in :mod:`segbench.tasks.spin.metrics`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from segbench.core.errors import AnnotationError, ImportPolicy, InputError
from segbench.core.io import read_json
from segbench.core.masks import CocoRle, boxes_to_rle, check_box, segmentation_to_rle
from segbench.core.versioning import DatasetSource
from segbench.tasks.spin.hierarchy import build_hierarchy, parse_taxonomy
from segbench.tasks.spin.metrics import (
    DEFAULT_SCORE,
    LEVELS,
    PROMPTS,
    Hierarchy,
    ImageTruth,
    Instance,
    Prediction,
)
from segbench.tasks.spin.recognition import DEFAULT_YES_RULE, Answer, says_yes

PARENT_LEVEL = {"parts": "wholes", "subparts": "parts"}


def gt_relpath(dataset_dir: str, split: str, level: str) -> str:
    return f"{dataset_dir}/dataset/spin_{split}_{level}.json"


def results_name(split: str, level: str) -> str:
    """File name of a level's predictions inside a ``--predictions`` folder."""
    return f"spin_{split}_{level}_results.json"


class SpinTruth:
    """The validated ground truth of one split: images, their entities, the category hierarchy.

    ``annotations[level][ann_id]`` = (image id, category id) resolves a prediction's ``gt_id``.
    A plain class, so Prefect passes it between tasks as is.
    """

    def __init__(self, images: dict[int, ImageTruth], hierarchy: Hierarchy,
                 annotations: dict[str, dict[int, tuple[int, int]]], files: dict[str, str]) -> None:
        self.images = images
        self.hierarchy = hierarchy
        self.annotations = annotations
        self.files = files


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _coco_parts(data: Any, path: str) -> tuple[list[Any], dict[int, dict[str, Any]], list[Any]]:
    if not isinstance(data, dict) or not all(isinstance(data.get(k), list) for k in ("images", "categories",
                                                                                      "annotations")):
        raise InputError("not a COCO file: needs 'images', 'categories' and 'annotations' lists", path=path,
                         hint="point --data-root / --repo at a built SPIN dataset")
    categories: dict[int, dict[str, Any]] = {}
    for cat in data["categories"]:
        if not isinstance(cat, dict) or not _is_int(cat.get("id")) or cat["id"] < 0 or not isinstance(
                cat.get("name"), str) or cat["id"] in categories:
            raise InputError(f"category {cat!r} needs a unique integer id >= 0 and a name", path=path)
        categories[cat["id"]] = cat
    return data["images"], categories, data["annotations"]


def read_ground_truth(source: DatasetSource, dataset_dir: str, split: str) -> SpinTruth:
    """Read and validate a split's three ground-truth files (and the taxonomy when present).

    Raises:
        InputError: a file is missing or not COCO; a category name breaks the naming rule.
        AnnotationError: an image lacks its size, an annotation refers to an unknown image, category or
            parent, or its segmentation does not fit its image.
    """
    raw, names, categories, files = {}, {}, {}, {}
    for level in LEVELS:
        files[level] = gt_relpath(dataset_dir, split, level)
        images, categories[level], anns = _coco_parts(source.read_json(files[level]), files[level])
        names[level] = {cid: cat["name"] for cid, cat in categories[level].items()}
        raw[level] = (images, anns)
    restricted = None
    taxonomy = f"{dataset_dir}/taxonomy.yaml"
    if source.exists(taxonomy):
        restricted = parse_taxonomy(yaml.safe_load(source.read_bytes(taxonomy)), taxonomy)

    records: dict[int, dict[str, Any]] = {}
    for img in raw["wholes"][0]:
        if not isinstance(img, dict) or not _is_int(img.get("id")) or not all(
                _is_int(img.get(k)) and img[k] > 0 for k in ("width", "height")):
            raise AnnotationError("image needs an integer id and positive width and height", path=files["wholes"],
                                  item=f"image {img.get('id') if isinstance(img, dict) else img!r}")
        records[img["id"]] = img
    entities: dict[int, dict[str, dict[int, list]]] = {i: {lv: {} for lv in LEVELS} for i in records}
    annotations: dict[str, dict[int, tuple[int, int]]] = {}
    links: dict[str, dict[int, set[int]]] = {}
    instances: dict[int, dict[str, dict[int, Instance]]] = {i: {} for i in records}
    for level in LEVELS:
        annotations[level] = {}
        for ann in raw[level][1]:
            key = _check_gt_annotation(ann, level, records, names[level], annotations, files[level])
            img = records[ann["image_id"]]
            rle = _rle(ann["segmentation"], img, files[level], f"annotation {ann['id']}")
            parent_cat = annotations[PARENT_LEVEL[level]][ann["parent_id"]][1] if level in PARENT_LEVEL else None
            if parent_cat is not None:
                links.setdefault(level, {}).setdefault(key[1], set()).add(parent_cat)
            entry = entities[key[0]][level].setdefault(key[1], [[], parent_cat])
            entry[0].append(rle)
            instances[key[0]].setdefault(level, {})[ann["id"]] = Instance(key[1], rle, ann.get("parent_id"))
            annotations[level][ann["id"]] = key
    hierarchy = build_hierarchy(names, restricted, files["subparts"], categories=categories, links=links)
    truths: dict[int, ImageTruth] = {}
    for image_id, img in sorted(records.items()):
        wholes = entities[image_id]["wholes"]
        supercategory = img.get("supercategory") or (hierarchy.whole_super[min(wholes)] if wholes else "unknown")
        truths[image_id] = ImageTruth(
            image_id, img["height"], img["width"], str(supercategory), img.get("object_class"),
            {lv: {cat: (tuple(rles), parent) for cat, (rles, parent) in sorted(entities[image_id][lv].items())}
             for lv in LEVELS}, instances[image_id])
    return SpinTruth(truths, hierarchy, annotations, files)


def _check_gt_annotation(ann: Any, level: str, images: Mapping[int, Any], names: Mapping[int, str],
                         annotations: Mapping[str, Mapping[int, tuple[int, int]]], path: str) -> tuple[int, int]:
    item = f"annotation {ann.get('id') if isinstance(ann, dict) else ann!r}"
    problem = None
    if not isinstance(ann, dict) or not _is_int(ann.get("id")) or ann["id"] in annotations[level]:
        problem = "annotation needs a unique integer id"
    elif ann.get("image_id") not in images:
        problem = f"refers to unknown image {ann.get('image_id')!r}"
    elif ann.get("category_id") not in names:
        problem = f"refers to unknown category {ann.get('category_id')!r}"
    elif "segmentation" not in ann:
        problem = "has no segmentation"
    elif level in PARENT_LEVEL:
        parent = annotations[PARENT_LEVEL[level]].get(ann["parent_id"]) if _is_int(ann.get("parent_id")) else None
        if parent is None or parent[0] != ann["image_id"]:
            problem = f"parent_id {ann.get('parent_id')!r} is no {PARENT_LEVEL[level]} annotation of its image"
    if problem:
        raise AnnotationError(problem, path=path, item=item, hint="rebuild the SPIN dataset")
    return ann["image_id"], ann["category_id"]


def _rle(segmentation: Any, image: Mapping[str, Any], path: str, item: str) -> CocoRle:
    try:
        return segmentation_to_rle(segmentation, image["height"], image["width"])
    except ValueError as exc:
        raise AnnotationError(f"invalid segmentation: {exc}", path=path, item=f"image {image['id']} / {item}",
                              hint="encode the mask at the image's size (height, width) as a COCO RLE") from exc


def _resolve(entry: Mapping[str, Any], level: str, truth: SpinTruth, path: str, item: str) -> tuple[int, int]:
    """(image id, category id) a prediction or answer refers to, via ``gt_id`` or its own ids."""
    gt_id = entry.get("gt_id")
    if gt_id is not None:
        key = truth.annotations[level].get(gt_id) if _is_int(gt_id) else None
        if key is None:
            raise AnnotationError(f"gt_id {gt_id!r} is no {level} annotation of the split", path=path, item=item,
                                  hint=f"use the annotation ids of {truth.files[level]}")
        for field, value in zip(("image_id", "category_id"), key, strict=True):
            if entry.get(field) is not None and entry[field] != value:
                raise AnnotationError(f"{field} {entry[field]!r} disagrees with gt_id {gt_id} ({field} {value})",
                                      path=path, item=item, hint="drop the field or fix it")
        return key
    image_id: Any = entry.get("image_id")
    category_id: Any = entry.get("category_id")
    if image_id not in truth.images:
        raise AnnotationError(f"unknown image_id {image_id!r}", path=path, item=item,
                              hint=f"use image ids of {truth.files[level]} (is this the right --split?)")
    if category_id not in truth.hierarchy.names[level]:
        other = [lv for lv in LEVELS if category_id in truth.hierarchy.names[lv] and lv != level]
        named = f" (the {other[0]} category {truth.hierarchy.names[other[0]][category_id]!r}?)" if other else ""
        raise AnnotationError(f"category_id {category_id!r} is not a {level} category{named}", path=path, item=item,
                              hint=f"{level} results use the category ids of {truth.files[level]}")
    return image_id, category_id


def _prompt(entry: Mapping[str, Any], path: str, item: str) -> str:
    prompt = entry.get("prompt", "general")
    if prompt not in PROMPTS:
        raise AnnotationError(f"prompt {prompt!r} is not 'general' or 'specific'", path=path, item=item)
    return prompt


def _entries(path: Path) -> list[Any]:
    data = read_json(path)
    if not isinstance(data, list):
        raise InputError("a results file holds a JSON list of predictions", path=path,
                         hint="write [{image_id, category_id, segmentation, score, prompt}, ...]")
    return data


def parse_predictions(entries: list[Any], level: str, truth: SpinTruth, path: str,
                      policy: ImportPolicy) -> list[tuple[int, Prediction]]:
    """Validated (image id, prediction) pairs of one level's results file.

    A prediction with a ``bbox`` ``[x, y, w, h]`` and no ``segmentation`` is a box model's detection: the
    boxes of one image, category and prompt (or of one ``gt_id``) are rasterised into one mask, their
    union, scored with the highest of their scores (SPIN's supplementary: box models' detections per
    category become one pixel-wise mask).
    """
    out: list[tuple[int, Prediction]] = []
    seen: set[tuple[int, int, str] | tuple[int, str]] = set()
    by_instance: dict[tuple[int, int, str], bool] = {}  # (image, category, prompt) → answered by gt_id
    boxes: dict[tuple[int, int, str] | tuple[int, str], _Detections] = {}  # a box model's, by prediction key
    for index, entry in enumerate(entries):
        item = f"prediction {index}"
        try:
            if not isinstance(entry, dict):
                raise AnnotationError("a prediction is a JSON object", path=path, item=item)
            image_id, category_id = _resolve(entry, level, truth, path, item)
            prompt = _prompt(entry, path, item)
            score = entry.get("score", DEFAULT_SCORE)
            if not isinstance(score, (int, float)) or isinstance(score, bool) or not math.isfinite(score):
                raise AnnotationError(f"score {score!r} is not a finite number", path=path, item=item)
            gt_id = entry.get("gt_id")
            key = (gt_id, prompt) if gt_id is not None else (image_id, category_id, prompt)
            what = f"annotation {gt_id}" if gt_id is not None else f"image {image_id} / category {category_id}"
            is_box = "bbox" in entry and "segmentation" not in entry
            if key in seen or (key in boxes and not is_box):
                beside = " beside its boxes" if key in boxes else " beside its mask" if is_box else ""
                raise AnnotationError(f"a second {prompt} prediction for {what}{beside}", path=path, item=item,
                                      hint="one mask per annotation (gt_id) or per image and category, and prompt; "
                                           "or boxes only")
            if by_instance.setdefault((image_id, category_id, prompt), gt_id is not None) != (gt_id is not None):
                raise AnnotationError(f"{prompt} predictions for image {image_id} / category {category_id} mix "
                                      "gt_id and category unions", path=path, item=item,
                                      hint="give every prediction of the category a gt_id, or none")
            img = truth.images[image_id]
            if is_box:
                box = entry["bbox"]
                try:
                    check_box(box)
                except ValueError as exc:
                    raise AnnotationError(str(exc), path=path, item=f"image {image_id} / {item}") from exc
                found = boxes.setdefault(key, _Detections(image_id, category_id, prompt, gt_id))
                found.boxes.append(box)
                found.score = max(found.score, float(score))
                continue
            rle = _rle(entry.get("segmentation"), {"id": image_id, "height": img.height, "width": img.width},
                       path, item)
        except AnnotationError as error:
            policy.handle(error)
            continue
        seen.add(key)
        out.append((image_id, Prediction(level, category_id, prompt, rle, float(score), gt_id)))
    for found in boxes.values():  # the union of each key's boxes, rasterised once
        img = truth.images[found.image_id]
        out.append((found.image_id, Prediction(level, found.category_id, found.prompt,
                                               boxes_to_rle(found.boxes, img.height, img.width), found.score,
                                               found.gt_id)))
    return out


@dataclass
class _Detections:
    """A box model's detections of one entity: its boxes and their best score."""

    image_id: int
    category_id: int
    prompt: str
    gt_id: int | None
    boxes: list[Any] = field(default_factory=list)
    score: float = -math.inf


def read_predictions(paths: Mapping[str, str | Path], truth: SpinTruth,
                     policy: ImportPolicy) -> dict[int, list[Prediction]]:
    """Predictions of every level, grouped by image id (levels without a file have none)."""
    by_image: dict[int, list[Prediction]] = {}
    for level in LEVELS:
        if paths.get(level) is None:
            continue
        path = Path(paths[level])
        for image_id, prediction in parse_predictions(_entries(path), level, truth, str(path), policy):
            by_image.setdefault(image_id, []).append(prediction)
    return by_image


def prediction_files(directory: str | Path, split: str) -> dict[str, Path]:
    """The results files of a ``--predictions`` folder; at least one must exist.

    Raises:
        InputError: none of ``spin_{split}_{level}_results.json`` is there.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError("expected a predictions folder, found a file" if directory.exists()
                         else "predictions folder not found", path=directory,
                         hint=f"--predictions names the folder holding {results_name(split, LEVELS[0])} and the "
                              "other levels' results files (or pass --wholes/--parts/--subparts FILE)")
    found = {level: directory / results_name(split, level) for level in LEVELS
             if (directory / results_name(split, level)).is_file()}
    if not found:
        raise InputError(f"no results file for split {split!r}", path=directory,
                         hint=f"write {', '.join(results_name(split, lv) for lv in LEVELS)}")
    return found


def read_answers(path: str | Path, truth: SpinTruth, policy: ImportPolicy, yes_rule: str = DEFAULT_YES_RULE
                 ) -> list[Answer]:
    """Validated recognition answers. The truth is ``truth`` when given, else "yes" iff the entity exists;
    the answer is read by ``yes_rule`` (:func:`~segbench.tasks.spin.recognition.says_yes`)."""
    path = Path(path)
    entries = read_json(path)
    if not isinstance(entries, list):
        raise InputError("an answers file holds a JSON list", path=path)
    out = []
    for index, entry in enumerate(entries):
        item = f"answer {index}"
        try:
            if not isinstance(entry, dict) or entry.get("level") not in LEVELS:
                raise AnnotationError(f"needs a level in {', '.join(LEVELS)}", path=path, item=item)
            level = entry["level"]
            image_id, category_id = _resolve(entry, level, truth, str(path), item)
            answer, given = entry.get("answer"), entry.get("truth")
            if not isinstance(answer, str):
                raise AnnotationError("answer must be the model's text (a string)", path=path, item=item)
            if given is not None and given not in ("yes", "no"):
                raise AnnotationError(f"truth {given!r} is not 'yes' or 'no'", path=path, item=item)
            present = category_id in truth.images[image_id].entities[level]
            out.append(Answer(level, category_id, _prompt(entry, str(path), item),
                              says_yes(answer, yes_rule),
                              present if given is None else given == "yes"))
        except AnnotationError as error:
            policy.handle(error)
    return out
