"""The vocabulary evaluation, whole: the Lexical Alignment Curve of a model's region descriptions, on any
:class:`Steps`.

``evaluate vocab`` typed by hand calls :func:`evaluate_vocab` with
:class:`~segbench.core.steps.InProcess` (no Prefect engine); the flow ``evaluate-vocab``
(:mod:`segbench.flows.vocab.evaluate`) calls it with its task runs. Mapping rules live in
:mod:`segbench.tasks.vocab.lexical_mapping`, the baseline in :mod:`segbench.tasks.vocab.sbert`, metrics,
input formats and the report in :mod:`segbench.tasks.vocab.lac`, PQ and the panoptic ground-truth format
in :mod:`segbench.tasks.vocab.panoptic_quality`.

An evaluation is skipped when its report is up to date (same logic version, spaCy model, baseline,
vocabulary, ground truth and descriptions; :mod:`segbench.core.evaluation_keys`); the report is
written in a resumable stage, and the mapping, the baseline and each scored shard are units.

Usage::

    from segbench.tasks.vocab.evaluation import evaluate_vocab
    result = evaluate_vocab(repo=".", rev="v1", vocab="cityscapes", descriptions="out/desc.json",
                            gt="data/vocab/gt/cityscapes", out="reports/vocab/run1")
    result.summary.lac.miou.area, result.paths["report"]
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, TypedDict

import numpy as np

from segbench import progress
from segbench.core.build import Build, Built, Stage
from segbench.core.errors import InputError
from segbench.core.evaluation_keys import PREDICTIONS, ground_truth_hashes, local_hashes, report_paths, run_evaluation
from segbench.core.integrity import data_source
from segbench.core.io import read_bytes, read_json, write_json
from segbench.core.reports import fmt, portable_paths
from segbench.core.steps import InProcess, Steps
from segbench.core.versioning import DatasetSource
from segbench.schemas.results import EvaluationResult
from segbench.schemas.vocab import LEVELS
from segbench.schemas.vocab_metrics import Kinds, VocabMetrics
from segbench.tasks.vocab import lac, versions
from segbench.tasks.vocab import panoptic_quality as pqm
from segbench.tasks.vocab.lexical_mapping import (
    Vocabulary,
    class_names,
    load_nlp,
    map_descriptions,
    parse_vocabulary,
    with_coverage,
)

VOCAB_DIR = "data/vocab"
MAPPINGS_NAME = "mappings.json"
# Images scored inside evaluation shards advance the "Evaluating" progress as they finish.
SCORE_CHANNEL = "vocab.score"


def _read(repo: str, rev: str | None, path: str) -> tuple[bytes, str]:
    """Bytes of ``path``: from disk without a revision, else through DVC at ``rev`` (repo-relative)."""
    if rev is None:
        p = Path(path) if Path(path).is_absolute() else Path(repo) / path
        return read_bytes(p), str(p)
    rel = _source_path(repo, rev, path)
    with data_source(repo, rev) as source:
        return source.read_bytes(rel), f"{rel}@{rev}"


def _source_path(repo: str, rev: str | None, path: str) -> str:
    """``path`` as a :class:`DatasetSource` of ``repo`` at ``rev`` reads it (repo-relative with a revision)."""
    if rev is None:
        return path
    rel = Path(path)
    if rel.is_absolute():
        try:
            rel = rel.resolve().relative_to(Path(repo).resolve())
        except ValueError as exc:
            raise InputError("with --rev, paths must be inside the repository", path=path) from exc
    return rel.as_posix()


def vocab_path(repo: str, vocab: str) -> str:
    """A vocabulary argument as a path: an existing file as is, else ``data/vocab/<name>/<name>.json``
    (where ``segbench build vocab`` writes it)."""
    candidate = Path(vocab) if Path(vocab).is_absolute() else Path(repo) / vocab
    return vocab if candidate.is_file() or vocab.endswith(".json") else f"{VOCAB_DIR}/{vocab}/{vocab}.json"


def load_vocabulary(repo: str, rev: str | None, vocab: str) -> Vocabulary:
    data, where = _read(repo, rev, vocab_path(repo, vocab))
    import orjson

    try:
        return parse_vocabulary(orjson.loads(data), source=where)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc})", path=where) from exc


def hash_ground_truth(repo: str, rev: str | None, vocab: str, gt: str | None, panoptic: str | None,
                      image_ids: list[str]) -> dict[str, str]:
    """sha256 standing for the vocabulary and the ground truth of the described images.

    A vocabulary ``segbench build vocab`` wrote is stood for by its manifest
    (``evaluation_keys.ground_truth_hashes``); gt maps and panoptic files are hashed one by one.
    """
    vocab_file = _source_path(repo, rev, vocab_path(repo, vocab))
    folder = str(panoptic if panoptic is not None else gt).rstrip("/")
    suffixes = (".png", ".json") if panoptic is not None else (".png",)
    files = [_source_path(repo, rev, f"{folder}/{image_id}{suffix}") for image_id in image_ids for suffix in suffixes]
    with data_source(repo, rev) as source:
        hashes = ground_truth_hashes(source, [vocab_file], str(PurePosixPath(vocab_file).parent))
        return hashes | ground_truth_hashes(source, files)


def map_regions(unit_key: str, vocab: Vocabulary, described: dict[str, dict[int, str]], spacy_model: str, source: str,
                segments: dict[str, dict[int, pqm.Segment]] | None = None, target_blind: bool = False
                ) -> list[dict[str, Any]]:
    """One row per described region: image, segment, gt class and the lexical mapping.

    The gt class is the class whose id is the segment id, or with ``segments`` (panoptic ground
    truth) the class of the segment's ``category_id``; ``target_blind`` maps without consulting it.
    A unit cached under ``unit_key``.
    """
    id_to_class = dict(zip(vocab.ids, vocab.classes, strict=True))

    def gt_class(image_id: str, seg: int) -> str | None:
        if segments is None:
            return id_to_class.get(seg)
        info = segments[image_id].get(seg)
        return None if info is None else id_to_class.get(info.category_id)

    items = [{"image_id": image_id, "segment_id": seg, "description": text, "gt_class": gt_class(image_id, seg)}
             for image_id in sorted(described) for seg, text in sorted(described[image_id].items())]
    return map_descriptions(vocab, items, load_nlp(spacy_model), source=source, target_blind=target_blind)


def baseline_choices(unit_key: str, vocab: Vocabulary, rows: list[dict[str, Any]]) -> list[int]:
    from segbench.tasks.vocab.sbert import load_sbert, sbert_map

    return sbert_map(load_sbert(), [r["description"] for r in rows], class_names(vocab))


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
            raise InputError(f"not valid JSON ({exc})", path=where) from exc
    return out


def evaluate_shard(unit_key: str, repo: str, rev: str | None, gt_dir: str | None, vocab: Vocabulary, image_ids: list[str],
                   labels: dict[str, dict[int, list[int]]], baseline: dict[str, dict[int, int]] | None,
                   panoptic_dir: str | None = None, segments: dict[str, dict[int, pqm.Segment]] | None = None
                   ) -> tuple[lac.LacAccumulator, list[pqm.PQAccumulator] | None]:
    """LAC counts of some images, and with panoptic ground truth one PQ accumulator per level.

    A unit; ``labels``, ``baseline`` and ``segments`` hold this shard's images only.
    """
    acc = lac.LacAccumulator(len(vocab.classes))
    pq = [pqm.PQAccumulator(len(vocab.classes)) for _ in LEVELS] if panoptic_dir is not None else None
    id_to_index = {i: n for n, i in enumerate(vocab.ids)}
    for image_id in progress.each(image_ids, SCORE_CHANNEL):
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


def evaluate_vocab(repo: str | Path, rev: str | None, vocab: str, descriptions: str | Path, gt: str | None,
                   out: str | Path, baseline: bool = True, spacy_model: str = "en_core_web_sm",
                   shard_size: int = 64, panoptic: str | Path | None = None, force: bool = False,
                   target_blind: bool = False, coverage: float = 1.0, coverage_seed: int = 0,
                   steps: Steps | None = None) -> EvaluationResult[VocabMetrics]:
    """Map every region description per level, score the relabelled gt maps, write the LAC report.

    Args:
        repo: project root. rev: git revision of the data (``None`` = working tree); the vocabulary
            name and ``gt`` are read at that revision, ``descriptions`` (model output) from disk.
        vocab: a vocabulary file, or a name resolved as ``data/vocab/<name>/<name>.json``.
        descriptions: the open-ended descriptions JSON (see :mod:`segbench.tasks.vocab.lac`).
        gt: folder of ``<image_id>.png`` label maps whose pixel values are vocabulary ids; ``None``
            with ``panoptic``.
        out: report folder. baseline: also run the Sentence-BERT baseline; when its package is not
            installed the report says so and the flow goes on.
        panoptic: folder of panoptic ground truth, ``<image_id>.png`` segment ids and
            ``<image_id>.json`` segments (format in :mod:`segbench.tasks.vocab.panoptic_quality`), read at
            ``rev``. Replaces ``gt``: ``segment_id`` then names a segment, the semantic metrics use
            the segments' classes, and each level also gets PQ / SQ / RQ.
        shard_size: images per scoring task (the report does not depend on it).
        force: evaluate again even when the report is up to date.
        target_blind: map each description to its strongest relation without consulting the ground
            truth class (the paper's comparison; the default maps to the ground truth when it is hit).
        coverage: the share of the vocabulary's mined terms kept (the coverage ablation,
            :func:`~segbench.tasks.vocab.lexical_mapping.with_coverage`), drawn with ``coverage_seed``.
        steps: who runs the steps (default: this process, :class:`InProcess`).

    Returns:
        The result; ``paths`` names ``metrics``, ``report``, ``lac_plot`` and ``mappings``. An
        up-to-date summary is read back from metrics.json.

    Raises:
        InputError: a missing or malformed vocabulary, descriptions file, gt map or panoptic
            ground truth; neither or both of ``gt`` and ``panoptic`` given; a coverage outside (0, 1].
    """
    steps = steps or InProcess()
    if not 0 < coverage <= 1:
        raise InputError(f"coverage {coverage:g} is not a share of the vocabulary", item="coverage",
                         hint="give a number in (0, 1]: 0.2 keeps a fifth of the mined terms, 1 keeps them all")
    if (gt is None) == (panoptic is None):
        raise InputError("give exactly one ground truth: gt (label maps) or panoptic (segments)",
                         hint="pass --gt DIR or --panoptic DIR")
    from segbench.tasks.vocab.sbert import sbert_available

    descriptions = str(descriptions)
    request = _Request(repo=str(repo), rev=rev, vocab=vocab, descriptions=descriptions, gt=gt,
                       panoptic=None if panoptic is None else str(panoptic), baseline=baseline,
                       run_baseline=baseline and sbert_available(), spacy_model=spacy_model, shard_size=shard_size,
                       target_blind=target_blind, coverage=coverage, coverage_seed=coverage_seed,
                       described=lac.parse_descriptions(read_json(descriptions), source=descriptions))
    hashes = steps.call("hash-vocab-ground-truth", hash_ground_truth, request.repo, rev, vocab, gt, request.panoptic, request.image_ids)
    hashes |= local_hashes(PREDICTIONS, {"descriptions": descriptions})
    # The manifest names paths relative to the project (it is versioned with the report); the key
    # still follows the descriptions through their content hash.
    build = Build(out=Path(out), dataset="eval/vocab", logic_version=versions.EVALUATION,
                  params=portable_paths(request.params(), request.repo), input_hashes=hashes)
    result = run_evaluation(build, lambda stage, loaded: _score(steps, stage, request, *loaded),
                            VocabMetrics, prepare=lambda: _load(steps, request), paths=_paths, force=force,
                            logger=steps.logger)
    if not result.up_to_date:
        summary = result.summary
        steps.logger.info("LAC area (mIoU) %s over %d images -> %s", fmt(summary.lac.miou.area),
                          summary.num_images, result.paths["report"])
    return result


class _Evaluated(TypedDict):
    source: str
    rev: str | None
    vocab: str
    descriptions: str
    gt: str | None
    panoptic: str | None
    baseline: bool
    baseline_ran: bool
    spacy_model: str
    target_blind: bool
    coverage: float
    coverage_seed: int


@dataclass(frozen=True)
class _Request:
    """What one vocabulary evaluation was asked to do (the flow's arguments, normalised)."""

    repo: str
    rev: str | None
    vocab: str
    descriptions: str
    gt: str | None
    panoptic: str | None
    baseline: bool
    run_baseline: bool  # asked for and its package installed
    spacy_model: str
    shard_size: int
    target_blind: bool
    coverage: float
    coverage_seed: int
    described: dict[str, dict[int, str]]

    @property
    def image_ids(self) -> list[str]:
        return sorted(self.described)

    def params(self) -> _Evaluated:
        """What the build key covers besides the inputs (and the manifest records)."""
        return {"source": DatasetSource(self.repo, self.rev).describe(), "rev": self.rev, "vocab": self.vocab,
                "descriptions": self.descriptions, "gt": self.gt, "panoptic": self.panoptic,
                "baseline": self.baseline, "baseline_ran": self.run_baseline, "spacy_model": self.spacy_model,
                "target_blind": self.target_blind, "coverage": self.coverage, "coverage_seed": self.coverage_seed}


def _load(steps: Steps, request: _Request) -> tuple[Vocabulary, dict[str, dict[int, pqm.Segment]] | None]:
    """The vocabulary, and the panoptic segments of the described images (``None`` with label maps)."""
    vocabulary = steps.call("load-vocabulary", load_vocabulary, request.repo, request.rev, request.vocab)
    vocabulary = with_coverage(vocabulary, request.coverage, request.coverage_seed)
    if request.panoptic is None:
        return vocabulary, None
    return vocabulary, steps.call("load-panoptic-segments", load_segments, request.repo, request.rev,
                                  request.panoptic, request.image_ids)


def _score(steps: Steps, stage: Stage, request: _Request, vocabulary: Vocabulary,
           segments: dict[str, dict[int, pqm.Segment]] | None) -> Built:
    """Map the descriptions, score the images in shards (units) and write the report into ``stage``."""
    rows, labels, per_image, baseline_note = _labels(steps, stage, request, vocabulary, segments)
    calls = []
    for n, start in enumerate(range(0, len(request.image_ids), request.shard_size)):
        ids = request.image_ids[start:start + request.shard_size]
        calls.append((stage.unit_key(f"score/{request.shard_size}/{n}"),
                      (request.repo, request.rev, request.gt, vocabulary, ids, {i: labels[i] for i in ids},
                       None if per_image is None else {i: per_image[i] for i in ids}, request.panoptic,
                       None if segments is None else {i: segments[i] for i in ids})))
    scored = steps.shards("evaluate-vocab-shard", evaluate_shard, calls, description="Evaluating descriptions",
                          total=len(request.image_ids), count=lambda result: len(result[0].image_ids),
                          channel=SCORE_CHANNEL)
    summary, total = _summarize(vocabulary, scored, request.panoptic is not None)
    if total.undescribed_regions or total.absent_segments:
        steps.logger.warning("%d gt regions had no description (scored unmatched); %d described segments are "
                                 "not in their gt map (skipped)", total.undescribed_regions, total.absent_segments)
    params = request.params()
    # Relative to the project: the report is versioned and must not name this machine's folders.
    evaluated = portable_paths({key: params[key] for key in ("source", "rev", "vocab", "descriptions", "gt",
                                                             "panoptic")}, request.repo)
    lac.write_report(stage.path, summary, {**evaluated, "baseline_note": baseline_note,
                                           **_mapping_lines(request, vocabulary)})
    write_json(stage.path / MAPPINGS_NAME, rows, indent=1)
    return Built(counts={"images": summary["num_images"], "regions": summary["num_regions"]},
                 units=steps.unit_counts(), extras={"summary": summary})


def _labels(steps: Steps, stage: Stage, request: _Request, vocabulary: Vocabulary,
            segments: dict[str, dict[int, pqm.Segment]] | None
            ) -> tuple[list[dict[str, Any]], dict[str, dict[int, list[int]]], dict[str, dict[int, int]] | None,
                       str | None]:
    """Map every description (a unit) and run the baseline (another unit) when it can run.

    Returns:
        The mapping rows (with the baseline's class), the class index per level of each region,
        the baseline's class index per region (``None`` without a baseline) and a note saying why
        the baseline did not run (``None`` when it ran or was not asked for).
    """
    from segbench.tasks.vocab.sbert import INSTALL_HINT

    rows = steps.unit("map-descriptions", map_regions, stage.unit_key("map"), vocabulary, request.described, request.spacy_model,
                       request.descriptions, segments, request.target_blind)
    region_of = _region_namer(vocabulary, request.panoptic is not None)
    index = {c: i for i, c in enumerate(vocabulary.classes)}
    labels: dict[str, dict[int, list[int]]] = {image_id: {} for image_id in request.image_ids}
    for row in rows:
        labels[row["image_id"]][region_of(row["segment_id"])] = [
            index.get(row["mapping"][name], lac.UNMATCHED) for name in LEVELS]
    if not request.run_baseline:
        note = f"Sentence-BERT baseline skipped: package not installed ({INSTALL_HINT})" if request.baseline else None
        if note:
            steps.logger.warning(note)
        return rows, labels, None, note
    choices = steps.unit("sbert-baseline", baseline_choices, stage.unit_key("baseline"), vocabulary, rows)
    per_image: dict[str, dict[int, int]] = {image_id: {} for image_id in request.image_ids}
    for row, choice in zip(rows, choices, strict=True):
        per_image[row["image_id"]][region_of(row["segment_id"])] = choice
        row["baseline"] = vocabulary.classes[choice]
    return rows, labels, per_image, None


def _mapping_lines(request: _Request, vocabulary: Vocabulary) -> dict[str, Any]:
    """How descriptions were mapped and how much of the vocabulary was there, for the report (plain
    values, so ``leaderboard --across mapping`` or ``--across coverage`` lays reports out by them)."""
    lines: dict[str, Any] = {"mapping": "target-blind" if request.target_blind else "target-aware",
                             "coverage": request.coverage}
    if request.coverage < 1:
        lines["mined terms kept"] = (f"{sum(1 for c in vocabulary.terms.values() if 0 not in c.values())} "
                                     f"(drawn with seed {request.coverage_seed}; every exact term kept)")
    return lines


def _region_namer(vocabulary: Vocabulary, panoptic: bool) -> Any:
    """segment id -> the gt region it names: a panoptic segment is its own region; a label-map segment
    id is a class id, whose region is the class index (an id of no class gets one never in the gt)."""
    if panoptic:
        return lambda segment_id: segment_id
    id_to_index = {i: n for n, i in enumerate(vocabulary.ids)}
    return lambda segment_id: id_to_index.get(segment_id, -2 - segment_id)


def _kinds(vocabulary: Vocabulary) -> Kinds | None:
    """Things and stuff: as every class's entry says (``isthing``), else as the shipped category set
    says whose classes the vocabulary's are; ``None`` when neither says."""
    from segbench.tasks.vocab.vocabulary import thing_classes

    if vocabulary.things and len(vocabulary.things) == len(vocabulary.classes):
        source, things = "the vocabulary's isthing fields", dict(vocabulary.things)
    elif (found := thing_classes(vocabulary.classes, vocabulary.ids)) is not None:
        source, things = f"the {found[0]} category set", found[1]
    else:
        return None
    return Kinds(source=source, things=[c for c in vocabulary.classes if things[c]],
                 stuff=[c for c in vocabulary.classes if not things[c]])


def _summarize(vocabulary: Vocabulary, scored: list[Any], panoptic: bool) -> tuple[dict[str, Any], lac.LacAccumulator]:
    """Add the shards' accumulators (in shard order) and summarize, with PQ for panoptic ground truth."""
    total = lac.LacAccumulator(len(vocabulary.classes))
    pq_total = [pqm.PQAccumulator(len(vocabulary.classes)) for _ in LEVELS] if panoptic else None
    for shard, shard_pq in scored:
        total += shard
        for level_total, level_shard in zip(pq_total or [], shard_pq or [], strict=True):
            level_total += level_shard
    metrics = total.summarize(vocabulary.classes, _kinds(vocabulary))
    if pq_total is not None:
        metrics = pqm.attach_pq(metrics, [a.summarize(vocabulary.classes, level)
                                          for a, level in zip(pq_total, LEVELS, strict=True)])
    return metrics.model_dump(mode="json"), total  # the report writers read the JSON


def _paths(out: str | Path) -> dict[str, str]:
    paths = report_paths(out)
    paths["lac_plot"] = paths.pop(Path(lac.PLOT_NAME).stem)  # the name write_report returns it under
    return paths
