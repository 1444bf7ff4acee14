"""CAFE target selection: which object of which source image gets a counterfactual edit.

Reads validated COCO-format sources (COCO val2017, LVIS val, SA-Co/Gold-style files) through
:func:`segbench.core.coco.load_coco` and picks instance masks that an edit can change visibly and
people can verify: not crowd, within area bounds (a fraction of the image), by default the only
instance of its category in the image, at most ``targets_per_image`` per image, at most the
candidates the source's quota asks for (``quotas.py``), seeded, leaving out targets an earlier
batch drew. Each target keeps its provenance (source, image id, annotation id).

Edit types are then dealt to each source's targets (largest remainders, seeded), one edit per
target, as in the released CAFE where every sample is its own target.

What does not belong here: asking for edit plans (``plans.py``), editing, export.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence, Set
from typing import Any

from segbench.core.coco import CocoIndex, annotation_rle
from segbench.core.errors import AnnotationError, ImportPolicy
from segbench.core.io import inside_name
from segbench.core.masks import rle_area, rle_to_bitmap
from segbench.core.splits import apportion
from segbench.schemas.cafe import CafeParams, Target
from segbench.schemas.edits import EditType

# LVIS names carry a WordNet-style sense in parentheses ("bat_(animal)") and underscores.
_LVIS_SENSE = re.compile(r"_?\([^)]*\)$")


def object_name(image: Mapping[str, Any], category: Mapping[str, Any]) -> str:
    """The readable name of a target: an SA-Co image's noun phrase, else its category's name.

    SA-Co/Gold files have one category for every mask and put the noun phrase on the image
    (``text_input``); LVIS names look like ``dining_table`` or ``bat_(animal)``.
    """
    phrase = image.get("text_input")
    if isinstance(phrase, str) and phrase.strip():
        return " ".join(phrase.split())
    name = _LVIS_SENSE.sub("", str(category["name"]))
    return " ".join(name.replace("_", " ").split())


def target_key(source: str, image_id: int, annotation_id: int) -> str:
    return f"{source}:{image_id}:{annotation_id}"


def eligible_annotations(index: CocoIndex, params: CafeParams) -> dict[str, list[dict[str, Any]]]:
    """Annotations that may become targets, grouped by image file and sorted by annotation id.

    Rules: ``iscrowd`` is 0 (LVIS has no such field: 0), the area fraction is within the bounds,
    and (``sole_instance``) no other annotation of the image has the same category — for SA-Co,
    where all masks share one category, no other mask of the same noun phrase.

    Grouping is by ``file_name`` because SA-Co lists one photo once per noun phrase.
    """
    out: dict[str, list[dict[str, Any]]] = {}
    for image_id, anns in sorted(index.anns_by_image.items()):
        image = index.images[image_id]
        per_category: dict[int, int] = {}
        for ann in anns:
            per_category[ann["category_id"]] = per_category.get(ann["category_id"], 0) + 1
        image_area = image["width"] * image["height"]
        for ann in anns:
            if ann.get("iscrowd", 0):
                continue
            if params.sole_instance and per_category[ann["category_id"]] > 1:
                continue
            fraction = float(ann["area"]) / image_area
            if params.min_area_fraction <= fraction <= params.max_area_fraction:
                out.setdefault(image["file_name"], []).append(ann)
    return {name: sorted(anns, key=lambda a: a["id"]) for name, anns in sorted(out.items())}


def select_targets(index: CocoIndex, source: str, params: CafeParams, policy: ImportPolicy, *,
                   limit: int | None = None, exclude: Set[str] = frozenset()) -> list[Target]:
    """The targets of one source: eligible objects, ``targets_per_image`` per image, up to ``limit``.

    Images are visited in a seeded order (the seed and the source name), so a limit takes a
    random but reproducible subset; within an image the objects are drawn the same way. Target
    keys in ``exclude`` (drawn by an earlier batch) are passed over, so a top-up continues the same
    order. A mask that does not decode goes to ``policy`` and the next object of the image is tried.

    Returns:
        Targets sorted by key.

    Raises:
        AnnotationError: under a fail policy, a malformed segmentation or an empty mask.
    """
    rng = random.Random(f"{params.seed}:{source}")
    groups = eligible_annotations(index, params)
    files = sorted(groups)
    rng.shuffle(files)
    targets: list[Target] = []
    for file_name in files:
        if limit is not None and len(targets) >= limit:
            break
        anns = list(groups[file_name])
        rng.shuffle(anns)
        taken = 0
        for ann in anns:
            if taken >= params.targets_per_image or (limit is not None and len(targets) >= limit):
                break
            if target_key(source, ann["image_id"], ann["id"]) in exclude:
                taken += 1  # the image's slot went to the earlier batch
                continue
            target = _target(index, source, ann, policy)
            if target is not None:
                targets.append(target)
                taken += 1
    return sorted(targets, key=lambda t: (t.source, t.image_id, t.annotation_id))


def _target(index: CocoIndex, source: str, ann: dict[str, Any], policy: ImportPolicy) -> Target | None:
    image = index.images[ann["image_id"]]
    try:
        # Refused here, before any plan is asked for: the name must stay inside the images folder.
        inside_name(image["file_name"], item=f"image {image['id']} (file_name {image['file_name']!r})",
                    path=index.path, error=AnnotationError)
        rle = annotation_rle(ann, image, path=index.path)
    except AnnotationError as error:
        policy.handle(error)
        return None
    area = int(rle_area([rle])[0])
    if area == 0:
        policy.handle(AnnotationError("the segmentation is empty", path=index.path,
                                      item=f"image {image['id']} / annotation {ann['id']}",
                                      hint="fix or remove the annotation, or build with --on-error skip"))
        return None
    bitmap = rle_to_bitmap(rle)
    columns: Any = bitmap.any(0)  # 1-D arrays (numpy's stubs allow a scalar)
    rows: Any = bitmap.any(1)
    xs, ys = columns.nonzero()[0], rows.nonzero()[0]
    bbox = (float(xs[0]), float(ys[0]), float(xs[-1] - xs[0] + 1), float(ys[-1] - ys[0] + 1))
    return Target(
        key=target_key(source, image["id"], ann["id"]), source=source, image_id=image["id"], annotation_id=ann["id"],
        category_id=ann["category_id"], object_name=object_name(image, index.categories[ann["category_id"]]),
        file_name=image["file_name"], width=image["width"], height=image["height"], area=float(area),
        area_fraction=area / (image["width"] * image["height"]), bbox=bbox, segmentation=rle,
    )


def deal_edit_types(targets: Sequence[Target], weights: Mapping[EditType, float], *,
                    seed: int) -> list[tuple[Target, EditType]]:
    """Deal one edit type to each target of one source, in proportion to ``weights``.

    ``weights`` are the candidates each edit type wants (or the mix when the source has no quota);
    when the source has fewer targets the counts shrink in proportion (largest remainders). The
    targets are shuffled with the seed and the source first, so which target gets which edit does
    not depend on file order. Returns (target, edit type) sorted by target key.
    """
    if not targets:
        return []
    counts = apportion(len(targets), weights)
    order = sorted(targets, key=lambda t: t.key)
    random.Random(f"{seed}:edit-types:{order[0].source}").shuffle(order)
    dealt = [t for t in EditType for _ in range(counts.get(t, 0))]
    return sorted(zip(order, dealt, strict=True), key=lambda pair: pair[0].key)
