"""The files backend's HIT layout: made from the kind's label config, and answered in a real browser the way
MTurk serves it (``${column}`` filled, ``assignmentId`` and ``turkSubmitTo`` in the query string); what it
posts imports as the round's answer, polygons in image pixels."""

from __future__ import annotations

import urllib.parse

import numpy as np
import pytest
from PIL import Image
from support.browser import browser_or_skip
from support.cli import run

from segbench.annotation_ui.convert import answers_from_files
from segbench.annotation_ui.hit_layout import HIT_NAME, render_hit
from segbench.annotation_ui.kinds import answer_checks, render_label_config
from segbench.annotation_ui.rounds import RoundStore, new_round
from segbench.core.errors import ImportPolicy
from segbench.schemas.rounds import RoundConfig, RoundItem

PARAMS = {"object": "Bird", "part": "Head", "subparts": ["Beak", "Eye"]}


@pytest.mark.unit
def test_the_page_asks_what_the_label_config_asks():
    page = render_hit(render_label_config("spin_subparts", **PARAMS), title="t", instructions="<p>Do it</p>")
    for control in ("part_visible", "has_beak", "has_eye"):
        assert page.count(f'type="radio" name="{control}"') == 2, control
    assert 'src="${image}"' in page and 'name="polygons"' in page and "<p>Do it</p>" in page
    assert 'data-when-name="part_visible" data-when-value="yes"' in page
    assert 'data-message="Answer: can you locate any Beak?"' in page
    with pytest.raises(ValueError, match="<Video>"):
        render_hit('<View><Video name="v" value="$video"/></View>', title="t", instructions="")


@pytest.mark.integration
def test_files_launch_writes_the_hit_beside_the_tasks(tmp_path):
    item = RoundItem(item_id="1", image="img.png", width=8, height=6, data={"description": "a dog & <cat>"})
    round_ = new_round("adj", "vocab_adjudication", "vocab", "v", RoundConfig(
        label_config="vocab_adjudication", params={"categories": ["cat", "dog"]}), [item], "files",
        "2026-01-01T00:00:00+00:00")
    RoundStore(tmp_path / "data" / "rounds").save(round_)
    out = run(tmp_path, "rounds", "launch", "adj").stdout
    page = (tmp_path / "data" / "rounds" / "adj" / HIT_NAME).read_text()
    assert HIT_NAME in out and "${description}" in page and 'value="dog"' in page


def _serve(tmp_path, round_, image_url: str):
    """The HIT as MTurk serves it: the task's columns substituted into the page."""
    from segbench.annotation_ui.hit_layout import write_hit

    page = write_hit(round_, tmp_path / "hit").read_text().replace("${image}", image_url)
    served = tmp_path / "served.html"
    served.write_text(page)
    return served.as_uri()


@pytest.mark.integration
@pytest.mark.browser
def test_a_worker_answers_the_spin_hit_and_the_answer_imports(tmp_path):
    from playwright.sync_api import sync_playwright

    chromium = browser_or_skip()
    Image.fromarray(np.full((100, 200, 3), 90, np.uint8)).save(tmp_path / "photo.png")
    item = RoundItem(item_id="1", image="photo.png", width=200, height=100,
                     data={"image_id": 1, "part_ann_id": 7, "object": "Bird", "object_class": "goldfinch",
                           "part": "Head", "subparts": ["Beak", "Eye"]})
    round_ = new_round("hit", "spin_subparts", "spin", "v", RoundConfig(label_config="spin_subparts", params=PARAMS),
                       [item], "files", "2026-01-01T00:00:00+00:00")
    url = _serve(tmp_path, round_, (tmp_path / "photo.png").as_uri())
    posted: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 800})
            page.goto(url)  # MTurk's preview: no assignment, nothing to submit
            assert page.locator("#submit-hit").is_disabled()
            page.route("http://submit.test/**", lambda route: (posted.append(route.request.post_data or ""),
                                                                 route.fulfill(status=200, body="thanks")))
            page.goto(f"{url}?assignmentId=A1&hitId=H1&turkSubmitTo=http%3A%2F%2Fsubmit.test")
            page.check('input[name="part_visible"][value="yes"]')
            page.click("#submit-hit")
            assert page.locator("#submit-error").inner_text() == "Answer: can you locate any Beak?"
            page.check('input[name="has_beak"][value="no"]')
            page.check('input[name="has_eye"][value="yes"]')
            page.click('button.label[data-label="Eye"]')
            page.wait_for_function("document.getElementById('image').complete")
            for x, y in ((20, 20), (120, 20), (120, 80)):
                page.locator("#drawing").click(position={"x": x, "y": y})
            page.click("#close-polygon")
            page.click("#submit-hit")
            page.wait_for_timeout(500)
        finally:
            browser.close()
    (body,) = posted
    form = {k: v[0] for k, v in urllib.parse.parse_qs(body).items()}
    assert form.pop("assignmentId") == "A1"
    row = {"WorkerId": "W1", "AssignmentId": "A1", "Input.item_id": "1", **{f"Answer.{k}": v for k, v in form.items()}}
    (answer,) = answers_from_files([row], round_, ImportPolicy(), **answer_checks(round_))
    assert answer.choices == {"has_beak": ["no"], "has_eye": ["yes"], "part_visible": ["yes"]}
    (polygon,) = answer.polygons["polygons"]
    assert polygon.label == "Eye"
    assert np.allclose(polygon.points, [(20, 20), (120, 20), (120, 80)], atol=1)  # shown at its own size
