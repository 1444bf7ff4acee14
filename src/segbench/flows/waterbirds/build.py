"""The Waterbirds-seg build flow: CUB + Places → place assignment → splits → composites + manifest.

Layout under the dataset root (like COCO-CD)::

    species.json                        species → landbird/waterbird, substring-mislabel report
    tables/group_counts.{json,md}       group counts per split and ρ
    splits/rho_<ρ>/{train,val,test}.json
    images/<id:012d>.png                composited RGB images (the bird image's size)
    masks/<id:012d>.png                 label maps (0 background, 1 landbird, 2 waterbird)
    manifest.json

Tasks are coarse (one per stage, rendering in shards), with Prefect's input hashing off. The build
key covers the CUB lists, the bird images and segmentations, the place folders, the params and the
builder version: a rebuild with the same key does nothing, and a killed build resumes in its stage,
where every finished render shard (a unit) is kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from PIL import Image
from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from segbench import progress
from segbench.core.build import Build, Built, Stage, run_build
from segbench.core.errors import AnnotationError, ImportPolicy, InputError
from segbench.core.io import (
    atomic_write_bytes,
    image_size,
    png_bytes,
    read_json,
    source_path,
    write_json,
)
from segbench.core.reports import write_skip_report
from segbench.core.resume import hash_inputs
from segbench.core.splits import SplitPlan
from segbench.flows.prefect_ui import from_params, publish_build, run_name, task_name
from segbench.flows.publish import publish_data
from segbench.flows.units import UNIT, count_units
from segbench.schemas.waterbirds import WaterbirdsBuildSummary, WaterbirdsStep
from segbench.tasks.flip import outputs as flip_outputs
from segbench.tasks.waterbirds import dataset as wb
from segbench.tasks.waterbirds import versions

if TYPE_CHECKING:
    from segbench.flows.rebuild import RebuildRun

RENDER_SHARD = 200
GROUP_NAMES = [f"{c} on {a}" for c in wb.CLASSES for a in wb.CONTEXTS]  # "landbird on water"


@task(**task_name("load-waterbirds-sources"), cache_policy=NO_CACHE)
def load_birds(cub_root: Path, places_root: Path, params: wb.WaterbirdsParams, policy: ImportPolicy
               ) -> tuple[list[wb.Bird], dict[int, tuple[int, int]], dict[str, list[str]]]:
    """Read both trees and check every bird's image and segmentation: the usable birds, their sizes
    and the place images. A bad bird fails the build, or is left out and recorded in ``policy``
    (``--on-error skip``) before any random draw, so the draws see only usable birds."""
    sizes: dict[int, tuple[int, int]] = {}
    usable = []
    for bird in progress.track(wb.read_cub(cub_root), "Reading bird images"):
        try:
            sizes[bird.image_id] = _bird_size(Path(cub_root), bird)
            usable.append(bird)
        except AnnotationError as error:
            policy.handle(error)
    return usable, sizes, wb.read_places(places_root, (*params.land_places, *params.water_places))


def _bird_size(cub_root: Path, bird: wb.Bird) -> tuple[int, int]:
    """The bird image's size, read from its header and its segmentation's (they must agree).

    A bad file is an :class:`AnnotationError` naming the bird, so ``--on-error skip`` can leave it out.
    """
    item = f"image {bird.image_id}"
    try:
        image = source_path(cub_root / "images", bird.path, item=item, path=cub_root / "images.txt")
        size = image_size(image, item=item, hint="restore the CUB image")
        mask = wb.segmentation_path(cub_root, bird)
        mask_size = image_size(mask, item=item, hint="restore the CUB segmentation")
        if mask_size != size:
            raise wb.mask_size_error(image, size, mask, mask_size)
    except InputError as error:
        raise AnnotationError(f"{item}: {error.message}", path=error.path, item=str(bird.image_id),
                              hint=f"{error.hint or 'fix or remove the file'}, or build with --on-error skip") from error
    return size


@task(**task_name("draw-splits"), cache_policy=NO_CACHE)
def plan_splits(birds: list[wb.Bird], types: dict[int, int], sizes: dict[int, tuple[int, int]],
                places: dict[str, list[str]], params: wb.WaterbirdsParams) -> tuple[dict[int, wb.Record], SplitPlan]:
    """The Waterbirds construction (:func:`segbench.tasks.waterbirds.dataset.plan_splits`) of the birds
    of these types, and a record, with its place image, for every composite a split holds."""
    plan = wb.plan_splits(types, {b.image_id: b.cub_split for b in birds}, params, GROUP_NAMES)
    place_files = wb.assign_places(plan.composites, places, params)
    by_id = {b.image_id: b for b in birds}
    records = {i: wb.Record(i, by_id[bird], types[bird], a, place_files[i], *sizes[bird])
               for i, (bird, a) in plan.composites.items()}
    return records, plan.splits


class _Tables(TypedDict):
    group_counts: dict[str, dict[str, list[int]]]
    mislabels: list[dict[str, Any]]


@task(**task_name("write-records"), cache_policy=NO_CACHE)
def write_records(stage: Path, birds: list[wb.Bird], records: dict[int, wb.Record], plan: SplitPlan,
                  params: wb.WaterbirdsParams) -> _Tables:
    species = wb.species_table(birds, params.species_match)
    write_json(stage / "species.json", species, indent=1)
    counts = plan.group_counts({i: r.group_id for i, r in records.items()})
    flip_outputs.write_group_counts(stage, counts, GROUP_NAMES, wb.CLASSES, wb.CONTEXTS)
    flip_outputs.write_splits(stage, plan, "Waterbirds-seg",
                              lambda ids, description: wb.split_coco(records, ids, description))
    return {"group_counts": counts, "mislabels": species["substring_mislabels"]}


# Items finished inside render shards advance the "Rendering" progress as they finish.
RENDER_CHANNEL = "waterbirds.render"


@task(**task_name("render-shard"), **UNIT)
def render_shard(unit_key: str, stage: Path, cub_root: Path, places_root: Path, records: list[wb.Record]) -> int:
    """Composite one shard's birds into the stage (a unit: a rerun of the same stage skips it)."""
    for record in records:
        image, label = wb.render(cub_root, places_root, record.bird, record.place_file, record.y)
        stem = f"{record.image_id:012d}"
        atomic_write_bytes(stage / "masks" / f"{stem}.png", png_bytes(Image.fromarray(label, mode="L")),
                           durable=False)
        # Level 1: photos encode several times faster for a little more space.
        atomic_write_bytes(stage / "images" / f"{stem}.png", png_bytes(image, compress_level=1), durable=False)
        progress.item_done(RENDER_CHANNEL)
    return len(records)


