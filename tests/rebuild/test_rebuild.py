"""The rebuild flow on generated inputs: builds, evaluates and publishes, then a rerun does nothing."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from segbench.core.errors import BusyError, InputError
from segbench.core.io import sha256_tree
from segbench.demo.vocab.captions import generate_demo_captions
from segbench.demo.waterbirds.birds import generate_demo_birds
from segbench.demo.world import generate_demo_world
from segbench.flows.coco_cd.baseline import predict_baseline
from segbench.flows.rebuild import rebuild
from segbench.locking import data_root_lock

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

SEGBENCH = [sys.executable, "-m", "segbench"]
SIZES = {"cat/indoor": 12, "cat/outdoor": 8, "dog/indoor": 8, "dog/outdoor": 12}

PLAN = """
repo = "project"

[coco_cd]
coco_root = "world"
stuff_root = "world"
params = {{ val_per_group = 2, test_per_group = 3, rhos = [0.5, 0.9] }}

[waterbirds]
cub_root = "birds/cub"
places_root = "birds/places"
params = {{ val_per_group = 2, test_per_group = 4 }}

[vocab]
captions = [{captions}]
categories = "coco_cd"
params = {{ workers = 1, shard_size = 300, question_batch = 10 }}

[[evaluate]]
name = "baseline"
dataset = "coco_cd"
predictions = "predictions/coco_cd"
rho = 0.9

[publish]
remote_url = "dvc-remote"

[[schedule]]
name = "nightly"
cron = "0 3 * * *"
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("rebuild")
    generate_demo_world(root / "world", seed=1, group_sizes=SIZES)
    generate_demo_birds(root / "birds", seed=0, birds_per_species=12)
    captions = generate_demo_captions(root / "world", seed=0)
    (root / "project").mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root / "project", check=True)
    quoted = ", ".join(f'"{Path(c).relative_to(root).as_posix()}"' for c in captions)
    (root / "rebuild.toml").write_text(PLAN.format(captions=quoted))
    return root


def _run(workspace: Path, **kwargs) -> dict[str, dict]:
    result = rebuild(workspace / "rebuild.toml", workspace / "project" / "data", workspace / "work", **kwargs)
    return {step.step: step.model_dump() for step in result.steps}


def test_rebuild_builds_every_step_then_finds_everything_up_to_date(workspace):
    data = workspace / "project" / "data"
    first = _run(workspace, only=["coco_cd"])
    assert list(first) == ["coco_cd"]
    assert first["coco_cd"]["status"] == "built" and not first["coco_cd"]["up_to_date"]
    predict_baseline(repo=workspace / "project", rev=None, out=workspace / "predictions" / "coco_cd", rho=0.9,
                     split="test", dataset_dir="data/coco_cd")

    second = _run(workspace)
    assert list(second) == ["coco_cd", "waterbirds", "vocab", "evaluate:baseline", "publish"]
    assert second["coco_cd"]["up_to_date"]  # built by the first run, nothing changed since
    assert [second[s]["status"] for s in ("waterbirds", "vocab", "evaluate:baseline", "publish")] == \
        ["built", "built", "evaluated", "published"]
    assert second["waterbirds"]["units"]["computed"] >= 1
    assert (data.parent / "reports" / "coco_cd" / "rebuild-baseline" / "metrics.json").is_file()
    assert (workspace / "project" / "data.dvc").is_file()
    before = sha256_tree(data)
    waterbirds = sha256_tree(data / "waterbirds_seg", exclude=["manifest.json"])  # its created_at changes
    manifests = {p: p.stat().st_mtime_ns for p in data.glob("*/manifest.json")}

    third = _run(workspace)
    assert {name: step["status"] for name, step in third.items()} == dict.fromkeys(second, "up to date")
    assert sha256_tree(data) == before
    assert {p: p.stat().st_mtime_ns for p in data.glob("*/manifest.json")} == manifests  # not even rewritten

    forced = _run(workspace, only=["waterbirds", "evaluate"], force=True)
    assert [forced[s]["status"] for s in ("waterbirds", "evaluate:baseline")] == ["built", "evaluated"]
    assert sha256_tree(data / "waterbirds_seg", exclude=["manifest.json"]) == waterbirds


def test_changed_predictions_are_evaluated_again(workspace):
    if not (workspace / "project" / "data" / "coco_cd" / "manifest.json").is_file():
        pytest.skip("needs the datasets of the previous test")
    _run(workspace, only=["evaluate"])
    first = sorted((workspace / "predictions" / "coco_cd").iterdir())[0]
    first.write_bytes(first.read_bytes())  # same bytes: still up to date
    assert _run(workspace, only=["evaluate"])["evaluate:baseline"]["up_to_date"]
    other = sorted((workspace / "predictions" / "coco_cd").iterdir())[1]
    first.write_bytes(other.read_bytes())
    assert _run(workspace, only=["evaluate"])["evaluate:baseline"]["status"] == "evaluated"


def test_a_step_the_plan_does_not_configure_is_refused(workspace):
    with pytest.raises(InputError, match="--only spin: the plan does not configure this step") as error:
        _run(workspace, only=["spin"])
    assert "coco_cd, waterbirds, vocab, evaluate, publish" in error.value.hint


def test_rebuild_holds_the_data_root_lock(workspace):
    data = workspace / "project" / "data"
    with data_root_lock(data, command="segbench build coco-cd"):
        with pytest.raises(BusyError, match="segbench build coco-cd"):
            _run(workspace, only=["coco_cd"])


def test_evaluating_a_dataset_that_was_never_built_names_it(tmp_path):
    (tmp_path / "predictions").mkdir()
    (tmp_path / "plan.toml").write_text('[[evaluate]]\ndataset = "waterbirds"\npredictions = "predictions"\n')
    with pytest.raises(InputError, match="the waterbirds dataset is not built") as error:
        rebuild(tmp_path / "plan.toml", tmp_path / "data", tmp_path / "work")
    assert "[waterbirds]" in error.value.hint



def test_the_command_prints_each_step_and_what_it_did(tmp_path):
    generate_demo_world(tmp_path / "world", seed=1, group_sizes=SIZES)
    (tmp_path / "rebuild.toml").write_text('[coco_cd]\ncoco_root = "world"\nstuff_root = "world"\n'
                                           "params = { val_per_group = 2, test_per_group = 3, rhos = [0.9] }\n")
    env = {**os.environ, "COLUMNS": "150"}
    for key in ("PREFECT_HOME", "PREFECT_LOCAL_STORAGE_PATH"):
        env.pop(key, None)

    def segbench(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*SEGBENCH, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)

    first = segbench("rebuild", "--plan", "rebuild.toml")
    assert first.returncode == 0, first.stderr
    assert "Rebuild of rebuild.toml" in first.stdout
    assert re.search(r"coco_cd\s.*\sbuilt\s.*data/coco_cd", first.stdout), first.stdout
    second = segbench("rebuild", "--plan", "rebuild.toml")
    assert re.search(r"coco_cd\s.*\sup to date\s", second.stdout), second.stdout
    wrong = segbench("rebuild", "--plan", "rebuild.toml", "--only", "publish")
    assert wrong.returncode == 2
    assert "--only publish: the plan does not configure this step" in wrong.stderr and "coco_cd" in wrong.stderr
