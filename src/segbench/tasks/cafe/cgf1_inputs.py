"""Reading SA-Co-format ground truth and COCO segmentation results for the cgF1 evaluators.

The cgF1 protocol (SAM3's ``CGF1Evaluator``) sees a ground-truth file through pycocotools' ``COCO``
index and ``COCOeval._prepare``; this module reproduces exactly what that view contains, because the
numbers depend on it:

- images: ``id`` → entry, the last entry winning on a repeated id (``COCO.createIndex``);
- categories: ``p.catIds`` = the sorted ids of ``categories`` (repeats kept). Annotations and
  predictions whose ``category_id`` is not among them are never seen by cgF1;
- annotations of an image: its annotation ids in file order, each resolved through the id index
  (``COCO.loadAnns``), kept only when the resolved annotation belongs to that image, then grouped
  by category in ``p.catIds`` order;
- segmentations: polygons and uncompressed RLEs rasterised with the image's height and width
  (``COCO.annToRLE``), compressed RLEs used as they are.

Predictions must be compressed (or uncompressed) RLEs of the image's size. A prediction for an image
that is not in the ground truth is ignored and counted, as SAM3's evaluator ignores it: CAFE's public
workflow scores one predictions file against each subset file in turn. When several ground-truth
files are given, an image in none of them is an error (:func:`load_predictions`). Every rule broken raises
an :class:`~segbench.core.errors.InputError` naming the file, the item and the fix. Nothing here computes
a metric.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
from pycocotools import mask as mask_utils

from segbench.core.errors import InputError
from segbench.schemas.cafe_metrics import Ignored

if TYPE_CHECKING:
    from segbench.core.masks import PycocoRle  # a type only: this module stays free of Pillow
from segbench.core.gc_pause import collection_paused
from segbench.core.io import NotAStreamedList, json_list_batches, read_json
from segbench.tasks.cafe.prediction_columns import usual_annotations, usual_columns, usual_compressed, usual_images
from segbench.tasks.cafe.rle_checks import check_compressed_counts, check_compressed_rles

PREDICTION_KEYS = ("image_id", "category_id", "segmentation", "score")
_PREDICTION_KEY_SET = frozenset(PREDICTION_KEYS)


def _is_int(value: Any) -> bool:
    # the exact type test first: parsed JSON is plain ints, and this runs for every field of every item
    return type(value) is int or (isinstance(value, (int, np.integer)) and not isinstance(value, bool))


def _is_number(value: Any) -> bool:
    return type(value) in (float, int) or (isinstance(value, (int, float, np.integer, np.floating))
                                            and not isinstance(value, bool))


@dataclass
class GroundTruth:
    """One SA-Co-format ground-truth file as pycocotools' ``COCO`` / ``COCOeval`` see it."""

    path: str
    entries: list[dict[str, Any]]  # image entries in file order (repeated ids kept, as the evaluator sees them)
    images: dict[int, dict[str, Any]]  # id -> entry (last wins)
    cat_ids: list[int]  # sorted category ids, repeats kept (COCOeval's p.catIds)
    ann_index: dict[Any, dict[str, Any]]  # annotation id -> annotation (last wins)
    ann_ids_by_image: dict[int, list[Any]]  # image id -> annotation ids in file order
    first_annotation: dict[int, dict[str, Any]]  # image id -> its first annotation in file order
    counts_checked: bool = False  # every compressed RLE of a known image's size was checked on loading
    _rle_cache: dict[int, PycocoRle] = field(default_factory=dict, repr=False)
    _multiplicity: dict[Any, int] | None = field(default=None, repr=False)

    def exhaustive(self, image_id: int) -> bool:
        return bool(self.images[image_id]["is_instance_exhaustive"])

    def visible_annotations(self, image_id: int) -> list[dict[str, Any]]:
        """The annotations COCOeval evaluates for ``image_id``, in its order (see module docstring)."""
        resolved = [self.ann_index[i] for i in self.ann_ids_by_image.get(image_id, ())]
        if not resolved:
            return []
        cat = resolved[0]["category_id"]  # the usual image: all its annotations in one category, listed once
        if self.multiplicity.get(cat) == 1 and all(a["image_id"] == image_id and a["category_id"] == cat
                                                    for a in resolved):
            return resolved
        by_cat: dict[Any, list[dict[str, Any]]] = defaultdict(list)
        for ann in resolved:
            if ann["image_id"] == image_id:
                by_cat[ann["category_id"]].append(ann)
        return [ann for cat in self.present_categories(by_cat) for ann in by_cat[cat]]

    def present_categories(self, cats: Any) -> list[Any]:
        """The categories of ``cats`` that are in ``cat_ids``, in ``cat_ids`` order, each repeated as
        often as it appears there (COCOeval loops ``for cId in p.catIds``)."""
        return [cat for cat in sorted(c for c in set(cats) if c in self.multiplicity)
                for _ in range(self.multiplicity[cat])]

    @property
    def multiplicity_repeats(self) -> bool:
        """Whether a category is listed more than once (COCOeval then sees its annotations again)."""
        return len(self.multiplicity) != len(self.cat_ids)

    @property
    def multiplicity(self) -> dict[Any, int]:
        if self._multiplicity is None:
            self._multiplicity = dict(Counter(self.cat_ids))
        return self._multiplicity

    def rle(self, ann: dict[str, Any]) -> PycocoRle:
        """The annotation's mask as a compressed RLE with bytes counts (``COCO.annToRLE``)."""
        key = id(ann)
        if key not in self._rle_cache:
            image = self.images.get(ann["image_id"])
            if image is None:
                raise InputError(f"annotation {ann['id']} refers to unknown image {ann['image_id']}",
                                 path=self.path, item=f"annotation {ann['id']}", hint="fix its image_id")
            self._rle_cache[key] = segmentation_rle(ann["segmentation"], image, path=self.path,
                                                    item=f"annotation {ann['id']}", allow_polygon=True,
                                                    check_counts=not self.counts_checked)
        return self._rle_cache[key]


