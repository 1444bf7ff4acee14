"""`segbench build waterbirds` and `segbench build vocab` as a user runs them, then `segbench publish`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.cli import run

from segbench.demo.vocab.captions import generate_demo_captions
from segbench.demo.waterbirds.birds import generate_demo_birds
from segbench.demo.world import generate_demo_world

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


def _first_bird(cub: Path) -> str:
    return (cub / "images.txt").read_text().splitlines()[0].split()[1]


def test_build_then_publish_through_the_command_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # publish versions the data root in the current folder's repository
    cub, places = generate_demo_birds(tmp_path / "birds", seed=0)
    (cub / "segmentations" / _first_bird(cub).replace(".jpg", ".png")).unlink()  # one bird without its mask
    run(tmp_path, "build", "waterbirds", "--cub-root", str(cub), "--places-root", str(places),
        "--val-per-group", "5", "--test-per-group", "10", code=1)  # fails on the bad bird by default
    built = run(tmp_path, "build", "waterbirds", "--cub-root", str(cub), "--places-root", str(places),
                "--val-per-group", "5", "--test-per-group", "10", "--on-error", "skip", "--shard-size", "7")
    assert "Group counts" in built.output and "landbird on water" in built.output
    skipped = json.loads((tmp_path / "data" / "waterbirds_seg" / "skipped.json").read_text())
    assert skipped["count"] == 1 and skipped["items"][0]["item"] == "1"

    world = tmp_path / "world"
    generate_demo_world(world, seed=0)
    captions = [arg for path in generate_demo_captions(world, seed=0) for arg in ("--captions", str(path))]
    vocab = run(tmp_path, "build", "vocab", *captions, "--categories", "coco_cd")
    assert "Vocabulary coco_cd" in vocab.output and (tmp_path / "data" / "vocab" / "coco_cd" / "coco_cd.json").is_file()
    entries = json.loads((tmp_path / "data" / "vocab" / "coco_cd" / "coco_cd.json").read_text())
    assert {name: entry["isthing"] for name, entry in entries.items()} == {"cat": True, "dog": True}

    published = run(tmp_path, "publish", "--init-git", "--remote-url", str(tmp_path / "remote"), "--commit",
                    "-m", "first version", "--tag", "v1")
    assert "Published" in published.output and "waterbirds_seg" in published.output
    tags = subprocess.run(["git", "tag"], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert tags.split() == ["v1"] and (tmp_path / "data.dvc").is_file()


def test_val_fraction_sets_how_much_of_cubs_train_split_val_draws_from(tmp_path):
    cub, places = generate_demo_birds(tmp_path / "birds", seed=0)
    options = ["build", "waterbirds", "--cub-root", str(cub), "--places-root", str(places), "--val-per-group", "12",
               "--test-per-group", "5"]
    short = run(tmp_path, *options, code=1)  # 20% of CUB's train split is too few birds for 12 per group
    assert "val: group" in str(short.exception) and "raise --val-fraction" in short.exception.hint
    run(tmp_path, *options, "--val-fraction", "0.5")
    manifest = json.loads((tmp_path / "data" / "waterbirds_seg" / "manifest.json").read_text())
    assert manifest["params"]["val_fraction"] == 0.5
    run(tmp_path, *options, "--val-fraction", "1.5", code=2)  # refused by the option's range
