"""`segbench serve` against a real Prefect server: a one-minute schedule registers and runs the rebuild."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from segbench.demo.world import generate_demo_world

pytestmark = pytest.mark.integration

SEGBENCH = [sys.executable, "-m", "segbench"]
PREFECT = Path(sys.executable).parent / "prefect"
SIZES = {"cat/indoor": 12, "cat/outdoor": 8, "dog/indoor": 8, "dog/outdoor": 12}
PLAN = """
[coco_cd]
coco_root = "world"
stuff_root = "world"
params = { val_per_group = 2, test_per_group = 3, rhos = [0.9] }

[[schedule]]
name = "every-minute"
cron = "* * * * *"
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _clean_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a user's shell: no test-session Prefect state, nothing written to $HOME."""
    env = {**os.environ, "HOME": str(tmp_path / "home"), "COLUMNS": "120"}
    for key in ("PREFECT_HOME", "PREFECT_LOCAL_STORAGE_PATH", "PREFECT_API_URL", "PREFECT_LOGGING_LEVEL"):
        env.pop(key, None)
    return env


def _api(url: str, path: str, body: dict | None = None) -> object:
    request = urllib.request.Request(url + path, data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _wait_for(condition, timeout: float, what: str, *processes: tuple[str, subprocess.Popen]) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for name, process in processes:
            if process.poll() is not None:
                raise AssertionError(f"{name} exited with code {process.returncode} while waiting for {what}")
        try:
            value = condition()
        except OSError:
            value = None
        if value:
            return value
        time.sleep(2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def prefect_server(tmp_path):
    """A real `prefect server start` on a free port with its own PREFECT_HOME; yields its API URL."""
    port = _free_port()
    env = _clean_env(tmp_path) | {
        "PREFECT_HOME": str(tmp_path / "server-home"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PREFECT_UI_ENABLED": "false",
        # Schedule new runs every few seconds instead of every minute, so the test waits for the cron only.
        "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "5",
    }
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen([str(PREFECT), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                              env=env, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    url = f"http://127.0.0.1:{port}/api"
    try:
        _wait_for(lambda: _api(url, "/health") is True, 120, "the Prefect server's health", ("server", server))
        yield url
    except BaseException:
        print("--- prefect server log ---\n" + (tmp_path / "server.log").read_text())
        raise
    finally:
        _stop(server)
        log.close()


def _completed_runs(url: str, deployment: str) -> list[dict]:
    deployments = _api(url, "/deployments/filter", {"deployments": {"name": {"any_": [deployment]}}})
    if not deployments:
        return []
    runs = _api(url, "/flow_runs/filter", {"flow_runs": {"deployment_id": {"any_": [deployments[0]["id"]]}}})
    failed = [r for r in runs if r["state_type"] in ("FAILED", "CRASHED")]
    if failed:
        raise AssertionError(f"a scheduled run ended {failed[0]['state_type']}: {failed[0]['state_name']}")
    return [r for r in runs if r["state_type"] == "COMPLETED"]


def test_serve_runs_the_plan_on_its_schedule(prefect_server, tmp_path):
    project = tmp_path / "project"
    (tmp_path / "home").mkdir()
    generate_demo_world(project / "world", seed=1, group_sizes=SIZES)
    (project / "rebuild.toml").write_text(PLAN)
    env = _clean_env(tmp_path) | {"PREFECT_API_URL": prefect_server, "PREFECT_RUNNER_POLL_FREQUENCY": "2"}
    log = (tmp_path / "serve.log").open("w")
    serve = subprocess.Popen([*SEGBENCH, "serve", "--plan", "rebuild.toml"], cwd=project, env=env, stdout=log,
                             stderr=subprocess.STDOUT)
    try:
        runs = _wait_for(lambda: _completed_runs(prefect_server, "every-minute"), 180,
                         "a completed scheduled run", ("segbench serve", serve))
        assert runs[0]["parameters"]["plan_path"] == str(project / "rebuild.toml")
        manifest = json.loads((project / "data" / "coco_cd" / "manifest.json").read_text())
        assert manifest["params"]["rhos"] == [0.9]
    except BaseException:
        _stop(serve)
        print("--- segbench serve log ---\n" + (tmp_path / "serve.log").read_text())
        raise
    finally:
        _stop(serve)
        log.close()
    output = (tmp_path / "serve.log").read_text()
    assert "rebuild/every-minute" in output and f"{prefect_server.removesuffix('/api')}/runs" in output


def test_serve_without_a_server_says_how_to_start_one(tmp_path):
    (tmp_path / "home").mkdir()
    (tmp_path / "rebuild.toml").write_text(PLAN)
    result = subprocess.run([*SEGBENCH, "serve", "--plan", "rebuild.toml"], cwd=tmp_path, env=_clean_env(tmp_path),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "PREFECT_API_URL is not set" in result.stderr and "prefect server start" in result.stderr


def test_serve_with_an_unreachable_server_names_it(tmp_path):
    (tmp_path / "home").mkdir()
    (tmp_path / "rebuild.toml").write_text(PLAN)
    url = f"http://127.0.0.1:{_free_port()}/api"
    result = subprocess.run([*SEGBENCH, "serve", "--plan", "rebuild.toml"], cwd=tmp_path,
                            env=_clean_env(tmp_path) | {"PREFECT_API_URL": url}, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"the Prefect server at {url} does not answer" in result.stderr