def segmentation_rle(seg: Any, image: dict[str, Any], *, path: str, item: str, allow_polygon: bool,
                     check_counts: bool = True, pending: list[tuple[bytes, int, str]] | None = None) -> PycocoRle:
    """A segmentation as pycocotools' compressed RLE (bytes counts), checked against the image size.

    A compressed ``counts`` string is checked here, or appended to ``pending`` as ``(counts, pixels,
    item)`` for a caller that checks many at once (:func:`check_compressed_rles`), or not checked
    with ``check_counts=False`` (already checked).

    Raises:
        InputError: a polygon where only RLE is allowed, a malformed segmentation, or an RLE whose
            ``size`` is not the image's ``[height, width]`` (pycocotools would score it IoU -1).
    """
    height, width = image["height"], image["width"]
    if (type(seg) is dict and type(counts := seg.get("counts")) is str and type(size := seg.get("size")) is list
            and len(size) == 2 and type(size[0]) is int and type(size[1]) is int
            and size[0] == height and size[1] == width):
        # The usual prediction, as parsed from JSON: the checks below would all pass, in a fraction of the time.
        return _compressed(counts.encode("utf-8", "replace"), height, width, path, item, check_counts, pending)
    if isinstance(seg, list):
        if not allow_polygon:
            raise InputError("segmentation is a polygon; results must be RLE masks", path=path, item=item,
                             hint="encode each mask with pycocotools.mask.encode and decode 'counts' to str")
        try:
            return mask_utils.merge(mask_utils.frPyObjects(seg, height, width))
        except Exception as exc:  # pycocotools raises bare Exception / TypeError on malformed input
            raise InputError(f"malformed polygon segmentation ({exc})", path=path, item=item,
                             hint="a polygon is a list of flat [x1, y1, x2, y2, ...] lists") from exc
    if not isinstance(seg, dict) or "counts" not in seg or "size" not in seg:
        raise InputError("segmentation is not an RLE with 'size' and 'counts'", path=path, item=item,
                         hint="write {'size': [height, width], 'counts': '<compressed RLE>'}")
    size = seg["size"]
    if not (isinstance(size, (list, tuple)) and len(size) == 2 and all(_is_int(s) for s in size)
            and [int(size[0]), int(size[1])] == [height, width]):
        raise InputError(f"RLE size {size!r} is not the image size [{height}, {width}]", path=path, item=item,
                         hint="encode the mask at the image's own resolution (size is [height, width])")
    counts = seg["counts"]
    if isinstance(counts, list):
        if not all(_is_int(c) and c >= 0 for c in counts) or sum(counts) != height * width:
            raise InputError(f"uncompressed RLE counts must be non-negative and sum to {height * width}",
                             path=path, item=item, hint="re-encode the mask")
        return mask_utils.frPyObjects({"size": [height, width], "counts": counts}, height, width)
    if not isinstance(counts, (str, bytes)):
        raise InputError(f"RLE counts of type {type(counts).__name__}", path=path, item=item,
                         hint="counts is the compressed RLE string (bytes decoded to str) or a list of ints")
    encoded = counts.encode("utf-8", "replace") if isinstance(counts, str) else counts
    return _compressed(encoded, height, width, path, item, check_counts, pending)


