"""The SPIN labelling page in a real browser: a Car-Body task on the Label Studio test server, opened in
headless Chromium (the Debian package, driven by playwright) at 1280×800. Once "yes" is picked, the
polygon labels must sit beside the image in the first viewport, not thousands of pixels below it
(Car-Body has 23 subparts in the paper's taxonomy: they are split over pages of at most eight)."""

from __future__ import annotations

import uuid

import pytest
from support.browser import browser_or_skip, credentials, read_instructions

from segbench.core.io import atomic_write_text
from segbench.demo.spin.world import generate_demo_spin
from segbench.schemas.spin import SpinBuildParams

pytestmark = [pytest.mark.integration, pytest.mark.labelstudio, pytest.mark.browser,
              pytest.mark.usefixtures("prefect_harness")]

VIEWPORT = {"width": 1280, "height": 800}


def _paper_taxonomy_yaml() -> str:
    """The default taxonomy (the paper's §8.2, from the shipped edits), built without asking anyone."""
    from segbench.tasks.spin import taxonomy as st
    from segbench.tasks.spin import taxonomy_edits as se

    catalog = st.load_catalog()
    edits, sha = se.load_edits(se.default_edits_path(), catalog)
    parts = se.apply_edits(catalog, {}, "none:none", edits).parts
    taxonomy = st.build_taxonomy(parts, provider="none", model="none", edits_file="taxonomy_edits.yaml",
                                 edits_sha256=sha)
    return st.taxonomy_yaml(taxonomy)


def _inside(box: dict[str, float] | None) -> bool:
    return box is not None and box["x"] >= 0 and box["y"] >= 0 and \
        box["x"] + box["width"] <= VIEWPORT["width"] and box["y"] + box["height"] <= VIEWPORT["height"]


def test_car_body_polygon_labels_are_beside_the_image_in_the_first_viewport(tmp_path, label_studio, monkeypatch):
    from playwright.sync_api import sync_playwright

    from segbench.flows.rounds import launch_round
    from segbench.flows.spin.build import spin_round_items
    from segbench.flows.spin.crowd import create_spin_rounds

    chromium = browser_or_skip()
    demo = generate_demo_spin(tmp_path / "pin", seed=0, split_sizes={"train": 1, "val": 0, "test": 0})
    root = tmp_path / "data"
    atomic_write_text(root / "spin" / "taxonomy.yaml", _paper_taxonomy_yaml())
    items = spin_round_items(demo.root, root, SpinBuildParams())[("Car", "Body")][:1]
    monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_TOKEN", label_studio.token)
    rounds = create_spin_rounds(root, items, key_prefix=f"ui-{uuid.uuid4().hex[:8]}", dataset_version="test",
                                backend="labelstudio", overlap=1)
    first = rounds[0]
    assert len(rounds) == 3 and first.key.endswith("-car-body-p1")  # 23 subparts: pages of 8, 8, 7
    subparts = first.config.params["subparts"]
    assert len(subparts) == 8
    project = launch_round(root, first.key, label_studio.connection).project_id
    (task_id,) = label_studio.client.task_item_ids(project)

    user, password = credentials()
    shot = tmp_path / "car-body.png"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(f"{label_studio.url}/user/login/")
            page.fill("input[name=email]", user)
            page.fill("input[name=password]", password)
            page.click("button[type=submit]")
            page.wait_for_url(lambda url: "/user/login" not in url)
            page.goto(f"{label_studio.url}/projects/{project}/data?labeling=1&task={task_id}")
            read_instructions(page)
            # The first choice on the page is "can you locate the part?"; "yes" reveals the subparts.
            page.locator(".lsf-choice__checkbox", has_text="yes").first.click()
            labels = [page.locator(".lsf-label", has_text=name).first for name in subparts]
            for label in labels:
                label.wait_for(state="visible")
            image = page.locator(".konvajs-content").first  # the image stage: drawn on canvases, zoomable
            image.wait_for(state="visible")
            page.screenshot(path=str(shot))
            boxes = {name: label.bounding_box() for name, label in zip(subparts, labels, strict=True)}
            image_box = image.bounding_box()
        finally:
            browser.close()
    assert shot.stat().st_size > 0
    outside = {name: box for name, box in boxes.items() if not _inside(box)}
    assert not outside, f"polygon labels outside the first {VIEWPORT} viewport: {outside} (screenshot {shot})"
    assert image_box is not None and image_box["y"] < VIEWPORT["height"] and image_box["height"] > 100, (image_box, shot)
