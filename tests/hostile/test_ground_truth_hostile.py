"""Ground truth read from the data root by an evaluation (``evaluate spin``): a file that is not UTF-8,
a directory in its place, truncated JSON or a list instead of a COCO object ends the command with
exit code 2 naming the file, and nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.hostile import assert_clean_failure, latin1, run_main, snapshot

from segbench.core.io import write_json

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

WHOLES = Path("data/spin/dataset/spin_test_wholes.json")


def _damage(project: Path, how: str) -> None:
    path = project / WHOLES
    for level in ("parts", "subparts"):  # the other levels are fine
        write_json(path.parent / f"spin_test_{level}.json", {"images": [], "annotations": [], "categories": []})
    if how == "latin1":
        latin1(path, '{"images": [], "annotations": [], "categories": [{"id": 1, "name": "Café"}]}')
    elif how == "folder":
        path.mkdir()
    elif how == "truncated":
        path.write_text('{"images": [{"id": 1, "width": 4')
    elif how == "list":
        path.write_text("[]")


@pytest.mark.parametrize(("how", "names"), [
    ("latin1", ["spin_test_wholes.json", "not UTF-8"]),
    ("folder", ["spin_test_wholes.json", "found a directory"]),
    ("truncated", ["spin_test_wholes.json", "not valid JSON"]),
    ("list", ["spin_test_wholes.json"]),
])
def test_damaged_ground_truth(tmp_path, how, names):
    _damage(tmp_path, how)
    predictions = tmp_path / "preds"
    write_json(predictions / "spin_test_wholes_results.json", [])
    before = snapshot(tmp_path / "data")
    outcome = run_main(tmp_path, "evaluate", "spin", "--predictions", str(predictions))
    assert_clean_failure(outcome, *names, fix=how != "list")
    assert snapshot(tmp_path / "data") == before