def _render_all(stage: Stage, cub_root: Path, places_root: Path, records: dict[int, wb.Record], plan: SplitPlan,
                shard_size: int) -> tuple[int, dict[str, int]]:
    ids = sorted({*plan.val, *plan.test, *(i for train in plan.train.values() for i in train)})
    shards = [[records[i] for i in ids[k : k + shard_size]] for k in range(0, len(ids), shard_size)]
    # The key names the shard's first and last bird: a rerun with another shard size reuses nothing wrong.
    futures = [render_shard.submit(stage.unit_key(f"render/{s[0].image_id}-{s[-1].image_id}"), stage.path,
                                   cub_root, places_root, s) for s in shards]
    progress.gather(futures, "Compositing birds on places", len(ids), units=int, channel=RENDER_CHANNEL)
    return len(ids), count_units(futures)


def source_files(cub_root: Path, places_root: Path, params: wb.WaterbirdsParams) -> dict[str, Path]:
    """Every file the build reads, by label (a folder stands for the files under it)."""
    files = {name: cub_root / name for name in wb.CUB_FILES}
    files |= {"images": cub_root / "images", "segmentations": cub_root / "segmentations"}
    return files | {f"places:{place}": places_root / place for place in (*params.land_places, *params.water_places)}


@flow(name="build-waterbirds",
      flow_run_name=run_name("build-waterbirds", from_params(wb.WaterbirdsParams, rho="rhos", seed="seed")))
