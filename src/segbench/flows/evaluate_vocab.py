"""Prefect flow ``evaluate-vocab``: the Lexical Alignment Curve of a model's region descriptions.

Orchestration only: mapping rules live in :mod:`segbench.tasks.lexical_mapping`, the baseline in
:mod:`segbench.tasks.sbert`, metrics, input formats and the report in :mod:`segbench.tasks.lac`, PQ and
the panoptic ground-truth format in :mod:`segbench.tasks.panoptic_quality`.

Usage::

    from segbench.flows.evaluate_vocab import evaluate_vocab
    result = evaluate_vocab(repo=".", rev="v1", vocab="cityscapes", descriptions="out/desc.json",
                            gt="data/vocab/gt/cityscapes", out="data/eval/vocab/run1")
    result["summary"]["lac"]["miou"]["area"], result["paths"]["report"]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from segbench.errors import InputError
from segbench.schemas.vocab import LEVELS
from segbench.tasks import lac
from segbench.tasks import panoptic_quality as pqm
from segbench.tasks.io import read_json, write_json
from segbench.tasks.lexical_mapping import (
    Vocabulary,
    class_names,
    load_nlp,
    map_descriptions,
    parse_vocabulary,
)
from segbench.tasks.versioning import DatasetSource

VOCAB_DIR = "data/vocab"
MAPPINGS_NAME = "mappings.json"


def _read(repo: str, rev: str | None, path: str) -> tuple[bytes, str]:
    """Bytes of ``path``: from disk without a revision, else through DVC at ``rev`` (repo-relative)."""
    if rev is None:
        p = Path(path) if Path(path).is_absolute() else Path(repo) / path
        if not p.is_file():
            raise InputError("file not found", path=p, hint="check the path")
        return p.read_bytes(), str(p)
    rel = Path(path)
    if rel.is_absolute():
        try:
            rel = rel.resolve().relative_to(Path(repo).resolve())
        except ValueError:
            raise InputError("with --rev, paths must be inside the repository", path=path) from None
    with DatasetSource(repo, rev) as source:
        return source.read_bytes(rel.as_posix()), f"{rel.as_posix()}@{rev}"


def vocab_path(repo: str, vocab: str) -> str:
    """A vocabulary argument as a path: an existing file as is, else ``data/vocab/<name>/<name>.json``
    (where ``segbench build vocab`` writes it)."""
    candidate = Path(vocab) if Path(vocab).is_absolute() else Path(repo) / vocab
    return vocab if candidate.is_file() or vocab.endswith(".json") else f"{VOCAB_DIR}/{vocab}/{vocab}.json"


@task(name="load-vocabulary", cache_policy=NO_CACHE)
def load_vocabulary(repo: str, rev: str | None, vocab: str) -> Vocabulary:
    data, where = _read(repo, rev, vocab_path(repo, vocab))
    import orjson

    try:
        return parse_vocabulary(orjson.loads(data), source=where)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc})", path=where) from None


@task(name="map-descriptions", cache_policy=NO_CACHE)
def map_regions(vocab: Vocabulary, described: dict[str, dict[int, str]], spacy_model: str, source: str,
                segments: dict[str, dict[int, pqm.Segment]] | None = None) -> list[dict[str, Any]]:
    """One row per described region: image, segment, gt class and the lexical mapping.

    The gt class is the class whose id is the segment id, or with ``segments`` (panoptic ground
    truth) the class of the segment's ``category_id``.
    """
    id_to_class = dict(zip(vocab.ids, vocab.classes, strict=True))

    def gt_class(image_id: str, seg: int) -> str | None:
        if segments is None:
            return id_to_class.get(seg)
        info = segments[image_id].get(seg)
        return None if info is None else id_to_class.get(info.category_id)

    items = [{"image_id": image_id, "segment_id": seg, "description": text, "gt_class": gt_class(image_id, seg)}
             for image_id in sorted(described) for seg, text in sorted(described[image_id].items())]
    return map_descriptions(vocab, items, load_nlp(spacy_model), source=source)


@task(name="sbert-baseline", cache_policy=NO_CACHE)
def baseline_choices(vocab: Vocabulary, rows: list[dict[str, Any]]) -> list[int]:
    from segbench.tasks.sbert import load_sbert, sbert_map

    return sbert_map(load_sbert(), [r["description"] for r in rows], class_names(vocab))


@task(name="load-panoptic-segments", cache_policy=NO_CACHE)
def load_segments(repo: str, rev: str | None, panoptic_dir: str, image_ids: list[str]
                  ) -> dict[str, dict[int, pqm.Segment]]:
    """``{image_id: {segment id: Segment}}`` from ``<panoptic_dir>/<image_id>.json``."""
    import orjson

    out = {}
    for image_id in image_ids:
        data, where = _read(repo, rev, f"{panoptic_dir.rstrip('/')}/{image_id}.json")
        try:
            out[image_id] = pqm.parse_segments(orjson.loads(data), source=where)
        except orjson.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc})", path=where) from None
    return out


@task(name="evaluate-vocab-shard", cache_policy=NO_CACHE)
def evaluate_shard(repo: str, rev: str | None, gt_dir: str | None, vocab: Vocabulary, image_ids: list[str],
                   labels: dict[str, dict[int, list[int]]], baseline: dict[str, dict[int, int]] | None,
                   panoptic_dir: str | None = None, segments: dict[str, dict[int, pqm.Segment]] | None = None
                   ) -> tuple[lac.LacAccumulator, list[pqm.PQAccumulator] | None]:
    """LAC counts of some images, and with panoptic ground truth one PQ accumulator per level."""
    acc = lac.LacAccumulator(len(vocab.classes))
    pq = [pqm.PQAccumulator(len(vocab.classes)) for _ in LEVELS] if panoptic_dir is not None else None
    id_to_index = {i: n for n, i in enumerate(vocab.ids)}
    for image_id in image_ids:
        chosen = None if baseline is None else baseline[image_id]
        if pq is None or segments is None or panoptic_dir is None:
            data, where = _read(repo, rev, f"{str(gt_dir).rstrip('/')}/{image_id}.png")
            gt = lac.to_class_index(lac.decode_label_map(data, source=where), vocab.ids)
            acc.update(gt, labels[image_id], chosen, image_id=image_id)
            continue
        data, where = _read(repo, rev, f"{panoptic_dir.rstrip('/')}/{image_id}.png")
        seg_map = pqm.decode_segment_ids(data, source=where)
        infos = segments[image_id]
        gt_classes = {s: id_to_index[i.category_id] for s, i in infos.items() if i.category_id in id_to_index}
        gt = lac.relabel(seg_map, gt_classes)  # semantic gt: each segment's pixels carry its class
        regions = np.where(gt >= 0, seg_map, -1)
        acc.update(gt, labels[image_id], chosen, image_id=image_id, regions=regions, region_class=gt_classes)
        crowd = {s for s, i in infos.items() if i.iscrowd}
        for level, level_acc in enumerate(pq):
            # the prediction is the gt segment itself with its mapped class (module docstring)
            level_acc.update(seg_map, gt_classes, seg_map, pqm.level_predictions(labels[image_id], level), crowd=crowd)
    return acc, pq


@flow(name="evaluate-vocab")
def evaluate_vocab(repo: str | Path, rev: str | None, vocab: str, descriptions: str | Path, gt: str | None,
                   out: str | Path, baseline: bool = True, spacy_model: str = "en_core_web_sm",
                   shard_size: int = 64, panoptic: str | Path | None = None) -> dict[str, Any]:
    """Map every region description per level, score the relabelled gt maps, write the LAC report.

    Args:
        repo: project root. rev: git revision of the data (``None`` = working tree); the vocabulary
            name and ``gt`` are read at that revision, ``descriptions`` (model output) from disk.
        vocab: a vocabulary file, or a name resolved as ``data/vocab/<name>/<name>.json``.
        descriptions: the open-ended descriptions JSON (see :mod:`segbench.tasks.lac`).
        gt: folder of ``<image_id>.png`` label maps whose pixel values are vocabulary ids; ``None``
            with ``panoptic``.
        out: report folder. baseline: also run the Sentence-BERT baseline; when its package is not
            installed the report says so and the flow goes on.
        panoptic: folder of panoptic ground truth, ``<image_id>.png`` segment ids and
            ``<image_id>.json`` segments (format in :mod:`segbench.tasks.panoptic_quality`), read at
            ``rev``. Replaces ``gt``: ``segment_id`` then names a segment, the semantic metrics use
            the segments' classes, and each level also gets PQ / SQ / RQ.

    Returns:
        ``{"summary": ..., "paths": {"metrics", "report", "lac_plot", "mappings": str}}``.

    Raises:
        InputError: a missing or malformed vocabulary, descriptions file, gt map or panoptic
            ground truth; neither or both of ``gt`` and ``panoptic`` given.
    """
    logger = get_run_logger()
    if (gt is None) == (panoptic is None):
        raise InputError("give exactly one ground truth: gt (label maps) or panoptic (segments)",
                         hint="pass --gt DIR or --panoptic DIR")
    repo, out, descriptions = str(repo), str(out), str(descriptions)
    panoptic = None if panoptic is None else str(panoptic)
    vocabulary = load_vocabulary(repo, rev, vocab)
    described = lac.parse_descriptions(read_json(descriptions), source=descriptions)
    segments = None if panoptic is None else load_segments(repo, rev, panoptic, sorted(described))
    rows = map_regions(vocabulary, described, spacy_model, descriptions, segments)
    index = {c: i for i, c in enumerate(vocabulary.classes)}
    labels: dict[str, dict[int, list[int]]] = {image_id: {} for image_id in described}
    id_to_index = {i: n for n, i in enumerate(vocabulary.ids)}

    def region_of(segment_id: int) -> int:
        if panoptic is not None:
            return segment_id  # a panoptic segment is its own region
        return id_to_index.get(segment_id, -2 - segment_id)  # not a class id: never in gt

    for row in rows:
        labels[row["image_id"]][region_of(row["segment_id"])] = [
            index.get(row["mapping"][name], lac.UNMATCHED) for name in LEVELS]
    baseline_note, per_image = None, None
    if baseline:
        from segbench.tasks.sbert import INSTALL_HINT, sbert_available

        if sbert_available():
            choices = baseline_choices(vocabulary, rows)
            per_image = {image_id: {} for image_id in described}
            for row, choice in zip(rows, choices, strict=True):
                per_image[row["image_id"]][region_of(row["segment_id"])] = choice
                row["baseline"] = vocabulary.classes[choice]
        else:
            baseline_note = f"Sentence-BERT baseline skipped: package not installed ({INSTALL_HINT})"
            logger.warning(baseline_note)
    image_ids = sorted(described)
    futures = [evaluate_shard.submit(repo, rev, gt, vocabulary, image_ids[i:i + shard_size], labels, per_image,
                                     panoptic, segments)
               for i in range(0, len(image_ids), shard_size)]
    total = lac.LacAccumulator(len(vocabulary.classes))
    pq_total = [pqm.PQAccumulator(len(vocabulary.classes)) for _ in LEVELS] if panoptic is not None else None
    for future in futures:
        shard, shard_pq = future.result()
        total += shard
        for level_total, level_shard in zip(pq_total or [], shard_pq or [], strict=True):
            level_total += level_shard
    summary = total.summarize(vocabulary.classes)
    if pq_total is not None:
        summary = pqm.attach_to_summary(summary, [a.summarize(vocabulary.classes) for a in pq_total])
    if total.undescribed_regions or total.absent_segments:
        logger.warning("%d gt regions had no description (scored unmatched); %d described segments are not "
                       "in their gt map (skipped)", total.undescribed_regions, total.absent_segments)
    evaluated = {"source": DatasetSource(repo, rev).describe(), "rev": rev, "vocab": vocab,
                 "descriptions": descriptions, "gt": gt, "panoptic": panoptic, "baseline_note": baseline_note}
    paths = {k: str(v) for k, v in lac.write_report(out, summary, evaluated).items()}
    paths["mappings"] = str(write_json(Path(out) / MAPPINGS_NAME, rows, indent=1))
    logger.info("LAC area (mIoU) %s over %d images -> %s", summary["lac"]["miou"]["area"],
                summary["num_images"], paths["report"])
    return {"summary": summary, "paths": paths}
