"""The COCO-CD build flow: sources → candidates → context → splits → files + manifest.

Resumable: the build key (logic version, params, sha256 of the annotation files) decides whether
the output is already up to date, together with the sha256 of every output file and of every source
image the build read (``sources.json``), all hashed again; then nothing is loaded at all. Otherwise the build
writes into a stage kept across crashes, and its two expensive kinds of work are *units* Prefect
persists (see :mod:`segbench.flows.units`): the context labelling (COCO-Stuff loading, candidate
selection, evidence; its result is a few thousand small records) and the rendering, in shards of
``shard_size`` images. A build killed at any point and started again replays finished units and
computes only the rest. Shard size only changes how work is cut, never the output, so it is not
part of the build key, and shard units are named by the first and last image they render.

Tasks are coarse on purpose (Prefect costs ~0.1 s per task run). Large objects travel between
tasks in this process as plain objects, or quoted lists, with caching off, so Prefect neither
hashes nor walks them; the render shards, which may run on Dask workers, receive only their own
slice of the annotations.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, cast

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from segbench import progress
from segbench.core.build import Build, Built, Stage, run_build
from segbench.core.coco import CocoIndex
from segbench.core.errors import ImportPolicy, SkipRecord
from segbench.core.reports import write_skip_report
from segbench.core.resume import hash_inputs, source_hashes
from segbench.core.splits import SplitPlan, draw_splits
from segbench.flows.prefect_ui import from_params, publish_build, run_name, shard_name, task_name
from segbench.flows.publish import publish_data
from segbench.flows.units import UNIT, count_units
from segbench.schemas.coco_cd import CocoCdBuildSummary, CocoCdParams, CocoCdStep, ContextRecord
from segbench.tasks.coco_cd import outputs, sources, versions
from segbench.tasks.coco_cd import selection as cd

if TYPE_CHECKING:
    from segbench.flows.rebuild import RebuildRun

DEFAULT_SHARD_SIZE = 200


T = TypeVar("T")


def _quoted(value: T) -> T:
    """``quote(value)``, typed as the value: the task receives the value itself, not walked by Prefect."""
    return cast(T, quote(value))


@task(**task_name("load-instances"), cache_policy=NO_CACHE)
def load_instances(files: dict[str, Path], params: CocoCdParams, policy: ImportPolicy) -> sources.Instances:
    with progress.step("Loading COCO instances", len(cd.SOURCE_SPLITS)) as current:
        return sources.load_instances(files, cd.SOURCE_SPLITS, params, policy, each_file=current.advance)


@task(**task_name("label-contexts"), **UNIT)
def label_contexts(unit_key: str, instances: sources.Instances, files: dict[str, Path], params: CocoCdParams
                   ) -> tuple[list[ContextRecord], dict[str, int], list[SkipRecord]]:
    """Read COCO-Stuff's evidence, select the candidates and label their context: the records, selection counts and skips.

    One unit, so a resumed build neither rereads COCO-Stuff nor redoes the selection. Items skipped
    here are returned (not recorded on the flow's policy) so that a replayed unit reports them too.
    """
    policy = ImportPolicy(on_error=params.on_error)
    with progress.step("Loading COCO-Stuff and labelling contexts", len(cd.SOURCE_SPLITS) + 1) as current:
        stuff = []
        for split in cd.SOURCE_SPLITS:
            stuff.append(sources.stuff_evidence(files[f"stuff_{split}"], instances.images, params, policy))
            current.advance()
        candidates, selection = cd.select_candidates(instances, params, policy)
        records = cd.context_records(cd.Sources(instances, stuff, files), candidates, params)
        current.advance()
    return records, selection, policy.report.skipped


@task(**task_name("check-image-files"), cache_policy=NO_CACHE)
def check_image_files(coco_root: Path, records: list[ContextRecord], policy: ImportPolicy) -> list[ContextRecord]:
    known = [r for r in records if r.context != cd.UNKNOWN]
    return cd.check_image_files(coco_root, progress.track(known, "Checking image files"), policy)


@task(**task_name("draw-splits"), cache_policy=NO_CACHE)
def plan_splits(records: list[ContextRecord], params: CocoCdParams) -> SplitPlan:
    group_of = cd.group_of_records(records, params)
    pools: dict[int, list[int]] = {}
    for image_id, group in group_of.items():
        pools.setdefault(group, []).append(image_id)
    majority = [cd.CONTEXTS.index(c) for c in params.majority_context]
    return draw_splits(pools, majority=majority, rhos=params.rhos, val_per_group=params.val_per_group,
                       test_per_group=params.test_per_group, seed=params.seed,
                       group_names=outputs.group_names(params))


class _Tables(TypedDict):
    coverage: dict[str, dict[str, Any]]
    group_counts: dict[str, dict[str, list[int]]]


@task(**task_name("write-records"), cache_policy=NO_CACHE)
def write_records(stage: Path, instances: CocoIndex, records: list[ContextRecord], usable: list[ContextRecord],
                  plan: SplitPlan, params: CocoCdParams, policy: ImportPolicy) -> _Tables:
    outputs.write_context(stage, records)
    coverage = cd.coverage_table(records, params.classes)
    outputs.write_coverage(stage, coverage)
    group_counts = plan.group_counts(cd.group_of_records(usable, params))
    outputs.write_group_counts(stage, group_counts, params)
    outputs.write_splits(stage, instances, {r.image_id: r for r in usable}, plan, params)
    write_skip_report(stage, policy.report)
    return {"coverage": coverage, "group_counts": group_counts}


# Items finished inside render shards advance the "Rendering" progress as they finish.
RENDER_CHANNEL = "coco_cd.render"


@task(**shard_name("render-shard", lambda p: sorted(p["shard"].images)), **UNIT)
def render_shard(unit_key: str, stage: Path, shard: CocoIndex, coco_root: Path, params: CocoCdParams
                 ) -> tuple[int, dict[str, str]]:
    """Write the masks (and images) of one shard; ``shard`` holds only its images' annotations.

    Returns how many images it rendered and the sha256 of each source image it read (the
    up-to-date check hashes them again, see ``core.resume.source_hashes``).
    """
    read = []
    for image_id in sorted(shard.images):
        read.append(outputs.write_image_and_mask(stage, shard, coco_root, image_id, params))
        progress.item_done(RENDER_CHANNEL)
    return len(shard.images), source_hashes(coco_root, [name for name in read if name is not None])


def _render_all(stage: Stage, instances: CocoIndex, coco_root: Path, plan: SplitPlan, params: CocoCdParams,
                shard_size: int) -> list:
    image_ids = sorted({*plan.val, *plan.test, *(i for ids in plan.train.values() for i in ids)})
    shards = [image_ids[i : i + shard_size] for i in range(0, len(image_ids), shard_size)]
    futures = [render_shard.submit(stage.unit_key(f"render/{ids[0]}-{ids[-1]}"), stage.path,
                                   outputs.render_slice(instances, ids, params), coco_root, params)
               for ids in shards]
    what = "Rendering label masks and images" if params.write_images else "Rendering label masks"
    progress.gather(futures, what, len(image_ids), units=lambda result: result[0], channel=RENDER_CHANNEL)
    return futures


@flow(name="build-coco-cd", flow_run_name=run_name("build-coco-cd", from_params(CocoCdParams, rho="rhos", seed="seed")))
def build_coco_cd(
    coco_root: Path,
    stuff_root: Path,
    out: Path,
    params: CocoCdParams | None = None,
    publish_repo: Path | None = None,
    publish_data_dir: str = "data",
    shard_size: int = DEFAULT_SHARD_SIZE,
    force: bool = False,
) -> CocoCdBuildSummary:
    """Build COCO-CD from a COCO 2017 root and COCO-Stuff annotations into ``out``.

    Does nothing when ``out`` already holds a build with the same build key (unless ``force``).
    Otherwise the output is built in a stage that survives a crash (the next run resumes it) and
    replaces ``out`` only when complete. With ``publish_repo``, the last step publishes a DVC
    version of ``publish_data_dir`` in that repo.

    Args:
        shard_size: images per render unit (and per Dask task); does not change the output.
        force: rebuild even when the output is up to date.

    Returns:
        A summary: output path, whether it was up to date, counts at every stage, coverage table,
        skipped items, and how many units were computed now or reused from an interrupted run.

    Raises:
        InputError, AnnotationError: bad inputs (under ``on_error=fail`` for item-level problems).
        InsufficientDataError: the groups cannot supply the requested val/test sizes or ρ.
    """
    if shard_size < 1:
        raise ValueError(f"shard_size must be at least 1 (got {shard_size})")
    params = params or CocoCdParams()
    coco_root, stuff_root, out = Path(coco_root), Path(stuff_root), Path(out)
    files = cd.source_files(coco_root, stuff_root)
    # The key covers the annotation files; the images read are known only once those are loaded,
    # so their hashes go to sources.json and the up-to-date check hashes them again.
    build = Build(out=out, dataset="coco_cd", logic_version=versions.BUILD,
                  params=params.model_dump(mode="json"), input_hashes=hash_inputs(files), sources_root=coco_root)
    summary = run_build(build, lambda stage: _build(stage, coco_root, files, params, shard_size), CocoCdBuildSummary,
                        force=force,
                        finished=lambda _manifest: outputs.finished_summary(out))
    publish_build("coco-cd", summary)
    if summary.skipped and not summary.up_to_date:
        skipped = sum(summary.skipped.values())
        get_run_logger().warning("skipped %d item(s); see %s", skipped, out / "skipped.json")
    if publish_repo is not None:
        summary.publish = publish_data(repo=str(publish_repo), data_dir=publish_data_dir)
    return summary


def _build(stage: Stage, coco_root: Path, files: dict[str, Path], params: CocoCdParams, shard_size: int) -> Built:
    """Write the whole dataset into ``stage``; the counts, coverage table, skips and units."""
    policy = ImportPolicy(on_error=params.on_error)
    instances = load_instances(files, params, policy)
    context = label_contexts(stage.unit_key("context"), instances, files, params, return_state=True)
    records, selection, skipped = context.result()
    policy.report.skipped.extend(skipped)
    # Quoted: Prefect would otherwise walk thousands of records for every call (~1 s at COCO scale).
    usable = check_image_files(coco_root, _quoted(records), policy) if params.write_images else [
        r for r in records if r.context != cd.UNKNOWN]
    plan = plan_splits(_quoted(usable), params)
    tables = write_records(stage.path, instances, _quoted(records), _quoted(usable), plan, params, policy)
    futures = _render_all(stage, instances, coco_root, plan, params, shard_size)
    counts = {
        "source_images": instances.source_images,
        **selection,
        "context": {c: sum(r.context == c for r in records) for c in (*cd.CONTEXTS, cd.UNKNOWN)},
        "usable": len(usable),
        "rendered": sum(future.result()[0] for future in futures),
        "train_per_class_total": plan.per_class_total,
        "splits": tables["group_counts"],
    }
    sources = {name: digest for future in futures for name, digest in future.result()[1].items()}
    return Built(counts=counts, units=count_units([context, *futures]), seed=params.seed, sources=dict(sorted(sources.items())),
                 skipped=len(policy.report),
                 extras={"coverage": tables["coverage"], "skipped": policy.report.counts()})


# --- the rebuild plan's [coco_cd] step -----------------------------------------------------------------


def plan_step(run: RebuildRun, step: CocoCdStep) -> CocoCdBuildSummary:
    """Build COCO-CD from the ``[coco_cd]`` table of a rebuild plan."""
    return run.call(build_coco_cd, step.coco_root, step.stuff_root, run.dataset_dir("coco_cd"), step.params)
