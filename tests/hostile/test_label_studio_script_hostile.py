"""``scripts/label-studio.sh stop`` signals only its own server: a stale pid file naming a process
that reused the number leaves that process alone."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "label-studio.sh"


def test_stop_with_a_stale_pid_file_leaves_an_unrelated_process_alone(tmp_path):
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        server_dir = tmp_path / "label-studio"
        server_dir.mkdir()
        (server_dir / "server.pid").write_text(f"{bystander.pid}\n")
        env = {**os.environ, "SEGBENCH_LABEL_STUDIO_DIR": str(server_dir),
               "SEGBENCH_LABEL_STUDIO_VENV": str(tmp_path / "venv"), "SEGBENCH_WORK_DIR": str(tmp_path)}
        done = subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert "not this Label Studio server" in done.stderr and "not running" in done.stdout
        assert bystander.poll() is None  # still running
    finally:
        bystander.kill()
        bystander.wait()


def _script(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "SEGBENCH_LABEL_STUDIO_DIR": str(tmp_path / "label-studio"),
           "SEGBENCH_LABEL_STUDIO_VENV": str(tmp_path / "venv"), "SEGBENCH_WORK_DIR": str(tmp_path),
           "SEGBENCH_LABEL_STUDIO_USER": "me@example.com", "SEGBENCH_LABEL_STUDIO_PASSWORD": "pw",
           "SEGBENCH_LABEL_STUDIO_TOKEN": "t" * 40}
    for name in ("SEGBENCH_LABEL_STUDIO_TEST", "SEGBENCH_LABEL_STUDIO_ANNOTATOR_PORT"):  # the defaults: from 8100
        env.pop(name, None)
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("name", ["../main", "Alice", "-x", "a" * 33, ""])
def test_an_annotator_name_that_is_no_plain_name_is_refused(tmp_path, name):
    done = _script(tmp_path, "env", "--annotator", name)
    assert done.returncode == 1 and "must be lowercase letters, digits, - or _" in done.stderr
    assert not (tmp_path / "label-studio").exists()


def test_an_annotators_server_keeps_its_port_and_a_new_one_takes_a_port_no_other_has(tmp_path):
    annotators = tmp_path / "label-studio" / "annotators"
    for name, port in (("alice", "8555"), ("bob", "8100")):
        (annotators / name).mkdir(parents=True)
        (annotators / name / "port").write_text(f"{port}\n")
    assert "SEGBENCH_LABEL_STUDIO_URL=http://127.0.0.1:8555\n" in _script(tmp_path, "env", "--annotator", "alice").stdout
    carol = _script(tmp_path, "env", "--annotator", "carol").stdout  # 8100 is bob's, stopped or not
    assert "SEGBENCH_LABEL_STUDIO_URL=http://127.0.0.1:81" in carol and ":8100\n" not in carol
    # An annotator's server serves the main server's files folder.
    assert f"SEGBENCH_LABEL_STUDIO_FILES={tmp_path}/label-studio/files\n" in carol
    stopped = _script(tmp_path, "stop", "--all")
    assert stopped.returncode == 0 and stopped.stdout.count("not running") == 3  # the main server, alice and bob
    assert _script(tmp_path, "stop", "--all", "--annotator", "bob").returncode == 1
