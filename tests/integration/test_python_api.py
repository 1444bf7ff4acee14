"""The Python API page's example runs as written in the demo project, and the API's models are the
evaluate commands' metrics."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from support.docs import ROOT

from segbench import api
from segbench.core.io import canonical_json

pytestmark = pytest.mark.integration

PAGE = ROOT / "docs" / "reference" / "python-api.md"


def _files(folder):
    return {(str(path.relative_to(folder)), path.stat().st_size, path.stat().st_mtime_ns)
            for path in folder.rglob("*") if path.is_file()}


def test_the_python_api_example_runs_as_written_after_the_demo_and_writes_nothing(demo_copy):
    (demo_copy / ".segbench").symlink_to(demo_copy / "work")  # the tests' demo works in work/, make demo in .segbench/
    code = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)[0]
    before = _files(demo_copy)
    done = subprocess.run([sys.executable, "-c", code], cwd=demo_copy, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "CAFE pairs" in done.stdout
    assert _files(demo_copy) == before  # the page says nothing is written


def test_in_memory_scores_are_the_commands_metrics(demo_project, monkeypatch):
    project, _ = demo_project
    monkeypatch.chdir(project)
    gt = api.load_cafe()
    results = json.loads((project / "work" / "predictions" / "cafe-prompt-blind.json").read_text())
    report = json.loads((project / "reports" / "cafe" / "demo-prompt-blind" / "metrics.json").read_text())
    in_memory = json.loads(canonical_json(api.evaluate_cafe(gt, results).model_dump(mode="json")))  # 6 decimals
    assert in_memory == report["metrics"] | {"calibration": None, "ignored": None}  # the command adds these two


def test_in_memory_flip_scores_are_the_commands_metrics(demo_project, monkeypatch):
    from segbench.tasks.flip.inputs import read_prediction

    project, _ = demo_project
    monkeypatch.chdir(project)
    split = api.load_flip_split("coco_cd", rho=0.95, split="test")
    folder = project / "work" / "predictions" / "coco_cd-baseline"
    read = {image.id: read_prediction(folder / f"{image.id:012d}.npz", split.mask(image).shape) for image in split.images}
    metrics = api.evaluate_flip(split, {i: pred for i, (pred, _) in read.items()},
                                {i: probs for i, (_, probs) in read.items()})
    report = json.loads((project / "reports" / "coco_cd" / "demo-baseline" / "metrics.json").read_text())
    assert json.loads(canonical_json(metrics.model_dump(mode="json"))) == report["metrics"]
