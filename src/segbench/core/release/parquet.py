"""Sharded, streaming, byte-reproducible parquet: ``data/<config>/<split>-NNNNN-of-NNNNN.parquet``.

Rows arrive one at a time and leave in row groups, so memory holds one row group, not a split. A
shard is closed once it passes ``max_shard_bytes``; the shard count is known only at the end, so
shards are written under temporary names and renamed once the split is done (a killed release
leaves no file that looks finished).

The writer's settings are pinned (compression, page and row-group sizes, no page index, no
timestamps anywhere), so the same rows give the same bytes under the same pyarrow version; the
release records that version. The schema carries the Hugging Face features in its ``huggingface``
metadata, which is how ``datasets`` learns that a column is an Image or a ClassLabel.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from segbench.core.errors import OutputError
from segbench.core.io import sha256_file

MAX_SHARD_BYTES = 500 * 1000 * 1000  # the Hub's recommended ceiling for one parquet file
ROW_GROUP_BYTES = 64 * 1000 * 1000  # ~ one row group in memory at a time
ROW_GROUP_ROWS = 1000

# Pinned writer settings: part of what makes two releases byte-identical.
WRITER_SETTINGS: Mapping[str, Any] = {
    "compression": "zstd",
    "compression_level": 3,
    "use_dictionary": True,
    "write_statistics": True,
    "data_page_version": "1.0",
    "write_page_index": False,
    "write_page_checksum": False,
    "store_schema": True,
}


def pyarrow_version() -> str:
    return pa.__version__


@dataclass(frozen=True)
class Shard:
    """One parquet file of a split: its path relative to the release, rows, bytes and sha256."""

    path: str
    rows: int
    size: int
    sha256: str


def shard_name(split: str, index: int, count: int) -> str:
    return f"{split}-{index:05d}-of-{count:05d}.parquet"


def _rough_size(value: Any) -> int:
    """Bytes a row costs in memory, roughly: its byte strings dominate."""
    if isinstance(value, bytes | str):
        return len(value)
    if isinstance(value, Mapping):
        return 64 + sum(map(_rough_size, value.values()))
    if isinstance(value, list | tuple):
        return 8 + sum(map(_rough_size, value))
    return 8


def write_split(release: Path, config: str, split: str, schema: pa.Schema, rows: Iterable[Mapping[str, Any]],
                *, max_shard_bytes: int = MAX_SHARD_BYTES) -> list[Shard]:
    """Write one split's rows as shards under ``release/data/<config>/`` and return them.

    Raises:
        OutputError: the folder cannot be written (disk full, permissions).
    """
    folder = release / "data" / config
    temporary: list[tuple[Path, int]] = []
    writer: pq.ParquetWriter | None = None
    batch: list[Mapping[str, Any]] = []
    batch_bytes = 0
    shard_rows = 0
    footer = min(1 << 20, max_shard_bytes // 100)

    def open_shard() -> pq.ParquetWriter:
        path = folder / f".{split}-{len(temporary):05d}.parquet.partial"
        temporary.append((path, 0))
        return pq.ParquetWriter(path, schema, **WRITER_SETTINGS)

    def flush() -> None:
        nonlocal writer, batch, batch_bytes, shard_rows
        if not batch:
            return
        # A shard is closed before the row group that would take it past the limit (its footer included).
        if writer is not None and temporary[-1][0].stat().st_size + batch_bytes > max_shard_bytes - footer:
            writer.close()
            writer, shard_rows = None, 0
        if writer is None:
            writer = open_shard()
        writer.write_table(pa.Table.from_pylist(batch, schema=schema), row_group_size=len(batch))
        shard_rows += len(batch)
        temporary[-1] = (temporary[-1][0], shard_rows)
        batch, batch_bytes = [], 0

    try:
        folder.mkdir(parents=True, exist_ok=True)
        for row in rows:
            batch.append(row)
            batch_bytes += _rough_size(row)
            if len(batch) >= ROW_GROUP_ROWS or batch_bytes >= min(ROW_GROUP_BYTES, max_shard_bytes // 4):
                flush()
        flush()
        if writer is not None:
            writer.close()
        if not temporary:  # an empty split is still a split: one shard with no rows
            pq.write_table(schema.empty_table(), folder / f".{split}-00000.parquet.partial", **WRITER_SETTINGS)
            temporary.append((folder / f".{split}-00000.parquet.partial", 0))
    except OSError as exc:
        for path, _ in temporary:
            path.unlink(missing_ok=True)
        raise OutputError(f"cannot write the parquet of {config}/{split} ({exc.strerror or exc})", path=folder,
                          hint="free disk space or fix the folder's permissions, then release again") from exc
    shards = []
    for index, (path, count) in enumerate(temporary):
        final = folder / shard_name(split, index, len(temporary))
        os.replace(path, final)
        shards.append(Shard(path=final.relative_to(release).as_posix(), rows=count, size=final.stat().st_size,
                            sha256=sha256_file(final)))
    return shards
