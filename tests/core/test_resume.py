"""Build keys, the up-to-date check and resumable stages (segbench.core.resume)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from segbench.core.io import sha256_bytes, sha256_file
from segbench.core.resume import (
    NONCE_NAME,
    build_key,
    hash_inputs,
    is_up_to_date,
    resumable_stage,
    stage_path,
)

BASE = {"dataset": "coco_cd", "logic_version": "1", "params": {"seed": 13, "rhos": [0.5]},
        "input_hashes": {"instances": "a" * 64, "stuff": "b" * 64}}


class Crash(Exception):
    """Stands for the process dying in the middle of a build."""


def write_output(root: Path, key: str, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    manifest = {"build_key": key, "outputs": {rel: sha256_bytes(text.encode()) for rel, text in files.items()}}
    (root / "manifest.json").write_text(json.dumps(manifest))


def test_hash_inputs_hashes_files_and_folders_sorted_by_label(tmp_path):
    (tmp_path / "b.json").write_text("{}")
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "x.txt").write_text("x")
    hashes = hash_inputs({"z_file": tmp_path / "b.json", "a_tree": tmp_path / "tree"})
    assert list(hashes) == ["a_tree", "z_file"]
    assert hashes["z_file"] == sha256_file(tmp_path / "b.json")
    before = hashes["a_tree"]
    (tmp_path / "tree" / "x.txt").write_text("y")
    assert hash_inputs({"a_tree": tmp_path / "tree"})["a_tree"] != before


@pytest.mark.parametrize("change", [
    {"dataset": "waterbirds"},
    {"logic_version": "2"},
    {"params": {"seed": 14, "rhos": [0.5]}},
    {"params": {"seed": 13, "rhos": [0.5, 0.95]}},
    {"input_hashes": {"instances": "a" * 64, "stuff": "c" * 64}},
    {"input_hashes": {"instances": "a" * 64}},
    {"input_hashes": {"instances": "a" * 64, "stuff": "b" * 64, "extra": "d" * 64}},
])
def test_build_key_changes_with_each_ingredient(change):
    assert build_key(**{**BASE, **change}) != build_key(**BASE)


def test_build_key_ignores_mapping_order():
    reordered = {**BASE, "params": {"rhos": [0.5], "seed": 13},
                 "input_hashes": {"stuff": "b" * 64, "instances": "a" * 64}}
    assert build_key(**reordered) == build_key(**BASE)


def test_is_up_to_date_needs_the_same_key_and_every_listed_file(tmp_path):
    out = tmp_path / "out"
    assert not is_up_to_date(out, "k1"), "no output at all"
    out.mkdir()
    (out / "manifest.json").write_text("{not json")
    assert not is_up_to_date(out, "k1"), "unreadable manifest"
    write_output(out, "k1", {"a.txt": "a", "masks/1.png": "m"})
    assert is_up_to_date(out, "k1")
    assert not is_up_to_date(out, "k2"), "built under another key"
    (out / "masks" / "1.png").unlink()
    assert not is_up_to_date(out, "k1"), "a listed file is missing"


def test_is_up_to_date_is_false_for_a_manifest_without_a_key(tmp_path):
    write_output(tmp_path, "k1", {"a.txt": "a"})
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    del manifest["build_key"]
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    assert not is_up_to_date(tmp_path, "k1")


def test_a_crashed_stage_is_kept_and_reused_with_its_nonce_and_files(tmp_path):
    target = tmp_path / "coco_cd"
    with pytest.raises(Crash), resumable_stage(target, "key-1") as first:
        (first.path / "masks").mkdir()
        (first.path / "masks" / "1.png").write_text("done before the crash")
        raise Crash
    assert not target.exists(), "nothing is swapped in after a crash"
    assert first.path == stage_path(target, "key-1") and first.path.is_dir()
    with resumable_stage(target, "key-1") as second:
        assert second.nonce == first.nonce
        assert second.unit_key("render/1") == first.unit_key("render/1")
        assert (second.path / "masks" / "1.png").read_text() == "done before the crash"
    assert (target / "masks" / "1.png").read_text() == "done before the crash"
    assert not (target / NONCE_NAME).exists()
    assert not first.path.exists()


def test_a_deleted_stage_gets_a_new_nonce_so_no_unit_is_reused(tmp_path):
    target = tmp_path / "coco_cd"
    with pytest.raises(Crash), resumable_stage(target, "key-1") as first:
        raise Crash
    (first.path / NONCE_NAME).unlink()  # a stage whose making was interrupted, then ...
    with pytest.raises(Crash), resumable_stage(target, "key-1") as second:
        raise Crash
    assert second.nonce != first.nonce
    assert second.unit_key("render/1") != first.unit_key("render/1")
    shutil.rmtree(second.path)  # ... a stage removed by hand
    with resumable_stage(target, "key-1") as third:
        assert third.nonce not in (first.nonce, second.nonce)
    with resumable_stage(target, "key-1") as after_swap:  # a finished stage is never reused either
        assert after_swap.nonce != third.nonce


def test_unit_keys_name_the_build_and_the_unit(tmp_path):
    with resumable_stage(tmp_path / "a", "key-1") as stage:
        assert stage.unit_key("render/1") != stage.unit_key("render/2")
    with resumable_stage(tmp_path / "b", "key-2") as other:
        assert other.unit_key("render/1") != stage.unit_key("render/1")


def test_success_replaces_the_target_whole_and_removes_stale_stages(tmp_path):
    target = tmp_path / "coco_cd"
    target.mkdir()
    (target / "old.txt").write_text("previous build")
    with pytest.raises(Crash), resumable_stage(target, "key-old") as stale:
        raise Crash
    with resumable_stage(target, "key-new") as stage:
        (stage.path / "new.txt").write_text("new build")
        assert (target / "old.txt").exists(), "the previous build stays until the swap"
    assert sorted(p.name for p in target.iterdir()) == ["new.txt"]
    assert not stale.path.exists(), "the stage of another key is removed after a success"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["coco_cd"]


@pytest.mark.parametrize("taken_by", ["file", "link"])
def test_a_stage_name_taken_by_a_file_or_link_is_refused_and_left_alone(tmp_path, taken_by):
    from segbench.core.errors import OutputError
    from segbench.core.release.writer import stage_for
    from segbench.core.resume import resumable_stage, stage_path

    mine = tmp_path / "mine"
    mine.mkdir()
    for stage in (stage_path(tmp_path / "out", "k" * 16), tmp_path / ".rel.partial"):
        if taken_by == "file":
            stage.write_text("keep")
        else:
            stage.symlink_to(mine)
    with pytest.raises(OutputError, match="taken by a file or a link"), resumable_stage(tmp_path / "out", "k" * 16):
        pass
    with pytest.raises(OutputError, match="taken by a file or a link"):
        stage_for(tmp_path / "rel")
    assert mine.is_dir() and (taken_by == "link" or (tmp_path / ".rel.partial").read_text() == "keep")