def _compressed(encoded: bytes, height: int, width: int, path: str, item: str, check_counts: bool,
                pending: list[tuple[bytes, int, str]] | None) -> PycocoRle:
    if pending is not None:
        pending.append((encoded, height * width, item))
    elif check_counts:
        check_compressed_rles([(encoded, height * width, item)], path)
    return {"size": [height, width], "counts": encoded}


def _compressed_counts(seg: Any, image: dict[str, Any]) -> bytes | None:
    """The counts of a compressed RLE of the image's size, as bytes; ``None`` for anything else
    (polygons, uncompressed RLEs and wrong sizes are judged by :func:`segmentation_rle`)."""
    size = seg.get("size") if isinstance(seg, dict) else None
    if not (isinstance(size, (list, tuple)) and len(size) == 2 and all(_is_int(v) for v in size)
            and [int(size[0]), int(size[1])] == [image["height"], image["width"]]):
        return None
    counts = seg.get("counts")
    if isinstance(counts, str):
        return counts.encode("utf-8", "replace")
    return counts if isinstance(counts, bytes) else None


@collection_paused()
def load_ground_truth(data: Any, path: str) -> GroundTruth:
    """Index a parsed SA-Co-format ground-truth file.

    Raises:
        InputError: not a COCO object; ``images`` or ``categories`` missing; an image without an
            integer ``id``, positive ``height``/``width`` or ``is_instance_exhaustive``; an
            annotation without ``id``, ``image_id``, ``category_id``, ``segmentation`` or ``iscrowd``.
    """
    if not isinstance(data, dict):
        raise InputError("a ground-truth file must hold a JSON object", path=path, hint="pass the COCO/SA-Co GT json")
    for key in ("images", "categories"):
        if not isinstance(data.get(key), list):
            raise InputError(f"missing or non-list key {key!r}", path=path,
                             hint="the ground truth must be a COCO file with images, annotations and categories")
    annotations = data.get("annotations", [])
    if not isinstance(annotations, list):
        raise InputError("'annotations' is not a list", path=path, hint="fix the file")
    images = usual_images(data["images"])
    if images is None:  # some image breaks a rule: the loop names it
        images = {}
        for img in data["images"]:
            _check_image(img, path)
            images[img["id"]] = img
    if len(images) < len(data["images"]):  # pycocotools would keep the last one silently
        raise _twice("image", [img["id"] for img in data["images"]], path)
    _check_flags(data["images"], "is_instance_exhaustive", "image", path)
    cat_ids = []
    for cat in data["categories"]:
        if not isinstance(cat, dict) or not _is_int(cat.get("id")):
            raise InputError(f"category {cat!r} has no integer 'id'", path=path, hint="fix the categories list")
        cat_ids.append(cat["id"])
    ann_index: dict[Any, dict[str, Any]] = {}
    ann_ids_by_image: dict[int, list[Any]] = defaultdict(list)
    first_annotation: dict[int, dict[str, Any]] = {}
    usual = usual_annotations(annotations, images)
    for ann in annotations:
        if not usual:
            _check_annotation(ann, path)
        if ann["image_id"] not in images:
            # pycocotools would drop it silently and score its positive image as a negative.
            raise InputError(f"annotation {ann['id']} refers to image {ann['image_id']!r}, which is not in "
                             "'images'", path=path, item=f"annotation {ann['id']}",
                             hint="fix the annotation's image_id or add the image to 'images'")
        ann_index[ann["id"]] = ann
        ann_ids_by_image[ann["image_id"]].append(ann["id"])
        first_annotation.setdefault(ann["image_id"], ann)
    if len(ann_index) < len(annotations):
        raise _twice("annotation", [ann["id"] for ann in annotations], path)
    _check_flags(annotations, "iscrowd", "annotation", path)
    compressed = usual_compressed(annotations, images) if usual else None
    rles: dict[int, PycocoRle] = {}  # GroundTruth.rle's answers, known already for the usual file
    if compressed is not None:  # every segmentation a compressed RLE of its image's size
        counts, sizes = compressed
        check_compressed_counts(counts, sizes[:, 0] * sizes[:, 1], path, lambda k: f"annotation {annotations[k]['id']}")
        rles = {id(ann): {"size": size, "counts": c} for ann, c, size in zip(annotations, counts, sizes.tolist(),
                                                                             strict=True)}
    else:
        to_check: list[tuple[bytes, int, str]] = []
        for ann in annotations:
            image = images[ann["image_id"]]
            ann_counts = _compressed_counts(ann["segmentation"], image)
            if ann_counts is not None:
                to_check.append((ann_counts, image["height"] * image["width"], f"annotation {ann['id']}"))
        check_compressed_rles(to_check, path)
    return GroundTruth(path=path, entries=list(data["images"]), images=images, cat_ids=sorted(cat_ids),
                       ann_index=ann_index, ann_ids_by_image=dict(ann_ids_by_image),
                       first_annotation=first_annotation, counts_checked=True, _rle_cache=rles)


