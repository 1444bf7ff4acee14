"""The README and the docs: short README, pages split by purpose, reference pages as the code
makes them, and no link that leads nowhere."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from support.docs import PAGES, README, ROOT

pytestmark = pytest.mark.unit

LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(text: str) -> set[str]:
    """GitHub's anchors of a page's headings (lower case, punctuation dropped, spaces to hyphens)."""
    headings = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", text, flags=re.S), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_the_readme_is_short_and_the_docs_have_their_pages():
    assert README.stat().st_size <= 15_000
    assert len(PAGES) - 1 >= 6
    for page in ("getting-started.md", "how-to/rounds.md", "how-to/release.md", "reference/settings.md",
                 "reference/cli.md", "concepts/reliability.md", "benchmarks.md"):
        assert (ROOT / "docs" / page).is_file(), page


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_heading(page):
    text = page.read_text(encoding="utf-8")
    for target in LINK.findall(re.sub(r"```.*?```", "", text, flags=re.S)):
        if re.match(r"[a-z]+:", target):
            continue  # an outside address
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name} links to {target}, which does not exist"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked.read_text(encoding="utf-8")), f"{page.name}: no heading #{anchor}"


def test_the_reference_pages_are_what_the_code_makes():
    # As a developer runs it: the script's check mode, in its own process.
    done = subprocess.run([sys.executable, "scripts/reference.py", "--check"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_every_setting_is_in_the_settings_reference():
    from segbench.settings import Settings

    text = (ROOT / "docs" / "reference" / "settings.md").read_text(encoding="utf-8")
    assert all(f"| `{name}` |" in text for name in Settings.model_fields)


def test_a_broken_link_would_be_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\nsee [there](missing.md) and [here](#title)\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="missing.md"):
        test_every_relative_link_leads_to_a_file_and_heading(page)
