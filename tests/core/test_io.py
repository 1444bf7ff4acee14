"""Canonical JSON, atomic writes, fingerprints and the staging directory."""

import os
from pathlib import Path

import numpy as np
import pytest

from segbench.core.errors import InputError
from segbench.core.io import (
    atomic_write_bytes,
    canonical_json,
    fingerprint,
    read_json,
    sha256_file,
    sha256_tree,
    write_json,
)


def test_canonical_json_is_order_independent_and_rounds_floats():
    a = canonical_json({"b": 1, "a": [0.1 + 0.2, np.float32(0.5), np.int64(3)]})
    b = canonical_json({"a": [0.3, 0.5, 3], "b": 1})
    assert a == b == '{"a":[0.3,0.5,3],"b":1}'


def test_canonical_json_maps_non_finite_to_null_and_negative_zero_to_zero():
    assert canonical_json([float("nan"), float("inf"), -0.0, -1e-9]) == "[null,null,0.0,0.0]"


def test_fingerprint_depends_on_content_only():
    assert fingerprint({"x": 1, "y": [1, 2]}) == fingerprint({"y": [1, 2], "x": 1})
    assert fingerprint({"x": 1}) != fingerprint({"x": 2})


def test_atomic_write_leaves_no_temporary_files(tmp_path):
    path = atomic_write_bytes(tmp_path / "sub" / "f.bin", b"abc")
    assert path.read_bytes() == b"abc"
    atomic_write_bytes(path, b"xyz")
    assert path.read_bytes() == b"xyz"
    assert os.listdir(path.parent) == ["f.bin"]


def test_write_json_round_trip(tmp_path):
    value = {"z": [1, 2.5, None], "a": "é"}
    path = write_json(tmp_path / "v.json", value)
    assert read_json(path) == value
    assert path.read_text(encoding="utf-8").endswith("\n")


def test_read_json_errors_name_the_file(tmp_path):
    with pytest.raises(InputError, match="missing.json: file not found"):
        read_json(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="bad.json: not valid JSON"):
        read_json(bad)


def test_sha256_tree_is_sorted_relative_and_excludes(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "x.txt").write_text("x")
    (tmp_path / "a.txt").write_text("a")
    (tmp_path / "manifest.json").write_text("{}")
    tree = sha256_tree(tmp_path, exclude=["manifest.json"])
    assert list(tree) == ["a.txt", "b/x.txt"]
    assert tree["a.txt"] == sha256_file(tmp_path / "a.txt")


def test_json_with_a_byte_order_mark_is_read_as_json(tmp_path):
    from segbench.core.coco_typed import read_coco
    from segbench.core.io import UTF8_BOM, read_json

    path = tmp_path / "instances.json"
    path.write_bytes(UTF8_BOM + b'{"images": [], "annotations": [], "categories": []}')
    assert read_json(path) == {"images": [], "annotations": [], "categories": []}
    raw = read_coco(path)
    assert list(raw.images) == [] and list(raw.annotations) == []


def test_a_folder_that_takes_no_new_files_is_named_with_the_target_file(tmp_path):
    if not Path("/proc/self").is_dir():
        pytest.skip("needs /proc, a folder that takes no new files")
    with pytest.raises(InputError, match="cannot create a file in this folder|permission denied") as raised:
        atomic_write_bytes(Path("/proc/segbench-test.json"), b"{}")
    assert raised.value.path == "/proc/segbench-test.json"
