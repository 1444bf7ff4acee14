"""Every round kind's task page in a real browser (headless Chromium, the Debian package, driven by
playwright) on the Label Studio test server, at 1400×900: the project opens on its instructions,
the image and every question sit inside the first viewport, single choices are radio buttons, and a
task cannot be submitted with a question unanswered (the warning names it in words)."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from support.browser import browser_or_skip, credentials, read_instructions

from segbench.annotation_ui.rounds import RoundStore, new_round
from segbench.schemas.rounds import RoundConfig, RoundItem

pytestmark = [pytest.mark.integration, pytest.mark.labelstudio, pytest.mark.browser,
              pytest.mark.usefixtures("prefect_harness")]

VIEWPORT = {"width": 1400, "height": 900}

# kind, label config, params, image size (width, height), item data, the choices the page must show,
# how the warning of a half-answered submit starts
KINDS = {
    "audit": ("coco_cd_context_audit", "coco_cd_context", {}, (512, 512), {}, 3, "Choose where the photo was taken"),
    "cafe": ("cafe_verification", "cafe_verification", {}, (640, 427),
             {"q_pos": "a cat on a sofa", "q_neg": "a dog on a sofa", "edit_type": "Context Conflict"}, 8,
             "Answer the first question"),
    "cafe-portrait": ("cafe_verification", "cafe_verification", {}, (427, 640),
                      {"q_pos": "a red bus", "q_neg": "a school bus", "edit_type": "Superficial Mimicry"}, 8,
                      "Answer the first question"),
    "spin": ("spin_subparts", "spin_subparts", {"object": "Bird", "part": "Head", "subparts": ["Beak", "Eye"]},
             (500, 375), {"image_id": 1, "part_ann_id": 7, "object": "Bird", "object_class": "goldfinch",
                          "part": "Head", "subparts": ["Beak", "Eye"]}, 6, "Answer: can you locate any Beak?"),
    "spin-review": ("spin_review", "spin_review", {"object": "Bird", "part": "Head", "subparts": ["Beak", "Eye"]},
                    (500, 375), {"image_id": 1, "part_ann_id": 7, "object": "Bird", "object_class": "goldfinch",
                                 "part": "Head", "subparts": ["Beak", "Eye"], "shown": {"Beak": None, "Eye": None}},
                    8, "Answer for the Beak: right, redrawn or absent?"),
    "vocab": ("vocab_adjudication", "vocab_adjudication",
              {"categories": ["road", "sidewalk", "building", "wall", "fence", "pole", "traffic light",
                              "traffic sign", "vegetation", "terrain", "sky", "person", "rider", "car", "truck",
                              "bus", "train", "motorcycle", "bicycle"]},
              (2048, 1024), {"description": "a red double-decker bus", "image_id": "1", "segment_id": 15}, 25,
              "Choose the category the description names"),
}


def _launch(root: Path, name: str, label_studio) -> tuple[int, int]:
    from segbench.flows.rounds import launch_round

    kind, config, params, (width, height), data, *_ = KINDS[name]
    image = f"pages/{name}.png"
    rng = np.random.default_rng(0)
    (root / "pages").mkdir(parents=True, exist_ok=True)
    Image.fromarray(rng.integers(0, 255, (height, width, 3), dtype=np.uint8)).save(root / image)
    key = f"page-{name}-{uuid.uuid4().hex[:8]}"
    round_ = new_round(key, kind, "pages", "test", RoundConfig(label_config=config, params=params),
                       [RoundItem(item_id="1", image=image, width=width, height=height, data=data)], "labelstudio",
                       "2026-01-01T00:00:00+00:00")
    RoundStore(root / "rounds").save(round_)
    project = launch_round(root, key, label_studio.connection).project_id
    (task_id,) = label_studio.client.task_item_ids(project)
    return project, task_id


def _inside(box: dict[str, float] | None) -> bool:
    return box is not None and box["x"] >= 0 and box["y"] >= 0 and \
        box["x"] + box["width"] <= VIEWPORT["width"] + 0.5 and box["y"] + box["height"] <= VIEWPORT["height"] + 0.5


@pytest.mark.parametrize("name", sorted(KINDS))
def test_the_image_and_every_question_fit_one_screen_and_nothing_submits_half_answered(
        name, tmp_path, label_studio, monkeypatch):
    from playwright.sync_api import sync_playwright

    chromium = browser_or_skip()
    monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_TOKEN", label_studio.token)
    project, task_id = _launch(tmp_path / "data", name, label_studio)
    user, password = credentials()
    shot = tmp_path / f"{name}.png"
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
            instructions = read_instructions(page)
            image = page.locator(".konvajs-content").first  # the image stage
            image.wait_for(state="visible")
            if name.startswith("spin"):  # its subpart questions show once the part is located (or reviewable)
                page.locator(".lsf-choice__checkbox", has_text="yes").first.click()
            choices = page.locator(".lsf-choice__item, .lsf-choice")
            choices.first.wait_for(state="visible")
            page.wait_for_timeout(500)  # the image scales to its column once loaded
            page.screenshot(path=str(shot))
            boxes = [choices.nth(n).bounding_box() for n in range(choices.count())]
            image_box = image.bounding_box()
            radios, checkboxes = page.locator("input[type=radio]").count(), page.locator("input[type=checkbox]").count()
            page.get_by_test_id("bottombar-submit-button").click()
            page.wait_for_timeout(1500)
            warning = page.locator(".ant-modal-confirm-content")
            refusal = warning.first.inner_text() if warning.count() else ""
            half_answered = label_studio.client.export(project)[0]["annotations"]
            if name.startswith("spin"):  # "no" (not there; annotate again) needs no subpart answer: it submits
                page.get_by_role("button", name="OK").first.click()  # closes the refused submit's warning
                page.keyboard.press("Escape")
                page.locator(".lsf-choice__checkbox", has_text="no").first.click()
                page.get_by_test_id("bottombar-submit-button").click()
                page.wait_for_timeout(1500)
        finally:
            browser.close()
    visible = [box for box in boxes if box is not None and box["width"] > 0]
    assert len(visible) >= KINDS[name][5], (len(visible), shot)
    assert all(_inside(box) for box in visible), f"questions outside the {VIEWPORT} viewport: {visible} ({shot})"
    assert _inside(image_box) and image_box["height"] > 200, (image_box, shot)
    assert half_answered == [], f"a half-answered task was submitted ({shot})"
    assert "Label All Tasks" in instructions and "other annotators" in instructions
    assert radios >= 2 and checkboxes == 0, (radios, checkboxes)
    assert refusal.startswith(KINDS[name][6]) and "required" not in refusal, refusal
    if name.startswith("spin"):
        (task,) = label_studio.client.export(project)
        assert len(task["annotations"]) == 1, "a part answered no could not be submitted"
