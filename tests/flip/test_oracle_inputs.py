"""``segbench oracle-inputs``: the Oracle-FG / Oracle-BG mean-fill images of a split (label flips, App. C)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image
from support.cli import run
from support.flip_eval_data import IMAGE_IDS, gt_mask, write_flip_dataset

from segbench.core.errors import InputError
from segbench.tasks.flip.oracle import IMAGENET_MEAN, mean_fill, parse_fill

pytestmark = pytest.mark.unit


def test_the_background_or_the_object_is_filled():
    image = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    foreground = np.array([[True, False, False], [False, False, True]])
    kept_object = mean_fill(image, foreground, "oracle-fg", (9, 9, 9))
    assert (kept_object[foreground] == image[foreground]).all() and (kept_object[~foreground] == 9).all()
    kept_context = mean_fill(image, foreground, "oracle-bg", (9, 9, 9))
    assert (kept_context[~foreground] == image[~foreground]).all() and (kept_context[foreground] == 9).all()
    assert (image == np.arange(18).reshape(2, 3, 3)).all()  # the input is left as it was


@pytest.mark.parametrize("text", ["grey", "1,2", "1,2,300", "-1,0,0", "a,b,c", ""])
def test_a_fill_that_is_no_colour_is_refused(text):
    with pytest.raises(InputError, match="--fill") as error:
        parse_fill(text)
    assert "imagenet" in (error.value.hint or "")


def test_the_known_fills_are_read():
    assert parse_fill(" ImageNet ") == "imagenet" and parse_fill("split") == "split"
    assert parse_fill("128,0,255") == (128, 0, 255)


def _dataset(tmp_path):
    root = write_flip_dataset(tmp_path / "data" / "coco_cd")
    (root / "images").mkdir()
    for index, image_id in enumerate(IMAGE_IDS):  # one colour per image: (index, 2 × index, 100)
        pixels = np.zeros((512, 512, 3), np.uint8) + np.array([index, 2 * index, 100], np.uint8)
        Image.fromarray(pixels).save(root / "images" / f"{image_id:012d}.png")
    return root


def test_the_command_writes_both_folders_and_a_manifest(tmp_path, monkeypatch):
    _dataset(tmp_path)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "oracle"
    done = run(tmp_path, "oracle-inputs", "coco-cd", "--out", str(out))
    assert "124, 116, 104" in done.output and "images" in done.output
    for index, image_id in enumerate(IMAGE_IDS):
        foreground = gt_mask(index) > 0
        colour = [index, 2 * index, 100]
        fg = np.asarray(Image.open(out / "oracle-fg" / f"{image_id:012d}.png"))
        bg = np.asarray(Image.open(out / "oracle-bg" / f"{image_id:012d}.png"))
        assert (fg[foreground] == colour).all() and (fg[~foreground] == IMAGENET_MEAN).all()
        assert (bg[~foreground] == colour).all() and (bg[foreground] == IMAGENET_MEAN).all()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["images"] == {"oracle-fg": 8, "oracle-bg": 8}
    assert (manifest["rho"], manifest["split"], manifest["fill_rule"]) == (0.95, "test", "imagenet")

    before = {p.name: p.read_bytes() for p in (out / "oracle-fg").iterdir()}
    run(tmp_path, "oracle-inputs", "coco-cd", "--out", str(out))  # again, into its own output
    assert {p.name: p.read_bytes() for p in (out / "oracle-fg").iterdir()} == before

    run(tmp_path, "oracle-inputs", "coco-cd", "--out", str(out), "--fill", "split")
    # The split's mean colour: the mean of (i, 2i, 100) over the eight equal-sized images, rounded.
    assert json.loads((out / "manifest.json").read_text())["fill"] == [4, 7, 100]  # 3.5 → 4, 7.0, 100


def test_bad_inputs_are_named_and_write_nothing(tmp_path, monkeypatch):
    root = _dataset(tmp_path)
    monkeypatch.chdir(tmp_path)
    refused = run(tmp_path, "oracle-inputs", "coco-cd", "--out", str(tmp_path / "o"), "--fill", "grey", code=1)
    assert "--fill grey" in str(refused.exception)
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    refused = run(tmp_path, "oracle-inputs", "coco-cd", "--out", str(taken), code=1)
    assert "holds other files" in str(refused.exception) and (taken / "notes.txt").read_text() == "mine"
    image = root / "images" / f"{IMAGE_IDS[3]:012d}.png"
    saved = image.read_bytes()
    image.unlink()
    missing = run(tmp_path, "oracle-inputs", "coco-cd", "--out", str(tmp_path / "o"), code=1)
    assert f"{IMAGE_IDS[3]:012d}.png" in str(missing.exception)
    assert not (tmp_path / "o").exists()  # the stage waits beside it, never in its place
    image.write_bytes(saved)
    run(tmp_path, "oracle-inputs", "coco-cd", "--out", str(tmp_path / "o"))  # fixed: the same command finishes
    assert len(list((tmp_path / "o" / "oracle-bg").iterdir())) == len(IMAGE_IDS)
    assert not list(tmp_path.glob(".o.*")) and not list(tmp_path.glob(".o.partial"))  # no stage or lock left
    unbuilt = run(tmp_path, "oracle-inputs", "waterbirds", "--out", str(tmp_path / "o"), code=1)
    assert "build the dataset first" in str(unbuilt.exception)
