"""Two builds started at once on one data root: one waits or stops clearly, and the output is whole."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from segbench.core.manifest import verify_outputs
from segbench.demo.world import generate_demo_world

pytestmark = pytest.mark.integration

SIZES = {"cat/indoor": 12, "cat/outdoor": 8, "dog/indoor": 8, "dog/outdoor": 12}


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("world")
    generate_demo_world(root, seed=1, group_sizes=SIZES)
    return root


def _start(project: Path, world: Path, *flags: str) -> subprocess.Popen[str]:
    env = {**os.environ, "COLUMNS": "120"}
    for key in ("PREFECT_HOME", "PREFECT_LOCAL_STORAGE_PATH"):
        env.pop(key, None)
    command = [sys.executable, "-m", "segbench", *flags, "build", "coco-cd", "--coco-root", str(world),
               "--stuff-root", str(world), "--val-per-group", "2", "--test-per-group", "3"]
    return subprocess.Popen(command, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


def test_without_wait_one_build_stops_naming_the_other(world, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    results = [_finish(p) for p in [_start(project, world), _start(project, world)]]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    busy = next(err for code, _, err in results if code == 2)
    assert "another segbench command is writing" in busy and "--wait" in busy
    assert verify_outputs(project / "data" / "coco_cd") == {"changed": [], "missing": [], "extra": []}


def test_with_wait_both_finish_and_the_output_is_whole(world, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    results = [_finish(p) for p in [_start(project, world, "--wait", "300"), _start(project, world, "--wait", "300")]]
    assert [code for code, _, _ in results] == [0, 0], results
    out = project / "data" / "coco_cd"
    assert verify_outputs(out) == {"changed": [], "missing": [], "extra": []}
    assert not list(out.parent.glob(".coco_cd.*")), "no stage or previous copy is left beside the output"
