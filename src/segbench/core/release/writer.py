"""Writing a release folder from a :class:`ReleasePlan`: parquet, native files, card, datasheet, licences,
Croissant and gallery, staged next to the output and swapped in only when everything is written and
the Croissant metadata validates (a failed or killed release leaves the previous one as it was).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from segbench.core.errors import OutputError
from segbench.core.io import atomic_write_bytes, atomic_write_text, sha256_file, write_json
from segbench.core.release import card, croissant, licences
from segbench.core.release.parquet import Shard, pyarrow_version, write_split
from segbench.core.release.plan import Licence, ReleasePlan, Table
from segbench.core.resume import check_removable
from segbench.core.versioning import DatasetSource
from segbench.schemas.release import ReleaseFile, ReleaseInfo, ReleaseResult


def stage_for(out: Path) -> Path:
    stage = out.with_name(f".{out.name}.partial")
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    return stage


def write_table(stage: Path, plan: ReleasePlan, table: Table, withheld: list[str]) -> list[Shard]:
    """One split's parquet shards; rows whose image is not embedded are listed in ``withheld``."""
    id_column = next((name for name in ("pair_id", "image_id", "id") if name in plan.features), None)

    def rows() -> Iterator[Mapping[str, Any]]:
        for row in table.rows():
            if plan.has_images and "image" in row and row["image"] is None:
                withheld.append(f"{table.config}/{table.split}/{row.get(id_column)}")
            yield row

    return write_split(stage, table.config, table.split, plan.features.arrow_schema, rows())


def write_native(stage: Path, plan: ReleasePlan, source: DatasetSource) -> int:
    """Copy the files the official evaluators read, byte for byte."""
    for target, relpath in sorted(plan.native.items()):
        atomic_write_bytes(stage / target, source.read_bytes(relpath), durable=False)
    return len(plan.native)


def write_documents(stage: Path, plan: ReleasePlan, info: ReleaseInfo, shards: dict[tuple[str, str], list[Shard]],
                    withheld: list[str], gallery_files: list[str]) -> None:
    annotations = Licence(id=info.annotations_license or "other", name=info.annotations_license or "",
                                   url=None, redistributable=True, applies_to="the annotations of this release")
    sources = list({(lic.id, lic.name, lic.applies_to): lic for lic in plan.licences}.values())
    terms = licences.licences_json(annotations, sources, plan.image_licences, withheld)
    write_json(stage / "licenses.json", terms, indent=1)
    atomic_write_text(stage / "LICENSES.md", licences.licences_markdown(plan.pretty_name, terms))
    write_json(stage / "splits.json", {"seed": plan.seed, "version": plan.version, "pyarrow": pyarrow_version(),
                                       "ids": plan.chosen_ids}, indent=1)
    atomic_write_text(stage / "README.md", card.card(plan, info, shards, gallery_files, len(withheld)))
    atomic_write_text(stage / "DATASHEET.md", card.datasheet(plan, info, len(withheld)))
    croissant.write_and_validate(stage, croissant.croissant(plan, info, shards))


def write_gallery(stage: Path, plan: ReleasePlan) -> list[str]:
    folder = stage / "gallery"
    folder.mkdir(exist_ok=True)
    return plan.gallery(folder)


def swap_in(stage: Path, out: Path) -> None:
    """Replace ``out`` by the finished stage (the old release is removed only once the new one is whole)."""
    if out.exists():
        check_removable(out, "the previous release")
    try:
        if out.exists():
            old = out.with_name(f".{out.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(out, old)
            os.replace(stage, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            out.parent.mkdir(parents=True, exist_ok=True)
            os.replace(stage, out)
    except OSError as exc:
        raise OutputError(f"cannot move the release into place ({exc.strerror or exc})", path=out,
                          hint="check the folder's permissions and that nothing holds it open") from exc


def result(plan: ReleasePlan, out: Path, withheld: list[str]) -> ReleaseResult:
    files = [ReleaseFile(path=path.relative_to(out).as_posix(), size=path.stat().st_size, sha256=sha256_file(path))
             for path in sorted(out.rglob("*")) if path.is_file() and not path.relative_to(out).parts[0] == "native"]
    embedded = sum(sum(splits.values()) for splits in plan.configs().values()) - len(withheld) \
        if plan.has_images and "image" in plan.features else 0
    return ReleaseResult(dataset=plan.name, out=out, version=plan.version, configs=plan.configs(), files=files,
                         embedded_images=embedded, withheld_images=len(withheld))
