"""Writing a COCO-CD build: context evidence, tables, split files, label masks and images.

Every function writes into a staging directory given by the caller (the flow swaps it in when the
whole build succeeded) and returns what it wrote; :func:`finished_summary` reads a finished build
back. Layout under the dataset root::

    context.jsonl                       one evidence row per retained image
    tables/context_coverage.{json,md}   seed 002 Table 4
    tables/group_counts.{json,md}       seed 002 Table 3
    splits/rho_<ρ>/{train,val,test}.json
    masks/<id:012d>.png                 size × size label maps (0 bg, 1 cat, 2 dog)
    images/<id:012d>.png                size × size RGB images
    skipped.json                        items left out under the skip policy
    manifest.json
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypedDict

from segbench.core.coco import CocoIndex
from segbench.core.io import atomic_write_bytes, atomic_write_text, png_bytes, read_json, write_json, write_jsonl
from segbench.core.reports import markdown_table
from segbench.core.splits import SplitPlan
from segbench.schemas.coco_cd import CocoCdParams, ContextRecord
from segbench.tasks.coco_cd.selection import CONTEXTS, image_path, label_mask, resized_image, split_coco
from segbench.tasks.flip import outputs as flip_outputs


def group_names(params: CocoCdParams) -> list[str]:
    """Readable names of groups 0..3: ``cat indoors``, ``dog outdoors`` (as the evaluation reports name them)."""
    return [f"{c} {a}s" for c in params.classes for a in CONTEXTS]


def write_context(stage: Path, records: Sequence[ContextRecord]) -> Path:
    return write_jsonl(stage / "context.jsonl", (r.model_dump(by_alias=True) for r in records))


def write_coverage(stage: Path, coverage: dict[str, dict[str, Any]]) -> list[Path]:
    rows = [[name, t["images"], t["indoor"], t["indoor_share"], t["outdoor"], t["outdoor_share"],
             t["unknown"], t["unknown_share"]] for name, t in coverage.items()]
    text = ("# Context coverage of the retained exclusive images\n\n"
            "Unknown images are excluded from every split.\n\n"
            + markdown_table(["class", "images", "indoor", "share", "outdoor", "share", "unknown", "share"], rows))
    return [write_json(stage / "tables" / "context_coverage.json", coverage, indent=1),
            atomic_write_text(stage / "tables" / "context_coverage.md", text)]


def write_group_counts(stage: Path, counts: dict[str, dict[str, list[int]]], params: CocoCdParams) -> list[Path]:
    return flip_outputs.write_group_counts(stage, counts, group_names(params), params.classes, CONTEXTS)


def write_splits(
    stage: Path, instances: CocoIndex, records: dict[int, ContextRecord], plan: SplitPlan, params: CocoCdParams
) -> list[Path]:
    return flip_outputs.write_splits(stage, plan, "COCO-CD",
                                     lambda ids, description: split_coco(instances, records, ids, params, description))


def render_slice(instances: CocoIndex, image_ids: Sequence[int], params: CocoCdParams) -> CocoIndex:
    """The part of ``instances`` that renders ``image_ids``: their records and target-class annotations.

    A shard of the render stage gets this instead of the whole index, so a task sent to another
    process carries a few hundred annotations rather than every annotation of COCO.
    """
    wanted = {instances.category_id(name) for name in params.classes}
    annotations = [ann for image_id in image_ids for ann in instances.anns_by_image.get(image_id, [])
                   if ann["category_id"] in wanted]
    part = CocoIndex(path=instances.path, images={i: instances.images[i] for i in image_ids},
                     categories={i: instances.categories[i] for i in sorted(wanted)}, annotations=annotations,
                     info=instances.info, licenses=instances.licenses)
    part.split_paths = dict(instances.split_paths)
    return part


def write_image_and_mask(
    stage: Path, instances: CocoIndex, coco_root: Path, image_id: int, params: CocoCdParams
) -> str | None:
    """The label mask and (unless disabled) the resized image of one image; the source image's name, if read."""
    stem = f"{image_id:012d}"
    mask = png_bytes(label_mask(instances, image_id, params))
    atomic_write_bytes(stage / "masks" / f"{stem}.png", mask, durable=False)
    if params.write_images:
        name = instances.images[image_id]["file_name"]
        image = resized_image(image_path(coco_root, name, image_id), params.size)
        # Level 1 encodes a 512² photo 4x faster than the default for 20% more bytes.
        atomic_write_bytes(stage / "images" / f"{stem}.png", png_bytes(image, compress_level=1), durable=False)
        return name
    return None


class _FinishedExtras(TypedDict):
    coverage: dict[str, dict[str, Any]]
    skipped: dict[str, int]


def finished_summary(out: Path) -> _FinishedExtras:
    """What a build summary reports besides its counts, read back from a finished build (coverage, skips)."""
    skipped = read_json(out / "skipped.json")
    return {"coverage": read_json(out / "tables" / "context_coverage.json"), "skipped": skipped["by_error"]}
