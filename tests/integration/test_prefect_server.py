"""The Prefect API under segbench's commands, run as a user runs them (processes, signals):

* ``segbench server start|stop|status`` keeps one persistent server that later commands use;
* without one, a command that runs a flow starts a private server, says so once on stderr, and
  leaves no process behind, even when it is killed with SIGKILL;
* commands that only read local state never import Prefect;
* Ctrl-C on a build stops it promptly with exit code 130 and how to resume, and the rerun resumes
  to the bytes of an uninterrupted build.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from segbench.annotation_ui.rounds import RoundStore
from segbench.demo.world import generate_demo_world
from segbench.schemas.rounds import Round, RoundConfig, RoundItem

pytestmark = pytest.mark.integration

EPOCH = "1700000000"
SIZES = {"cat/indoor": 12, "cat/outdoor": 8, "dog/indoor": 8, "dog/outdoor": 12}
HINT = "segbench server start"


def _env(**extra: str) -> dict[str, str]:
    """A user's environment: no Prefect API configured, Prefect state under the command's work dir, and a
    private server per command (the default background server has tests of its own)."""
    env = {**os.environ, "COLUMNS": "200", "SOURCE_DATE_EPOCH": EPOCH, "SEGBENCH_SERVER_IDLE_MINUTES": "0", **extra}
    for key in ("PREFECT_API_URL", "PREFECT_HOME", "PREFECT_LOCAL_STORAGE_PATH"):
        env.pop(key, None)
    return env


def _command(project: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "segbench", "--data-root", str(project / "data"), "--work-dir",
            str(project / "work"), *args]


def segbench(project: Path, *args: str, timeout: float = 300, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_command(project, *args), env=_env(**env), capture_output=True, text=True, timeout=timeout)


def _cgf1_inputs(folder: Path) -> list[str]:
    from support.cafe_eval_data import HAND_PAIRS, HAND_PREDS, cafe_gt

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gt.json").write_text(json.dumps(cafe_gt(HAND_PAIRS)))
    (folder / "preds.json").write_text(json.dumps(HAND_PREDS))
    return ["evaluate", "cgf1", "--gt", str(folder / "gt.json"), "--predictions", str(folder / "preds.json"),
            "--track"]  # as a flow: these tests are about the server under it


def _api(url: str, path: str, body: dict) -> object:
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


# --- the persistent server -------------------------------------------------------------------------

def test_server_start_status_stop_and_commands_use_it(tmp_path):
    project = tmp_path / "project"
    down = segbench(project, "server", "status")
    assert down.returncode == 0 and "down" in down.stdout and HINT in down.stdout

    started = segbench(project, "server", "start")
    assert started.returncode == 0, started.stderr
    state = json.loads((project / "work" / "prefect-server" / "server.json").read_text())
    url = f"http://127.0.0.1:{state['port']}"
    assert f"started at {url}" in started.stdout
    try:
        again = segbench(project, "server", "start")
        assert again.returncode == 0 and f"already running at {url}" in again.stdout
        assert json.loads((project / "work" / "prefect-server" / "server.json").read_text()) == state
        assert f"up at {url}" in segbench(project, "server", "status").stdout

        evaluated = segbench(project, *_cgf1_inputs(tmp_path / "inputs"))
        assert evaluated.returncode == 0, evaluated.stderr
        assert HINT not in evaluated.stderr, "a running server needs no hint"
        assert _api(url + "/api", "/flow_runs/count", {}) >= 1, "the command's flow ran on the server"
        with urllib.request.urlopen(url + "/ui-settings", timeout=10) as response:  # what the UI page asks first
            assert json.loads(response.read())["api_url"] == "/api", "the UI must call this server, not port 4200"
    finally:
        stopped = segbench(project, "server", "stop")
    assert stopped.returncode == 0 and f"{url} stopped" in stopped.stdout
    assert not psutil.pid_exists(state["pid"]) or psutil.Process(state["pid"]).status() == psutil.STATUS_ZOMBIE
    assert "No Prefect server running" in segbench(project, "server", "stop").stdout
    assert "down" in segbench(project, "server", "status").stdout


def test_a_copied_work_dir_starts_a_server_of_its_own(tmp_path):
    """cp -a of a project whose server runs: the copy's commands do not write into the original's database,
    and stopping the copy's server leaves the original's running."""
    import shutil

    original, copy = tmp_path / "original", tmp_path / "copy"
    assert segbench(original, "server", "start").returncode == 0
    first = json.loads((original / "work" / "prefect-server" / "server.json").read_text())
    try:
        shutil.copytree(original, copy, symlinks=True, ignore=shutil.ignore_patterns(".lock", "in-use"))
        assert "down" in segbench(copy, "server", "status").stdout
        started = segbench(copy, "server", "start")
        assert started.returncode == 0, started.stderr
        second = json.loads((copy / "work" / "prefect-server" / "server.json").read_text())
        assert second["pid"] != first["pid"] and second["folder"] == str(copy / "work" / "prefect-server")
        evaluated = segbench(copy, *_cgf1_inputs(tmp_path / "inputs"))
        assert evaluated.returncode == 0, evaluated.stderr
        assert _api(f"http://127.0.0.1:{first['port']}/api", "/flow_runs/count", {}) == 0, "nothing in the original"
        assert _api(f"http://127.0.0.1:{second['port']}/api", "/flow_runs/count", {}) >= 1
        segbench(copy, "server", "stop")
        assert f"up at http://127.0.0.1:{first['port']}" in segbench(original, "server", "status").stdout
    finally:
        segbench(copy, "server", "stop")
        segbench(original, "server", "stop")


def test_a_stale_or_reused_pid_in_the_state_file_is_no_server(tmp_path):
    project = tmp_path / "project"
    state = project / "work" / "prefect-server" / "server.json"
    state.parent.mkdir(parents=True)
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    # A process that ended, and a live one that is not the recorded server (its pid was reused).
    for pid in (ended.pid, os.getpid()):
        state.write_text(json.dumps({"pid": pid, "started": 1, "port": 1}))
        assert "down" in segbench(project, "server", "status").stdout
        assert "No Prefect server running" in segbench(project, "server", "stop").stdout
    assert not state.exists(), "stop clears the stale record"


def _watchers(folder: Path) -> set[psutil.Process]:
    """The idle watchers of the background server recorded in ``folder``."""
    return {process for process in psutil.process_iter(["cmdline"])
            if f"segbench.prefect_server watch {folder}" in " ".join(process.info["cmdline"] or [])}


def test_the_first_flow_starts_a_background_server_that_later_commands_use_and_idle_stops(tmp_path):
    project = tmp_path / "project"
    folder = (project / "work" / "prefect-server").resolve()
    first = segbench(project, *_cgf1_inputs(tmp_path / "inputs"), "--out", str(tmp_path / "a"),
                     SEGBENCH_SERVER_IDLE_MINUTES="0.1")
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("starting a local Prefect server") == 1 and "0.1 min without use" in first.stderr
    state = json.loads((folder / "server.json").read_text())
    assert state["idle_minutes"] == 0.1 and psutil.pid_exists(state["pid"]), "it outlives the command"
    try:
        second = segbench(project, *_cgf1_inputs(tmp_path / "inputs"), "--out", str(tmp_path / "b"),
                          SEGBENCH_SERVER_IDLE_MINUTES="0.1")
        assert second.returncode == 0 and "starting" not in second.stderr, "the second command reuses it"
        assert json.loads((folder / "server.json").read_text())["pid"] == state["pid"]
        assert _api(f"http://127.0.0.1:{state['port']}/api", "/flow_runs/count", {}) == 2
        assert "0.1 min without use" in segbench(project, "server", "status").stdout
        deadline = time.monotonic() + 60  # 6 s idle, checked every 1.5 s, then SIGTERM
        while psutil.pid_exists(state["pid"]) and psutil.Process(state["pid"]).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline, "the idle server was not stopped"
            time.sleep(0.5)
        assert "down" in segbench(project, "server", "status").stdout
        assert _survivors(_watchers(folder)) == [], "the watcher ends with its server"
    finally:
        segbench(project, "server", "stop")


def test_server_start_keeps_a_server_a_command_started_until_server_stop(tmp_path):
    project = tmp_path / "project"
    folder = (project / "work" / "prefect-server").resolve()
    first = segbench(project, *_cgf1_inputs(tmp_path / "inputs"), "--out", str(tmp_path / "a"),
                     SEGBENCH_SERVER_IDLE_MINUTES="0.05")
    assert first.returncode == 0, first.stderr
    state = json.loads((folder / "server.json").read_text())
    try:
        kept = segbench(project, "server", "start")
        assert kept.returncode == 0 and "already running" in kept.stdout and "runs until segbench server stop" in kept.stdout
        assert json.loads((folder / "server.json").read_text())["idle_minutes"] is None
        assert _survivors(_watchers(folder)) == [], "its idle watcher lets it be"
        time.sleep(6)  # past the 3 s it was to stop after
        assert psutil.pid_exists(state["pid"]) and psutil.Process(state["pid"]).status() != psutil.STATUS_ZOMBIE
        assert "runs until segbench server stop" in segbench(project, "server", "status").stdout
    finally:
        segbench(project, "server", "stop")


# --- a private server per command -----------------------------------------------------------------------------------------------------------------------------------------------

def _descendants_while_running(process: subprocess.Popen[str], until: float) -> set[psutil.Process]:
    """The command's descendants seen until one is a Prefect server process or ``until`` passes."""
    seen: set[psutil.Process] = set()
    parent = psutil.Process(process.pid)
    while time.monotonic() < until and process.poll() is None:
        with_children = parent.children(recursive=True)
        seen.update(with_children)
        if any("prefect.server" in " ".join(child.cmdline()) for child in with_children if child.is_running()):
            return seen
        time.sleep(0.05)
    return seen