def _twice(kind: str, ids: list[Any], path: str) -> InputError:
    seen: set[Any] = set()
    for repeated in ids:  # the caller knows one repeats; stop at its second occurrence
        if repeated in seen:
            break
        seen.add(repeated)
    return InputError(f"{kind} id {repeated!r} appears twice", path=path, item=f"{kind} {repeated}",
                      hint=f"give every {kind} its own id (a copied entry?)")


def _check_flags(entries: list[dict[str, Any]], key: str, kind: str, path: str) -> None:
    """``key`` is 0 or 1 (or a boolean) in every entry: ``"yes"`` or 2 would be read as true."""
    bad = next((entry for entry in entries if entry[key] not in (0, 1)), None)
    if bad is not None:
        raise InputError(f"{key} is {bad[key]!r}, not 0 or 1", path=path, item=f"{kind} {bad['id']}",
                         hint=f"set {key} to 0 or 1")


def _check_image(img: Any, path: str) -> None:
    if not isinstance(img, dict) or not _is_int(img.get("id")):
        raise InputError("image entry has no integer 'id'", path=path, item=f"image {img!r:.80}",
                         hint="every image needs an integer id")
    item = f"image {img['id']}"
    for key in ("height", "width"):
        if not _is_int(img.get(key)) or img[key] <= 0:
            raise InputError(f"no positive integer {key!r}", path=path, item=item, hint="add the image size")
    if "is_instance_exhaustive" not in img:
        raise InputError("no 'is_instance_exhaustive'", path=path, item=item,
                         hint="set is_instance_exhaustive: 1 when every instance of the phrase is annotated "
                              "(0 excludes the image from cgF1)")


def _check_annotation(ann: Any, path: str) -> None:
    if not isinstance(ann, dict) or "id" not in ann:
        raise InputError("annotation has no 'id'", path=path, item=f"annotation {ann!r:.80}",
                         hint="give every annotation a unique id")
    missing = [k for k in ("image_id", "category_id", "segmentation", "iscrowd") if k not in ann]
    if missing:
        raise InputError(f"annotation lacks {', '.join(missing)}", path=path, item=f"annotation {ann['id']}",
                         hint="COCO annotations carry image_id, category_id, segmentation and iscrowd")


@dataclass
class Predictions:
    """COCO segmentation results grouped by image, in file order.

    ``by_image[image_id]`` lists indices into ``category_id`` (int64), ``score`` (float64) and
    ``rles`` (compressed RLE dicts with bytes counts). ``ignored`` counts, per image id, the
    predictions left out because their image is not in the ground truth.
    """

    path: str
    by_image: dict[int, list[int]]
    category_id: np.ndarray
    score: np.ndarray
    rles: list[dict[str, Any]]
    ignored: dict[int, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rles)


