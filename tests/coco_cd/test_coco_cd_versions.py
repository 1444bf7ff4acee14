"""COCO-CD through versions: build → publish → commit, twice with different params, then read and
evaluate the first version back at its git revision (real git, real DVC with a local remote)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from segbench.core.versioning import DatasetSource, configure_remote, ensure_repo
from segbench.demo.world import generate_demo_world
from segbench.schemas.coco_cd import CocoCdParams

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

SIZES = {"cat/indoor": 12, "cat/outdoor": 8, "dog/indoor": 8, "dog/outdoor": 12}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def test_build_publish_change_param_and_evaluate_the_first_version(tmp_path):
    from segbench.flows.coco_cd.baseline import predict_baseline
    from segbench.flows.coco_cd.build import build_coco_cd
    from segbench.flows.flip import evaluate_coco_cd
    from segbench.flows.publish import publish_data

    world = tmp_path / "world"
    generate_demo_world(world, seed=5, group_sizes=SIZES)
    repo = ensure_repo(tmp_path / "project", init_git=True)
    configure_remote(repo, str(tmp_path / "remote"))  # committed with the first version
    out = repo / "data" / "coco_cd"
    test_file = "data/coco_cd/splits/rho_0.95/test.json"

    build_coco_cd(world, world, out, CocoCdParams(val_per_group=2, test_per_group=3, size=64, seed=13))
    first = publish_data(repo=str(repo), commit=True, message="COCO-CD seed 13")
    first_test = (repo / test_file).read_bytes()
    first_manifest = json.loads((out / "manifest.json").read_text())

    # This time the build flow publishes as its last step; committing is left to the user.
    summary = build_coco_cd(world, world, out, CocoCdParams(val_per_group=2, test_per_group=3, size=64, seed=14),
                            publish_repo=repo)
    assert summary.publish.changed and summary.publish.pushed and not summary.publish.committed
    second = publish_data(repo=str(repo), commit=True, message="COCO-CD seed 14")
    assert not second.changed and second.md5 == summary.publish.md5
    assert second.commit != first.commit and second.md5 != first.md5
    assert (repo / test_file).read_bytes() != first_test
    assert _git(repo, "log", "--format=%s") == "COCO-CD seed 14\nCOCO-CD seed 13"

    # The first version must come from the remote: drop the local cache.
    shutil.rmtree(repo / ".dvc" / "cache")
    source = DatasetSource(repo, rev=first.commit)
    assert source.read_bytes(test_file) == first_test
    assert source.read_json("data/coco_cd/manifest.json")["params"]["seed"] == 13 == first_manifest["seed"]

    predictions = tmp_path / "predictions"
    predict_baseline(repo=repo, rev=first.commit, out=predictions, rho=0.95, split="test",
                     dataset_dir="data/coco_cd")
    result = evaluate_coco_cd(repo=repo, rev=first.commit, predictions=predictions, out=tmp_path / "report",
                              rho=0.95, split="test", dataset_dir="data/coco_cd")
    first_ids = {image["id"] for image in json.loads(first_test)["images"]}
    assert result.summary.num_images == len(first_ids) == 12
    metrics = json.loads((tmp_path / "report" / "metrics.json").read_text())
    assert metrics["evaluated"]["rev"] == first.commit
