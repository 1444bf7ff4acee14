"""Aggregation that knows workers differ: Dawid–Skene and GLAD for choices, crowd-kit's segmentation
aggregation for masks, and the gold filter that drops workers who fail known answers.

Pure functions; :func:`segbench.core.agreement.aggregate` calls :func:`model_labels` for the
``dawid-skene`` and ``glad`` methods. crowd-kit (and pandas under it) take seconds to import, so they
are imported inside the functions that fit a model, never when this module is imported: the command
line imports nothing heavy until a model is actually asked for.

Determinism: crowd-kit's EM starts from the majority-vote posteriors, with no random initialisation;
the votes are handed to it in one fixed order (item, worker) with fixed iteration counts and
tolerances, so the same votes always give the same labels and the same bytes.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from segbench.core.aggregation_methods import (  # noqa: F401 - the names' home; re-exported here
    DAWID_SKENE,
    GLAD,
    MAJORITY,
    MASK_METHODS,
    METHODS,
    PLAIN_METHODS,
    SCREENED,
)

EM_ITERATIONS = 100
EM_TOLERANCE = 1e-5
# Two posteriors closer than this are a tie: no label, as with a tied majority vote.
_TIE = 1e-9


def model_labels(votes: Mapping[str, Mapping[str, str]], method: str,
                 known: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """The label a worker-aware model gives each item, from one vote per worker and item.

    Args:
        votes: item id → worker id → the worker's label.
        method: ``"dawid-skene"`` (per-worker confusion matrices, crowd-kit's ``DawidSkene``) or
            ``"glad"`` (worker ability × item difficulty, crowd-kit's ``GLAD``).
        known: item id → known label (gold). Dawid–Skene only: crowd-kit's ``true_labels`` fixes
            those items' posteriors to their known label at every EM step, so the workers'
            confusion matrices start from (and stay anchored on) their gold answers.

    Returns:
        item id → the label with the highest posterior, or None when two labels share it (the
        tie rule of majority vote). Items without votes are absent.

    Raises:
        ValueError: an unknown method.
    """
    return {item: top_label(posterior) for item, posterior in model_posteriors(votes, method, known).items()}


def model_posteriors(votes: Mapping[str, Mapping[str, str]], method: str,
                     known: Mapping[str, str] | None = None) -> dict[str, dict[str, float]]:
    """Item id → label → the model's posterior probability (see :func:`model_labels`)."""
    if method not in (DAWID_SKENE, GLAD):
        raise ValueError(f"unknown model {method!r}; choose one of {DAWID_SKENE}, {GLAD}")
    if known and method != DAWID_SKENE:
        raise ValueError(f"known labels anchor {DAWID_SKENE} only, not {method}")
    rows = [(item, worker, label) for item in sorted(votes) for worker, label in sorted(votes[item].items())]
    if not rows:
        return {}
    labels = sorted({label for _, _, label in rows})
    if len(labels) == 1:  # nothing to tell apart; the models' formulas divide by (labels − 1)
        return {item: {labels[0]: 1.0} for item in sorted(votes) if votes[item]}
    # A known label nobody gave is still a label the model must have a column for.
    anchors = {item: label for item, label in sorted((known or {}).items()) if item in votes and label in labels}
    posteriors = _fit_posteriors(rows, method, anchors)
    return {item: posteriors[item] for item in sorted(posteriors)}


def _fit_posteriors(rows: list[tuple[str, str, str]], method: str,
                    anchors: Mapping[str, str]) -> dict[str, dict[str, float]]:
    import pandas as pd
    from crowdkit.aggregation import GLAD as GladModel
    from crowdkit.aggregation import DawidSkene

    data = pd.DataFrame(rows, columns=["task", "worker", "label"])
    with warnings.catch_warnings():
        # crowd-kit's own noise: GLAD's log(0) for certain workers (handled inside), pandas deprecations.
        warnings.simplefilter("ignore")
        if method == DAWID_SKENE:
            true_labels = pd.Series(anchors, dtype=object) if anchors else None
            probas = DawidSkene(n_iter=EM_ITERATIONS, tol=EM_TOLERANCE).fit_predict_proba(data, true_labels)
        else:
            probas = GladModel(n_iter=EM_ITERATIONS, tol=EM_TOLERANCE, silent=True).fit_predict_proba(data)
    return {str(task): {str(label): float(p) for label, p in row.items()} for task, row in probas.iterrows()}


def top_label(posterior: Mapping[str, float]) -> str | None:
    """The label with the highest posterior, or None when two labels share it."""
    ranked = sorted(posterior.items(), key=lambda kv: (-kv[1], kv[0]))
    if len(ranked) > 1 and ranked[0][1] - ranked[1][1] < _TIE:
        return None
    return ranked[0][0]


def aggregate_masks(masks: Mapping[str, np.ndarray], method: str = "em") -> np.ndarray:
    """One mask from several workers' masks of the same object, with crowd-kit's segmentation models.

    Args:
        masks: worker id → that worker's ``(H, W)`` mask (any dtype; nonzero is inside), all one size
            (the item's image size: rasterise polygons with ``segmentation_to_rle`` first).
        method: ``"em"`` (``SegmentationEM``: per-worker pixel reliability), ``"majority"``
            (``SegmentationMajorityVote``: a pixel is in when more than half of the workers have it)
            or ``"rasa"`` (``SegmentationRASA``: masks weighted by their agreement with the rest).

    Returns:
        ``(H, W)`` uint8, 1 inside.

    Raises:
        ValueError: no masks, masks of different sizes, or an unknown method.
    """
    if method not in MASK_METHODS:
        raise ValueError(f"unknown mask aggregation {method!r}; choose one of {', '.join(MASK_METHODS)}")
    if not masks:
        raise ValueError("no masks to aggregate")
    shapes = {np.shape(m) for m in masks.values()}
    if len(shapes) != 1 or len(shapes.copy().pop()) != 2:
        raise ValueError(f"masks must be 2-D and of one size; got {sorted(shapes)}")
    import pandas as pd
    from crowdkit.aggregation import SegmentationEM, SegmentationMajorityVote, SegmentationRASA

    models: dict[str, Callable[[], Any]] = {
        "em": lambda: SegmentationEM(n_iter=EM_ITERATIONS, tol=EM_TOLERANCE),
        "majority": SegmentationMajorityVote,
        "rasa": lambda: SegmentationRASA(n_iter=EM_ITERATIONS, tol=EM_TOLERANCE)}
    model = models[method]()
    data = pd.DataFrame([("item", worker, np.asarray(masks[worker]) != 0) for worker in sorted(masks)],
                        columns=["task", "worker", "segmentation"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = model.fit_predict(data)
    return np.asarray(out.iloc[0], dtype=np.uint8)


def aggregate_polygons(polygons: Mapping[str, Sequence[Any]], height: int, width: int,
                       method: str = "em") -> np.ndarray:
    """One mask from several workers' polygons of one object (an item's ``polygons[control]``).

    Each worker's polygons are rasterised at the item's size and merged by the even-odd rule, as the
    SPIN kind merges them (a polygon drawn inside another is a hole, separate ones are a union); the
    workers' masks then go to :func:`aggregate_masks`. Workers who drew nothing are left out.

    Args:
        polygons: worker id → that worker's :class:`~segbench.schemas.rounds.Polygon` list.
        height, width: the item's image size.
        method: see :func:`aggregate_masks`.

    Raises:
        ValueError: nobody drew a polygon, a polygon is malformed or outside the image, or an unknown method.
    """
    from segbench.core.masks import rle_to_bitmap, segmentation_to_rle  # pycocotools: only when rasterising

    masks = {}
    for worker, shapes in polygons.items():
        if not shapes:
            continue
        mask = np.zeros((height, width), dtype=np.uint8)
        for shape in shapes:
            flat = [float(v) for point in shape.points for v in point]
            mask ^= rle_to_bitmap(segmentation_to_rle([flat], height, width))
        masks[worker] = mask
    return aggregate_masks(masks, method)


def mask_iou(a: np.ndarray, b: np.ndarray) -> float:
    """IoU of two masks of one size; two empty masks agree perfectly (1.0)."""
    a, b = np.asarray(a) != 0, np.asarray(b) != 0
    union = int(np.logical_or(a, b).sum())
    return 1.0 if union == 0 else int(np.logical_and(a, b).sum()) / union


# --- gold -------------------------------------------------------------------------------------------------

def gold_accuracy(votes: Mapping[str, Mapping[str, str]], gold: Mapping[str, str]) -> dict[str, float | None]:
    """Each worker's share of correct answers on the gold items they answered.

    Args:
        votes: item id → worker id → label (one vote per worker and item).
        gold: item id → the known label of that gold item.

    Returns:
        worker id → accuracy on gold, or None for a worker who answered no gold item; every worker
        in ``votes`` appears, sorted.
    """
    right: dict[str, int] = {}
    seen: dict[str, int] = {}
    for item, by_worker in votes.items():
        for worker, label in by_worker.items():
            right.setdefault(worker, 0)
            seen.setdefault(worker, 0)
            if item in gold:
                seen[worker] += 1
                right[worker] += label == gold[item]
    return {w: (right[w] / seen[w] if seen[w] else None) for w in sorted(seen)}


def workers_below(gold_accuracy: Mapping[str, float | None], threshold: float) -> list[str]:
    """The workers whose accuracy on gold is below ``threshold``, sorted: the ones to leave out.

    A worker with no gold answer (None) is kept: there is no evidence against them. Pass the result
    as ``exclude_workers`` to :func:`segbench.core.agreement.aggregate`.
    """
    return sorted(w for w, acc in gold_accuracy.items() if acc is not None and acc < threshold)


def check_method(method: str, choices: Sequence[str] = METHODS) -> str:
    """``method`` if it is one of ``choices``; ValueError naming them otherwise."""
    if method not in choices:
        raise ValueError(f"unknown aggregation {method!r}; choose one of {', '.join(choices)}")
    return method