def ignored_summary(preds: Predictions, gt: GroundTruth, *, other_files: bool) -> Ignored:
    """How many predictions were ignored, and whether that was to be expected.

    Expected when ``other_files`` (several ground-truth files were given, and every ignored image is
    in one of them: :func:`load_predictions` refuses the others), or when ``gt`` is one CAFE subset
    file (all its images share one ``edit_type``), whose predictions file covers the other subsets.
    """
    count, images = sum(preds.ignored.values()), len(preds.ignored)
    subsets = {img.get("edit_type") for img in gt.entries}
    if not count:
        expected, reason = True, "every prediction is for an image of the ground truth"
    elif other_files:
        expected, reason = True, "their images are in the other ground-truth files given"
    elif len(subsets) == 1 and None not in subsets:
        expected, reason = True, (f"the ground truth is one subset ({subsets.pop()}); they are for the images "
                                  "of the other subsets")
    else:
        expected, reason = False, (f"their images are not in {gt.path}; pass every ground-truth file the "
                                   "predictions cover (evaluate cgf1 --each) to have them checked")
    return Ignored(predictions=count, images=images, expected=expected, reason=reason)


@collection_paused()
def load_predictions(data: Any, path: str, gt: GroundTruth, known_image_ids: set[int] | None = None,
                     first: int = 0) -> Predictions:
    """Validate and index COCO segmentation results against a ground truth.

    A prediction whose image is not in ``gt`` is counted in ``ignored`` and not checked further
    (it never reaches pycocotools). ``known_image_ids`` are the images of every ground-truth file
    given, when there are several: an image in none of them is refused. ``first``: the index in the
    file of ``data[0]`` (``data`` is a batch of a streamed file), for the items errors name.

    Raises:
        InputError: not a list; an item that is not an object or lacks ``image_id``, ``category_id``,
            ``segmentation`` or ``score``; a non-integer ``image_id``; one in none of
            ``known_image_ids``; a non-numeric score; a polygon, a corrupt or malformed RLE, or an
            RLE whose size is not the image's.
    """
    if not isinstance(data, list):
        raise InputError(f"predictions must be a JSON list of results, got {type(data).__name__}", path=path,
                         hint="write [{image_id, category_id, segmentation, score}, ...] (COCO results format)")
    columns = usual_columns(data, gt.images, known_image_ids)
    if columns is not None:
        by_image_, cats_, scores_, counts, size, kept, ignored_ = columns
        check_compressed_counts(counts, size[:, 0] * size[:, 1], path,
                                lambda k: f"prediction {first + kept[k]} (image {data[kept[k]]['image_id']})")
        rles: list[Any] = [None] * len(counts)
        for image_id, indices in by_image_.items():
            image = gt.images[image_id]
            shape = [image["height"], image["width"]]  # one list per image: a large file has millions of masks
            for k in indices:
                rles[k] = {"size": shape, "counts": counts[k]}
        return Predictions(path=path, by_image=by_image_, category_id=np.asarray(cats_, dtype=np.int64),
                           score=np.asarray(scores_, dtype=np.float64), rles=rles,
                           ignored=dict(sorted(ignored_.items())))
    by_image: dict[int, list[int]] = defaultdict(list)
    ignored: Counter[int] = Counter()
    cats: list[int] = []
    scores: list[float] = []
    rles = []
    to_check: list[tuple[bytes, int, str]] = []
    for index, pred in enumerate(data, start=first):
        item = f"prediction {index}"
        if not isinstance(pred, dict):
            raise InputError("is not a JSON object", path=path, item=item, hint="each result is an object")
        if not pred.keys() >= _PREDICTION_KEY_SET:
            missing = [k for k in PREDICTION_KEYS if k not in pred]
            raise InputError(f"lacks {', '.join(missing)}", path=path, item=item,
                             hint="each result needs image_id, category_id, segmentation (RLE) and score")
        image_id, score = pred["image_id"], pred["score"]
        if type(image_id) is not int and not _is_int(image_id):  # the type test first: the usual case, fast
            raise InputError(f"image_id {image_id!r} is not an integer", path=path, item=item,
                             hint="use the ids of the ground truth's 'images'")
        if known_image_ids is not None and image_id not in known_image_ids:
            raise InputError(f"image_id {image_id} is in none of the ground-truth files given", path=path,
                             item=item, hint="predict only for the ground truths' images (ids as in their 'images')")
        if (type(score) is not float and not _is_number(score)) or not math.isfinite(score):
            raise InputError(f"score {score!r} is not a finite number", path=path, item=item,
                             hint="score is the prediction's confidence, a number")
        if type(pred["category_id"]) is not int and not _is_int(pred["category_id"]):
            raise InputError(f"category_id {pred['category_id']!r} is not an integer", path=path, item=item,
                             hint="use the ground truth's category id")
        if image_id not in gt.images:
            ignored[int(image_id)] += 1
            continue
        by_image[image_id].append(len(rles))  # index among the kept predictions
        rles.append(segmentation_rle(pred["segmentation"], gt.images[image_id], path=path,
                                     item=f"{item} (image {image_id})", allow_polygon=False, pending=to_check))
        cats.append(int(pred["category_id"]))
        scores.append(float(score))
    check_compressed_rles(to_check, path)  # all at once: a file holds tens of thousands of masks
    return Predictions(path=path, by_image=dict(by_image), category_id=np.asarray(cats, dtype=np.int64),
                       score=np.asarray(scores, dtype=np.float64), rles=rles, ignored=dict(sorted(ignored.items())))


