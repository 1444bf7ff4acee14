"""The valid-vocabulary build flow (seed 003): captions → nouns → candidates → judgements → files.

Mining runs one task per shard of distinct captions; the shards go to a pool of worker processes
(one spaCy pipeline each), so Prefect's threads only wait on them. Each shard is a unit whose noun
counts Prefect persists, so a killed build resumes without mining the finished shards again. On a
Dask cluster a shard task mines in its worker process instead (one pipeline per process). Judging
runs one task per group of questions through ``provider.answer_many`` (the provider's cache makes a
rebuild replay its answers). Outputs are written into a resumable stage: ``<dataset>.json`` (our
vocabulary format), ``candidates.jsonl`` and ``manifest.json``. The build key covers the caption and
category files, the params, the provider and the prompt and builder versions; a rebuild with the
same key does nothing.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import PrefectFuture

from segbench.core.build import Build, Built, Stage, run_build
from segbench.core.errors import AnswerRejected
from segbench.core.io import write_json, write_jsonl
from segbench.core.reports import plain
from segbench.core.resume import hash_inputs
from segbench.flows.prefect_ui import publish_build, run_name, task_name
from segbench.flows.units import UNIT, count_units
from segbench.providers import make_provider
from segbench.providers.base import LanguageProvider, Question, Usage, describe_usage
from segbench.providers.cache import answers_or_rejections
from segbench.schemas.vocab import CategorySpec, RelationAnswer, VocabBuildSummary, VocabParams, VocabStep
from segbench.tasks.vocab import judge_quality as jq
from segbench.tasks.vocab import nouns as mining
from segbench.tasks.vocab import versions
from segbench.tasks.vocab import vocabulary as vb
from segbench.tasks.vocab.judge_quality import JudgeQuality

if TYPE_CHECKING:
    from segbench.flows.rebuild import RebuildRun

DEFAULT_NLTK_DATA = Path(".segbench") / "nltk_data"  # the default settings.work_dir / "nltk_data"
MAX_SHARDS_IN_FLIGHT_PER_WORKER = 2  # bounds how many shards' captions wait in memory at once


@task(**task_name("read-captions"), cache_policy=NO_CACHE)
def read_captions(paths: list[Path], field: str) -> Counter[str]:
    counts = mining.count_captions(paths, field=field)
    get_run_logger().info("%d captions, %d distinct, from %d file(s)", sum(counts.values()), len(counts), len(paths))
    return counts


# The miner of this process per (model, batch size): the flow's (with its worker pool) while it runs,
# else one made on first use (a Dask worker process, which gets only the shard and the model name).
_MINERS: dict[tuple[str, int], mining.NounMiner] = {}
_MINERS_LOCK = threading.Lock()


def _process_miner(model: str, batch_size: int) -> mining.NounMiner:
    with _MINERS_LOCK:
        miner = _MINERS.get((model, batch_size))
        if miner is None:
            miner = _MINERS[(model, batch_size)] = mining.NounMiner(model, workers=1, batch_size=batch_size)
            miner.__enter__()  # kept for the life of the process: the pipeline loads once
        return miner


@task(**task_name("mine-shard"), **UNIT)
def mine_shard(unit_key: str, shard: mining.Shard, model: str, batch_size: int) -> Counter[str]:
    """The noun counts of one shard (a unit: its persisted counts are the result a rerun reuses)."""
    return _process_miner(model, batch_size).mine(shard)


@task(**task_name("select-candidates"), cache_policy=NO_CACHE)
def select_candidates(categories: list[CategorySpec], nouns: dict[str, int], top_k: int | None,
                      nltk_data: Path) -> dict[int, list[vb.CandidateRow]]:
    from segbench.providers.wordnet_data import load_wordnet

    return vb.select_candidates(categories, nouns, vb.WordNetIndex(load_wordnet(nltk_data)), top_k=top_k)


@task(**task_name("judge-relations"), cache_policy=NO_CACHE)  # the provider retries what is transient
def judge(provider: LanguageProvider, questions: list[Question]) -> list[RelationAnswer | AnswerRejected]:
    return answers_or_rejections(provider, questions, RelationAnswer)


@task(**task_name("write-vocabulary"), cache_policy=NO_CACHE)
def write_outputs(stage: Path, dataset: str, vocab: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    write_json(stage / f"{dataset}.json", vocab, indent=1)
    write_jsonl(stage / "candidates.jsonl", rows)


def _mine(stage: Stage, caption_counts: Counter[str], params: VocabParams
          ) -> tuple[dict[str, int], str, dict[str, int]]:
    """Submit one unit per shard, at most a few per worker at a time; total the counts.

    Returns the nouns, the loaded pipeline's id and how many units ran now or were reused.
    """
    total: Counter[str] = Counter()
    finished: list[PrefectFuture[Counter[str]]] = []
    in_flight: list[PrefectFuture[Counter[str]]] = []
    limit = max(1, params.workers) * MAX_SHARDS_IN_FLIGHT_PER_WORKER
    slot = (params.spacy_model, params.batch_size)

    def collect(future: PrefectFuture[Counter[str]]) -> None:
        total.update(future.result())
        finished.append(future)

    with mining.NounMiner(params.spacy_model, workers=params.workers, batch_size=params.batch_size) as miner:
        with _MINERS_LOCK:
            _MINERS[slot] = miner
        try:
            for number, shard in enumerate(mining.shards(caption_counts, params.shard_size)):
                if len(in_flight) >= limit:
                    collect(in_flight.pop(0))
                in_flight.append(mine_shard.submit(stage.unit_key(f"mine/{number}"), shard, params.spacy_model,
                                                   params.batch_size))
            for future in in_flight:
                collect(future)
        finally:
            with _MINERS_LOCK:
                _MINERS.pop(slot, None)
        model = miner.model_id
    return mining.finalize(total, min_count=params.min_count), model, count_units(finished)


def _questions(categories: list[CategorySpec], candidates: dict[int, list[vb.CandidateRow]], params: VocabParams
               ) -> list[tuple[int, Question]]:
    asked: list[tuple[int, Question]] = []
    for category in categories:
        nouns = [row["noun"] for row in candidates[category.id]]
        asked += [(category.id, q) for q in vb.relation_questions(category, nouns, batch=params.question_batch)]
    return asked


def _judge_all(provider: LanguageProvider, asked: list[tuple[int, Question]], params: VocabParams
               ) -> tuple[dict[int, dict[str, str]], Counter[str]]:
    """Ask every question; return relations per category id and answer problems."""
    groups = [asked[i : i + params.questions_per_task] for i in range(0, len(asked), params.questions_per_task)]
    futures = [judge.submit(provider, [q for _, q in group]) for group in groups]
    relations: dict[int, dict[str, str]] = {category_id: {} for category_id, _ in asked}
    problems: Counter[str] = Counter()
    for group, future in zip(groups, futures, strict=True):
        answers = future.result()
        for (category_id, question), answer in zip(group, answers, strict=True):
            if isinstance(answer, AnswerRejected):  # never answered usably: its candidates stay "none"
                get_run_logger().warning("no usable answer, skipped: %s", answer.message)
                problems["rejected_answers"] += 1
                continue
            found, wrong = vb.answered_relations(question, answer)
            relations[category_id].update(found)
            problems.update(wrong)
    return relations, problems


@task(**task_name("check-judge"), cache_policy=NO_CACHE)
def check_judge(categories: list[CategorySpec], asked: list[tuple[int, Question]],
                relations: dict[int, dict[str, str]], nltk_data: Path, published: Path | None
                ) -> tuple[dict[int, dict[str, str]], JudgeQuality]:
    """A language model's judgements after the sense checks, and the judge-quality report: the same
    questions answered by WordNet (in-process, uncached) and, when given, a published vocabulary."""
    from segbench.providers.wordnet_provider import WordNetProvider

    wordnet = WordNetProvider(nltk_data)
    by_wordnet: dict[int, dict[str, str]] = {category_id: {} for category_id, _ in asked}
    for category_id, question in asked:
        by_wordnet[category_id].update(vb.answered_relations(question, wordnet.answer(question, RelationAnswer))[0])
    kept, skipped = jq.sense_check(categories, relations, by_wordnet)
    theirs = None
    if published is not None:
        nouns = {category_id: list(judged) for category_id, judged in relations.items()}
        theirs = jq.published_relations(categories, vb.read_public(published), nouns)
    return kept, jq.judge_quality(relations, skipped, by_wordnet, theirs)


def _candidate_rows(categories: list[CategorySpec], candidates: dict[int, list[vb.CandidateRow]],
                    relations: dict[int, dict[str, str]]) -> list[dict[str, Any]]:
    rows = []
    for category in categories:
        for row in candidates[category.id]:
            rows.append({"category": category.name, "category_id": category.id, **row,
                         "relation": relations[category.id].get(row["noun"], "none")})
    return sorted(rows, key=lambda r: (r["category_id"], r["noun"]))


@flow(name="build-vocab", flow_run_name=run_name("build-vocab", ("categories",)))
def build_vocab(captions: list[Path], categories: Path | str, out: Path, provider: Any,
                params: VocabParams | None = None, nltk_data: Path | None = None, force: bool = False,
                published: Path | None = None) -> VocabBuildSummary:
    """Build the valid vocabulary of a category set from caption files into ``out``.

    Args:
        captions: caption files (COCO captions JSON, .txt, .jsonl, .tsv, .parquet).
        categories: a shipped category set (``ade20k_150``, ``cityscapes_19``, ``coco_cd``) or a
            JSON file ``[{"id", "name", "synonyms"}]``; its stem names ``out/<dataset>.json``.
        provider: a :class:`~segbench.providers.base.LanguageProvider` that answers the
            ``vocab.relations`` questions (WordNet offline, or a language model). Typed ``Any``
            because Prefect builds a parameter schema and a ``Protocol`` is no valid schema type.
        nltk_data: where the WordNet data for the candidate pre-filter is prepared
            (default ``.segbench/nltk_data``).
        force: rebuild even when ``out`` was built with the same build key.
        published: a published vocabulary (the open-ended benchmark's JSON) a language model's
            judgements are compared with in ``judge_quality.json``.

    Returns:
        A summary: output path, ``up_to_date``, counts (answer problems among them), ``units``
        (mining shards computed / reused from a killed run), the category set's ``dataset`` name and
        the provider's ``usage`` this run.

    Raises:
        InputError: bad captions or category file, or the spaCy model is not installed.
        ProviderError: the provider cannot answer, or answers about another category.
    """
    params = params or VocabParams()
    captions, out = [Path(p) for p in captions], Path(out)
    dataset, cats, categories_file = vb.load_categories(categories)
    # Labels name files by position and name, never by absolute path: the manifest is versioned data,
    # the same on every machine.
    inputs = {f"captions:{i}:{p.name}": p for i, p in enumerate(captions)} | {f"categories:{dataset}": categories_file}
    if published is not None:
        inputs[f"published:{Path(published).name}"] = Path(published)
    hashes = hash_inputs(inputs, hint="--captions must name existing caption files")
    provenance = {"provider": provider.name, "provider_model": provider.model,
                  "question_kind": vb.QUESTION_KIND, "prompt_version": vb.PROMPT_VERSION, "categories": dataset}
    # The number of worker processes changes no count, so a build with more workers is the same build.
    build = Build(out=out, dataset="vocab", logic_version=versions.BUILD,
                  params={**params.model_dump(mode="json", exclude={"workers"}), **provenance}, input_hashes=hashes)
    summary = run_build(build, lambda stage: _build(stage, captions, cats, dataset, provider, params, nltk_data,
                                                    provenance, published),
                        VocabBuildSummary, force=force, logger=get_run_logger(),
                        finished=lambda _manifest: {"dataset": dataset,
                                                    "usage": Usage()})  # no question asked
    publish_build(f"vocab-{dataset}", summary)
    return summary


def _build(stage: Stage, captions: list[Path], cats: list[CategorySpec], dataset: str, provider: Any,
           params: VocabParams, nltk_data: Path | None, provenance: dict[str, Any], published: Path | None) -> Built:
    """Mine, select, judge and write the vocabulary into ``stage``; the counts, units and provider usage."""
    logger = get_run_logger()
    caption_counts = read_captions(captions, params.caption_field)
    nouns, spacy_model, units = _mine(stage, caption_counts, params)
    logger.info("%d nouns seen at least %d times", len(nouns), params.min_count)
    candidates = select_candidates(cats, nouns, params.top_k, Path(nltk_data or DEFAULT_NLTK_DATA))

    before = provider.usage
    asked = _questions(cats, candidates, params)
    relations, problems = _judge_all(provider, asked, params)
    usage = provider.usage.since(before)
    if provider.name != "wordnet":  # a language model: its answers are checked for sense, and compared
        relations, quality = check_judge(cats, asked, relations, Path(nltk_data or DEFAULT_NLTK_DATA), published)
        write_json(stage.path / jq.JUDGE_QUALITY_FILE, quality.model_dump(mode="json"), indent=1)
        problems["sense_skipped"] += len(quality.skipped)
        for reason in quality.suspect:
            logger.warning("the judge looks wrong: %s", reason)
    problems = Counter({k: problems[k] for k in sorted(problems)})
    if any(problems.values()):
        logger.warning("answer problems (kept as 'none' or ignored): %s", plain(dict(problems)))

    vocab = vb.assemble_vocabulary(cats, relations)
    rows = _candidate_rows(cats, candidates, relations)
    levels = {level: sum(len(e[level]) for e in vocab.values()) for level in vb.LEVELS}
    counts = {"captions": sum(caption_counts.values()), "distinct_captions": len(caption_counts),
              "nouns": len(nouns), "categories": len(cats), "candidates": len(rows), "questions": len(asked),
              "levels": levels, "answer_problems": dict(problems)}
    write_outputs(stage.path, dataset, vocab, rows)
    # Usage (calls, cache hits, tokens, cost) belongs to this run, not to the dataset: it is logged and
    # returned, and kept out of the manifest so a rebuild from the cache has the same manifest.
    logger.info("provider usage this run: %s", describe_usage(usage))
    return Built(counts=counts, units=units, extras={"dataset": dataset, "usage": usage},
                 params={**params.model_dump(mode="json"), **provenance, "spacy_model_loaded": spacy_model})


# --- the rebuild plan's [vocab] step -------------------------------------------------------------------


def plan_step(run: RebuildRun, step: VocabStep) -> VocabBuildSummary:
    """Build a valid vocabulary from the ``[vocab]`` table of a rebuild plan."""
    settings = run.settings()
    dataset, _, _ = vb.load_categories(step.categories)
    params = VocabParams(**step.params.model_dump(exclude={"spacy_model"}),
                         spacy_model=step.params.spacy_model or settings.spacy_model)
    provider = make_provider(settings, replay_only=step.replay_only or settings.replay_only)
    return run.call(build_vocab, step.captions, step.categories, step.out or run.data_root / "vocab" / dataset,
                    provider, params, nltk_data=run.work_dir / "nltk_data")
