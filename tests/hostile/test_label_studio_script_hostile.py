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
