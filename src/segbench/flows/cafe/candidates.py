"""The CAFE candidate build (seed 000): sources → targets → edit plans → validated pairs → edits.

``build_cafe_candidates`` writes ``<data root>/cafe_candidates/`` through a resumable stage:
``candidates.jsonl`` (one :class:`~segbench.schemas.cafe.Candidate` per line), ``images/`` (the
edited images I), ``review/`` (I with M outlined, what the verification round shows),
``tables/prompt_pairs.{md,json}``, ``targets.json`` (every target key drawn, which a top-up
leaves out), ``skipped.json`` and ``manifest.json``. Plans come from the
language provider (WordNet offline, a language model when configured), edits from the image
editor; both go through content-addressed caches, so a rebuild replays them. The build key covers
the sources' annotation files and image folders, the params, the provider and editor and the
prompt and builder versions: a rebuild with the same key does nothing, and a killed build resumes
in its stage, where every finished edit shard (a unit) is kept.

The verification round is ``flows/cafe/verification.py``; the export of verified pairs ``flows/cafe/export.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

from PIL import Image
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from segbench import progress
from segbench.core.build import Build, Built, Stage, run_build
from segbench.core.coco import load_coco
from segbench.core.errors import (
    AnnotationError,
    AnswerRejected,
    ImportPolicy,
    ProviderError,
    SkipRecord,
    SkipReport,
)
from segbench.core.io import (
    atomic_write_bytes,
    fingerprint,
    open_image,
    source_path,
    write_json,
    write_jsonl,
)
from segbench.core.masks import rle_to_bitmap
from segbench.core.resume import hash_inputs
from segbench.flows.cafe.history import DRAWN_FILE, Chain, chain_of
from segbench.flows.prefect_ui import from_params, publish_build, run_name, task_name
from segbench.flows.units import UNIT, count_units
from segbench.providers.base import Question, Usage, describe_usage
from segbench.providers.cache import answers_or_rejections
from segbench.schemas.cafe import CafeParams, Candidate, CandidatesSummary, PlanAnswer, SourceSpec, Target
from segbench.schemas.edits import EditPlan, EditType
from segbench.tasks.cafe import pairs as cafe_pairs
from segbench.tasks.cafe import plans as cafe_plans
from segbench.tasks.cafe import quotas as cafe_quotas
from segbench.tasks.cafe import targets as cafe_targets
from segbench.tasks.cafe import versions
from segbench.tasks.cafe.verification import outline

DEFAULT_NLTK_DATA = Path(".segbench") / "nltk_data"


@task(**task_name("select-cafe-targets"), cache_policy=NO_CACHE)
def select_source_targets(source: SourceSpec, params: CafeParams, limit: int | None,
                          exclude: frozenset[str]) -> tuple[list[Target], list[SkipRecord]]:
    """The targets of one source, and the records of what was skipped (under ``on_error = skip``)."""
    policy = ImportPolicy(on_error=params.on_error)
    index = load_coco(source.annotations, policy=policy)
    targets = cafe_targets.select_targets(index, source.name, params, policy, limit=limit, exclude=exclude)
    get_run_logger().info("%s: %d images, %d targets", source.name, len(index.images), len(targets))
    return targets, policy.report.skipped


@task(**task_name("ask-edit-plans"), cache_policy=NO_CACHE)  # the provider retries what is transient
def ask_plans(provider: Any, questions: list[Question]) -> list[PlanAnswer | AnswerRejected]:
    return answers_or_rejections(provider, questions, PlanAnswer)


@task(**task_name("edit-cafe-shard"), **UNIT)
def edit_shard(unit_key: str, editor: Any, candidates: list[Candidate], images_dir: dict[str, Path], stage: Path,
               params: CafeParams) -> tuple[list[Candidate], list[SkipRecord]]:
    """Edit one shard: write each edited image and its review image; return the candidates edited
    and the records of those skipped (under ``on_error = skip``). A unit: a rerun of the same stage
    reuses its result and files."""
    policy = ImportPolicy(on_error=params.on_error)
    done = []
    for candidate in candidates:
        target = candidate.target
        try:
            image = _source_image(images_dir[target.source], target)
            mask = rle_to_bitmap(target.segmentation).astype(bool)
            edited = editor.edit(image, mask, candidate.plan, seed=candidate.edit_seed)
        except (AnnotationError, ProviderError) as error:
            policy.handle(_as_annotation_error(error, candidate.key))
            continue
        _write_jpeg(stage / candidate.image, edited, params.jpeg_quality)
        _write_jpeg(stage / candidate.review_image, outline(edited, mask), params.jpeg_quality)
        done.append(candidate)
    return done, policy.report.skipped


def _source_image(images_dir: Path, target: Target) -> Image.Image:
    item = f"image {target.image_id}"
    path = source_path(images_dir, target.file_name, item=f"{item} (file_name {target.file_name!r})",
                       error=AnnotationError)
    image = open_image(path, mode="RGB", item=item, hint="check the images folder of the source",
                       error=AnnotationError)
    if image.size != (target.width, target.height):
        raise AnnotationError(f"image is {image.size[0]}x{image.size[1]} but the annotations say "
                              f"{target.width}x{target.height}", path=path, item=item,
                              hint="the images folder does not belong to these annotations")
    return image


def _as_annotation_error(error: Exception, key: str) -> AnnotationError:
    if isinstance(error, AnnotationError):
        return error
    return AnnotationError(f"edit failed: {getattr(error, 'message', str(error))}", item=key,
                           hint="retry, or build with --on-error skip to leave this target out")


def _write_jpeg(path: Path, image: Image.Image, quality: int) -> None:
    import io

    buffer = io.BytesIO()
    # Fixed quality and subsampling, no EXIF: the bytes depend on the pixels only.
    image.save(buffer, format="JPEG", quality=quality, subsampling=0)
    atomic_write_bytes(path, buffer.getvalue(), durable=False)


def _plans(provider: Any, assigned: list[tuple[Target, EditType]], params: CafeParams, skips: SkipReport
           ) -> list[tuple[Target, EditPlan]]:
    """The plans of every (target, edit type); a question the model never answered usably goes into ``skips``."""
    questions = [cafe_plans.plan_question(t, e, seed=params.seed) for t, e in assigned]
    batches = [list(range(i, min(i + params.plan_batch, len(questions))))
               for i in range(0, len(questions), params.plan_batch)]
    futures = [ask_plans.submit(provider, [questions[i] for i in batch]) for batch in batches]
    answers = progress.gather(futures, "edit plans", len(questions), len)
    flat = [a for batch in answers for a in batch]
    plans = []
    for (target, edit_type), answer in zip(assigned, flat, strict=True):
        if isinstance(answer, AnswerRejected):
            skips.skipped.append({"error": "AnswerRejected", "item": f"{target.key}:{edit_type.abbr}", "path": None,
                                  "message": answer.message})
        else:
            plans.append((target, cafe_plans.plan_from_answer(target, edit_type, answer)))
    return plans


def _validated(plans: list[tuple[Target, EditPlan]], wn: Any, skips: SkipReport) -> list[tuple[Target, EditPlan]]:
    """Plans whose pair passes every rule, first per (target, edit type); the others into ``skips``."""
    keys = [f"{t.key}:{p.edit_type.abbr}" for t, p in plans]
    kept, repeats = cafe_pairs.deduplicate(keys)
    for position in repeats:
        skips.skipped.append({"error": "PromptPairRejected", "rule": "duplicate", "item": keys[position],
                              "path": None, "message": "a plan for this target and edit type was already kept"})
    out = []
    for position in kept:
        target, plan = plans[position]
        problem = cafe_pairs.pair_problem(wn, plan.q_pos, plan.q_neg) or cafe_plans.instruction_problem(plan)
        if problem:
            skips.skipped.append({"error": "PromptPairRejected", "rule": problem[0], "item": keys[position],
                                  "path": None, "message": problem[1], "q_pos": plan.q_pos, "q_neg": plan.q_neg})
        else:
            out.append((target, plan))
    return out


def _candidates(plans: list[tuple[Target, EditPlan]], seed: int, first_id: int = 1) -> list[Candidate]:
    """Candidates with ids ``first_id``.. in key order and a per-sample edit seed derived from the build seed."""
    rows = sorted(plans, key=lambda tp: (tp[0].key, tp[1].edit_type.abbr))
    out = []
    for number, (target, plan) in enumerate(rows, start=first_id):
        stem = f"{target.source}_{target.image_id}_{target.annotation_id}_{plan.edit_type.abbr}"
        key = f"{target.key}:{plan.edit_type.abbr}"
        out.append(Candidate(id=number, key=key, target=target, plan=plan, image=f"images/{stem}.jpg",
                             review_image=f"review/{stem}.jpg", edit_seed=int(fingerprint([seed, key])[:8], 16)))
    return out


@flow(name="build-cafe-candidates",
      flow_run_name=run_name("build-cafe-candidates", from_params(CafeParams, seed="seed")))
def build_cafe_candidates(sources: list[SourceSpec], out: Path, provider: Any, params: CafeParams | None = None,
                          editor: Any = None, nltk_data: Path | None = None, force: bool = False,
                          data_root: Path | None = None) -> CandidatesSummary:
    """Build CAFE candidates from COCO-format sources into ``out`` (staged: all or nothing).

    With quotas, each source × edit type asks for its target over the share people are expected to
    verify (:mod:`segbench.tasks.cafe.quotas`). A top-up batch (``params.top_up_of``, a round of
    ``data_root``) leaves out every target the chain of that round drew, asks for what the chain
    is short of over the share it measured, and numbers its candidates after the chain's.

    Args:
        sources: the sources (name, annotations file, images folder); names must differ.
        provider: a language provider answering ``cafe.edit_plan`` (offline: the WordNet provider).
            Typed ``Any`` because Prefect builds a parameter schema and a Protocol is no valid type.
        editor: an :class:`~segbench.providers.cafe.image_edit.ImageEditor` (``make_image_editor`` of the
            settings; default: the offline Pillow compositor, uncached).
        nltk_data: where the WordNet data for the pair checks is prepared.
        force: rebuild even when ``out`` was built with the same build key.
        data_root: where the rounds of a top-up are (required with ``params.top_up_of``).

    Returns:
        A summary: output path, ``up_to_date``, counts, ``units`` (edit shards computed / reused from
        a killed run), skipped counts and provider usage.

    Raises:
        InputError: a missing or malformed source, repeated source names, a top-up without
            ``data_root``.
        RoundStateError: a round of the top-up's chain is not ingested, or has unanswered items.
        AnnotationError / ProviderError: under ``on_error = fail``, a bad annotation, image or edit.
    """
    params = params or CafeParams()
    _check_sources(sources, params)
    chain = _chain(params, data_root)
    logger = get_run_logger()
    if editor is None:
        from segbench.providers.cafe.pillow_editor import PillowCompositor

        editor = PillowCompositor()
    out = Path(out)
    hashes = hash_inputs(source_files(sources), hint="--source NAME=ANNOTATIONS_JSON:IMAGES_DIR")
    # A top-up depends on what people answered in the rounds it tops up.
    hashes |= {f"answers:{r.round.key}": r.answers_digest() for r in chain.rounds}
    build = Build(out=out, dataset="cafe_candidates", logic_version=versions.CANDIDATES,
                  params={**params.model_dump(mode="json"), **_provenance(sources, provider, editor)},
                  input_hashes=hashes)
    skips = SkipReport()
    summary = run_build(build, lambda stage, planned: _edit_all(stage, planned, sources, params, skips, editor),
                        CandidatesSummary, force=force, logger=logger,
                        prepare=lambda: _plan_all(sources, params, skips, provider, nltk_data, chain),
                        finished=lambda manifest: {"skipped": manifest.counts["skipped"],
                                                   "usage": {k: 0 for k in Usage.model_fields}})
    if not summary.up_to_date:
        logger.info("provider usage this run: %s", describe_usage(summary.usage))
    publish_build("cafe-candidates", summary)
    return summary


def _check_sources(sources: list[SourceSpec], params: CafeParams) -> None:
    """Raises InputError: no source, repeated source names, or a quota for a source not given."""
    from segbench.core.errors import InputError

    names = [s.name for s in sources]
    if not sources or len(set(names)) != len(names):
        raise InputError(f"give one or more sources with distinct names (got {names})",
                         hint="--source NAME=ANNOTATIONS_JSON:IMAGES_DIR, repeated with different names")
    unknown = sorted(set(params.quotas) - set(names))
    if unknown:
        raise InputError(f"quota for unknown source(s) {unknown}", hint=f"sources are: {', '.join(names)}")


def _chain(params: CafeParams, data_root: Path | None) -> Chain:
    """The rounds a top-up batch tops up (none for a first batch), every one of them fully answered."""
    if params.top_up_of is None:
        return Chain()
    if data_root is None:
        from segbench.core.errors import InputError

        raise InputError(f"a top-up of round {params.top_up_of} needs the data root its rounds are in",
                         hint="pass data_root")
    chain = chain_of(Path(data_root), params.top_up_of)
    chain.check_files()
    chain.require_answered()
    return chain


def wanted_per_source(params: CafeParams, chain: Chain) -> dict[str, dict[EditType, float]]:
    """Per source with a quota: the candidates each edit type wants (shortfall over the expected share)."""
    targets = cafe_quotas.cell_targets(params.quotas, params.edit_mix)
    verified = chain.verified()
    shares = cafe_quotas.acceptance(chain.asked(), verified, targets, params.expected_acceptance)
    wanted = cafe_quotas.candidates_wanted(targets, verified, shares)
    out: dict[str, dict[EditType, float]] = {}
    for (source, edit), n in wanted.items():
        out.setdefault(source, {})[edit] = n
    return out


def _plan_all(sources: list[SourceSpec], params: CafeParams, skips: SkipReport, provider: Any,
              nltk_data: Path | None, chain: Chain) -> tuple[list[Candidate], dict[str, int], list[str]]:
    """Select targets, ask for edit plans and keep the valid pairs: the candidates to edit, the
    provider's usage while planning and every target key drawn; what is left out goes into ``skips``."""
    from segbench.providers.wordnet_data import load_wordnet

    wanted = wanted_per_source(params, chain)
    drawn = frozenset(chain.drawn())
    assigned: list[tuple[Target, EditType]] = []
    for source in sorted(sources, key=lambda s: s.name):
        weights = wanted.get(source.name)
        limit = None if weights is None else int(sum(weights.values()))
        found, skipped = select_source_targets(source, params, limit, drawn)
        assigned += cafe_targets.deal_edit_types(found, weights or cafe_quotas.edit_type_weights(params.edit_mix),
                                                 seed=params.seed)
        skips.skipped += skipped
    before = provider.usage
    plans = _plans(provider, assigned, params, skips)
    usage = {k: getattr(provider.usage, k) - getattr(before, k) for k in Usage.model_fields}
    wn = load_wordnet(Path(nltk_data or DEFAULT_NLTK_DATA))
    candidates = _candidates(_validated(plans, wn, skips), params.seed, first_id=chain.last_id() + 1)
    return candidates, usage, sorted(t.key for t, _ in assigned)


