"""Resuming COCO-CD: a build killed (SIGKILL) at several points and started again ends byte-identical
to an uninterrupted one without redoing finished units; an up-to-date build rewrites nothing; a
changed input, parameter or shard size does what it must.

The CLI runs as a subprocess in its own process group, so the kill takes the whole build down, as a
crash would. The runs report to the session's Prefect API, as a team's builds report to their
server (and none pays a temporary API's start). Kill points are found by watching real progress:
the unit results Prefect persists (the context unit first, then one per render shard).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from segbench.core.io import sha256_tree
from segbench.demo.world import generate_demo_world
from segbench.schemas.coco_cd import CocoCdParams

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

SIZES = {"cat/indoor": 12, "cat/outdoor": 8, "dog/indoor": 8, "dog/outdoor": 12}
EPOCH = "1700000000"
SHARD = 2
ARGS = ["--val-per-group", "2", "--test-per-group", "3", "--shard-size", str(SHARD)]
PARAMS = CocoCdParams(val_per_group=2, test_per_group=3)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("world")
    generate_demo_world(root, seed=3, group_sizes=SIZES)
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """One folder (and one --work-dir, where unit results are kept) for every CLI run of this module."""
    return tmp_path_factory.mktemp("project")


def _command(project: Path, world: Path, data: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "segbench", "--data-root", str(project / data), "--work-dir", str(project / "work"),
            "build", "coco-cd", "--coco-root", str(world), "--stuff-root", str(world), *ARGS, *extra]


def _env() -> dict[str, str]:
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "COLUMNS": "200", "SOURCE_DATE_EPOCH": EPOCH, "PREFECT_API_URL": PREFECT_API_URL.value()}
    for key in ("PREFECT_HOME", "PREFECT_LOCAL_STORAGE_PATH"):
        env.pop(key, None)  # the CLI keeps its state under --work-dir
    return env


def _start(command: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(command, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def run_cli(command: list[str]) -> str:
    proc = _start(command)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    return out


def units_of(output: str) -> dict[str, int]:
    match = re.search(r"(\d+) unit\(s\) computed, (\d+) reused", output)
    assert match, output
    return {"computed": int(match[1]), "reused": int(match[2])}


def finished_units(results: Path, ignore: set[str]) -> dict[str, int]:
    """Unit results persisted so far (name → mtime), leaving out ``ignore``d names and unreadable files."""
    found = {}
    for path in results.glob("*") if results.is_dir() else ():
        if path.name in ignore:
            continue
        try:
            json.loads(path.read_bytes())
            found[path.name] = path.stat().st_mtime_ns
        except (OSError, ValueError):
            continue  # being written right now
    return found


def kill_when(proc: subprocess.Popen[str], results: Path, ignore: set[str], at_least: int) -> dict[str, int]:
    """SIGKILL the build's process group once ``at_least`` units have finished; the units finished then."""
    deadline = time.monotonic() + 240
    while len(finished_units(results, ignore)) < at_least:
        if proc.poll() is not None:
            pytest.fail(f"the build ended before {at_least} unit(s) finished:\n{proc.stdout.read()}")
        assert time.monotonic() < deadline, "no progress"
        time.sleep(0.002)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    return finished_units(results, ignore)


def mtimes(root: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix(): p.stat().st_mtime_ns for p in sorted(root.rglob("*"))}


@pytest.fixture(scope="module")
def reference(world, project) -> tuple[Path, dict[str, int]]:
    """An uninterrupted build and its unit counts."""
    output = run_cli(_command(project, world, "reference"))
    units = units_of(output)
    assert units["reused"] == 0 and units["computed"] > 8
    return project / "reference" / "coco_cd", units


