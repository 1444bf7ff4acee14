"""Two annotators of one Label Studio round who cannot see each other's answers, in a real browser.

The community edition puts every account of a server in one organisation, where anyone can open
anyone's answers. ``rounds launch --annotator`` puts the round on each annotator's own server
(``scripts/label-studio.sh start --annotator NAME``). Here two annotators sign up through the links
``rounds invite --annotator`` prints, each in a browser of their own, and answer the same image: each
sees one project, their own answer and nobody else's, and cannot reach the other's server; ``rounds
status`` and ``rounds ingest`` read both servers, naming each annotator by server and e-mail.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest
from support.browser import browser_or_skip
from support.cli import run

from segbench.core.io import read_json
from segbench.demo.world import generate_demo_world
from segbench.schemas.coco_cd import CocoCdParams

pytestmark = [pytest.mark.integration, pytest.mark.labelstudio, pytest.mark.browser,
              pytest.mark.usefixtures("prefect_harness")]

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("apart-a", "apart-b")


def _script(*args: str) -> str:
    env = {**os.environ, "SEGBENCH_LABEL_STUDIO_TEST": "1"}
    done = subprocess.run(["bash", "scripts/label-studio.sh", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def own_servers(label_studio):
    """The two annotators' own test servers, started beside the main test server (the folder of both:
    the main server's, where its files folder is)."""
    for name in NAMES:
        _script("start", "--fresh", "--annotator", name)
    yield label_studio.files.parent
    for name in NAMES:
        _script("stop", "--annotator", name)


