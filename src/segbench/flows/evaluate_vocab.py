"""Prefect flow ``evaluate-vocab``: the Lexical Alignment Curve of a model's region descriptions.

Orchestration only: mapping rules live in :mod:`segbench.tasks.lexical_mapping`, the baseline in
:mod:`segbench.tasks.sbert`, metrics, input formats and the report in :mod:`segbench.tasks.lac`.

Usage::

    from segbench.flows.evaluate_vocab import evaluate_vocab
    result = evaluate_vocab(repo=".", rev="v1", vocab="cityscapes", descriptions="out/desc.json",
                            gt="data/vocab/gt/cityscapes", out="data/eval/vocab/run1")
    result["summary"]["lac"]["miou"]["area"], result["paths"]["report"]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from segbench.errors import InputError
from segbench.schemas.vocab import LEVELS
from segbench.tasks import lac
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
def map_regions(vocab: Vocabulary, described: dict[str, dict[int, str]], spacy_model: str, source: str
                ) -> list[dict[str, Any]]:
    """One row per described region: image, segment, gt class (by id) and the lexical mapping."""
    id_to_class = dict(zip(vocab.ids, vocab.classes, strict=True))
    items = [{"image_id": image_id, "segment_id": seg, "description": text, "gt_class": id_to_class.get(seg)}
             for image_id in sorted(described) for seg, text in sorted(described[image_id].items())]
    return map_descriptions(vocab, items, load_nlp(spacy_model), source=source)


@task(name="sbert-baseline", cache_policy=NO_CACHE)
def baseline_choices(vocab: Vocabulary, rows: list[dict[str, Any]]) -> list[int]:
    from segbench.tasks.sbert import load_sbert, sbert_map

    return sbert_map(load_sbert(), [r["description"] for r in rows], class_names(vocab))


@task(name="evaluate-vocab-shard", cache_policy=NO_CACHE)
def evaluate_shard(repo: str, rev: str | None, gt_dir: str, vocab: Vocabulary, image_ids: list[str],
                   labels: dict[str, dict[int, list[int]]], baseline: dict[str, dict[int, int]] | None
                   ) -> lac.LacAccumulator:
    acc = lac.LacAccumulator(len(vocab.classes))
    for image_id in image_ids:
        data, where = _read(repo, rev, f"{gt_dir.rstrip('/')}/{image_id}.png")
        gt = lac.to_class_index(lac.decode_label_map(data, source=where), vocab.ids)
        acc.update(gt, labels[image_id], None if baseline is None else baseline[image_id], image_id=image_id)
    return acc


@flow(name="evaluate-vocab")
def evaluate_vocab(repo: str | Path, rev: str | None, vocab: str, descriptions: str | Path, gt: str,
                   out: str | Path, baseline: bool = True, spacy_model: str = "en_core_web_sm",
                   shard_size: int = 64) -> dict[str, Any]:
    """Map every region description per level, score the relabelled gt maps, write the LAC report.

    Args:
        repo: project root. rev: git revision of the data (``None`` = working tree); the vocabulary
            name and ``gt`` are read at that revision, ``descriptions`` (model output) from disk.
        vocab: a vocabulary file, or a name resolved as ``data/vocab/<name>/<name>.json``.
        descriptions: the open-ended descriptions JSON (see :mod:`segbench.tasks.lac`).
        gt: folder of ``<image_id>.png`` label maps whose pixel values are vocabulary ids.
        out: report folder. baseline: also run the Sentence-BERT baseline; when its package is not
            installed the report says so and the flow goes on.

    Returns:
        ``{"summary": ..., "paths": {"metrics", "report", "lac_plot", "mappings": str}}``.

    Raises:
        InputError: a missing or malformed vocabulary, descriptions file or gt map.
    """
    logger = get_run_logger()
    repo, out, descriptions = str(repo), str(out), str(descriptions)
    vocabulary = load_vocabulary(repo, rev, vocab)
    described = lac.parse_descriptions(read_json(descriptions), source=descriptions)
    rows = map_regions(vocabulary, described, spacy_model, descriptions)
    index = {c: i for i, c in enumerate(vocabulary.classes)}
    labels: dict[str, dict[int, list[int]]] = {image_id: {} for image_id in described}
    id_to_index = {i: n for n, i in enumerate(vocabulary.ids)}
    for row in rows:
        region = id_to_index.get(row["segment_id"], -2 - row["segment_id"])  # not a class id: never in gt
        labels[row["image_id"]][region] = [index.get(row["mapping"][name], lac.UNMATCHED) for name in LEVELS]
    baseline_note, per_image = None, None
    if baseline:
        from segbench.tasks.sbert import INSTALL_HINT, sbert_available

        if sbert_available():
            choices = baseline_choices(vocabulary, rows)
            per_image = {image_id: {} for image_id in described}
            for row, choice in zip(rows, choices, strict=True):
                per_image[row["image_id"]][id_to_index.get(row["segment_id"], -2 - row["segment_id"])] = choice
                row["baseline"] = vocabulary.classes[choice]
        else:
            baseline_note = f"Sentence-BERT baseline skipped: package not installed ({INSTALL_HINT})"
            logger.warning(baseline_note)
    image_ids = sorted(described)
    futures = [evaluate_shard.submit(repo, rev, gt, vocabulary, image_ids[i:i + shard_size], labels, per_image)
               for i in range(0, len(image_ids), shard_size)]
    total = lac.LacAccumulator(len(vocabulary.classes))
    for future in futures:
        total += future.result()
    summary = total.summarize(vocabulary.classes)
    if total.undescribed_regions or total.absent_segments:
        logger.warning("%d gt regions had no description (scored unmatched); %d described segments are not "
                       "in their gt map (skipped)", total.undescribed_regions, total.absent_segments)
    evaluated = {"source": DatasetSource(repo, rev).describe(), "rev": rev, "vocab": vocab,
                 "descriptions": descriptions, "gt": gt, "baseline_note": baseline_note}
    paths = {k: str(v) for k, v in lac.write_report(out, summary, evaluated).items()}
    paths["mappings"] = str(write_json(Path(out) / MAPPINGS_NAME, rows, indent=1))
    logger.info("LAC area (mIoU) %s over %d images -> %s", summary["lac"]["miou"]["area"],
                summary["num_images"], paths["report"])
    return {"summary": summary, "paths": paths}