def _edit_all(stage: Stage, planned: tuple[list[Candidate], dict[str, int], list[str]], sources: list[SourceSpec],
              params: CafeParams, skips: SkipReport, editor: Any) -> Built:
    """Edit every candidate ``planned`` in shards (units) and write the candidate files into ``stage``;
    the provider's usage while planning is returned with what was built."""
    candidates, usage, drawn = planned
    images_dir = {s.name: Path(s.images) for s in sources}
    shards = [candidates[i : i + params.edit_shard] for i in range(0, len(candidates), params.edit_shard)]
    futures = [edit_shard.submit(stage.unit_key(f"edit/{n}"), editor, shard, images_dir, stage.path, params)
               for n, shard in enumerate(shards)]
    results = progress.gather(futures, "edits", len(candidates), lambda result: len(result[0]))
    skips.skipped += [record for _, skipped in results for record in skipped]
    built = _write_candidates(stage, [c for done, _ in results for c in done], params, skips)
    write_json(stage.path / DRAWN_FILE, drawn)  # a top-up leaves these out
    built.units = count_units(futures)
    built.extras["usage"] = usage
    return built


def source_files(sources: list[SourceSpec]) -> dict[str, Path]:
    """Every file the build reads, by label (an images folder stands for the images under it)."""
    files = {f"{s.name}:annotations": Path(s.annotations) for s in sources}
    return files | {f"{s.name}:images": Path(s.images) for s in sources}


