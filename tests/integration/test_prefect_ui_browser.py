"""The Prefect UI at the address `segbench server start` prints, in a real browser (headless Chromium,
the Debian package, driven by playwright): a build run by a later command is listed by its name on the
runs page, and its artifact is on the artifacts page. A UI pointed at another API would show "0 runs"."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.browser import browser_or_skip
from support.hostile_builds import COCO_CD_OPTIONS, WORLD_SIZES, own_server_env

from segbench.demo.world import generate_demo_world

pytestmark = [pytest.mark.integration, pytest.mark.browser]


def _segbench(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**own_server_env(idle_minutes=30), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "segbench", "--data-root", str(project / "data"), "--work-dir",
                           str(project / "work"), *args], cwd=project, env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_ui_at_the_printed_address_lists_a_build_run_and_its_artifact(tmp_path):
    chromium = browser_or_skip()
    from playwright.sync_api import sync_playwright

    world = tmp_path / "world"
    generate_demo_world(world, seed=1, group_sizes=WORLD_SIZES)
    project = tmp_path / "project"
    project.mkdir()
    started = _segbench(project, "server", "start")
    assert started.returncode == 0, started.stderr
    try:
        url = re.search(r"started at (http://\S+)", started.stdout)[1]
        built = _segbench(project, "build", "coco-cd", "--coco-root", str(world), "--stuff-root", str(world),
                          *COCO_CD_OPTIONS)
        assert built.returncode == 0, built.stderr
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{url.rstrip('/')}/runs", wait_until="domcontentloaded")
            page.get_by_text(re.compile(r"^build-coco-cd")).first.wait_for(timeout=60_000)
            page.screenshot(path=str(tmp_path / "runs.png"))
            page.goto(f"{url.rstrip('/')}/artifacts", wait_until="domcontentloaded")
            page.get_by_text("build-coco-cd").first.wait_for(timeout=60_000)
            page.screenshot(path=str(tmp_path / "artifacts.png"))
            assert "Can't connect to Server API" not in page.content()
            browser.close()
    finally:
        _segbench(project, "server", "stop")


def test_after_the_demo_the_ui_lists_its_runs_and_artifacts_with_plots(demo_project, tmp_path):
    """The demo ran on its work dir's server, which may since have stopped for being idle: `server
    start` brings the UI back with the demo's runs, its rounds' reports and its evaluations' plots."""
    chromium = browser_or_skip()
    from playwright.sync_api import sync_playwright

    project, result = demo_project
    assert re.search(r"Prefect UI \(the demo's runs\)\s+http://127\.0\.0\.1:\d+", result.output)
    started = _segbench(project, "server", "start")
    assert started.returncode == 0, started.stderr
    try:
        url = re.search(r"(?:started|running) at (http://\S+)", started.stdout)[1].rstrip("/")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{url}/runs", wait_until="domcontentloaded")
            page.get_by_role("searchbox", name="Search by flow run name").fill("demo seed=0")
            page.get_by_text("demo seed=0", exact=True).first.wait_for(timeout=60_000)
            page.goto(f"{url}/artifacts", wait_until="domcontentloaded")
            for key in ("round-demo-context-audit", "round-demo-cafe-verification", "evaluation-coco-cd"):
                page.get_by_text(key, exact=True).first.wait_for(timeout=60_000)
            page.goto(f"{url}/artifacts/key/evaluation-coco-cd", wait_until="domcontentloaded")
            page.get_by_text("Flow run", exact=False).first.wait_for(timeout=60_000)
            page.locator("a[href*='/artifacts/artifact/']").first.click()
            page.locator("img[src^='data:image/png']").first.wait_for(timeout=60_000)
            drawn = page.evaluate("Array.from(document.images).filter(i => i.src.startsWith('data:image/png'))"
                                  ".map(i => i.naturalWidth)")
            page.screenshot(path=str(tmp_path / "evaluation.png"))
            browser.close()
        # per-group IoU, flips by risk decile, the most flipped images
        assert len(drawn) == 3 and all(width > 100 for width in drawn), drawn
    finally:
        _segbench(project, "server", "stop")
