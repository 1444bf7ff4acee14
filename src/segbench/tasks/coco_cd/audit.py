"""The COCO-CD context audit (seed 002, Table 5): people check the automatic indoor/outdoor labels.

A stratified sample of the validation split (``per_group`` images from each cat/dog × indoor/outdoor
group, seeded) becomes a round; after ingest, the human majority label of each image is compared
with the automatic one, per group and overall. Images people call ``ambiguous`` are excluded from
the agreement and reported as a share; images with no majority (a tie) are counted apart.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path

from segbench.core.errors import InputError, InsufficientDataError
from segbench.core.manifest import read_manifest
from segbench.core.reports import markdown_table
from segbench.core.versioning import DatasetSource
from segbench.schemas.coco_cd import AuditRow, AuditTable
from segbench.schemas.flip import FlipImage
from segbench.schemas.manifest import Manifest
from segbench.schemas.rounds import ItemAnswer, Round, RoundItem
from segbench.tasks.flip.inputs import read_images

KIND = "coco_cd_context_audit"
CONTROL = "context"
LABELS = ("indoor", "outdoor", "ambiguous")
GROUP_NAMES = ("cat indoors", "cat outdoors", "dog indoors", "dog outdoors")  # as the evaluation reports name them


def sample_audit_items(
    val_images: Sequence[FlipImage], *, per_group: int, seed: int, dataset_dir: str, size: int,
    batch_by_group: bool = False,
) -> list[RoundItem]:
    """``per_group`` images from each group of a COCO-CD val split, as round items.

    Items show the dataset's resized images (``size`` × ``size``, the build's ``size`` param) and
    carry no automatic label (people must not see it); the audit reads it from the split. With
    ``batch_by_group`` each item's batch is its group (``cat-indoors`` ...), to launch group by group.

    Raises:
        InsufficientDataError: a group has fewer than ``per_group`` images.
    """
    rng = random.Random(seed)
    items = []
    for group, images in sorted(images_by_group(val_images, per_group).items()):
        for image in rng.sample(sorted(images, key=lambda i: i.id), per_group):
            items.append(RoundItem(item_id=str(image.id), image=f"{dataset_dir}/{image.image_file}",
                                   width=size, height=size,
                                   batch=group_batch(group) if batch_by_group else None))
    return sorted(items, key=lambda item: int(item.item_id))


def audit_sources(dataset: Path, per_group: int) -> tuple[Manifest, list[FlipImage]]:
    """The build's manifest and validation split, once they are known to serve an audit of
    ``per_group`` images a group (checked before any round is made, by the command and the flow).

    Raises:
        InputError: fewer than one image a group asked for, COCO-CD not built there, the build has no
            images (people must see them), or no validation split.
        InsufficientDataError: a group is too small.
    """
    if per_group < 1:
        raise InputError(f"an audit needs at least one image per group, not {per_group}", item="per_group",
                         hint="pass --per-group 1 or more")
    if not (dataset / "manifest.json").is_file():
        raise InputError("COCO-CD is not built here: the audit samples its validation split", path=dataset,
                         hint="build it first: segbench build coco-cd (or segbench demo), or pass --data-root")
    manifest = read_manifest(dataset)
    if not manifest.params.get("write_images", True):
        raise InputError("this build has no images (built with --no-images); people need to see them",
                         path=dataset, hint="rebuild COCO-CD with images, then create the round")
    val = read_val_split(dataset)
    images_by_group(val, per_group)
    return manifest, val


def read_val_split(dataset: Path) -> list[FlipImage]:
    """The images of the validation split of a COCO-CD build (shared by every ρ directory)."""
    candidates = sorted(dataset.glob("splits/rho_*/val.json"))
    if not candidates:
        raise InputError("no validation split found", path=dataset / "splits",
                         hint="build COCO-CD first (segbench build coco-cd)")
    return read_images(DatasetSource(dataset), candidates[0].relative_to(dataset).as_posix())


def images_by_group(val_images: Sequence[FlipImage], per_group: int) -> dict[int, list[FlipImage]]:
    """The split's images by group id.

    Raises:
        InsufficientDataError: a group has fewer than ``per_group`` images.
    """
    by_group: dict[int, list[FlipImage]] = {g: [] for g in range(4)}
    for image in val_images:
        by_group[image.group_id].append(image)
    for group, images in sorted(by_group.items()):
        if len(images) < per_group:
            raise InsufficientDataError(
                f"group {GROUP_NAMES[group]} has {len(images)} validation images; the audit asks for {per_group}",
                hint="lower --per-group, or build COCO-CD with a larger --val-per-group",
            )
    return by_group


def group_batch(group: int) -> str:
    """The batch name of a group's items in a round launched group by group (``cat-indoors``)."""
    return GROUP_NAMES[group].replace(" ", "-")


def audit_table(auto: Mapping[str, tuple[int, str]], answers: Sequence[ItemAnswer]) -> AuditTable:
    """Agreement between automatic and human context labels, per group and overall.

    Args:
        auto: item id → (group id, automatic context) from the dataset.
        answers: aggregated human answers (control ``context``).
    """
    by_item = {a.item_id: a for a in answers}
    rows = {name: AuditRow() for name in (*GROUP_NAMES, "overall")}
    for item_id, (group, label) in sorted(auto.items()):
        for row in (rows[GROUP_NAMES[group]], rows["overall"]):
            _count(row, label, by_item.get(item_id))
    for row in rows.values():
        row.ambiguous_share = row.ambiguous / row.answered if row.answered else None
        row.agreement = row.agree / row.judged if row.judged else None
    return AuditTable(groups={name: rows[name] for name in GROUP_NAMES}, overall=rows["overall"])


def _count(row: AuditRow, auto_label: str, answer: ItemAnswer | None) -> None:
    row.items += 1
    if answer is None or CONTROL not in answer.majority:  # nobody answered this image's context
        return
    row.answered += 1
    human = answer.people_label(CONTROL)
    if human is None:
        row.no_majority += 1
        row.settled_by_model += int(CONTROL in answer.model_settled)
    elif human == "ambiguous":
        row.ambiguous += 1
    else:
        row.judged += 1
        row.agree += int(human == auto_label)


def audit_markdown(table: AuditTable, *, round_key: str, dataset_version: str) -> str:
    """The audit table as Markdown (seed 002, Table 5 layout)."""
    rows = [[name, r.items, r.answered, r.ambiguous, r.ambiguous_share, r.no_majority, r.settled_by_model, r.judged,
             r.agree, r.agreement]
            for name, r in [*table.groups.items(), ("overall", table.overall)]]
    return (f"# COCO-CD context audit — round `{round_key}`\n\n"
            f"Automatic indoor/outdoor labels against the people's majority label on the validation images "
            f"of dataset version `{dataset_version[:12]}`. Agreement excludes ambiguous images and ties "
            f"of the people's answers, also the ties the aggregation model gave a label (settled by model).\n\n"
            + markdown_table(["group", "items", "answered", "ambiguous", "ambiguous share", "no majority",
                              "settled by model", "judged", "agree", "agreement"], rows))


def automatic_contexts(round_: Round, data_root: Path) -> dict[str, dict[str, str]]:
    """The context the COCO-Stuff rule gave each audited image: ``{item id: {"context": label}}``."""
    images = {str(image.id): image for image in read_val_split(Path(data_root) / round_.dataset)}
    return {item.item_id: {CONTROL: images[item.item_id].context} for item in round_.items if item.item_id in images}
