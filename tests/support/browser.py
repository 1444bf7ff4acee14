"""Headless Chromium for browser tests: the Debian package (scripts/debian-packages.txt), driven by
playwright; playwright's own browser download is never used. And the public test account of the
Label Studio test server."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
TEST_ENV = Path(__file__).resolve().parents[2] / "scripts" / "label-studio.test.env"


def browser_or_skip() -> str:
    """The Chromium executable (skips the test when playwright or Chromium is missing)."""
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the test extra of pyproject.toml)")
    path = shutil.which("chromium") or (CHROMIUM if Path(CHROMIUM).is_file() else None)
    if path is None:
        pytest.skip("Chromium is not installed (apt-get install chromium; it is in scripts/debian-packages.txt)")
    return path


def credentials() -> tuple[str, str]:
    """The public test account of scripts/label-studio.test.env (the server the suite starts has it)."""
    values = dict(line.split("=", 1) for line in TEST_ENV.read_text("utf-8").splitlines()
                  if line and not line.startswith("#"))
    return values["SEGBENCH_LABEL_STUDIO_USER"], values["SEGBENCH_LABEL_STUDIO_PASSWORD"]


def read_instructions(page) -> str:
    """The text of the instructions page a Label Studio project opens on, which is then closed."""
    modal = page.locator(".lsf-modal-ls_visible", has_text="Labeling Instructions")
    modal.wait_for(state="visible", timeout=15_000)
    text = modal.inner_text()
    page.get_by_role("button", name="Close modal").click()
    modal.wait_for(state="hidden")
    return text
