"""COCO-CD on a 2-worker Dask LocalCluster gives the same bytes as the default runner, from the CLI
(whose workers must share the command's temporary Prefect API) and in process (the test API)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from segbench.core.io import sha256_tree
from segbench.demo.world import generate_demo_world
from segbench.flows.runner import RunnerSpec
from segbench.schemas.coco_cd import CocoCdParams

SIZES = {"cat/indoor": 12, "cat/outdoor": 8, "dog/indoor": 8, "dog/outdoor": 12}
EPOCH = "1700000000"
PARAMS = CocoCdParams(val_per_group=2, test_per_group=3)  # what the CLI flags below ask for
SHARD = 4


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("world")
    generate_demo_world(root, seed=5, group_sizes=SIZES)
    return root


@pytest.fixture(scope="module")
def threads_build(world, tmp_path_factory, prefect_harness) -> Path:
    from segbench.flows.coco_cd.build import build_coco_cd

    out = tmp_path_factory.mktemp("threads") / "coco_cd"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SOURCE_DATE_EPOCH", EPOCH)
        build_coco_cd(world, world, out, PARAMS, shard_size=SHARD)
    return out


@pytest.mark.integration
def test_cli_with_two_local_workers_gives_the_default_runners_bytes(world, threads_build, tmp_path):
    env = {**os.environ, "COLUMNS": "200", "SOURCE_DATE_EPOCH": EPOCH}
    for key in ("PREFECT_HOME", "PREFECT_LOCAL_STORAGE_PATH", "PREFECT_API_URL"):
        env.pop(key, None)  # no server configured: the command starts the temporary API its workers share
    command = [sys.executable, "-m", "segbench", "--data-root", str(tmp_path / "data"), "--work-dir",
               str(tmp_path / "work"), "--workers", "2", "build", "coco-cd", "--coco-root", str(world),
               "--stuff-root", str(world), "--val-per-group", "2", "--test-per-group", "3",
               "--shard-size", str(SHARD)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "unit(s) computed, 0 reused" in done.stdout
    assert sha256_tree(tmp_path / "data" / "coco_cd") == sha256_tree(threads_build), "manifest included"


@pytest.mark.integration
def test_in_process_two_workers_give_byte_identical_outputs(world, threads_build, tmp_path, monkeypatch):
    from segbench.flows.coco_cd.build import build_coco_cd
    from segbench.flows.runner import runner_session, with_runner

    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    out = tmp_path / "coco_cd"
    before = os.environ.get("PREFECT_API_URL")
    with runner_session(RunnerSpec(kind="dask", workers=2)) as live:
        assert live.dask_address and live.dask_address.startswith("tcp://")
        state = with_runner(build_coco_cd, live)(world, world, out, PARAMS, shard_size=SHARD, return_state=True)
    assert os.environ.get("PREFECT_API_URL") == before, "the exported API URL is restored"
    summary = state.result()
    assert summary.units.reused == 0 and summary.units.computed > 3
    assert sha256_tree(out) == sha256_tree(threads_build)
    assert render_runs(state.state_details.flow_run_id) == summary.units.computed - 1, (
        "every shard the workers ran is recorded in the flow's own Prefect API")


def render_runs(flow_run_id) -> int:
    from prefect import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return sum(run.name.startswith("render-shard") and run.state_name == "Completed" for run in runs)


@pytest.mark.parametrize(("options", "expected"), [
    ((None, None, None), RunnerSpec()),
    (("dask", "tcp://10.0.0.5:8786", None), RunnerSpec("dask", "tcp://10.0.0.5:8786")),
    ((None, "tcp://10.0.0.5:8786", None), RunnerSpec("dask", "tcp://10.0.0.5:8786")),
    ((None, None, 2), RunnerSpec("dask", workers=2)),
])
def test_runner_options_imply_the_runner(options, expected):
    assert RunnerSpec.from_options(*options) == expected


@pytest.mark.parametrize("options", [
    ("threads", None, 2), ("threads", "tcp://h:1", None), ("dask", "tcp://h:1", 2), ("dask", None, 0), ("ray", None, None),
])
def test_contradictory_runner_options_are_refused(options):
    with pytest.raises(ValueError):
        RunnerSpec.from_options(*options)
