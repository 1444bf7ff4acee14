"""Every evaluation skips when nothing it reads changed, re-evaluates when something did, and resumes.

Each kind runs through ``segbench evaluate ...``: a first run writes the report and its manifest; a second
run says "up to date" and touches no file (bytes and mtimes); ``--force`` rewrites the same bytes
(``SOURCE_DATE_EPOCH`` fixes the manifest's time); a changed parameter and changed predictions each
evaluate again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from support.cafe_eval_data import HAND_PAIRS, HAND_PREDS, cafe_gt
from support.flip_eval_data import IMAGE_IDS, write_flip_dataset, write_label_predictions
from support.spin_eval_data import box, perfect_predictions, rle, write_dataset
from support.vocab_eval_data import write_vocab_evaluation
from typer.testing import CliRunner

from segbench.cli import app
from segbench.core.errors import InputError
from segbench.core.manifest import build_manifest, write_manifest
from segbench.flows.flip import evaluate_coco_cd

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


@pytest.fixture(autouse=True)
def fixed_build_time(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "project" / "data").mkdir(parents=True)
    return tmp_path / "project"


def _invoke(project: Path, *args: str):
    result = CliRunner().invoke(app, ["--data-root", str(project / "data"), "--work-dir", str(project / "work"),
                                      "evaluate", *args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result


def _files(out: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file under ``out``: (bytes, mtime in ns, inode)."""
    return {p.relative_to(out).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_ino)
            for p in sorted(out.rglob("*")) if p.is_file()}


def _contents(files: dict[str, tuple[bytes, int, int]]) -> dict[str, bytes]:
    return {name: value[0] for name, value in files.items()}


def _check_resume(project: Path, args: list[str], out: Path, changed_param: list[str],
                  change_predictions: Callable[[], None]) -> None:
    """The behaviour every evaluation shares (module docstring), on the command ``args``."""
    assert "up to date" not in _invoke(project, *args).output
    first = _files(out)
    assert {"manifest.json", "metrics.json", "report.md"} <= set(first)

    again = _invoke(project, *args)
    assert "up to date" in again.output and "Report:" in again.output
    assert _files(out) == first  # same bytes, same mtimes, same inodes: nothing was rewritten
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")] == []  # no stage left

    assert "up to date" not in _invoke(project, *args, "--force").output
    forced = _files(out)
    assert _contents(forced) == _contents(first)  # byte-identical, manifest included
    assert forced["metrics.json"][2] != first["metrics.json"][2]  # and written anew

    assert "up to date" not in _invoke(project, *args, *changed_param).output
    assert _contents(_files(out))["metrics.json"] != _contents(first)["metrics.json"]

    change_predictions()
    assert "up to date" not in _invoke(project, *args).output
    assert _contents(_files(out))["metrics.json"] != _contents(first)["metrics.json"]


@pytest.mark.parametrize(("command", "dataset"), [("coco-cd", "coco_cd"), ("waterbirds", "waterbirds_seg")])
def test_flip_evaluations_resume(project, tmp_path, command, dataset):
    write_flip_dataset(project / "data" / dataset, rhos=("rho_0.95", "rho_0.5"))
    preds = write_label_predictions(tmp_path / "preds")
    out = tmp_path / "report"
    args = [command, "--predictions", str(preds), "--repo", str(project), "--out", str(out)]
    _check_resume(project, args, out, ["--rho", "0.5"],
                  lambda: write_label_predictions(preds, swapped={0, 1, 2, 3}))
    # The ground truth is an input too: a changed mask evaluates again.
    before = (out / "metrics.json").read_bytes()
    mask = project / "data" / dataset / "masks" / f"{IMAGE_IDS[0]:012d}.png"
    mask.write_bytes((project / "data" / dataset / "masks" / f"{IMAGE_IDS[2]:012d}.png").read_bytes())
    assert "up to date" not in _invoke(project, *args).output
    assert (out / "metrics.json").read_bytes() != before


