"""COCO-CD on a real Dask cluster: a Prefect server, ``dask scheduler`` and two ``dask worker``
processes on 127.0.0.1 sharing a work dir, driven by ``segbench --dask-address`` as a user would.

The cluster's outputs must be the default runner's bytes, also when a worker is killed mid-build.
Every process started here is stopped at the end.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from segbench.core.io import sha256_tree
from segbench.demo.world import generate_demo_world

pytestmark = pytest.mark.integration

SIZES = {"cat/indoor": 12, "cat/outdoor": 8, "dog/indoor": 8, "dog/outdoor": 12}
EPOCH = "1700000000"
DASK = str(Path(sys.executable).parent / "dask")
PREFECT = str(Path(sys.executable).parent / "prefect")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for(check, what: str, procs: list[subprocess.Popen], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        dead = [p.args for p in procs if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up (exited: {dead})")
        time.sleep(0.5)


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2).close()
        return True
    except OSError:
        return False


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Prefect server + scheduler + workers ``w1`` and ``w2``; yields what a build command needs."""
    root = tmp_path_factory.mktemp("cluster")
    work = root / "work"  # the shared work dir: Prefect result storage of the command and the workers
    env = {**os.environ, "SOURCE_DATE_EPOCH": EPOCH, "PREFECT_HOME": str(root / "prefect-server"),
           "PREFECT_LOCAL_STORAGE_PATH": str(work / "prefect" / "results"), "COLUMNS": "200"}
    api_port, scheduler_port = _free_port(), _free_port()
    env["PREFECT_API_URL"] = f"http://127.0.0.1:{api_port}/api"
    address = f"tcp://127.0.0.1:{scheduler_port}"
    procs: dict[str, subprocess.Popen] = {}
    logs = root / "logs"
    logs.mkdir()

    def start(name: str, *args: str) -> None:
        with (logs / f"{name}.log").open("wb") as log:
            procs[name] = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root)

    try:
        start("prefect", PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(api_port))
        start("scheduler", DASK, "scheduler", "--host", "127.0.0.1", "--port", str(scheduler_port),
              "--no-dashboard")
        def start_worker(name: str) -> None:
            start(name, DASK, "worker", address, "--name", name, "--nthreads", "1", "--no-dashboard",
                  "--host", "127.0.0.1", "--local-directory", str(root / name))

        for name in ("w1", "w2"):
            start_worker(name)
        _wait_for(lambda: _answers(env["PREFECT_API_URL"] + "/health"), "the Prefect server", list(procs.values()))
        with _client(address) as client:
            client.wait_for_workers(2, timeout=60)
        yield {"root": root, "work": work, "env": env, "address": address, "procs": procs, "logs": logs,
               "start_worker": start_worker}
    finally:
        _stop(list(procs.values()))


def _client(address: str):
    from distributed import Client

    return Client(address, timeout=30)


@pytest.fixture(scope="module")
def world(cluster) -> Path:
    generate_demo_world(cluster["root"] / "world", seed=5, group_sizes=SIZES)
    return cluster["root"] / "world"


def _build(cluster, world: Path, data: Path, work: Path, *runner: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "segbench", "--data-root", str(data), "--work-dir", str(work), *runner,
               "build", "coco-cd", "--coco-root", str(world), "--stuff-root", str(world),
               "--val-per-group", "2", "--test-per-group", "3", "--shard-size", "2"]
    return subprocess.Popen(command, env=cluster["env"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(build: subprocess.Popen) -> str:
    out, _ = build.communicate(timeout=240)
    assert build.returncode == 0, out
    return out


@pytest.fixture(scope="module")
def default_build(cluster, world) -> Path:
    """The reference: the default runner, with a work dir (so result storage) of its own."""
    _finish(_build(cluster, world, cluster["root"] / "threads", cluster["root"] / "threads-work"))
    return cluster["root"] / "threads" / "coco_cd"


def test_two_cli_workers_give_the_default_runners_bytes(cluster, world, default_build):
    data = cluster["root"] / "dask"
    out = _finish(_build(cluster, world, data, cluster["work"], "--dask-address", cluster["address"]))
    assert "0 reused" in out
    assert sha256_tree(data / "coco_cd") == sha256_tree(default_build), "manifest included"
    ran = b"".join((cluster["logs"] / f"{name}.log").read_bytes() for name in ("w1", "w2"))
    assert cluster["procs"]["w1"].poll() is None and cluster["procs"]["w2"].poll() is None
    assert b"Traceback" not in ran


def test_a_worker_killed_mid_build_changes_nothing(cluster, world, default_build):
    shutil.rmtree(cluster["work"] / "prefect" / "results", ignore_errors=True)  # no unit may be reused
    data = cluster["root"] / "killed"
    build = _build(cluster, world, data, cluster["work"], "--dask-address", cluster["address"])
    try:
        with _client(cluster["address"]) as client:
            busy = _first_busy_worker(client, build)
        os.kill(cluster["procs"][busy].pid, signal.SIGKILL)
        assert build.poll() is None, "the worker was killed while the build ran"
        out = _finish(build)
    finally:
        if build.poll() is None:
            build.kill()
            build.wait()
    assert cluster["procs"][busy].wait(timeout=10) == -signal.SIGKILL
    cluster["start_worker"](busy)  # the module's other tests, in any order, expect both workers
    with _client(cluster["address"]) as client:
        client.wait_for_workers(2, timeout=60)
    assert "0 reused" in out
    assert sha256_tree(data / "coco_cd") == sha256_tree(default_build)


def _first_busy_worker(client, build: subprocess.Popen) -> str:
    """The name of the first worker seen running a unit of ``build``."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and build.poll() is None:
        processing = client.processing()
        names = {addr: info["name"] for addr, info in client.scheduler_info()["workers"].items()}
        for addr, keys in processing.items():
            if keys:
                return names[addr]
        time.sleep(0.05)
    raise AssertionError(f"no worker ever ran a unit (build exited with {build.poll()})")


def test_cafe_edits_with_the_pillow_editor_on_the_cluster_give_the_default_runners_bytes(cluster):
    from segbench.demo.cafe.sources import generate_demo_cafe

    sources = generate_demo_cafe(cluster["root"] / "cafe-sources", seed=0, sizes={"coco": 6, "lvis": 4})
    options = [arg for spec in sources for arg in ("--source", f"{spec.name}={spec.annotations}:{spec.images}")]
    built = {}
    for name, work, runner in (("threads", cluster["root"] / "threads-work", ()),
                               ("dask", cluster["work"], ("--dask-address", cluster["address"]))):
        data = cluster["root"] / f"cafe-{name}"
        command = [sys.executable, "-m", "segbench", "--data-root", str(data), "--work-dir", str(work), *runner,
                   "build", "cafe-candidates", *options]
        done = subprocess.run(command, env=cluster["env"], capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stdout + done.stderr
        built[name] = sha256_tree(data / "cafe_candidates")
    assert built["dask"] == built["threads"]