def test_a_build_killed_at_several_points_resumes_to_identical_outputs(world, project, reference):
    ref_out, ref_units = reference
    total = ref_units["computed"]  # the context unit and one per render shard
    results = project / "work" / "prefect" / "results"
    earlier = set(finished_units(results, set()))  # the reference build's units (another stage, never reused)
    out = project / "resumed" / "coco_cd"
    command = _command(project, world, "resumed")

    finished: dict[str, int] = {}
    for at_least in (1, total // 2, total):  # after the first unit, midway, after the last one
        before = dict(finished)
        finished = kill_when(_start(command), results, earlier, at_least)
        assert len(finished) >= at_least
        for name, mtime in before.items():
            assert finished.get(name) == mtime, "a unit finished before an earlier kill ran again"
        if at_least < total:
            assert not out.exists(), "a killed build never replaces the output"
            stage, = out.parent.glob(".coco_cd.*.partial")  # kept for the next run
            # What a kill in the middle of an atomic write leaves; it must not reach the output.
            (stage / "masks").mkdir(exist_ok=True)
            (stage / "masks" / ".000000000001.png.x1y2z3.tmp").write_bytes(b"half a PNG")

    output = run_cli(command)
    after = finished_units(results, earlier)
    assert {name: after[name] for name in finished} == finished, "no finished unit ran again"
    if "Up to date" in output:  # the last kill came after the swap: there was nothing left to do
        assert len(finished) == total
        print("the last kill came after the swap")
    else:
        units = units_of(output)
        assert units["reused"] >= len(finished) and units["computed"] == total - units["reused"]
        assert units["reused"] == len(finished) == total
    assert sha256_tree(out) == sha256_tree(ref_out), "byte-identical to the uninterrupted build, manifest included"
    assert not list(out.parent.glob(".coco_cd.*")), "no stage, temporary or previous copy is left beside the output"


def test_an_up_to_date_build_rewrites_nothing(world, project, reference):
    ref_out, _ = reference
    before = mtimes(ref_out)
    output = run_cli(_command(project, world, "reference"))
    assert "Up to date" in output
    assert mtimes(ref_out) == before


def test_a_changed_input_file_rebuilds_everything(world, project, reference, tmp_path):
    ref_out, ref_units = reference
    changed = Path(shutil.copytree(world, tmp_path / "world"))
    stuff = changed / "annotations" / "stuff_val2017.json"
    stuff.write_text(json.dumps(json.loads(stuff.read_text()), indent=2))  # same content, other bytes
    out = project / "changed" / "coco_cd"
    shutil.copytree(ref_out, out)  # built from the old file: must not count as up to date
    output = run_cli(_command(project, changed, "changed"))
    assert units_of(output) == {"computed": ref_units["computed"], "reused": 0}
    manifest, ref_manifest = (json.loads((p / "manifest.json").read_text()) for p in (out, ref_out))
    assert manifest["inputs"]["stuff_val2017"] != ref_manifest["inputs"]["stuff_val2017"]
    assert manifest["build_key"] != ref_manifest["build_key"]
    same = {k: v for k, v in sha256_tree(out).items() if k != "manifest.json"}
    assert same == {k: v for k, v in sha256_tree(ref_out).items() if k != "manifest.json"}


def test_shard_size_leaves_outputs_unchanged_and_params_or_force_rebuild(world, reference, tmp_path, monkeypatch):
    from segbench.flows.coco_cd.build import build_coco_cd

    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    ref_out, ref_units = reference
    out = tmp_path / "coco_cd"
    first = build_coco_cd(world, world, out, PARAMS, shard_size=200)
    assert first.units.model_dump() == {"computed": 2, "reused": 0}, "one context unit and a single render shard"
    assert sha256_tree(out) == sha256_tree(ref_out), f"shard size 200 and {SHARD} give the same bytes"

    again = build_coco_cd(world, world, out, PARAMS, shard_size=7)
    assert again.up_to_date and again.counts == first.counts and again.skipped == first.skipped
    assert again.coverage == json.loads((out / "tables" / "context_coverage.json").read_text())

    forced = build_coco_cd(world, world, out, PARAMS, shard_size=SHARD, force=True)
    assert forced.units.model_dump() == {"computed": ref_units["computed"], "reused": 0}
    assert sha256_tree(out) == sha256_tree(ref_out)

    reseeded = build_coco_cd(world, world, out, PARAMS.model_copy(update={"seed": 14}))
    assert not reseeded.up_to_date and reseeded.units.computed == 2
    assert json.loads((out / "manifest.json").read_text())["params"]["seed"] == 14
