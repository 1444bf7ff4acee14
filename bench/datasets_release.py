"""What a user would otherwise run to release a COCO-CD build: a plain ``datasets`` script, one parquet per split.

    python bench/datasets_release.py BUILD_DIR OUT_DIR

Reads the build's split files as they are on disk (the balanced val/test and each ρ's train), and
writes the rows ``segbench release coco_cd`` writes (the image and label-mask files embedded, class,
context, group, size, source file) with ``Dataset.from_generator(...).to_parquet(...)``. Prints the
number of rows written. No segbench import: this is the baseline of ``bench/rows.py``'s release row.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from datasets import ClassLabel, Dataset, Features, Image, Value

CLASSES, CONTEXTS = ["cat", "dog"], ["indoor", "outdoor"]
FEATURES = Features({
    "image_id": Value("int64"), "image": Image(), "mask": Image(), "class": ClassLabel(names=CLASSES),
    "context": ClassLabel(names=CONTEXTS), "group_id": Value("int64"), "width": Value("int64"),
    "height": Value("int64"), "source_file": Value("string"),
})


def rows(build: Path, split_file: Path):
    for image in json.loads(split_file.read_text())["images"]:
        picture = build / image["image_file"]
        yield {"image_id": image["id"], "image": str(picture) if picture.is_file() else None,
               "mask": str(build / image["mask_file"]), "class": CLASSES.index(image["class"]),
               "context": CONTEXTS.index(image["context"]), "group_id": image["group_id"], "width": image["width"],
               "height": image["height"], "source_file": image["file_name"]}


def main(build: Path, out: Path) -> int:
    # A cache of its own each run: datasets would otherwise find the rows of the previous run by their
    # fingerprint and skip writing them, and the benchmark would time a cache hit, not a release.
    with tempfile.TemporaryDirectory(prefix="datasets-cache-") as cache:
        return _write(build, out, Path(cache))


def _write(build: Path, out: Path, cache: Path) -> int:
    written = 0
    rhos = sorted((build / "splits").glob("rho_*"))
    # val and test are balanced, the same files under every ρ: written once, as the release writes them
    files = [(f"balanced/{name}", rhos[0] / f"{name}.json") for name in ("val", "test")]
    files += [(f"{rho.name}/train", rho / "train.json") for rho in rhos]
    for name, path in files:
        dataset = Dataset.from_generator(rows, gen_kwargs={"build": build, "split_file": path}, features=FEATURES,
                                         cache_dir=str(cache))
        target = out / "data" / f"{name}.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        dataset.to_parquet(str(target))
        written += len(dataset)
    print(written)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
