"""One writing command per data root: a second one waits or stops with the holder's name."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from segbench.core.errors import BusyError
from segbench.locking import data_root_lock, lock_holder, lock_path

HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from segbench.locking import data_root_lock
    with data_root_lock(Path(sys.argv[1]), command="segbench build coco-cd", shared=sys.argv[3] == "shared"):
        print("held", flush=True)
        time.sleep(float(sys.argv[2]))
    print("released", flush=True)
""")


def _hold(data_root: Path, seconds: float, *, shared: bool = False) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(data_root), str(seconds),
                             "shared" if shared else "exclusive"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_second_command_fails_at_once_naming_the_holder(tmp_path: Path) -> None:
    data_root = tmp_path / "data"
    holder = _hold(data_root, 30)
    try:
        with pytest.raises(BusyError) as err, data_root_lock(data_root, command="segbench publish"):
            pass
        assert f"pid {holder.pid}" in str(err.value) and "segbench build coco-cd" in str(err.value)
        assert "--wait" in str(err.value)
    finally:
        holder.kill()
        holder.wait()


def test_second_command_waits_until_the_first_ends(tmp_path: Path) -> None:
    data_root = tmp_path / "data"
    holder = _hold(data_root, 1.0)
    seen: list[dict | None] = []
    with data_root_lock(data_root, command="segbench publish", wait=60, on_wait=seen.append):
        assert holder.stdout.readline().strip() == "released"  # we only got in after the holder left
        assert lock_holder(data_root)["pid"] == os.getpid()
    assert seen and seen[0]["command"] == "segbench build coco-cd"
    assert lock_holder(data_root) is None  # the sidecar goes with the lock


def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    data_root = tmp_path / "data"
    holder = _hold(data_root, 30)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    with data_root_lock(data_root, command="segbench publish"):
        pass


def test_lock_file_lives_outside_the_data_root(tmp_path: Path) -> None:
    assert lock_path(tmp_path / "data") == (tmp_path / ".data.lock").resolve()


def test_cli_command_stops_with_a_clear_message(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)  # publish checks the repository first
    data_root = tmp_path / "data"
    holder = _hold(data_root, 30)
    try:
        result = subprocess.run([sys.executable, "-m", "segbench", "--data-root", str(data_root), "--work-dir",
                                 str(tmp_path / "work"), "publish"], capture_output=True, text=True, cwd=tmp_path)
        assert result.returncode == 2
        assert "another segbench command is writing" in result.stderr and f"pid {holder.pid}" in result.stderr
    finally:
        holder.kill()
        holder.wait()


def test_readers_share_the_lock_and_a_writer_waits_for_them(tmp_path: Path) -> None:
    data_root = tmp_path / "data"
    reader = _hold(data_root, 30, shared=True)
    try:
        with data_root_lock(data_root, command="segbench evaluate cafe", shared=True):  # a second reader gets in
            assert lock_holder(data_root) is None  # readers write no record
        with pytest.raises(BusyError, match="segbench commands are reading this data root"), \
                data_root_lock(data_root, command="segbench publish"):
            pass
    finally:
        reader.kill()
        reader.wait()
    writer = _hold(data_root, 30)
    try:
        with pytest.raises(BusyError, match=f"writing to this data root \\(pid {writer.pid}"), \
                data_root_lock(data_root, command="segbench evaluate cafe", shared=True):
            pass
    finally:
        writer.kill()
        writer.wait()


def test_the_last_holder_removes_the_lock_file(tmp_path: Path) -> None:
    data_root = tmp_path / "data"
    reader = _hold(data_root, 1.0, shared=True)
    with data_root_lock(data_root, command="segbench evaluate cafe", shared=True):
        assert lock_path(data_root).exists()
    assert lock_path(data_root).exists()  # the other reader still holds it
    assert reader.stdout.readline().strip() == "released"
    reader.wait()
    assert not lock_path(data_root).exists()
    with data_root_lock(data_root, command="segbench publish"):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing left beside the data root


def _evaluate_cgf1(tmp_path: Path, gt: Path, out: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "segbench", "--data-root", str(tmp_path / "data"), "evaluate", "cgf1",
                           "--gt", str(gt), "--predictions", str(tmp_path / "preds.json"), "--out", str(tmp_path / out)],
                          capture_output=True, text=True, cwd=tmp_path)


def test_an_evaluation_runs_beside_another_and_a_refused_one_leaves_no_lock(tmp_path: Path) -> None:
    from support.cafe_eval_data import HAND_PAIRS, HAND_PREDS, cafe_gt

    (tmp_path / "gt.json").write_text(json.dumps(cafe_gt(HAND_PAIRS)))
    (tmp_path / "preds.json").write_text(json.dumps(HAND_PREDS))
    other = _hold(tmp_path / "data", 60, shared=True)  # an evaluation in progress in the same folder
    try:
        result = _evaluate_cgf1(tmp_path, tmp_path / "gt.json", "report")
        assert result.returncode == 0, result.stderr
        assert (tmp_path / "report").is_dir()
    finally:
        other.kill()
        other.wait()
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    refused = subprocess.run([sys.executable, "-m", "segbench", "evaluate", "cgf1", "--gt", "missing.json",
                              "--predictions", str(tmp_path / "preds.json")], capture_output=True, text=True, cwd=fresh)
    assert refused.returncode == 2 and "missing.json" in refused.stderr
    assert list(fresh.iterdir()) == []  # no lock, no work dir
