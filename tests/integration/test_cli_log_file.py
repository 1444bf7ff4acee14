"""``segbench build coco-cd > log 2>&1``: a log file gets timestamped progress lines in order, while the
command runs (not all at the end), and tables as wide as their content (no cell cut at 80 columns)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from segbench.demo.world import generate_demo_world

pytestmark = pytest.mark.integration

SIZES = {"cat/indoor": 12, "cat/outdoor": 8, "dog/indoor": 8, "dog/outdoor": 12}
STAMPED = re.compile(r"(\d\d):(\d\d):(\d\d) (.+)")
STEPS = ["Loading COCO instances", "Loading COCO-Stuff and labelling contexts", "Checking image files",
         "Rendering label masks and images"]


def _start(project: Path, home: Path, world: Path, log: Path) -> subprocess.Popen:
    env = {**os.environ, "HOME": str(home)}
    for key in ("PREFECT_HOME", "PREFECT_LOCAL_STORAGE_PATH", "DVC_SITE_CACHE_DIR", "MPLCONFIGDIR", "COLUMNS",
                "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        env.pop(key, None)
    with log.open("w") as sink:  # stdout and stderr to one file: no terminal anywhere
        return subprocess.Popen([sys.executable, "-m", "segbench", "build", "coco-cd", "--coco-root", str(world),
                                 "--stuff-root", str(world), "--val-per-group", "2", "--test-per-group", "3",
                                 "--rho", "0.5", "--rho", "0.9"],
                                cwd=project, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)


def _first_stamped_line(log: Path, process: subprocess.Popen, timeout: float) -> tuple[str | None, bool]:
    """The first timestamped line of ``log`` and whether the command was still running when it showed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = process.poll() is None
        lines = [line for line in log.read_text().splitlines() if STAMPED.fullmatch(line)]
        if lines:
            return lines[0], running
        if not running:
            return None, False
        time.sleep(0.05)
    return None, process.poll() is None


def test_a_build_logged_to_a_file_shows_progress_as_it_happens_in_order_and_whole_tables(tmp_path):
    world, project, home = tmp_path / "world", tmp_path / "project", tmp_path / "home"
    generate_demo_world(world, seed=1, group_sizes=SIZES)
    project.mkdir()
    home.mkdir()
    log = tmp_path / "build.log"
    process = _start(project, home, world, log)
    try:
        first, running = _first_stamped_line(log, process, timeout=240)
        assert first is not None and first.endswith(f"{STEPS[0]}: started (2 items)"), log.read_text()
        assert running, "the first progress line only showed once the command had ended"
        assert process.wait(timeout=300) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()

    lines = log.read_text().splitlines()
    stamped = [(i, STAMPED.fullmatch(line)) for i, line in enumerate(lines)]
    stamped = [(i, m) for i, m in stamped if m]
    times = [int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3]) for _, m in stamped]
    assert times == sorted(times) or max(times) - min(times) > 12 * 3600  # in order (a midnight wrap aside)
    said = [m[4] for _, m in stamped]
    for step in STEPS:
        assert f"{step}: started" in " | ".join(said), (step, said)
    starts = [next(n for n, text in enumerate(said) if text.startswith(f"{step}: started")) for step in STEPS]
    ends = [next(n for n, text in enumerate(said) if text.startswith(f"{step}: done")) for step in STEPS]
    assert starts == sorted(starts) and all(s < e for s, e in zip(starts, ends, strict=True)), said
    assert max(i for i, _ in stamped) < lines.index("Group counts")  # progress first, then the summary

    # The group-count table is wider than 80 columns and comes whole: every header and every cell.
    header = next(line for line in lines if "cat indoors" in line)
    assert all(name in header for name in ("ρ", "split", "cat indoors", "cat outdoors", "dog indoors",
                                            "dog outdoors", "total")), header
    assert len(header) > 80 and header.rstrip().endswith("┃")
    rows = [line for line in lines if line.startswith("│ rho_")]
    assert len(rows) == 6 and all(row.rstrip().endswith("│") and "…" not in row for row in rows), rows
    assert "Dataset: data/coco_cd" in lines[-2] or any(line.startswith("Dataset: data/coco_cd") for line in lines)
