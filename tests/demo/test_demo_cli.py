"""`segbench demo` as a user runs it: every registered dataset built, published and evaluated offline."""

from __future__ import annotations

import pytest
from support.cli import run

from segbench import registry

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


def test_the_demo_builds_publishes_and_evaluates_every_dataset(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the demo versions the data root in the current folder's repository
    result = run(tmp_path, "demo", "--seed", "0")

    for title in ("COCO-CD", "Waterbirds-seg", "Vocabulary coco_cd", "CAFE", "SPIN taxonomy", "Published"):
        assert title in result.output
    assert "Demo finished." in result.output
    assert (tmp_path / "data.dvc").is_file() and (tmp_path / ".git").is_dir()
    for spec in registry.DATASETS:
        if spec.name != "vocab":  # the vocabulary lands under vocab/<category set>
            assert (tmp_path / "data" / spec.default_out / "manifest.json").is_file(), spec.name
    for evaluated in ("coco_cd/demo-baseline", "cafe/demo-prompt-blind", "spin/demo-parent-mask"):
        assert (tmp_path / "data" / "eval" / evaluated / "report.md").is_file()
