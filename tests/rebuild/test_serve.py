"""`segbench serve` against a real Prefect server: a one-minute schedule registers and runs the rebuild."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
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
    """One call to the Prefect API; a 503 (the server busy, as on a loaded machine) is asked again."""
    request = urllib.request.Request(url + path, data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
    for attempt in range(10):
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            if exc.code != 503 or attempt == 9:
                raise
            time.sleep(1)
    raise AssertionError("unreachable")


def _wait_for(condition, timeout: float, what: str, *processes: tuple[str, subprocess.Popen],
              every: float = 2) -> object:
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
        time.sleep(every)
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
    run = runs[0]["id"]
    # A line per run as it ends (and one as it starts, unless it ended within one poll of the API).
    assert re.search(rf"\d\d:\d\d:\d\d rebuild/every-minute: completed after [\d.]+ s  \S+/runs/flow-run/{run}", output), output
    assert "Stopped serving" in output


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


def _deployment_id(url: str, name: str) -> str | None:
    found = _api(url, "/deployments/filter", {"deployments": {"name": {"any_": [name]}}})
    return found[0]["id"] if found else None


def _runs(url: str, deployment_id: str) -> list[dict]:
    return _api(url, "/flow_runs/filter", {"flow_runs": {"deployment_id": {"any_": [deployment_id]}}})


def _states(url: str, deployment_id: str) -> dict[str, str]:
    """Every run of the deployment and its subflow runs: id → state name."""
    runs = _runs(url, deployment_id)
    children = _api(url, "/flow_runs/filter", {"flow_runs": {"parent_flow_run_id": {"any_": [r["id"] for r in runs]}}})
    return {run["id"]: run["state_name"] for run in [*runs, *children]}


def _running_now(url: str, deployment_id: str) -> list[str]:
    return [run_id for run_id, state in _states(url, deployment_id).items() if state == "Running"]


def test_a_killed_serve_is_settled_by_the_next_and_ctrl_c_cancels_the_run_in_flight(prefect_server, tmp_path):
    """SIGKILL leaves a run shown Running and runs falling Late; the next serve marks the first Crashed and
    cancels the others instead of starting them all. Ctrl-C then stops it cleanly: the run it was executing is
    cancelled, not left Running for ever."""
    project = tmp_path / "project"
    (tmp_path / "home").mkdir()
    # Enough images that a build lasts seconds: the signals land while it runs.
    generate_demo_world(project / "world", seed=1, group_sizes={"cat/indoor": 200, "cat/outdoor": 100,
                                                               "dog/indoor": 100, "dog/outdoor": 200})
    (project / "rebuild.toml").write_text(PLAN.replace("* * * * *", "0 0 1 1 *"))  # runs only when asked for
    env = _clean_env(tmp_path) | {"PREFECT_API_URL": prefect_server, "PREFECT_RUNNER_POLL_FREQUENCY": "1",
                                  # the liveness window after which a deployment nobody polls is left by its runner
                                  "PREFECT_SERVER_SERVICES_FOREMAN_DEPLOYMENT_LAST_POLLED_TIMEOUT_SECONDS": "3"}

    def start_serve(log_name: str) -> subprocess.Popen:
        return subprocess.Popen([*SEGBENCH, "serve", "--plan", "rebuild.toml"], cwd=project, env=env,
                                stdout=(tmp_path / log_name).open("w"), stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    first = start_serve("first.log")
    try:
        deployment = _wait_for(lambda: _deployment_id(prefect_server, "every-minute"), 120, "the deployment",
                               ("segbench serve", first))
        _api(prefect_server, f"/deployments/{deployment}/create_flow_run", {})
        _wait_for(lambda: _running_now(prefect_server, deployment), 120, "a running run", ("segbench serve", first),
                  every=0.2)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        due = "2020-01-01T00:00:00Z"
        late = _api(prefect_server, f"/deployments/{deployment}/create_flow_run",
                    {"state": {"type": "SCHEDULED", "name": "Late", "state_details": {"scheduled_time": due}}})
        time.sleep(3.5)  # past the liveness window: nobody serves the deployment now

        second = start_serve("second.log")
        try:
            _wait_for(lambda: "Watch the runs" in (tmp_path / "second.log").read_text(), 120, "serve to start",
                      ("segbench serve", second))
            states = _states(prefect_server, deployment)
            assert states[late["id"]] == "Cancelled"
            assert "Running" not in states.values() and "Crashed" in states.values(), states
            assert "1 missed run(s), now cancelled" in (tmp_path / "second.log").read_text()

            _api(prefect_server, f"/deployments/{deployment}/create_flow_run", {})
            _wait_for(lambda: _running_now(prefect_server, deployment), 120, "a running run",
                      ("segbench serve", second), every=0.2)
            os.killpg(second.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
            assert second.wait(timeout=60) == 0
            assert "Stopped serving" in (tmp_path / "second.log").read_text()
            left = _states(prefect_server, deployment)
            assert "Running" not in left.values() and "Cancelled" in left.values(), left
        finally:
            _stop(second)
    except BaseException:
        for name in ("first.log", "second.log"):
            if (tmp_path / name).exists():
                print(f"--- {name} ---\n" + (tmp_path / name).read_text())
        raise
    finally:
        _stop(first)
