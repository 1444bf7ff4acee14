"""`segbench view` as a user runs it, on the demo's builds and rounds, with FiftyOne installed by
scripts/fiftyone.sh: the datasets and saved views counted, and the App answering on its port."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import psutil
import pytest
from support.hostile_builds import child_env

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]


def _view(project, fiftyone_dir, *args, **popen):
    env = {**child_env(), "SEGBENCH_FIFTYONE_DIR": str(fiftyone_dir), "COLUMNS": "200"}
    command = [sys.executable, "-m", "segbench", "--data-root", str(project / "data"), "--work-dir",
               str(project / "work"), *args]
    if popen:
        return subprocess.Popen(command, cwd=project, env=env, text=True, **popen)
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=600)


def _images(project, rho):
    return {image["image_file"] for split in ("train", "val", "test")
            for image in json.loads((project / "data" / "coco_cd" / "splits" / rho / f"{split}.json").read_text())["images"]}


def test_every_demo_build_loads_with_its_images_and_masks(demo_project, fiftyone_dir):
    project, _ = demo_project
    coco_cd = _view(project, fiftyone_dir, "--json", "view", "coco_cd", "--no-app", "--rho", "0.5")
    assert coco_cd.returncode == 0, coco_cd.stderr
    loaded = json.loads(coco_cd.stdout)
    assert loaded["name"] == "segbench-coco_cd-rho_0.5" and loaded["samples"] == len(_images(project, "rho_0.5"))
    assert {"ground_truth", "class", "context", "group_id"} <= set(loaded["fields"])
    for target, field in (("waterbirds", "ground_truth"), ("cafe", "target"), ("spin", "subparts")):
        done = _view(project, fiftyone_dir, "--json", "view", target, "--no-app")
        assert done.returncode == 0, done.stderr
        shown = json.loads(done.stdout)
        assert shown["samples"] > 0 and field in shown["fields"], (target, shown)


def test_a_round_opens_in_the_app_with_its_views_and_ctrl_c_leaves_nothing_running(demo_project, fiftyone_dir):
    project, _ = demo_project
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = _view(project, fiftyone_dir, "view", "demo-context-audit", "--port", str(port),
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 300
        for line in process.stdout:
            lines.append(line)
            if "FiftyOne App:" in line or time.monotonic() > deadline:
                break
        assert f"FiftyOne App: http://127.0.0.1:{port}/" in "".join(lines), "".join(lines) + process.stderr.read()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as response:
            assert response.status == 200
        shown = "".join(lines)
        assert re.search(r"samples\s+20\b", shown) and re.search(r"view ties\s+\d+", shown), shown
        assert re.search(r"view disagree-with-automatic\s+\d+", shown), shown
        children = psutil.Process(process.pid).children(recursive=True)
        assert children, "FiftyOne runs in a process of its own"
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 130
    deadline = time.monotonic() + 30
    while any(child.is_running() and child.status() != psutil.STATUS_ZOMBIE for child in children):
        assert time.monotonic() < deadline, "FiftyOne outlived the command"
        time.sleep(0.5)


def test_view_without_fiftyone_says_how_to_install_it(tmp_path):
    done = _view(tmp_path, tmp_path / "no-fiftyone", "view", "coco_cd", "--no-app")
    assert done.returncode == 2
    assert "FiftyOne is not installed" in done.stderr and "scripts/fiftyone.sh install" in done.stderr


def test_view_of_something_neither_built_nor_a_round_lists_what_can_be_viewed(demo_project, fiftyone_dir):
    project, _ = demo_project
    done = _view(project, fiftyone_dir, "view", "no-such-round", "--no-app")
    assert done.returncode == 2 and "neither a dataset with images nor a round" in done.stderr
    assert "coco_cd, waterbirds, spin, cafe" in done.stderr
