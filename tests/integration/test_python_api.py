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


def test_the_python_api_example_runs_as_written_after_the_demo(demo_copy):
    (demo_copy / ".segbench").symlink_to(demo_copy / "work")  # the tests' demo works in work/, make demo in .segbench/
    code = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)[0]
    done = subprocess.run([sys.executable, "-c", code], cwd=demo_copy, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "CAFE pairs" in done.stdout


def test_in_memory_scores_are_the_commands_metrics(demo_project, monkeypatch):
    project, _ = demo_project
    monkeypatch.chdir(project)
    gt = api.load_cafe()
    results = json.loads((project / "work" / "predictions" / "cafe-prompt-blind.json").read_text())
    report = json.loads((project / "reports" / "cafe" / "demo-prompt-blind" / "metrics.json").read_text())
    in_memory = json.loads(canonical_json(api.evaluate_cafe(gt, results).model_dump(mode="json")))  # 6 decimals
    assert in_memory == report["metrics"] | {"calibration": None, "ignored": None}  # the command adds these two