def build_waterbirds(
    cub_root: Path,
    places_root: Path,
    out: Path,
    params: wb.WaterbirdsParams | None = None,
    publish_repo: Path | None = None,
    publish_data_dir: str = "data",
    shard_size: int = RENDER_SHARD,
    force: bool = False,
) -> WaterbirdsBuildSummary:
    """Build Waterbirds-seg from a CUB-200-2011 root and a Places root into ``out``.

    Birds are composited in units of ``shard_size`` (the grain of resume and of Dask tasks; it
    does not change the output). Under ``params.on_error`` skip, birds whose image or segmentation
    is missing or unreadable are left out and listed in ``skipped.json``.

    Only birds that land in some split are rendered. The output replaces ``out`` only when complete;
    with ``publish_repo`` the last step publishes a DVC version of ``publish_data_dir``. When ``out``
    was built with the same build key nothing is done (``force`` rebuilds anyway).

    Returns:
        A summary: output path, ``up_to_date``, counts (birds per type and group, rendered, splits),
        the species that substring matching would mislabel and ``units`` (render shards computed /
        reused from a killed run).

    Raises:
        InputError: a source file is missing or unreadable.
        InsufficientDataError: the groups cannot supply the requested val/test sizes or ρ.
    """
    params = params or wb.WaterbirdsParams()
    cub_root, places_root, out = Path(cub_root), Path(places_root), Path(out)
    logger = get_run_logger()
    hashes = hash_inputs(source_files(cub_root, places_root, params),
                          hint="--cub-root must hold the CUB lists, images/ and segmentations/; "
                               "--places-root one folder per place")
    build = Build(out=out, dataset="waterbirds_seg", logic_version=versions.BUILD,
                  params=params.model_dump(mode="json"), input_hashes=hashes)

    def prepare() -> tuple[ImportPolicy, list[wb.Bird], dict[int, int], dict[int, wb.Record], SplitPlan]:
        policy = ImportPolicy(on_error=params.on_error)
        birds, sizes, places = load_birds(cub_root, places_root, params, policy)
        types = wb.bird_types(birds, params.species_match)
        return policy, birds, types, *plan_splits(birds, types, sizes, places, params)

    summary = run_build(build, lambda stage, loaded: _build(stage, cub_root, places_root, params, shard_size,
                                                            *loaded),
                        WaterbirdsBuildSummary, force=force, prepare=prepare, logger=logger,
                        finished=lambda _manifest: {"mislabels": _mislabels(out),
                                                    "skipped": read_json(out / "skipped.json")["by_error"]})
    publish_build("waterbirds", summary)
    if not summary.up_to_date and summary.mislabels and params.species_match == "tokens":
        logger.info("substring matching would mislabel %d species as waterbirds; see species.json",
                    len(summary.mislabels))
    if summary.skipped and not summary.up_to_date:
        logger.warning("skipped %d bird(s); see %s", sum(summary.skipped.values()), out / "skipped.json")
    if publish_repo is not None:
        summary.publish = publish_data(repo=str(publish_repo), data_dir=publish_data_dir)
    return summary


def _build(stage: Stage, cub_root: Path, places_root: Path, params: wb.WaterbirdsParams, shard_size: int,
           policy: ImportPolicy, birds: list[wb.Bird], types: dict[int, int], records: dict[int, wb.Record],
           plan: SplitPlan) -> Built:
    """Write the tables, splits, skip report and composites into ``stage``; the counts, mislabels and units."""
    tables = write_records(stage.path, birds, records, plan, params)
    write_skip_report(stage.path, policy.report)
    rendered, units = _render_all(stage, cub_root, places_root, records, plan, shard_size)
    counts = {
        "birds": len(birds),
        "per_class": {c: sum(t == y for t in types.values()) for y, c in enumerate(wb.CLASSES)},
        "per_cub_split": {split: sum(b.cub_split == split for b in birds) for split in ("train", "test")},
        "per_group": {n: sum(r.group_id == g for r in records.values()) for g, n in enumerate(GROUP_NAMES)},
        "rendered": rendered,
        "train_per_class_total": plan.per_class_total,
        "splits": tables["group_counts"],
    }
    return Built(counts=counts, units=units, seed=params.seed, skipped=len(policy.report),
                 extras={"mislabels": tables["mislabels"], "skipped": policy.report.counts()})


def _mislabels(out: Path) -> list[dict[str, Any]]:
    """The species substring matching would mislabel, read back from a finished build."""
    return read_json(out / "species.json")["substring_mislabels"]


# --- the rebuild plan's [waterbirds] step --------------------------------------------------------------


def plan_step(run: RebuildRun, step: WaterbirdsStep) -> WaterbirdsBuildSummary:
    """Build Waterbirds-seg from the ``[waterbirds]`` table of a rebuild plan."""
    return run.call(build_waterbirds, step.cub_root, step.places_root, run.dataset_dir("waterbirds"), step.params)
