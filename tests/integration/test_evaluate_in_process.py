"""``segbench evaluate …`` runs the evaluation in its own process; ``--track`` runs it as a Prefect flow.

Both must write the same bytes, for every evaluation; the plain command must not import Prefect
(so it neither starts a private server nor waits on one).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.cafe_eval_data import HAND_PAIRS, HAND_PREDS, cafe_gt
from support.flip_eval_data import write_flip_dataset, write_label_predictions
from support.processes import alive
from support.spin_eval_data import perfect_predictions, write_dataset
from support.vocab_eval_data import write_vocab_evaluation
from typer.testing import CliRunner

from segbench.cli import app

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


def _cafe(root: Path) -> list[str]:
    (root / "gt.json").write_text(json.dumps(cafe_gt(HAND_PAIRS)))
    (root / "preds.json").write_text(json.dumps(HAND_PREDS))
    return ["cafe", "--gt", str(root / "gt.json"), "--predictions", str(root / "preds.json")]


def _cgf1(root: Path) -> list[str]:
    return ["cgf1", *_cafe(root)[1:]]


def _coco_cd(root: Path) -> list[str]:
    write_flip_dataset(root / "data" / "coco_cd")
    preds = write_label_predictions(root / "preds", swapped={1, 2})
    return ["coco-cd", "--predictions", str(preds), "--repo", str(root)]


def _spin(root: Path) -> list[str]:
    write_dataset(root / "data" / "spin")
    files = []
    for level, predictions in perfect_predictions().items():
        path = root / f"{level}.json"
        path.write_text(json.dumps(predictions))
        files += [f"--{level}", str(path)]
    return ["spin", *files, "--repo", str(root), "--dataset-dir", "data/spin"]


def _vocab(root: Path) -> list[str]:
    write_vocab_evaluation(root)
    return ["vocab", "--vocab", "vocab.json", "--descriptions", str(root / "desc.json"), "--gt", "gt",
            "--repo", str(root), "--no-baseline"]


EVALUATIONS = {"cafe": _cafe, "cgf1": _cgf1, "coco-cd": _coco_cd, "spin": _spin, "vocab": _vocab}


def _files(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*"))
            if path.is_file()}


@pytest.mark.parametrize("name", sorted(EVALUATIONS))
def test_in_process_and_tracked_evaluations_write_the_same_bytes(name, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")  # the manifests' created_at
    args = EVALUATIONS[name](tmp_path)
    runs = {}
    for mode, extra in (("in-process", []), ("tracked", ["--track"])):
        out = tmp_path / "reports" / mode
        result = CliRunner().invoke(app, ["--data-root", str(tmp_path / "data"), "--work-dir", str(tmp_path / "work"),
                                          "evaluate", *args, "--out", str(out), *extra])
        assert result.exit_code == 0, result.output + repr(result.exception)
        assert "Report:" in result.output
        runs[mode] = _files(out)
    assert {"metrics.json", "report.md", "manifest.json"} <= set(runs["in-process"])
    assert runs["in-process"] == runs["tracked"]


def test_a_plain_evaluate_command_never_imports_prefect(tmp_path):
    """Run as a user does, with Prefect pointed at a closed port: nothing may import or reach it."""
    args = _cgf1(tmp_path)
    env = {**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api"}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "segbench", "--data-root", str(tmp_path / "data"),
                           "--work-dir", str(tmp_path / "work"), "evaluate", *args, "--out", str(tmp_path / "out")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert "segbench.tasks.cafe.eval_report" in imported  # the evaluation ran (import_module is not timed)
    assert not [module for module in imported if module.split(".")[0] == "prefect"]
    assert (tmp_path / "out" / "metrics.json").is_file() and "cgF1" in done.stdout


@pytest.mark.parametrize("verbose", [False, True])
def test_verbose_shows_an_in_process_evaluations_log_lines(tmp_path, verbose):
    args = _cgf1(tmp_path)
    done = subprocess.run([sys.executable, "-m", "segbench", *(["--verbose"] if verbose else []), "--data-root",
                           str(tmp_path / "data"), "--work-dir", str(tmp_path / "work"), "evaluate", *args, "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert ("INFO    | cgF1" in done.stderr) == verbose
    assert "Report:" in done.stdout



def _children(pid: int) -> list[int]:
    found = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in found.read_text().split()] if found.exists() else []


@pytest.mark.parametrize("pause", [0.0, 1.0], ids=["while-starting", "while-scoring"])
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_evaluation_ends_with_its_drawing_process(tmp_path, signum, code, pause):
    """Ctrl-C (to the whole group, as a terminal sends it) or SIGTERM, while the command still imports its
    command line or while it scores: the command says so and exits as it always does, and its drawing
    process is gone."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from cafe_eval import generate  # the benchmark's CAFE-style pairs: 40k pairs score for a few seconds

    gt, predictions = generate(40_000, 0)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "preds.json").write_text(json.dumps(predictions))
    command = subprocess.Popen(
        [sys.executable, "-m", "segbench", "--data-root", str(tmp_path / "data"), "--work-dir", str(tmp_path / "w"),
         "evaluate", "cgf1", "--gt", str(tmp_path / "gt.json"), "--predictions", str(tmp_path / "preds.json"),
         "--out", str(tmp_path / "out")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not (drawing := _children(command.pid)):
        assert command.poll() is None and time.monotonic() < deadline, command.communicate()[1][-2000:]
        time.sleep(0.01)
    time.sleep(pause)  # 0: the command line is still being imported; 1 s: past start-up, reading and scoring
    assert command.poll() is None, "the command ended before the signal: give it more pairs"
    if signum == signal.SIGINT:
        os.killpg(command.pid, signal.SIGINT)
    else:
        command.send_signal(signal.SIGTERM)
    _, stderr = command.communicate(timeout=60)
    assert command.returncode == code, stderr[-2000:]
    assert "Traceback" not in stderr and ("interrupted" in stderr or "terminated" in stderr)
    deadline = time.monotonic() + 10
    while any(map(alive, drawing)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(alive, drawing))
    assert not (tmp_path / "out").exists()
