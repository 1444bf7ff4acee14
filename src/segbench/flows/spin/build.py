"""The SPIN dataset flow: PartImageNet + taxonomy + resolved crowd subparts → the hierarchical COCO files.

Layout under ``<data_root>/spin/``::

    taxonomy.yaml                         (input, from the taxonomy flow)
    crowd/resolved.json                   (input, from the crowd import)
    tasks/<stem>-<part_ann_id>.png        annotation overlays (``spin_round_items``)
    dataset/                              this flow's output, replaced only when complete
        spin_<split>_{wholes,parts,subparts}.json
        images/<split>/<stem>.JPEG
        stats/composition.{json,md}  stats/subparts.{json,md}  stats/subpart_boxplots.png
        skipped.json                      (bad records left out under ``on_error=skip``)
        manifest.json

The same selection (cap per super-category, seeded) feeds the annotation items and the build, so
the crowd is only asked about images the dataset keeps.

The build key covers the PartImageNet annotation files and images, the taxonomy, the resolved
subparts, the params and the builder version: a rebuild with the same key leaves ``dataset/`` as it
is. The build writes into a stage kept across a crash, swapped in for ``dataset/`` when complete.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from segbench import progress
from segbench.core.build import Build, Built, Stage, run_build
from segbench.core.coco_documents import CocoAnnotation
from segbench.core.errors import ImportPolicy
from segbench.core.io import fingerprint, sha256_file, write_json
from segbench.core.reports import write_skip_report
from segbench.core.resume import hash_inputs
from segbench.flows.prefect_ui import from_params, publish_build, run_name, task_name
from segbench.schemas.rounds import RoundItem
from segbench.schemas.spin import SpinBuildParams, SpinStep, load_taxonomy, read_resolved
from segbench.schemas.spin_results import SpinBuildSummary, SpinComposition
from segbench.tasks.spin import dataset as sd
from segbench.tasks.spin import stats as spin_stats
from segbench.tasks.spin import versions
from segbench.tasks.spin.items import round_items
from segbench.tasks.spin.partimagenet import SPLITS, SourceImage, annotation_path, read_partimagenet
from segbench.tasks.spin.stats_report import write_stats

if TYPE_CHECKING:
    from segbench.flows.rebuild import RebuildRun


def spin_paths(data_root: Path) -> dict[str, Path]:
    spin = Path(data_root) / "spin"
    return {"taxonomy": spin / "taxonomy.yaml", "resolved": spin / "crowd" / "resolved.json",
            "dataset": spin / "dataset"}


def source_version(source: Path, taxonomy: Path) -> str:
    """What annotation rounds are made from: the source's annotation files and the taxonomy."""
    files = sorted((source / "annotations").glob("*.json"))
    return fingerprint({"annotations": {p.name: sha256_file(p) for p in files}, "taxonomy": sha256_file(taxonomy)})


def selected_images(partimagenet_root: Path, params: SpinBuildParams, policy: ImportPolicy
                    ) -> tuple[Any, dict[int, SourceImage]]:
    """Read the source and apply the seeded per-super-category cap (shared by items and build)."""
    source = read_partimagenet(partimagenet_root, policy=policy)
    keep = sd.select_images(source.images.values(), cap=params.cap_per_supercategory, seed=params.seed)
    return source, {image_id: source.images[image_id] for image_id in keep}


def spin_round_items(partimagenet_root: Path, data_root: Path, params: SpinBuildParams | None = None,
                     taxonomy_path: Path | None = None) -> dict[tuple[str, str], list[RoundItem]]:
    """The annotation items of the selected images, per (super-category, part) with subparts.

    Overlays are written to ``<data_root>/spin/tasks/``. Raises ``InputError`` for a bad source or
    taxonomy (``AnnotationError`` for a bad record under the fail policy).
    """
    params = params or SpinBuildParams()
    taxonomy = load_taxonomy(taxonomy_path or spin_paths(data_root)["taxonomy"])
    _, images = selected_images(Path(partimagenet_root), params, ImportPolicy(on_error=params.on_error))
    return round_items(images.values(), data_root, decomposable=sd.decomposable_parts(taxonomy))


@task(**task_name("read-partimagenet"), cache_policy=NO_CACHE)
def load_source(partimagenet_root: Path, params: SpinBuildParams, policy: ImportPolicy
                ) -> tuple[Any, dict[int, SourceImage]]:
    return selected_images(partimagenet_root, params, policy)


@task(**task_name("write-spin-files"), cache_policy=NO_CACHE)
def write_files(stage: Path, images: dict[int, SourceImage], subparts: list[CocoAnnotation],
                categories: list[sd.SubpartCategory]) -> dict[str, dict[str, Any]]:
    cocos = sd.spin_cocos(images, subparts, categories)
    for split, levels in cocos.items():
        for level, coco in levels.items():
            write_json(stage / sd.coco_name(split, level), coco)
    for image in progress.track(sorted(images.values(), key=lambda i: i.image_id), "Copying images"):
        destination = stage / sd.image_destination(image)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(image.path, destination)
    return cocos


@task(**task_name("spin-statistics"), cache_policy=NO_CACHE)
def write_statistics(stage: Path, cocos: dict[str, dict[str, Any]]) -> SpinComposition:
    rows = [r for split, levels in cocos.items() for r in spin_stats.subpart_measures(levels, split)]
    per_part = [r for split, levels in cocos.items() for r in spin_stats.subparts_per_part(levels, split)]
    per_object = [r for split, levels in cocos.items() for r in spin_stats.subparts_per_object(levels, split)]
    table, summary = spin_stats.composition(cocos), spin_stats.summarize(rows, per_part, per_object)
    write_stats(stage / "stats", table=table, summary=summary, groups=spin_stats.grouped_values(rows, per_part),
                shapes=spin_stats.shape_values(rows))
    return table