class _SourceFiles(TypedDict):
    annotations: str
    images: str


class _Provenance(TypedDict):
    provider: str
    provider_model: str | None
    editor: str
    editor_model: str | None
    question_kind: str
    prompt_version: str
    sources: dict[str, _SourceFiles]


def _provenance(sources: list[SourceSpec], provider: Any, editor: Any) -> _Provenance:
    """Who answered and edited, under which prompt version, and from which source files (by name)."""
    return {"provider": provider.name, "provider_model": provider.model, "editor": editor.name,
            "editor_model": editor.model, "question_kind": cafe_plans.QUESTION_KIND,
            "prompt_version": cafe_plans.PROMPT_VERSION,
            "sources": {s.name: {"annotations": Path(s.annotations).name, "images": Path(s.images).name}
                        for s in sources}}


def _write_candidates(stage: Stage, candidates: list[Candidate], params: CafeParams, skips: SkipReport) -> Built:
    write_jsonl(stage.path / "candidates.jsonl", [c.model_dump(mode="json") for c in candidates])
    stats = cafe_pairs.pair_statistics(sample_rows(candidates))
    cafe_pairs.write_pair_tables(stage.path / "tables", stats, title="CAFE candidates: prompt pairs")
    skipped = SkipReport(list(skips.skipped))
    write_json(stage.path / "skipped.json", skipped.to_json(), indent=1)
    counts = {"candidates": len(candidates), "by_edit_type": stats["by_edit_type"],
              "skipped": skipped.counts(), "prompt_pairs": stats["prompt_pairs"]}
    return Built(counts=counts, seed=params.seed, skipped=len(skipped), extras={"skipped": skipped.counts()})


def sample_rows(candidates: list[Candidate]) -> list[dict[str, Any]]:
    """The rows :func:`segbench.tasks.cafe.pairs.pair_statistics` reads."""
    return [{"source": c.target.source, "edit_type": c.plan.edit_type.abbr, "q_pos": c.plan.q_pos,
             "q_neg": c.plan.q_neg} for c in candidates]