def _survivors(processes: set[psutil.Process], grace: float = 10.0) -> list[psutil.Process]:
    deadline = time.monotonic() + grace
    while True:
        alive = [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def test_without_a_server_a_command_hints_once_and_leaves_no_process(tmp_path):
    project = tmp_path / "project"
    process = subprocess.Popen(_command(project, *_cgf1_inputs(tmp_path / "inputs")), env=_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    children = _descendants_while_running(process, time.monotonic() + 120)
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    assert children, "the command started its private server"
    assert stderr.count(HINT) == 1 and HINT not in stdout
    assert _survivors(children) == []


def test_no_child_outlives_a_command_killed_with_sigkill(tmp_path):
    project = tmp_path / "project"
    process = subprocess.Popen(_command(project, *_cgf1_inputs(tmp_path / "inputs")), env=_env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    children = _descendants_while_running(process, time.monotonic() + 120)
    assert process.poll() is None and children, "killed while its private server runs"
    process.kill()
    process.wait()
    assert _survivors(children) == []


# --- local reads never import Prefect ---------------------------------------------------------------

def _saved_round(data_root: Path) -> str:
    now = "2026-01-01T00:00:00+00:00"
    RoundStore(data_root / "rounds").save(Round(
        key="local-1", kind="coco_cd_context_audit", dataset="coco_cd", dataset_version="0" * 64,
        config=RoundConfig(label_config="coco_cd_context"), backend="files", created_at=now, updated_at=now,
        items=[RoundItem(item_id="1", image="coco_cd/images/1.png", width=4, height=4)]))
    return "local-1"


@pytest.mark.parametrize("args", [("--help",), ("--version",), ("rounds", "list"), ("rounds", "status"),
                                  ("server", "status")], ids=" ".join)
def test_local_commands_never_import_prefect_or_other_heavy_modules(tmp_path, args):
    project = tmp_path / "project"
    if args == ("rounds", "status"):
        args = (*args, _saved_round(project / "data"))
    done = subprocess.run([sys.executable, "-X", "importtime", *_command(project, *args)[1:]], env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time")}
    assert "segbench.cli" in imported  # the measurement works
    assert not {name for name in imported if name.split(".")[0] == "prefect"}
    # nor what takes half a second each and a read does not use: scipy's statistics, the Label Studio SDK
    assert not imported & {"scipy.stats", "label_studio_sdk"}
    if args in (("--help",), ("--version",)):  # these answer before any setting is read: no settings models
        assert not imported & {"pydantic_settings", "segbench.settings", "numpy", "matplotlib"}


# --- Ctrl-C ---------------------------------------------------------------------------------------------

BUILD = ("build", "coco-cd", "--val-per-group", "2", "--test-per-group", "3", "--shard-size", "1")


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    """Enough images that rendering lasts seconds (about 240 units): Ctrl-C lands while render units are
    still running, even on a loaded machine."""
    root = tmp_path_factory.mktemp("world")
    generate_demo_world(root, seed=1, group_sizes={"cat/indoor": 120, "cat/outdoor": 40, "dog/indoor": 40,
                                                  "dog/outdoor": 120})
    return root


def _contents(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("signum", "code", "said"), [(signal.SIGINT, 130, "interrupted"),
                                                      (signal.SIGTERM, 143, "terminated (SIGTERM)")])
def test_a_signal_stops_a_build_promptly_and_the_rerun_resumes_it(world, tmp_path, signum, code, said):
    """Ctrl-C (to the whole group, as a terminal sends it) or SIGTERM (as a service manager sends it)."""
    sources = ("--coco-root", str(world), "--stuff-root", str(world))
    reference = segbench(tmp_path / "reference", *BUILD, *sources)
    assert reference.returncode == 0, reference.stderr

    project = tmp_path / "project"
    data = project / "data"
    # As in a terminal, whatever this test runs under: a job started in the background by a shell
    # (CI scripts often are) inherits SIGINT ignored, and Python then never raises KeyboardInterrupt.
    process = subprocess.Popen(_command(project, *BUILD, *sources), env=_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 240
    while len(list(data.glob(".coco_cd.*.partial/images/*.png"))) < 3:  # some render units finished
        assert process.poll() is None, process.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "no render unit finished"
        time.sleep(0.02)
    if signum == signal.SIGINT:
        os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    else:
        process.send_signal(signal.SIGTERM)
    interrupted = time.monotonic()
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == code, stdout + stderr
    assert time.monotonic() - interrupted < 30
    assert "Traceback" not in stderr and f"error: {said}; a build keeps the units it finished" in stderr
    assert not (data / "coco_cd" / "manifest.json").exists()
    assert list(data.glob(".coco_cd.*.partial")), "the resumable stage is kept"

    resumed = segbench(project, *BUILD, *sources)
    assert resumed.returncode == 0, resumed.stderr
    assert " 0 reused" not in resumed.stdout, "the finished units are reused"
    assert _contents(data / "coco_cd") == _contents(tmp_path / "reference" / "data" / "coco_cd")


def test_a_build_whose_server_is_killed_ends_with_one_message_and_the_rerun_resumes(world, tmp_path):
    """The persistent server dies mid-build (kill -9): the command ends within seconds with exit code 2 and
    one message naming the server, instead of retrying calls to it for many minutes."""
    project = tmp_path / "project"
    sources = ("--coco-root", str(world), "--stuff-root", str(world))
    started = segbench(project, "server", "start")
    assert started.returncode == 0, started.stderr
    state = json.loads((project / "work" / "prefect-server" / "server.json").read_text())
    data = project / "data"
    process = subprocess.Popen(_command(project, *BUILD, *sources), env=_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while len(list(data.glob(".coco_cd.*.partial/images/*.png"))) < 3:
            assert process.poll() is None, process.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "no render unit finished"
            time.sleep(0.02)
        os.killpg(state["pid"], signal.SIGKILL)  # the server leads a process group of its own
        killed = time.monotonic()
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 2, stdout + stderr
    assert time.monotonic() - killed < 40
    assert stderr.count("lost the Prefect server") == 1 and "Traceback" not in stderr, stderr

    resumed = segbench(project, *BUILD, *sources)
    try:
        assert resumed.returncode == 0, resumed.stderr
        assert " 0 reused" not in resumed.stdout, "the finished units are reused"
    finally:
        segbench(project, "server", "stop")