def _sign_up(browser, link: str, email: str):
    """A browser of the annotator's own, signed up through the link (and so signed in)."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(link)
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", "annotator-password-1")
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/user/signup" not in url, timeout=30_000)
    return page


def _sign_up_without_link(browser, server: str, email: str):
    """A browser that tried to sign up on a server without its link."""
    page = browser.new_context().new_page()
    page.goto(f"{server}/user/signup/")
    page.fill("input[name=email]", email)
    page.fill("input[name=password]", "stranger-password-1")
    page.click("button[type=submit]")
    page.wait_for_load_state()
    return page


def _visible(page, server: str) -> dict:
    """What the signed-in annotator can read on a server: its projects and the answers on their tasks."""
    projects = page.request.get(f"{server}/api/projects/")
    if projects.status != 200:
        return {"status": projects.status}
    result = {"status": 200, "projects": [p["id"] for p in projects.json()["results"]], "answers": {}}
    for project in result["projects"]:
        tasks = page.request.get(f"{server}/api/tasks/?project={project}&fields=all").json()["tasks"]
        for task in tasks:
            result["answers"][task["data"]["item_id"]] = task["total_annotations"]
    return result


def _answer(page, server: str, project: int, item_id: str, choice: str) -> None:
    """Answer one task in the task page the annotator sees."""
    tasks = page.request.get(f"{server}/api/tasks/?project={project}").json()["tasks"]
    task = next(t["id"] for t in tasks if t["data"]["item_id"] == item_id)
    page.goto(f"{server}/projects/{project}/data?labeling=1&task={task}")
    modal = page.get_by_role("button", name="Close modal")  # the instructions the project opens on
    modal.click(timeout=20_000)
    page.locator(".lsf-choice__item", has_text=choice).locator("input[type=radio]").check()
    page.get_by_test_id("bottombar-submit-button").click()
    page.wait_for_timeout(1500)


def test_two_annotators_of_one_round_cannot_see_each_others_answers(tmp_path, label_studio, own_servers,
                                                                    monkeypatch):
    from playwright.sync_api import sync_playwright

    from segbench.flows.coco_cd.build import build_coco_cd

    chromium = browser_or_skip()
    monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_TOKEN", label_studio.token)
    monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_DIR", str(own_servers))
    world = tmp_path / "world"
    generate_demo_world(world, seed=4, group_sizes={"cat/indoor": 6, "cat/outdoor": 6, "dog/indoor": 6,
                                                    "dog/outdoor": 6})
    build_coco_cd(world, world, tmp_path / "data" / "coco_cd", CocoCdParams(val_per_group=2, test_per_group=2, size=64))
    key = f"apart-{uuid.uuid4().hex[:8]}"
    run(tmp_path, "rounds", "create", "coco_cd_context_audit", key, "--per-group", "1", "--overlap", "2")
    launched = run(tmp_path, "rounds", "launch", key, "--annotator", NAMES[1], "--annotator", NAMES[0]).output
    assert f"{NAMES[0]}, {NAMES[1]}" in launched and "Each annotator annotates on their own server" in launched
    round_ = read_json(tmp_path / "data" / "rounds" / f"{key}.json")
    assert round_["annotators"] == list(NAMES) and round_["project_id"] is None
    item = round_["items"][0]["item_id"]
    servers = {name: read_json(own_servers / "annotators" / name / "connection.json")["url"] for name in NAMES}
    links = {name: re.search(r"(http://\S+/user/signup/\?token=\S+)",
                             run(tmp_path, "rounds", "invite", "--annotator", name).output).group(1) for name in NAMES}
    assert all(links[name].startswith(servers[name]) for name in NAMES)
    emails = {name: f"{name}-{uuid.uuid4().hex[:6]}@example.com" for name in NAMES}

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True)
        try:
            a, b = (_sign_up(browser, links[name], emails[name]) for name in NAMES)
            seen_by_a = _visible(a, servers[NAMES[0]])
            (project_a,) = seen_by_a["projects"]  # the round's project, nothing else
            assert len(seen_by_a["answers"]) == len(round_["items"]) and not any(seen_by_a["answers"].values())
            _answer(a, servers[NAMES[0]], project_a, item, "indoor")
            # b, on their own server, sees every task of the round and no answer, a's included.
            seen_by_b = _visible(b, servers[NAMES[1]])
            (project_b,) = seen_by_b["projects"]
            assert not any(seen_by_b["answers"].values()), seen_by_b
            assert emails[NAMES[0]] not in b.request.get(f"{servers[NAMES[1]]}/api/users/").text()
            _answer(b, servers[NAMES[1]], project_b, item, "outdoor")
            # Without the server's own link nobody signs up there.
            stranger = _sign_up_without_link(browser, servers[NAMES[1]], f"stranger-{uuid.uuid4().hex[:6]}@example.com")
            assert _visible(stranger, servers[NAMES[1]]) == {"status": 401}
            assert _visible(a, servers[NAMES[0]])["answers"][item] == 1  # a's own answer only
            assert _visible(b, servers[NAMES[1]])["answers"][item] == 1
            # Neither can reach the other's server: it has no account of theirs. (Last: a browser keeps
            # one sign-in per host name, and the servers share 127.0.0.1.)
            assert _visible(b, servers[NAMES[0]]) == {"status": 401}
            assert _visible(a, servers[NAMES[1]]) == {"status": 401}
        finally:
            browser.close()

    status = json.loads(run(tmp_path, "--json", "rounds", "status", key).stdout)
    assert sorted(status["by_annotator"].values()) == [1, 1] and status["tasks"] == 2 * len(round_["items"])
    assert sorted(status["names"].values()) == sorted(emails.values())
    assert sorted(worker.split(":")[0] for worker in status["names"]) == [f"labelstudio@{name}" for name in NAMES]
    run(tmp_path, "rounds", "ingest", key, "--aggregation", "majority")
    answers = read_json(tmp_path / "data" / "rounds" / f"{key}.answers.json")["answers"]
    assert sorted((a["annotator"].split(":")[0], a["choices"]["context"]) for a in answers) == [
        (f"labelstudio@{NAMES[0]}", ["indoor"]), (f"labelstudio@{NAMES[1]}", ["outdoor"])]
