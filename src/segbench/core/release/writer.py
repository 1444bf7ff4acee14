"""Writing a release folder from a :class:`ReleasePlan`: parquet, native files, card, datasheet, licences,
Croissant and gallery, staged next to the output and swapped in only when everything is written and
the Croissant metadata validates (a failed or killed release leaves the previous one as it was).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import segbench
from segbench.core.errors import OutputError
from segbench.core.io import atomic_write_bytes, atomic_write_text, sha256_bytes, sha256_file, write_json
from segbench.core.release import card, croissant, datasheet, licences
from segbench.core.release.parquet import Shard, pyarrow_version, write_split
from segbench.core.release.plan import ReleasePlan, Table
from segbench.core.resume import check_removable, check_stage_name_free
from segbench.core.versioning import DatasetSource
from segbench.schemas.release import ReleaseFile, ReleaseInfo, ReleaseResult


def stage_for(out: Path) -> Path:
    stage = out.with_name(f".{out.name}.partial")
    check_stage_name_free(stage)
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    return stage


@dataclass
class Collected:
    """What the rows said while they were written: each row's image licence and whether its bytes went in."""

    images: dict[str, str] = field(default_factory=dict)  # row id → license_id
    embedded: set[str] = field(default_factory=set)
    withheld: set[str] = field(default_factory=set)


def row_id_column(plan: ReleasePlan) -> str | None:
    return next((name for name in ("pair_id", "image_id", "id") if name in plan.features), None)


def write_table(stage: Path, plan: ReleasePlan, table: Table, collected: Collected) -> list[Shard]:
    """One split's parquet shards; each row's licence and image (embedded or withheld) go into ``collected``."""
    id_column = row_id_column(plan)

    def rows() -> Iterator[Mapping[str, Any]]:
        for row in table.rows():
            row_id = str(row.get(id_column) if id_column else None)
            if "license_id" in row:
                collected.images[row_id] = row["license_id"]
            if plan.has_images and "image" in row:
                (collected.withheld if row["image"] is None else collected.embedded).add(row_id)
            yield row

    return write_split(stage, table.folder or table.config, table.split, plan.features_of(table.config)[0].arrow_schema,
                       rows())


def write_native(stage: Path, plan: ReleasePlan, source: DatasetSource) -> dict[str, str]:
    """Put the files the official evaluators read in the stage, byte for byte (linked from the working
    tree where it can be, :meth:`DatasetSource.copy_to`), and the plan's own files; their sha256 by
    release path. The stage is a new folder swapped in whole, so a file needs no atomic write of its own."""
    digests = {}
    for target, relpath in sorted(plan.native.items()):
        (stage / target).parent.mkdir(parents=True, exist_ok=True)
        digests[target] = source.copy_to(relpath, stage / target)
    for target, data in sorted(plan.extra_files.items()):
        atomic_write_bytes(stage / target, data, durable=False)
        digests[target] = sha256_bytes(data)
    return digests


def release_licences(plan: ReleasePlan, info: ReleaseInfo, collected: Collected) -> licences.ReleaseLicences:
    maker = licences.maker_licence(info.annotations_license or "other", plan.maker_covers)
    return licences.derive(maker, plan.licences, collected.images, collected.embedded, sorted(collected.withheld))


def write_documents(stage: Path, plan: ReleasePlan, info: ReleaseInfo, shards: dict[tuple[str, str], list[Shard]],
                    collected: Collected, gallery_files: list[str], *, url: str | None = None,
                    digests: Mapping[str, str] | None = None) -> list[ReleaseFile]:
    """The licences, ``splits.json``, card, datasheet and, last, Croissant, which lists every other
    file (``digests``: the sha256 of files already known, by release path); every file but the
    parquet shards, Croissant included."""
    terms = release_licences(plan, info, collected)
    write_json(stage / "licenses.json", terms.to_json(), indent=1)
    atomic_write_text(stage / "LICENSES.md", terms.markdown(plan.pretty_name))
    write_json(stage / "splits.json", {"seed": plan.seed, "version": plan.version, "pyarrow": pyarrow_version(),
                                       "segbench": segbench.__version__, "ids": plan.chosen_ids}, indent=1)
    atomic_write_text(stage / "README.md", card.card(plan, info, shards, gallery_files, terms))
    atomic_write_text(stage / "DATASHEET.md", datasheet.datasheet(plan, info, terms))
    known = digests or {}
    files = [(name, size, known.get(name) or sha256_file(stage / name)) for name, size in _files(stage)
             if not name.startswith("data/")]
    written = croissant.write(stage, croissant.croissant(plan, info, shards, terms, files, url=url))
    files.append((written.name, written.stat().st_size, sha256_file(written)))
    return [ReleaseFile(path=name, size=size, sha256=digest) for name, size, digest in sorted(files)]


def _files(folder: Path) -> list[tuple[str, int]]:
    """Every file under ``folder``: its path relative to it (``/``-separated) and size, sorted by path."""
    found = []
    for root, _, names in os.walk(folder):
        prefix = Path(root).relative_to(folder).as_posix()
        for name in names:
            path = os.path.join(root, name)
            if os.path.isfile(path):
                found.append((name if prefix == "." else f"{prefix}/{name}", os.path.getsize(path)))
    return sorted(found)


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


def result(plan: ReleasePlan, out: Path, collected: Collected, shards: dict[tuple[str, str], list[Shard]],
           documents: list[ReleaseFile]) -> ReleaseResult:
    """What was released: every file but the native ones, with the sizes and digests written."""
    parquet = {shard.path: ReleaseFile(path=shard.path, size=shard.size, sha256=shard.sha256)
               for parts in shards.values() for shard in parts}
    files = sorted([*parquet.values(), *(f for f in documents if not f.path.startswith("native/"))],
                   key=lambda f: f.path)
    return ReleaseResult(dataset=plan.name, out=out, version=plan.version, configs=plan.configs(), files=files,
                         embedded_images=len(collected.embedded), withheld_images=len(collected.withheld))
