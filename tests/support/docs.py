"""The pages a user reads: the README and every page under ``docs/``."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]


def text_of_pages() -> str:
    """Every page's text, one after the other."""
    return "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
