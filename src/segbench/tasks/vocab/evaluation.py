"""The vocabulary evaluation, whole: the Lexical Alignment Curve of a model's region descriptions, on any
:class:`Steps`.

``evaluate vocab`` typed by hand calls :func:`evaluate_vocab` with
:class:`~segbench.core.steps.InProcess` (no Prefect engine); the flow ``evaluate-vocab``
(:mod:`segbench.flows.vocab.evaluate`) calls it with its task runs. Mapping rules live in
:mod:`segbench.tasks.vocab.lexical_mapping`, the baseline in :mod:`segbench.tasks.vocab.sbert`, metrics,
input formats in :mod:`segbench.tasks.vocab.lac`, the report in :mod:`segbench.tasks.vocab.lac_report`, PQ and the panoptic ground-truth format
in :mod:`segbench.tasks.vocab.panoptic_quality`, mask AP in :mod:`segbench.tasks.vocab.instance_ap`, reading
images and predicted segments in :mod:`segbench.tasks.vocab.scoring`.

An evaluation is skipped when its report is up to date (same logic version, spaCy model, baseline,
vocabulary, ground truth, descriptions and predicted segments; :mod:`segbench.core.evaluation_keys`); the report is
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

from segbench.core.build import Build, Built, Stage
from segbench.core.errors import InputError
from segbench.core.evaluation_keys import PREDICTIONS, ground_truth_hashes, local_hashes, report_paths, run_evaluation
from segbench.core.integrity import data_source
from segbench.core.io import read_json, write_json
from segbench.core.reports import fmt, portable_paths
from segbench.core.steps import InProcess, Steps
from segbench.core.versioning import DatasetSource
from segbench.schemas.results import EvaluationResult
from segbench.schemas.vocab import LEVELS
from segbench.schemas.vocab_metrics import Kinds, VocabMetrics
from segbench.tasks.vocab import lac, lac_report, scoring, versions
from segbench.tasks.vocab import panoptic_quality as pqm
from segbench.tasks.vocab.instance_ap import APAccumulator, attach_ap
from segbench.tasks.vocab.lexical_mapping import (
    Vocabulary,
    class_names,
    load_nlp,
    map_descriptions,
    parse_vocabulary,
    with_coverage,
)
from segbench.tasks.vocab.scoring import read_input, source_path

VOCAB_DIR = "data/vocab"
MAPPINGS_NAME = "mappings.json"


def vocab_path(repo: str, vocab: str) -> str:
    """A vocabulary argument as a path: an existing file as is, else ``data/vocab/<name>/<name>.json``
    (where ``segbench build vocab`` writes it)."""
    candidate = Path(vocab) if Path(vocab).is_absolute() else Path(repo) / vocab
    return vocab if candidate.is_file() or vocab.endswith(".json") else f"{VOCAB_DIR}/{vocab}/{vocab}.json"


def load_vocabulary(repo: str, rev: str | None, vocab: str) -> Vocabulary:
    data, where = read_input(repo, rev, vocab_path(repo, vocab))
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
    vocab_file = source_path(repo, rev, vocab_path(repo, vocab))
    folder = str(panoptic if panoptic is not None else gt).rstrip("/")
    suffixes = (".png", ".json") if panoptic is not None else (".png",)
    files = [source_path(repo, rev, f"{folder}/{image_id}{suffix}") for image_id in image_ids for suffix in suffixes]
    with data_source(repo, rev) as source:
        hashes = ground_truth_hashes(source, [vocab_file], str(PurePosixPath(vocab_file).parent))
        return hashes | ground_truth_hashes(source, files)


def map_regions(unit_key: str, vocab: Vocabulary, described: dict[str, dict[int, str]], spacy_model: str, source: str,
                targets: dict[str, dict[int, str | None]], target_blind: bool = False) -> list[dict[str, Any]]:
    """One row per described segment: image, segment, gt class (``targets``,
    :func:`segbench.tasks.vocab.scoring.targets`) and the lexical mapping; ``target_blind`` maps without
    consulting the gt class. A unit cached under ``unit_key``.
    """
    items = [{"image_id": image_id, "segment_id": seg, "description": text, "gt_class": targets[image_id][seg]}
             for image_id in sorted(described) for seg, text in sorted(described[image_id].items())]
    return map_descriptions(vocab, items, load_nlp(spacy_model), source=source, target_blind=target_blind)


def baseline_choices(unit_key: str, vocab: Vocabulary, rows: list[dict[str, Any]]) -> list[int]:
    from segbench.tasks.vocab.sbert import load_sbert, sbert_map

    return sbert_map(load_sbert(), [r["description"] for r in rows], class_names(vocab))


def evaluate_vocab(repo: str | Path, rev: str | None, vocab: str, descriptions: str | Path, gt: str | None,
                   out: str | Path, baseline: bool = True, spacy_model: str = "en_core_web_sm",
                   shard_size: int = 64, panoptic: str | Path | None = None, force: bool = False,
                   target_blind: bool = False, coverage: float = 1.0, coverage_seed: int = 0,
                   predicted_segments: str | Path | None = None, steps: Steps | None = None
                   ) -> EvaluationResult[VocabMetrics]:
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
            the segments' classes, and each level also gets PQ / SQ / RQ and mask AP.
        shard_size: images per scoring task (the report does not depend on it).
        force: evaluate again even when the report is up to date.
        target_blind: map each description to its strongest relation without consulting the ground
            truth class (the paper's comparison; the default maps to the ground truth when it is hit).
        coverage: the share of the vocabulary's mined terms kept (the coverage ablation,
            :func:`~segbench.tasks.vocab.lexical_mapping.with_coverage`), drawn with ``coverage_seed``.
        predicted_segments: with ``panoptic``, the folder of the model's own segment maps
            (``<image_id>.png``, read from disk); ``segment_id`` then names a predicted segment
            (:mod:`segbench.tasks.vocab.scoring`).
        steps: who runs the steps (default: this process, :class:`InProcess`).

    Returns:
        The result; ``paths`` names ``metrics``, ``report``, ``lac_plot`` and ``mappings``. An
        up-to-date summary is read back from metrics.json.

    Raises:
        InputError: a missing or malformed vocabulary, descriptions file, gt map, panoptic ground
            truth or predicted segment map; neither or both of ``gt`` and ``panoptic`` given;
            ``predicted_segments`` without ``panoptic``; a coverage outside (0, 1].
    """
    steps = steps or InProcess()
    if not 0 < coverage <= 1:
        raise InputError(f"coverage {coverage:g} is not a share of the vocabulary", item="coverage",
                         hint="give a number in (0, 1]: 0.2 keeps a fifth of the mined terms, 1 keeps them all")
    if (gt is None) == (panoptic is None):
        raise InputError("give exactly one ground truth: gt (label maps) or panoptic (segments)",
                         hint="pass --gt DIR or --panoptic DIR")
    if predicted_segments is not None and panoptic is None:
        raise InputError("predicted segments are scored against panoptic ground truth, and none was given",
                         hint="pass --panoptic DIR with --segments DIR")
    from segbench.tasks.vocab.sbert import sbert_available

    descriptions = str(descriptions)
    described = read_json(descriptions)
    request = _Request(repo=str(repo), rev=rev, vocab=vocab, descriptions=descriptions, gt=gt,
                       panoptic=None if panoptic is None else str(panoptic), baseline=baseline,
                       run_baseline=baseline and sbert_available(), spacy_model=spacy_model, shard_size=shard_size,
                       target_blind=target_blind, coverage=coverage, coverage_seed=coverage_seed,
                       described=lac.parse_descriptions(described, source=descriptions),
                       scores=scoring.parse_scores(described, source=descriptions),
                       predicted=None if predicted_segments is None else str(predicted_segments))
    hashes = steps.call("hash-vocab-ground-truth", hash_ground_truth, request.repo, rev, vocab, gt, request.panoptic, request.image_ids)
    hashes |= local_hashes(PREDICTIONS, {"descriptions": descriptions, **request.predicted_files()})
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
    segments: str | None
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
    scores: dict[str, dict[int, float]]
    predicted: str | None  # the model's own segment maps

    @property
    def image_ids(self) -> list[str]:
        return sorted(self.described)

    @property
    def inputs(self) -> scoring.Inputs:
        return scoring.Inputs(self.repo, self.rev, self.gt, self.panoptic, self.predicted)

    def predicted_files(self) -> dict[str, Path]:
        """``{segments/<image_id>: path}`` of the predicted segment maps (none without them)."""
        if self.predicted is None:
            return {}
        return {f"segments/{image_id}": Path(self.predicted) / f"{image_id}.png" for image_id in self.image_ids}

    def params(self) -> _Evaluated:
        """What the build key covers besides the inputs (and the manifest records)."""
        return {"source": DatasetSource(self.repo, self.rev).describe(), "rev": self.rev, "vocab": self.vocab,
                "descriptions": self.descriptions, "gt": self.gt, "panoptic": self.panoptic, "segments": self.predicted,
                "baseline": self.baseline, "baseline_ran": self.run_baseline, "spacy_model": self.spacy_model,
                "target_blind": self.target_blind, "coverage": self.coverage, "coverage_seed": self.coverage_seed}


