"""Reading COCO-CD's sources reduced to what the build uses, one file at a time.

The build needs, of COCO 2017 instances, only the cat/dog ("target") annotations with their images'
records, and of every source only the context evidence (summed indoor/outdoor ``area``) of the images
that could become candidates, i.e. images with a target annotation. Each file is decoded with typed
structs (:mod:`segbench.core.coco_typed`), reduced to that, and released before the next is read, so
memory stays a small multiple of the largest file instead of every file as Python objects.
Segmentations are decoded only for the target annotations, and stuff masks never: the evidence is
the files' ``area`` field (seed 002, Appendix A).

Validation, skip reports and error messages follow :func:`segbench.core.coco.load_coco` and
:func:`segbench.core.coco.merge_splits`, in the same order (instances train, val, the merge checks,
then the COCO-Stuff files), so outputs and reports do not depend on which loader read the files.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping
from pathlib import Path
from typing import Any

from segbench.core.coco import CocoIndex, bbox_problem
from segbench.core.coco_typed import as_dict, categories_of, read_coco, valid_annotations, valid_images
from segbench.core.errors import AnnotationError, ImportPolicy, InputError
from segbench.schemas.coco_cd import CocoCdParams
from segbench.tasks.coco_cd.context import evidence_slots

Evidence = dict[int, list[float]]  # image id -> [indoor area, outdoor area]


class Instances(CocoIndex):
    """The merged COCO instances reduced for COCO-CD.

    ``images`` and ``annotations`` hold only the images with a target-class annotation and those
    annotations (as in the files, images renamed ``<split>/<file_name>`` as :func:`merge_splits` does);
    ``source_images`` counts every valid image and ``evidence`` is the things' context evidence of
    the images kept.
    """

    def __init__(self, *, source_images: int, evidence: Evidence, **index: Any) -> None:
        super().__init__(**index)
        self.source_images = source_images
        self.evidence = evidence


class _Split:
    """What one instances file leaves once reduced."""

    def __init__(self, path: Path, categories: dict[int, dict[str, Any]], raw_info: Any, raw_licenses: Any) -> None:
        self.path = path
        self.categories = categories
        self.info = raw_info if isinstance(raw_info, dict) else {}
        self.licenses = raw_licenses if isinstance(raw_licenses, list) else []
        self.image_ids: list[int] = []
        self.images: dict[int, dict[str, Any]] = {}
        self.annotations: list[dict[str, Any]] = []
        self.annotation_ids: list[int] = []
        self.evidence: Evidence = {}


def _slots(categories: Mapping[int, dict[str, Any]], params: CocoCdParams) -> dict[int, int]:
    names = {cat_id: cat["name"] for cat_id, cat in categories.items()}
    return evidence_slots(names, exclude=params.classes, indoor=params.indoor, outdoor=params.outdoor,
                          neutral=params.neutral)


def _read_split(path: Path, params: CocoCdParams, policy: ImportPolicy) -> _Split:
    raw = read_coco(path)
    categories = categories_of(raw, path)
    split = _Split(path, categories, raw.info, raw.licenses)
    image_records, sizes = {}, {}
    for image, record in valid_images(raw, path, policy):
        split.image_ids.append(image.id)
        image_records[image.id] = record
        sizes[image.id] = (image.width, image.height)
    targets = {cat_id for cat_id, cat in categories.items() if cat["name"] in params.classes}
    slots = _slots(categories, params)
    for ann, record in valid_annotations(raw, path, policy, image_records, categories):
        if ann.category_id in targets:  # copied into the split files: its bbox must fit its image
            target = as_dict(record)
            problem = bbox_problem(target.get("bbox"), *sizes[ann.image_id])
            if problem:
                policy.handle(AnnotationError(problem, path=path, item=f"annotation {ann.id}",
                                              hint="fix or remove the annotation's bbox"))
                continue
            split.annotations.append(target)
        split.annotation_ids.append(ann.id)
        slot = slots.get(ann.category_id)
        if slot is not None:
            split.evidence.setdefault(ann.image_id, [0.0, 0.0])[slot] += ann.area
    kept = {ann["image_id"] for ann in split.annotations}
    split.images = {image_id: as_dict(image_records[image_id]) for image_id in split.image_ids if image_id in kept}
    split.evidence = {image_id: areas for image_id, areas in split.evidence.items() if image_id in kept}
    return split


def _check_merge(splits: list[tuple[str, _Split]]) -> None:
    """The checks of :func:`segbench.core.coco.merge_splits`, with its messages."""
    first_split, first = splits[0]
    names = {cat_id: cat["name"] for cat_id, cat in first.categories.items()}
    image_split: dict[int, str] = {}
    annotation_split: dict[int, str] = {}
    for name, split in splits:
        if {cat_id: cat["name"] for cat_id, cat in split.categories.items()} != names:
            raise InputError(f"categories differ from those of {first_split} ({first.path})", path=split.path,
                             hint="merge files of the same COCO release")
        for image_id in split.image_ids:
            if image_id in image_split:
                raise InputError(f"image id {image_id} appears in both {image_split[image_id]} and {name}",
                                 path=split.path, hint="image ids must be unique across the merged splits")
            image_split[image_id] = name
        for ann_id in split.annotation_ids:
            if ann_id in annotation_split:
                raise InputError(f"annotation id {ann_id} appears in both {annotation_split[ann_id]} and {name}",
                                 path=split.path)
            annotation_split[ann_id] = name


def load_instances(files: Mapping[str, Path], splits: Iterable[str], params: CocoCdParams,
                   policy: ImportPolicy, each_file: Callable[[], object] = lambda: None) -> Instances:
    """The instances files of ``splits`` (``files["instances_<split>"]``), read one by one and merged.

    ``each_file`` is called after each file (progress).

    Raises:
        InputError, AnnotationError: as :func:`segbench.core.coco.load_coco` and
            :func:`segbench.core.coco.merge_splits` would for the same files.
    """
    reduced = []
    for name in splits:
        reduced.append((name, _read_split(Path(files[f"instances_{name}"]), params, policy)))
        each_file()
    _check_merge(reduced)
    first = reduced[0][1]
    images: dict[int, dict[str, Any]] = {}
    annotations: list[dict[str, Any]] = []
    evidence: Evidence = {}
    for name, split in reduced:
        for image_id, img in split.images.items():
            images[image_id] = {**img, "split": name, "file_name": f"{name}/{img['file_name']}"}
        annotations += split.annotations
        evidence |= split.evidence
    merged = Instances(path=" + ".join(str(split.path) for _, split in reduced), images=images,
                       categories=dict(first.categories), annotations=annotations, info=first.info,
                       licenses=first.licenses, source_images=sum(len(split.image_ids) for _, split in reduced),
                       evidence=evidence)
    merged.split_paths = {name: str(split.path) for name, split in reduced}
    return merged


def stuff_evidence(path: Path, image_ids: Container[int], params: CocoCdParams, policy: ImportPolicy) -> Evidence:
    """The context evidence a COCO-Stuff file holds for ``image_ids`` (every record still validated).

    Raises:
        InputError, AnnotationError: as :func:`segbench.core.coco.load_coco` would for the file.
    """
    raw = read_coco(path)
    categories = categories_of(raw, path)
    images = {image.id for image, _ in valid_images(raw, path, policy)}
    slots = _slots(categories, params)
    evidence: Evidence = {}
    for ann, _ in valid_annotations(raw, path, policy, images, categories):
        slot = slots.get(ann.category_id)
        if slot is not None and ann.image_id in image_ids:
            evidence.setdefault(ann.image_id, [0.0, 0.0])[slot] += ann.area
    return evidence
