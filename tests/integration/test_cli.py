"""The command line as a user runs it: help, a build with a summary, clean errors, nothing in $HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from segbench.demo.world import generate_demo_world

pytestmark = pytest.mark.integration

SIZES = {"cat/indoor": 12, "cat/outdoor": 8, "dog/indoor": 8, "dog/outdoor": 12}


def segbench(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "COLUMNS": "120"}
    for key in ("PREFECT_HOME", "PREFECT_LOCAL_STORAGE_PATH", "DVC_SITE_CACHE_DIR", "MPLCONFIGDIR",
                "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        env.pop(key, None)
    return subprocess.run([sys.executable, "-m", "segbench", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture
def dirs(tmp_path) -> tuple[Path, Path]:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    return project, home


@pytest.mark.parametrize("command", [[], ["build"], ["build", "coco-cd"], ["evaluate", "coco-cd"], ["publish"],
                                     ["demo"]])
def test_every_command_explains_itself(command, dirs):
    result = segbench(*command, "--help", cwd=dirs[0], home=dirs[1])
    assert result.returncode == 0, result.stderr
    assert "Usage: " in result.stdout
    if not command:
        for name in ("build", "evaluate", "publish", "demo"):
            assert name in result.stdout


def test_build_prints_a_summary_and_writes_nothing_to_home(dirs, tmp_path):
    project, home = dirs
    world = tmp_path / "world"
    generate_demo_world(world, seed=1, group_sizes=SIZES)
    result = segbench("build", "coco-cd", "--coco-root", str(world), "--stuff-root", str(world),
                      "--val-per-group", "2", "--test-per-group", "3", "--rho", "0.5", "--rho", "0.9",
                      cwd=project, home=home)
    assert result.returncode == 0, result.stderr
    assert "Group counts" in result.stdout and "rho_0.9" in result.stdout
    assert "Dataset: data/coco_cd" in result.stdout
    manifest = json.loads((project / "data" / "coco_cd" / "manifest.json").read_text())
    assert manifest["params"]["rhos"] == [0.5, 0.9]
    assert (project / ".segbench" / "prefect").is_dir()
    assert list(home.iterdir()) == []


def test_bad_input_ends_with_a_message_not_a_traceback(dirs, tmp_path):
    project, home = dirs
    world = tmp_path / "world"
    generate_demo_world(world, seed=1, group_sizes=SIZES)

    missing = segbench("build", "coco-cd", "--coco-root", str(world), "--stuff-root", str(tmp_path / "nowhere"),
                       cwd=project, home=home)
    assert missing.returncode == 2
    assert "COCO-Stuff file not found" in missing.stderr and "fix:" in missing.stderr
    assert "Traceback" not in missing.stderr + missing.stdout

    (world / "annotations" / "instances_val2017.json").write_text('{"images": [], "categories": []}')
    malformed = segbench("build", "coco-cd", "--coco-root", str(world), "--stuff-root", str(world),
                         cwd=project, home=home)
    assert malformed.returncode == 2
    assert "instances_val2017.json: missing or non-list key 'annotations'" in malformed.stderr
    assert "Traceback" not in malformed.stderr + malformed.stdout
    assert not (project / "data" / "coco_cd").exists()

    bad_rho = segbench("build", "coco-cd", "--coco-root", str(world), "--stuff-root", str(world), "--rho", "0.2",
                       cwd=project, home=home)
    assert bad_rho.returncode == 2 and "outside [0.5, 1]" in bad_rho.stderr


def test_a_files_round_through_the_command_line(dirs, tmp_path):
    project, home = dirs
    world = tmp_path / "world"
    generate_demo_world(world, seed=1, group_sizes=SIZES)
    build = segbench("build", "coco-cd", "--coco-root", str(world), "--stuff-root", str(world), "--no-images",
                     "--val-per-group", "2", "--test-per-group", "3", cwd=project, home=home)
    assert build.returncode == 0, build.stderr
    no_images = segbench("rounds", "create", "coco_cd_context_audit", "a1", "--backend", "files", cwd=project, home=home)
    assert no_images.returncode == 2 and "--no-images" in no_images.stderr  # the audit shows the images
    assert segbench("build", "coco-cd", "--coco-root", str(world), "--stuff-root", str(world),
                    "--val-per-group", "2", "--test-per-group", "3", cwd=project, home=home).returncode == 0

    create = segbench("rounds", "create", "coco_cd_context_audit", "a1", "--backend", "files", "--per-group", "1", "--overlap", "1",
                      cwd=project, home=home)
    assert create.returncode == 0, create.stderr
    assert "Next: segbench rounds launch a1" in create.stdout
    again = segbench("rounds", "create", "coco_cd_context_audit", "a1", "--backend", "files", "--per-group", "1", cwd=project, home=home)
    assert again.returncode == 2 and "a1" in again.stderr and "overwrite" in again.stderr
    launch = segbench("rounds", "launch", "a1", cwd=project, home=home)
    assert launch.returncode == 0 and "tasks.csv" in launch.stdout

    tasks = (project / "data" / "rounds" / "a1" / "tasks.csv").read_text().splitlines()
    item_ids = [line.split(",")[0] for line in tasks[1:]]
    results = project / "data" / "rounds" / "a1" / "results"
    results.mkdir()
    (results / "batch.csv").write_text("WorkerId,AssignmentId,Input.item_id,Answer.context\n" + "".join(
        f"W1,A{n},{item},indoor\n" for n, item in enumerate(item_ids[:3])))
    status = segbench("rounds", "status", "a1", cwd=project, home=home)
    assert status.returncode == 0 and "3 / 4" in status.stdout
    ingest = segbench("rounds", "ingest", "a1", cwd=project, home=home)
    assert ingest.returncode == 0, ingest.stderr
    assert "3 / 4" in ingest.stdout  # items answered of the round's items
    assert "audit markdown" in ingest.stdout and (project / "data" / "coco_cd_audit" / "a1.md").is_file()
    early = segbench("rounds", "close", "a1", cwd=project, home=home)
    assert early.returncode == 2 and "1 of 4 items have no answer yet" in early.stderr and "--force" in early.stderr
    assert segbench("rounds", "close", "a1", "--force", cwd=project, home=home).returncode == 0
    listing = segbench("rounds", "list", cwd=project, home=home)
    assert listing.returncode == 0 and "closed" in listing.stdout
    assert list(home.iterdir()) == []