@flow(name="build-spin", flow_run_name=run_name("build-spin", from_params(SpinBuildParams, seed="seed")))
def build_spin(partimagenet_root: Path, data_root: Path, params: SpinBuildParams | None = None,
               taxonomy_path: Path | None = None, resolved_path: Path | None = None,
               out: Path | None = None, force: bool = False) -> SpinBuildSummary:
    """Build SPIN from a PartImageNet root, the taxonomy and the resolved crowd subparts.

    Paths default to ``<data_root>/spin/{taxonomy.yaml, crowd/resolved.json, dataset}``; only the
    ``dataset`` folder is replaced (atomically), never ``spin/`` itself. When ``dataset`` was built
    with the same build key nothing is done (``force`` rebuilds anyway).

    Returns:
        A summary: output path, ``up_to_date``, counts (Table 1, images left out for having no parts or
        over the cap, resolved records outside the selection), ``units`` (none: the build is not cut
        into units) and the number of ``skipped`` records.

    Raises:
        InputError: a missing or malformed source, taxonomy or resolved file.
        AnnotationError: (``on_error=fail``) a bad image, part or resolved record.
    """
    params = params or SpinBuildParams()
    paths = spin_paths(data_root)
    taxonomy_path, resolved_path = Path(taxonomy_path or paths["taxonomy"]), Path(resolved_path or paths["resolved"])
    out = Path(out or paths["dataset"])
    logger = get_run_logger()
    hashes = hash_inputs(source_files(Path(partimagenet_root), taxonomy_path, resolved_path),
                          hint="build the taxonomy (segbench build spin-taxonomy) and import the crowd answers "
                               "(segbench spin import) first; --partimagenet holds annotations/ and images/")
    build = Build(out=out, dataset="spin", logic_version=versions.DATASET, params=params.model_dump(mode="json"),
                  input_hashes=hashes)
    policy = ImportPolicy(on_error=params.on_error)
    summary = run_build(build, lambda stage, loaded: _build(stage, params, policy, *loaded), SpinBuildSummary,
                        force=force,
                        prepare=lambda: _load(Path(partimagenet_root), taxonomy_path, resolved_path, params, policy),
                        logger=logger, finished=lambda manifest: {"skipped": manifest.skipped})
    if not summary.up_to_date and summary.skipped:
        logger.warning("left out %d bad records; see %s", summary.skipped, out / "skipped.json")
    publish_build("spin", summary)
    return summary


def _load(partimagenet_root: Path, taxonomy_path: Path, resolved_path: Path, params: SpinBuildParams,
          policy: ImportPolicy
          ) -> tuple[Any, dict[int, SourceImage], list[CocoAnnotation], list[sd.SubpartCategory], int]:
    """Read the source, the taxonomy and the resolved subparts: the source, the selected images, their
    subpart annotations, the subpart categories and how many resolved records fell outside the selection."""
    source, images = load_source(partimagenet_root, params, policy)
    categories = sd.subpart_categories(load_taxonomy(taxonomy_path))
    subparts, outside = sd.subpart_annotations(read_resolved(resolved_path), images, categories, policy=policy,
                                               path=resolved_path)
    return source, images, subparts, categories, outside


def _build(stage: Stage, params: SpinBuildParams, policy: ImportPolicy, source: Any, images: dict[int, SourceImage],
           subparts: list[CocoAnnotation], categories: list[sd.SubpartCategory], outside: int) -> Built:
    """Write the COCO files, images and statistics into ``stage``; the counts and skipped records."""
    cocos = write_files(stage.path, images, subparts, categories)
    table = write_statistics(stage.path, cocos)
    if len(policy.report):
        write_skip_report(stage.path, policy.report)
    counts = {"composition": table.model_dump(mode="json"), "without_parts": source.without_parts,
              "over_cap": len(source.images) - len(images), "resolved_outside_selection": outside,
              "per_supercategory": _per_super(images),
              "filters": sd.filter_counts(source.images, source.without_parts, images).model_dump(mode="json")}
    return Built(counts=counts, seed=params.seed, skipped=len(policy.report),
                 extras={"skipped": len(policy.report)})


def source_files(partimagenet_root: Path, taxonomy_path: Path, resolved_path: Path) -> dict[str, Path]:
    """Every file the build reads, by label (the images folder stands for the images under it)."""
    files = {f"partimagenet_{split}": annotation_path(partimagenet_root, split) for split in SPLITS}
    return files | {"partimagenet_images": partimagenet_root / "images", "taxonomy": taxonomy_path,
                    "resolved": resolved_path}


def _per_super(images: dict[int, SourceImage]) -> dict[str, int]:
    out: dict[str, int] = {}
    for image in images.values():
        out[image.supercategory] = out.get(image.supercategory, 0) + 1
    return dict(sorted(out.items()))


# --- the rebuild plan's [spin] step --------------------------------------------------------------------


def plan_step(run: RebuildRun, step: SpinStep) -> SpinBuildSummary:
    """Build SPIN from the ``[spin]`` table of a rebuild plan."""
    return run.call(build_spin, step.partimagenet_root, run.data_root, step.params, taxonomy_path=step.taxonomy,
                    resolved_path=step.resolved, out=run.dataset_dir("spin"))
