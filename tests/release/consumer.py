"""A consumer of a segbench release with only datasets, mlcroissant, pyarrow and pycocotools: no segbench.

    python consumer.py RELEASE_DIR DATASET

Loads every config the card declares, offline with sockets blocked, and checks the rows against the
native files; prints a JSON summary. Exits non-zero with the failed check's message.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import sys
from pathlib import Path


def _no_network(*_args, **_kwargs):
    raise OSError("network access is blocked in this consumer")


socket.socket.connect = _no_network  # type: ignore[method-assign]
socket.create_connection = _no_network  # type: ignore[assignment]
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"

import mlcroissant as mlc  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import yaml  # noqa: E402
from datasets import load_dataset  # noqa: E402
from PIL import Image  # noqa: E402
from pycocotools import mask as mask_utils  # noqa: E402
from pycocotools.coco import COCO  # noqa: E402


def card_header(folder: Path) -> dict:
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n"), "the card starts with a YAML header"
    return yaml.safe_load(text.split("---\n")[1])


NATIVE_SPLIT = {"validation": "val"}  # the Hub's split name → the native files' (the build's)


def native_counts(folder: Path, dataset: str, config: str, split: str) -> int:
    """Rows a split should have, read from the native files with pycocotools (or JSON for vocabularies)."""
    native = folder / "native"
    split = NATIVE_SPLIT.get(split, split)
    if dataset in ("coco_cd", "waterbirds"):
        return len(COCO(str(native / "splits" / config / f"{split}.json")).getImgIds())
    if dataset == "cafe":
        subset = "CAFE" if config == "all" else f"CAFE_{config}"
        coco = COCO(str(native / f"{subset}.json"))
        return len(coco.getAnnIds())  # one target mask per verified pair
    if dataset == "spin":
        return len(COCO(str(native / f"spin_{split}_wholes.json")).getImgIds())
    vocabulary = json.loads(next(native.glob("*.json")).read_text())
    return sum(len(entry.get(level, [])) for entry in vocabulary.values()
               for level in ("exact", "synonyms", "hyponyms", "meronyms"))


def check_images(table, image_columns: list[str]) -> int:
    """Every image cell holds bytes and no absolute path; returns how many were embedded."""
    embedded = 0
    for column in image_columns:
        for cell in table.column(column).to_pylist():
            if cell is None:
                continue  # withheld for its licence (LICENSES.md lists it)
            assert cell["bytes"], f"{column}: an image cell without bytes"
            assert not (cell["path"] or "").startswith("/"), f"{column}: an absolute path {cell['path']}"
            embedded += 1
    return embedded


def check_files(folder: Path, croissant: dict) -> int:
    """Every file of the release has a Croissant FileObject with its sha256; returns how many."""
    objects = {d["contentUrl"]: d["sha256"] for d in croissant["distribution"] if "contentUrl" in d}
    files = [p for p in folder.rglob("*") if p.is_file() and p.name != "croissant.json"]
    for path in files:
        relpath = path.relative_to(folder).as_posix()
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert objects.get(relpath) == digest, f"{relpath}: no sha256 or a wrong one"
    return len(files)


def check_snippet(folder: Path) -> None:
    """The card's "Load it" code runs as written, in the release folder."""
    card = (folder / "README.md").read_text(encoding="utf-8")
    code = re.search(r"## Load it\n\n```python\n(.*?)```", card, re.S).group(1)
    here = os.getcwd()
    os.chdir(folder)
    try:
        exec(compile(code, f"{folder}/README.md (Load it)", "exec"), {})
    finally:
        os.chdir(here)


def check_fields(folder: Path, header: dict) -> None:
    """The card's Data fields table describes every feature."""
    card = (folder / "README.md").read_text(encoding="utf-8")
    table = card.split("## Data fields", 1)[1].split("\n## ", 1)[0]
    for feature in header["dataset_info"][0]["features"]:
        assert f"| `{feature['name']}` |" in table, f"the card does not describe {feature['name']}"