def visible_predictions(preds: Predictions, gt: GroundTruth, image_id: int) -> np.ndarray:
    """Indices of the image's predictions COCOeval sees, in its order: grouped by ``gt.cat_ids``
    (repeats kept), file order within a category. Other categories are dropped."""
    indices = preds.by_image.get(image_id)
    if not indices:
        return np.zeros(0, dtype=np.int64)
    cats = preds.category_id[indices].tolist()
    if cats.count(cats[0]) == len(cats) and gt.multiplicity.get(cats[0]) == 1:
        return np.asarray(indices, dtype=np.int64)  # the common case: one category, listed once; file order
    present = gt.present_categories(cats)
    column = np.asarray(cats)
    return np.asarray([indices[j] for cat in present for j in np.flatnonzero(column == cat)], dtype=np.int64)


def _parse(data: bytes, path: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc})", path=path, hint="re-export or regenerate the file") from exc


@collection_paused()
def read_ground_truth(path: str | Path, data: bytes | None = None) -> GroundTruth:
    """Read and index a ground-truth file (``data``: its bytes when read from a dataset version)."""
    return load_ground_truth(read_json(path) if data is None else _parse(data, str(path)), str(path))


# Predictions validated and indexed at a time while the file is read: 20k masks are about 15 MB of
# parsed JSON, against a few GB for a whole large file.
PREDICTIONS_BATCH = 20_000


@collection_paused()
def read_predictions(path: str | Path, gt: GroundTruth, known_image_ids: set[int] | None = None) -> Predictions:
    """Read and validate a COCO results file against ``gt`` (see :func:`load_predictions`).

    The file is streamed: each batch of :data:`PREDICTIONS_BATCH` results is validated and indexed as
    it is parsed, so only the compact index is kept. A file that does not stream as a list is read
    whole, and :func:`read_json` or :func:`load_predictions` names what is wrong with it.
    """
    batches, parts = json_list_batches(path, PREDICTIONS_BATCH), []
    try:
        for first, batch in batches:
            try:
                parts.append(load_predictions(batch, str(path), gt, known_image_ids, first=first))
            except InputError:
                for _ in batches:  # a file that is not JSON is named so first, as when it is read whole
                    pass
                raise
    except NotAStreamedList:
        return load_predictions(read_json(path), str(path), gt, known_image_ids)
    return _joined(parts)


def _joined(parts: list[Predictions]) -> Predictions:
    """The predictions of consecutive batches of one file, as one :class:`Predictions`."""
    if len(parts) == 1:
        return parts[0]
    by_image: dict[int, list[int]] = defaultdict(list)
    ignored: Counter[int] = Counter()
    kept = 0
    for part in parts:
        for image_id, indices in part.by_image.items():
            by_image[image_id].extend(kept + i for i in indices)
        ignored.update(part.ignored)
        kept += len(part)
    return Predictions(path=parts[0].path, by_image=dict(by_image),
                       category_id=np.concatenate([part.category_id for part in parts]),
                       score=np.concatenate([part.score for part in parts]),
                       rles=[rle for part in parts for rle in part.rles], ignored=dict(sorted(ignored.items())))
