"""Scoring the images of a vocabulary evaluation: reading its ground truth and predicted segments, and
the per-shard counts (LAC, PQ, AP) of :mod:`segbench.tasks.vocab.evaluation`.

Three ways to say what a description describes:

- **gt label maps** (``--gt``): a segment id is a class id, its region every pixel of that class.
- **panoptic ground truth** (``--panoptic``): a segment id is a gt segment; the prediction at a level
  is that segment's pixels carrying the class its description maps to.
- **predicted segments** (``--panoptic`` with ``--segments``): the model drew its own masks
  (MasQCLIP-style). ``<segments dir>/<image_id>.png`` holds its segment ids (formats as panoptic
  ground truth; 0 is no segment) and a segment id names one of them. The ground-truth class a
  description is judged against (the target of target-aware mapping) is the class of the gt segment
  the predicted one matches (IoU > 0.5, panopticapi's rule); a segment matching none is mapped
  target-blind. mIoU/mACC/pACC relabel the predicted segments, PQ and AP match them to gt segments.

A description may carry a ``score`` (the model's confidence, default 1): AP ranks detections by it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from segbench import progress
from segbench.core.errors import InputError
from segbench.core.integrity import data_source
from segbench.core.io import read_bytes
from segbench.schemas.vocab import LEVELS
from segbench.tasks.vocab import lac
from segbench.tasks.vocab import panoptic_quality as pqm
from segbench.tasks.vocab.instance_ap import APAccumulator
from segbench.tasks.vocab.lexical_mapping import Vocabulary

# Images scored inside evaluation shards advance the "Evaluating" progress as they finish.
SCORE_CHANNEL = "vocab.score"
NO_SEGMENT = 0  # in a predicted segment map, as COCO panoptic's void


def read_input(repo: str, rev: str | None, path: str) -> tuple[bytes, str]:
    """Bytes of ``path``: from disk without a revision, else through DVC at ``rev`` (repo-relative)."""
    if rev is None:
        p = Path(path) if Path(path).is_absolute() else Path(repo) / path
        return read_bytes(p), str(p)
    rel = source_path(repo, rev, path)
    with data_source(repo, rev) as source:
        return source.read_bytes(rel), f"{rel}@{rev}"


def source_path(repo: str, rev: str | None, path: str) -> str:
    """``path`` as a :class:`~segbench.core.versioning.DatasetSource` of ``repo`` at ``rev`` reads it."""
    if rev is None:
        return path
    rel = Path(path)
    if rel.is_absolute():
        try:
            rel = rel.resolve().relative_to(Path(repo).resolve())
        except ValueError as exc:
            raise InputError("with --rev, paths must be inside the repository", path=path) from exc
    return rel.as_posix()


@dataclass(frozen=True)
class Inputs:
    """Where a shard reads its images: ``gt`` label maps, or ``panoptic`` ground truth (both in ``repo``, at
    ``rev``) and, for a model that drew its own masks, its ``predicted`` segment maps (model output, read
    from disk like the descriptions)."""

    repo: str
    rev: str | None
    gt: str | None
    panoptic: str | None
    predicted: str | None = None

    def gt_segments(self, image_id: str) -> np.ndarray:
        data, where = read_input(self.repo, self.rev, f"{str(self.panoptic).rstrip('/')}/{image_id}.png")
        return pqm.decode_segment_ids(data, source=where)

    def predicted_segments(self, image_id: str, shape: tuple[int, ...]) -> np.ndarray:
        path = Path(str(self.predicted)) / f"{image_id}.png"
        segments = pqm.decode_segment_ids(read_bytes(path), source=str(path))
        if segments.shape != shape:
            raise InputError(f"the predicted segments are {segments.shape[1]}x{segments.shape[0]} pixels, the ground "
                             f"truth {shape[1]}x{shape[0]}", path=str(path), hint="predict at the image's size")
        return segments


def parse_scores(data: Any, *, source: str) -> dict[str, dict[int, float]]:
    """``{image_id: {segment_id: score}}`` for the descriptions that give a ``score`` (a parsed
    descriptions file, :func:`segbench.tasks.vocab.lac.parse_descriptions`, is assumed).

    Raises:
        InputError: a score that is not a finite number (names the entry and description).
    """
    out: dict[str, dict[int, float]] = {}
    for index, entry in enumerate(data):
        for j, desc in enumerate(entry["descriptions"]):
            if "score" not in desc:
                continue
            score = desc["score"]
            if isinstance(score, bool) or not isinstance(score, int | float) or not np.isfinite(score):
                raise InputError(f"score {score!r} is not a number", path=source,
                                 item=f"entry {index}, description {j}", hint="give the model's confidence, e.g. 0.87")
            out.setdefault(str(entry["image_id"]), {})[desc.get("segment_id", desc.get("region_id"))] = float(score)
    return out


def load_segments(repo: str, rev: str | None, panoptic_dir: str, image_ids: list[str]
                  ) -> dict[str, dict[int, pqm.Segment]]:
    """``{image_id: {segment id: Segment}}`` from ``<panoptic_dir>/<image_id>.json``."""
    import orjson

    out = {}
    for image_id in image_ids:
        data, where = read_input(repo, rev, f"{panoptic_dir.rstrip('/')}/{image_id}.json")
        try:
            out[image_id] = pqm.parse_segments(orjson.loads(data), source=where)
        except orjson.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc})", path=where) from exc
    return out


def targets(unit_key: str, inputs: Inputs, vocab: Vocabulary, described: dict[str, dict[int, str]],
            segments: dict[str, dict[int, pqm.Segment]] | None) -> dict[str, dict[int, str | None]]:
    """The ground-truth class each described segment is judged against (module docstring), by image.

    A unit cached under ``unit_key``; reads the segment maps only for predicted segments.

    Raises:
        InputError: a described predicted segment numbered 0 (no segment), a missing or unreadable
            map, or maps of different sizes.
    """
    id_to_class = dict(zip(vocab.ids, vocab.classes, strict=True))
    out: dict[str, dict[int, str | None]] = {}
    for image_id, texts in sorted(described.items()):
        if segments is None:
            out[image_id] = {seg: id_to_class.get(seg) for seg in texts}
            continue
        infos = segments[image_id]
        gt_of = {seg: seg for seg in texts}
        if inputs.predicted is not None:
            if NO_SEGMENT in texts:
                raise InputError(f"image {image_id!r} describes segment {NO_SEGMENT}, which means no segment in a "
                                 "predicted segment map", path=str(Path(inputs.predicted) / f"{image_id}.png"),
                                 hint="number predicted segments from 1, as COCO panoptic does")
            gt = inputs.gt_segments(image_id)
            gt_of = pqm.matched_segments(gt, infos, inputs.predicted_segments(image_id, gt.shape), texts)
        out[image_id] = {seg: id_to_class.get(infos[gt_of[seg]].category_id)
                         if seg in gt_of and gt_of[seg] in infos else None for seg in texts}
    return out


def evaluate_shard(unit_key: str, inputs: Inputs, vocab: Vocabulary, image_ids: list[str],
                   labels: dict[str, dict[int, list[int]]], baseline: dict[str, dict[int, int]] | None,
                   segments: dict[str, dict[int, pqm.Segment]] | None, targets: dict[str, dict[int, int]],
                   scores: dict[str, dict[int, float]], ap_classes: frozenset[int]
                   ) -> tuple[lac.LacAccumulator, list[pqm.PQAccumulator] | None, APAccumulator | None]:
    """LAC counts of some images; with panoptic ground truth also one PQ accumulator per level and the AP one.

    A unit; every mapping holds this shard's images only. ``targets``: {image: {segment: gt class
    index}} of the described segments that have one.
    """
    acc = lac.LacAccumulator(len(vocab.classes))
    panoptic = segments is not None
    pq = [pqm.PQAccumulator(len(vocab.classes)) for _ in LEVELS] if panoptic else None
    ap = APAccumulator(ap_classes, len(LEVELS)) if panoptic else None
    id_to_index = {i: n for n, i in enumerate(vocab.ids)}
    for image_id in progress.each(image_ids, SCORE_CHANNEL):
        chosen = None if baseline is None else baseline[image_id]
        if segments is None:
            data, where = read_input(inputs.repo, inputs.rev, f"{str(inputs.gt).rstrip('/')}/{image_id}.png")
            gt = lac.to_class_index(lac.decode_label_map(data, source=where), vocab.ids)
            acc.update(gt, labels[image_id], chosen, image_id=image_id)
            continue
        seg_map = inputs.gt_segments(image_id)
        infos = segments[image_id]
        gt_classes = {s: id_to_index[i.category_id] for s, i in infos.items() if i.category_id in id_to_index}
        gt = lac.relabel(seg_map, gt_classes)  # semantic gt: each segment's pixels carry its class
        if inputs.predicted is None:  # the prediction is each gt segment itself with its mapped class
            pred_map, regions = seg_map, np.where(gt >= 0, seg_map, -1)
            region_class = gt_classes
        else:
            pred_map = inputs.predicted_segments(image_id, seg_map.shape)
            regions, region_class = np.where(pred_map != NO_SEGMENT, pred_map, -1), targets[image_id]
        acc.update(gt, labels[image_id], chosen, image_id=image_id, regions=regions, region_class=region_class)
        crowd = {s for s, i in infos.items() if i.iscrowd}
        per_level = [pqm.level_predictions(labels[image_id], level) for level in range(len(LEVELS))]
        for level_acc, predicted in zip(pq or [], per_level, strict=False):
            level_acc.update(seg_map, gt_classes, pred_map, predicted, crowd=crowd)
        if ap is not None:
            ap.update(image_id, seg_map, gt_classes, pred_map, per_level, scores.get(image_id, {}), crowd=crowd)
    return acc, pq, ap