def check_masks(dataset: str, folder: Path, ds, config: str, split: str) -> int:
    checked = 0
    for row in ds.select(range(min(len(ds), 5))):
        if dataset in ("coco_cd", "waterbirds"):
            native = np.asarray(Image.open(folder / "native" / "masks" / f"{row['image_id']:012d}.png"))
            assert np.array_equal(np.asarray(row["mask"]), native), f"mask of {row['image_id']} differs"
        elif dataset == "cafe":
            rle = {"size": row["target_rle"]["size"], "counts": row["target_rle"]["counts"].encode()}
            decoded = mask_utils.decode(rle)
            assert np.array_equal(np.asarray(row["target_mask"]) > 0, decoded > 0), f"pair {row['pair_id']}"
            assert int(mask_utils.area(rle)) == int(decoded.sum()) == int(row["target_area"]), "RLE area"
        elif dataset == "spin":
            for a in row["annotations"]:
                rle = {"size": a["rle"]["size"], "counts": a["rle"]["counts"].encode()}
                assert int(mask_utils.area(rle)) == int(a["area"]), f"annotation {a['id']}: RLE area"
        checked += 1
    return checked


def main(folder: Path, dataset: str) -> dict:
    header = card_header(folder)
    summary: dict = {"configs": {}}
    croissant = mlc.Dataset(jsonld=folder / "croissant.json")  # raises on an invalid document
    document = json.loads((folder / "croissant.json").read_text(encoding="utf-8"))
    assert "http://mlcommons.org/croissant/RAI/1.0" in document["conformsTo"], "no RAI vocabulary"
    summary["files"] = check_files(folder, document)
    check_fields(folder, header)
    check_snippet(folder)
    for entry in header["configs"]:
        config = entry["config_name"]
        for data_file in entry["data_files"]:
            assert list(folder.glob(data_file["path"])), f"{data_file['path']}: no file"
        ds = load_dataset(str(folder), config)
        streamed = load_dataset(str(folder), config, streaming=True)
        assert {split: sum(1 for _ in streamed[split]) for split in streamed} == {s: len(ds[s]) for s in ds}, \
            f"{config}: streaming gives other rows"
        assert sum(1 for _ in croissant.records(config)) == sum(len(ds[s]) for s in ds), \
            f"{config}: Croissant's records are not the parquet's rows"
        flat = load_dataset("parquet", data_files={f["split"]: str(folder / f["path"]) for f in entry["data_files"]})
        summary["configs"][config] = {}
        if config == "answers":  # every person's answers: pseudonyms only, no native file to match
            rows = ds["answers"]
            assert len(rows) > 0 and all(re.fullmatch(r"worker-\d{4}", w) for w in rows["worker"]), "a worker id leaks"
            summary["configs"][config] = {"rows": len(rows), "workers": len(set(rows["worker"]))}
            continue
        for split in ds:
            expected = native_counts(folder, dataset, config, split)
            assert len(ds[split]) == len(flat[split]) == expected, \
                f"{config}/{split}: {len(ds[split])} rows (parquet {len(flat[split])}), native {expected}"
            features = ds[split].features
            image_columns = [name for name, f in features.items() if type(f).__name__ == "Image"]
            paths = {f["split"]: f["path"] for f in entry["data_files"]}
            table = pq.read_table(next(folder.glob(paths[split])))
            embedded = check_images(table, image_columns)
            masks = check_masks(dataset, folder, ds[split], config, split)
            summary["configs"][config][split] = {"rows": len(ds[split]), "embedded": embedded, "masks": masks}
        names = {name: f.names for name, f in ds[next(iter(ds))].features.items() if hasattr(f, "names")}
        summary["configs"][config]["labels"] = names
        # Croissant's records are the parquet's rows, in order.
        first = next(iter(croissant.records(config)))
        firsts = [pq.read_table(path).slice(0, 1).to_pylist() for f in entry["data_files"]
                  for path in sorted(folder.glob(f["path"]))[:1]]
        key = next(k for k in ("pair_id", "image_id", "term") if k in firsts[0][0])
        value = first[f"{config}/{key}"]
        value = value.decode() if isinstance(value, bytes) else value
        assert value in {rows[0][key] for rows in firsts if rows}, \
            f"{config}: croissant's first record {value} is no file's first"
    assert "segbench" not in sys.modules, "the consumer imported segbench"
    return summary


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), sys.argv[2])))