def _load(steps: Steps, request: _Request) -> tuple[Vocabulary, dict[str, dict[int, pqm.Segment]] | None]:
    """The vocabulary, and the panoptic segments of the described images (``None`` with label maps)."""
    vocabulary = steps.call("load-vocabulary", load_vocabulary, request.repo, request.rev, request.vocab)
    vocabulary = with_coverage(vocabulary, request.coverage, request.coverage_seed)
    if request.panoptic is None:
        return vocabulary, None
    return vocabulary, steps.call("load-panoptic-segments", scoring.load_segments, request.repo, request.rev,
                                  request.panoptic, request.image_ids)


def _score(steps: Steps, stage: Stage, request: _Request, vocabulary: Vocabulary,
           segments: dict[str, dict[int, pqm.Segment]] | None) -> Built:
    """Map the descriptions, score the images in shards (units) and write the report into ``stage``."""
    targets = steps.unit("match-segments", scoring.targets, stage.unit_key("targets"), request.inputs, vocabulary,
                         request.described, segments)
    rows, labels, per_image, baseline_note = _labels(steps, stage, request, vocabulary, targets)
    index = {c: i for i, c in enumerate(vocabulary.classes)}
    target_index = {image: {seg: index[c] for seg, c in by_seg.items() if c is not None}
                    for image, by_seg in targets.items()}
    kinds = _kinds(vocabulary)
    ap_classes = frozenset(index[c] for c in (vocabulary.classes if kinds is None else kinds.things))
    calls = []
    for n, start in enumerate(range(0, len(request.image_ids), request.shard_size)):
        ids = request.image_ids[start:start + request.shard_size]
        calls.append((stage.unit_key(f"score/{request.shard_size}/{n}"),
                      (request.inputs, vocabulary, ids, {i: labels[i] for i in ids},
                       None if per_image is None else {i: per_image[i] for i in ids},
                       None if segments is None else {i: segments[i] for i in ids},
                       {i: target_index[i] for i in ids}, {i: request.scores.get(i, {}) for i in ids}, ap_classes)))
    scored = steps.shards("evaluate-vocab-shard", scoring.evaluate_shard, calls, description="Evaluating descriptions",
                          total=len(request.image_ids), count=lambda result: len(result[0].image_ids),
                          channel=scoring.SCORE_CHANNEL)
    summary, total = _summarize(vocabulary, kinds, scored)
    if total.undescribed_regions or total.absent_segments:
        steps.logger.warning("%d regions had no description (scored unmatched); %d described segments are "
                             "not in their segment map (skipped)", total.undescribed_regions, total.absent_segments)
    params = request.params()
    # Relative to the project: the report is versioned and must not name this machine's folders.
    evaluated = portable_paths({key: params[key] for key in ("source", "rev", "vocab", "descriptions", "gt",
                                                             "panoptic", "segments")}, request.repo)
    lac_report.write_report(stage.path, summary, {**evaluated, "baseline_note": baseline_note,
                                           **_mapping_lines(request, vocabulary)})
    write_json(stage.path / MAPPINGS_NAME, rows, indent=1)
    return Built(counts={"images": summary["num_images"], "regions": summary["num_regions"]},
                 units=steps.unit_counts(), extras={"summary": summary})