def test_a_failed_flip_evaluation_resumes_with_its_finished_shards(project, tmp_path):
    root = write_flip_dataset(project / "data" / "coco_cd")
    write_manifest(root, build_manifest(dataset="coco_cd", builder_version="test", root=root, params={}, inputs={},
                                        counts={}))
    preds = write_label_predictions(tmp_path / "preds")
    reference = evaluate_coco_cd(project, None, preds, tmp_path / "reference", shard_size=3)
    assert reference.units.model_dump() == {"computed": 3, "reused": 0}

    # The manifest stands for the dataset, so a damaged mask in the last shard fails that shard only,
    # and once it is restored the same build key resumes with the two shards that finished.
    mask = root / "masks" / f"{IMAGE_IDS[-1]:012d}.png"
    good = mask.read_bytes()
    mask.write_bytes(b"not a png")
    out = tmp_path / "report"
    with pytest.raises(InputError, match=mask.name):
        evaluate_coco_cd(project, None, preds, out, shard_size=3)
    assert not out.exists() and len(list(tmp_path.glob(".report.*.partial"))) == 1
    mask.write_bytes(good)
    resumed = evaluate_coco_cd(project, None, preds, out, shard_size=3)
    assert resumed.units.model_dump() == {"computed": 1, "reused": 2}
    assert _contents(_files(out)) == _contents(_files(tmp_path / "reference"))
    assert list(tmp_path.glob(".report.*")) == []
    assert evaluate_coco_cd(project, None, preds, out, shard_size=5).up_to_date  # shard size is no input


@pytest.mark.parametrize(("command", "changed_option", "changed_predictions"), [
    ("cafe", ["--iou-threshold", "0.9"], HAND_PREDS[:-1]),
    ("cgf1", ["--score-threshold", "0.85"], HAND_PREDS[2:]),
])
def test_cafe_and_cgf1_evaluations_resume(project, tmp_path, command, changed_option, changed_predictions):
    gt, preds = tmp_path / "CAFE.json", tmp_path / "preds.json"
    gt.write_text(json.dumps(cafe_gt(HAND_PAIRS)))
    preds.write_text(json.dumps(HAND_PREDS))
    out = tmp_path / "report"
    args = [command, "--gt", str(gt), "--predictions", str(preds), "--out", str(out)]
    _check_resume(project, args, out, changed_option, lambda: preds.write_text(json.dumps(changed_predictions)))


def test_spin_evaluation_resumes(project, tmp_path):
    write_dataset(project / "data" / "spin")
    preds = tmp_path / "preds"
    preds.mkdir()
    results = preds / "spin_test_parts_results.json"
    entries = perfect_predictions()["parts"]
    results.write_text(json.dumps(entries))
    out = tmp_path / "report"
    args = ["spin", "--predictions", str(preds), "--repo", str(project), "--dataset-dir", "data/spin",
            "--out", str(out)]

    def move_a_part():
        entries[0]["segmentation"] = rle(box(0, 2, 0, 2))
        results.write_text(json.dumps(entries))

    _check_resume(project, args, out, ["--on-error", "skip"], move_a_part)


def test_vocab_evaluation_resumes(project, tmp_path):
    root = write_vocab_evaluation(project)
    out = tmp_path / "report"
    args = ["vocab", "--vocab", "vocab.json", "--descriptions", str(root / "desc.json"), "--gt", "gt",
            "--repo", str(root), "--out", str(out), "--no-baseline"]

    def redescribe():
        described = json.loads((root / "desc.json").read_text())
        described[0]["descriptions"][2]["description"] = "a street"
        (root / "desc.json").write_text(json.dumps(described))

    # The vocabulary under another name is another evaluation: the report prints the name. (The same
    # file named by its absolute path is the same evaluation: reports and manifests name it relative
    # to the project.)
    (root / "vocab_copy.json").write_bytes((root / "vocab.json").read_bytes())
    _check_resume(project, args, out, ["--vocab", "vocab_copy.json"], redescribe)

