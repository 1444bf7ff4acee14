"""The COCO-CD build flow: sources → candidates → context → splits → files + manifest.

Tasks are coarse on purpose (Prefect costs ~0.1 s per task run): one per stage, and the image
rendering in shards of a few hundred images. Large objects travel between tasks as plain objects
with caching off, so Prefect neither hashes nor walks a million annotations.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from segbench import progress
from segbench.errors import ImportPolicy
from segbench.flows.publish import publish_data
from segbench.schemas.coco_cd import CocoCdParams, ContextRecord
from segbench.tasks import coco_cd as cd
from segbench.tasks import coco_cd_outputs as outputs
from segbench.tasks.coco import CocoIndex
from segbench.tasks.io import staged_directory
from segbench.tasks.manifest import build_manifest, write_manifest
from segbench.tasks.splits import SplitPlan, draw_splits

RENDER_SHARD = 200


@task(name="load-sources", cache_policy=NO_CACHE)
def load_sources(coco_root: Path, stuff_root: Path, policy: ImportPolicy) -> cd.Sources:
    with progress.step("Loading COCO and COCO-Stuff annotations", 4) as current:
        sources = cd.load_sources(coco_root, stuff_root, policy)
        current.advance(4)
    return sources


@task(name="select-candidates", cache_policy=NO_CACHE)
def select_candidates(sources: cd.Sources, params: CocoCdParams, policy: ImportPolicy):
    return cd.select_candidates(sources.instances, params, policy)


@task(name="label-contexts", cache_policy=NO_CACHE)
def label_contexts(sources: cd.Sources, candidates: dict, params: CocoCdParams) -> list[ContextRecord]:
    return cd.context_records(sources, candidates, params)


@task(name="check-image-files", cache_policy=NO_CACHE)
def check_image_files(coco_root: Path, records: list[ContextRecord], policy: ImportPolicy) -> list[ContextRecord]:
    known = [r for r in records if r.context != cd.UNKNOWN]
    return cd.check_image_files(coco_root, progress.track(known, "Checking image files"), policy)


@task(name="draw-splits", cache_policy=NO_CACHE)
def plan_splits(records: list[ContextRecord], params: CocoCdParams) -> SplitPlan:
    group_of = cd.group_of_records(records, params)
    pools: dict[int, list[int]] = {}
    for image_id, group in group_of.items():
        pools.setdefault(group, []).append(image_id)
    majority = [cd.CONTEXTS.index(c) for c in params.majority_context]
    return draw_splits(pools, majority=majority, rhos=params.rhos, val_per_group=params.val_per_group,
                       test_per_group=params.test_per_group, seed=params.seed,
                       group_names=outputs.group_names(params))


@task(name="write-records", cache_policy=NO_CACHE)
def write_records(stage: Path, sources: cd.Sources, records: list[ContextRecord], usable: list[ContextRecord],
                  plan: SplitPlan, params: CocoCdParams, policy: ImportPolicy) -> dict[str, Any]:
    outputs.write_context(stage, records)
    coverage = cd.coverage_table(records, params.classes)
    outputs.write_coverage(stage, coverage)
    group_counts = plan.group_counts(cd.group_of_records(usable, params))
    outputs.write_group_counts(stage, group_counts, params)
    outputs.write_splits(stage, sources.instances, {r.image_id: r for r in usable}, plan, params)
    outputs.write_skip_report(stage, policy.report)
    return {"coverage": coverage, "group_counts": group_counts}


@task(name="render-shard", cache_policy=NO_CACHE)
def render_shard(stage: Path, instances: CocoIndex, coco_root: Path, image_ids: list[int],
                 params: CocoCdParams) -> int:
    for image_id in image_ids:
        outputs.write_image_and_mask(stage, instances, coco_root, image_id, params)
    return len(image_ids)


def _render_all(stage: Path, sources: cd.Sources, coco_root: Path, plan: SplitPlan, params: CocoCdParams) -> int:
    image_ids = sorted({*plan.val, *plan.test, *(i for ids in plan.train.values() for i in ids)})
    shards = [image_ids[i : i + RENDER_SHARD] for i in range(0, len(image_ids), RENDER_SHARD)]
    what = "Rendering label masks and images" if params.write_images else "Rendering label masks"
    futures = [render_shard.submit(stage, sources.instances, coco_root, shard, params) for shard in shards]
    progress.gather(futures, what, len(image_ids), units=int)
    return len(image_ids)


@flow(name="build-coco-cd")
def build_coco_cd(
    coco_root: Path,
    stuff_root: Path,
    out: Path,
    params: CocoCdParams | None = None,
    publish_repo: Path | None = None,
    publish_data_dir: str = "data",
) -> dict[str, Any]:
    """Build COCO-CD from a COCO 2017 root and COCO-Stuff annotations into ``out``.

    The output is built in a staging directory and replaces ``out`` only when complete. With
    ``publish_repo``, the last step publishes a DVC version of ``publish_data_dir`` in that repo.

    Returns:
        A summary: output path, counts at every stage, coverage and group-count tables, skipped items.

    Raises:
        InputError, AnnotationError: bad inputs (under ``on_error=fail`` for item-level problems).
        InsufficientDataError: the groups cannot supply the requested val/test sizes or ρ.
    """
    params = params or CocoCdParams()
    coco_root, stuff_root, out = Path(coco_root), Path(stuff_root), Path(out)
    policy = ImportPolicy(on_error=params.on_error)
    logger = get_run_logger()

    sources = load_sources(coco_root, stuff_root, policy)
    candidates, selection = select_candidates(sources, params, policy)
    records = label_contexts(sources, candidates, params)
    usable = check_image_files(coco_root, records, policy) if params.write_images else [
        r for r in records if r.context != cd.UNKNOWN]
    plan = plan_splits(usable, params)

    with staged_directory(out) as stage:
        tables = write_records(stage, sources, records, usable, plan, params, policy)
        rendered = _render_all(stage, sources, coco_root, plan, params)
        counts = {
            "source_images": len(sources.instances.images),
            **selection,
            "context": {c: sum(r.context == c for r in records) for c in (*cd.CONTEXTS, cd.UNKNOWN)},
            "usable": len(usable),
            "rendered": rendered,
            "train_per_class_total": plan.per_class_total,
            "splits": tables["group_counts"],
        }
        manifest = build_manifest(
            dataset="coco_cd", builder_version=cd.BUILDER_VERSION, root=stage,
            params=params.model_dump(mode="json"), inputs=sources.files, counts=counts,
            seed=params.seed, skipped=len(policy.report),
        )
        write_manifest(stage, manifest)
    if len(policy.report):
        logger.warning("skipped %d item(s); see %s", len(policy.report), out / "skipped.json")
    summary = {"out": str(out), "counts": counts, "coverage": tables["coverage"], "skipped": policy.report.counts()}
    if publish_repo is not None:
        summary["publish"] = publish_data(repo=str(publish_repo), data_dir=publish_data_dir)
    return summary