def _labels(steps: Steps, stage: Stage, request: _Request, vocabulary: Vocabulary,
            targets: dict[str, dict[int, str | None]]
            ) -> tuple[list[dict[str, Any]], dict[str, dict[int, list[int]]], dict[str, dict[int, int]] | None,
                       str | None]:
    """Map every description (a unit) and run the baseline (another unit) when it can run.

    Returns:
        The mapping rows (with the baseline's class), the class index per level of each region,
        the baseline's class index per region (``None`` without a baseline) and a note saying why
        the baseline did not run (``None`` when it ran or was not asked for).
    """
    from segbench.tasks.vocab.sbert import INSTALL_HINT

    rows = steps.unit("map-descriptions", map_regions, stage.unit_key("map"), vocabulary, request.described,
                      request.spacy_model, request.descriptions, targets, request.target_blind)
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
    """segment id -> the region it names: a panoptic or predicted segment is its own region; a label-map
    segment id is a class id, whose region is the class index (an id of no class gets one never in the gt)."""
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


def _summarize(vocabulary: Vocabulary, kinds: Kinds | None, scored: list[Any]
               ) -> tuple[dict[str, Any], lac.LacAccumulator]:
    """Add the shards' accumulators (in shard order) and summarize, with PQ and AP for panoptic ground truth."""
    classes, (_, first_pq, first_ap) = len(vocabulary.classes), scored[0]
    total = lac.LacAccumulator(classes)
    pq_total = None if first_pq is None else [pqm.PQAccumulator(classes) for _ in LEVELS]
    ap_total = None if first_ap is None else APAccumulator(first_ap.classes, first_ap.levels)
    for shard, shard_pq, shard_ap in scored:
        total += shard
        for level_total, level_shard in zip(pq_total or [], shard_pq or [], strict=True):
            level_total += level_shard
        if ap_total is not None:
            ap_total += shard_ap
    metrics = total.summarize(vocabulary.classes, kinds)
    if pq_total is not None:
        metrics = pqm.attach_pq(metrics, [a.summarize(vocabulary.classes, level)
                                          for a, level in zip(pq_total, LEVELS, strict=True)])
    if ap_total is not None:
        metrics = attach_ap(metrics, ap_total.summarize(vocabulary.classes, LEVELS,
                                                        "all" if kinds is None else "things"))
    return metrics.model_dump(mode="json"), total  # the report writers read the JSON


def _paths(out: str | Path) -> dict[str, str]:
    paths = report_paths(out)
    paths["lac_plot"] = paths.pop(Path(lac_report.PLOT_NAME).stem)  # the name write_report returns it under
    return paths
