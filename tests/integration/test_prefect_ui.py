"""What the Prefect UI shows: runs named after what ran, task runs without hash suffixes, and each
build's and evaluation's summary as an artifact, read back through the Prefect client."""

from __future__ import annotations

import asyncio
import base64
import json
import re

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterFlowRunId,
    FlowRunFilter,
    FlowRunFilterId,
)
from support.flip_eval_data import write_flip_dataset, write_label_predictions

from segbench.demo.world import generate_demo_world
from segbench.flows.coco_cd.build import build_coco_cd
from segbench.flows.flip import evaluate_coco_cd
from segbench.flows.prefect_ui import artifact_key, describe
from segbench.schemas.coco_cd import CocoCdParams

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

SIZES = {"cat/indoor": 12, "cat/outdoor": 8, "dog/indoor": 8, "dog/outdoor": 12}


async def _read(flow_run_id):
    async with get_client() as client:
        flow_run = await client.read_flow_run(flow_run_id)
        tasks = await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
        artifacts = await client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
    return flow_run, tasks, artifacts


def _run(state):
    return asyncio.run(_read(state.state_details.flow_run_id))


def _no_hash_suffix(names):
    # Prefect's default task run name is "<task>-<3 hex digits>" (a shard's is "<task> <first>-<last>").
    return [name for name in names if re.fullmatch(r"[a-z0-9-]+-[0-9a-f]{3}", name)]


def test_a_build_run_is_named_by_its_parameters_and_publishes_its_counts(tmp_path):
    world = tmp_path / "world"
    generate_demo_world(world, seed=3, group_sizes=SIZES)
    params = CocoCdParams(val_per_group=2, test_per_group=3, size=64, rhos=(0.5, 0.95), seed=13)
    state = build_coco_cd(world, world, tmp_path / "data" / "coco_cd", params, shard_size=20, return_state=True)
    assert state.is_completed()
    flow_run, tasks, artifacts = _run(state)

    assert flow_run.name == "build-coco-cd rho=0.5,0.95 seed=13"
    names = [task.name for task in tasks]
    assert "load-instances" in names and "draw-splits" in names
    assert any(re.fullmatch(r"render-shard \d+-\d+", name) for name in names), names
    assert not _no_hash_suffix(names), names

    [artifact] = [a for a in artifacts if a.key == "build-coco-cd"]
    assert artifact.type == "table"
    rows = {row["what"]: row["value"] for row in json.loads(artifact.data)}  # a table is stored as JSON
    summary = state.result()
    assert rows["up to date"] == "no" and rows["rendered"] == str(summary.counts.rendered)
    assert rows["splits / rho_0.95 / test"] == ", ".join(str(n) for n in summary.counts.splits["rho_0.95"]["test"])


def test_an_evaluation_run_is_named_by_its_inputs_and_publishes_its_report(tmp_path):
    repo = tmp_path / "project"
    write_flip_dataset(repo / "data" / "coco_cd")
    preds = write_label_predictions(repo / "preds" / "baseline")
    state = evaluate_coco_cd(repo, None, preds, tmp_path / "report", shard_size=3, return_state=True)
    assert state.is_completed()
    flow_run, tasks, artifacts = _run(state)

    assert flow_run.name == "evaluate-coco-cd rho=0.95 split=test predictions=baseline"
    names = [task.name for task in tasks]
    assert "load-coco-cd-split" in names and "write-coco-cd-report" in names
    assert sum(bool(re.fullmatch(r"evaluate-shard \d+-\d+", name)) for name in names) == 3, names
    assert not _no_hash_suffix(names), names

    [artifact] = [a for a in artifacts if a.key == "evaluation-coco-cd"]
    assert artifact.type == "markdown"
    report = (tmp_path / "report" / "report.md").read_text()
    assert "## Overlap" in artifact.data and "| 0.5000 | 0.5000 | 0.0000 |" in artifact.data
    # The report's plots are in the page itself: the UI cannot open files beside report.md.
    linked = re.findall(r"!\[[^\]]*\]\(([\w.]+\.png)\)", report)
    shown = re.findall(r"!\[[^\]]*\]\(data:image/png;base64,([A-Za-z0-9+/=]+)\)", artifact.data)
    assert linked and [base64.b64decode(data) for data in shown] == \
        [(tmp_path / "report" / name).read_bytes() for name in linked]
    assert re.sub(r"\(data:image/png;base64,[^)]+\)", "", artifact.data) == re.sub(r"\([\w.]+\.png\)", "", report)


def test_run_names_show_lists_numbers_and_paths_plainly():
    assert describe("evaluate-spin", {"split": "test", "predictions": {"parts": "/x/preds/parts.json", "wholes": None},
                                      "rev": None}) == "evaluate-spin split=test predictions=parts:parts.json"
    assert artifact_key("evaluation", "Waterbirds-seg") == "evaluation-waterbirds-seg"
    assert artifact_key("build", "vocab-cityscapes") == "build-vocab-cityscapes"
