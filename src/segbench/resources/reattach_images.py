"""Put the withheld images back into this release, from your own copy of the source images.

    python reattach_images.py /path/to/PartImageNet/images [--release DIR]

The release's rows keep each image's ``file_name`` and ``image_sha256``; this script finds every
withheld image by its file name anywhere under the folder you give, checks its sha256, and rewrites
the parquet files with the image bytes embedded (``croissant.json`` gets their new checksums). If
any image is missing or differs, nothing is written and each one is listed.

Needs Python 3.9+ and pyarrow (which the Hugging Face ``datasets`` library installs); nothing else.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

# The settings the release was written with, so a re-attached shard is as plain as the original.
WRITER = {"compression": "zstd", "compression_level": 3, "use_dictionary": True, "write_statistics": True,
          "data_page_version": "1.0", "store_schema": True}


def index_images(root: Path) -> dict[str, Path]:
    """Every file under ``root`` by its name (ImageNet's names are unique: n01440764_10043.JPEG)."""
    found: dict[str, Path] = {}
    for folder, _, names in os.walk(root):
        for name in names:
            found.setdefault(name, Path(folder) / name)
    return found


def fill(table: pa.Table, images: dict[str, Path], problems: list[str]) -> tuple[pa.Table, int]:
    """``table`` with its null images filled; problems are appended (file missing, sha256 differs)."""
    cells = table.column("image").to_pylist()
    names = table.column("file_name").to_pylist()
    digests = (table.column("image_sha256").to_pylist() if "image_sha256" in table.column_names
               else [None] * table.num_rows)
    filled = 0
    for row, cell in enumerate(cells):
        if cell is not None:
            continue
        name = Path(names[row]).name
        path = images.get(name)
        if path is None:
            problems.append(f"{names[row]}: no file named {name} under the folder given")
            continue
        data = path.read_bytes()
        if digests[row] and hashlib.sha256(data).hexdigest() != digests[row]:
            problems.append(f"{names[row]}: {path} differs from the image the release was built from (sha256)")
            continue
        cells[row] = {"bytes": data, "path": name}
        filled += 1
    column = pa.array(cells, type=table.schema.field("image").type)
    return table.set_column(table.schema.get_field_index("image"), "image", column), filled


def update_croissant(release: Path, shards: list[Path]) -> None:
    path = release / "croissant.json"
    if not path.is_file():
        return
    document = json.loads(path.read_text(encoding="utf-8"))
    changed = {shard.relative_to(release).as_posix(): shard for shard in shards}
    for entry in document.get("distribution", []):
        shard = changed.get(entry.get("contentUrl", ""))
        if shard is not None:
            entry["sha256"] = hashlib.sha256(shard.read_bytes()).hexdigest()
            entry["contentSize"] = f"{shard.stat().st_size} B"
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("images", type=Path, help="a folder holding the source images (searched recursively)")
    parser.add_argument("--release", type=Path, default=Path(__file__).resolve().parent,
                        help="the release folder (default: this script's folder)")
    args = parser.parse_args(argv)
    if not args.images.is_dir():
        print(f"error: {args.images} is not a folder; give the folder that holds your copy of the images",
              file=sys.stderr)
        return 2
    shards = sorted(args.release.glob("data/*/*.parquet"))
    if not shards:
        print(f"error: {args.release} holds no data/*/*.parquet; give the release folder with --release",
              file=sys.stderr)
        return 2
    images = index_images(args.images)
    problems: list[str] = []
    tables, filled = {}, 0
    for shard in shards:
        try:
            table = pq.read_table(shard)
        except (OSError, pa.ArrowException) as exc:
            print(f"error: {shard} is not a readable parquet file ({exc}); download the release again",
                  file=sys.stderr)
            return 2
        if "image" not in table.column_names or table.column("image").null_count == 0:
            continue
        if "file_name" not in table.column_names:
            print(f"error: {shard} has no file_name column; this script serves releases whose rows name their "
                  "image's file", file=sys.stderr)
            return 2
        tables[shard], count = fill(table, images, problems)
        filled += count
    if problems:
        print(f"error: {len(problems)} images cannot be attached; nothing was written:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    try:
        for shard, table in tables.items():
            tmp = shard.with_name(shard.name + ".partial")
            pq.write_table(table, tmp, **WRITER)
            os.replace(tmp, shard)
        update_croissant(args.release, list(tables))
    except OSError as exc:
        print(f"error: cannot write into {args.release} ({exc.strerror or exc}); check its permissions and free "
              "space, then run this again (shards already rewritten hold their images)", file=sys.stderr)
        return 1
    print(f"attached {filled} images in {len(tables)} parquet files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
