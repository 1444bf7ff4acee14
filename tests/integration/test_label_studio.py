"""LabelStudioClient and the label configs against the real Label Studio server.

The server is the test instance scripts/test.sh starts (see the ``label_studio`` fixture). Every
name created here carries a per-run suffix so reruns against the same server do not collide.
"""

from __future__ import annotations

import shutil
import socket
import uuid

import httpx
import pytest
from PIL import Image

from segbench.annotation_ui.client import LabelStudioClient
from segbench.annotation_ui.kinds import label_configs, render_label_config
from segbench.core.errors import InputError, ServiceError

pytestmark = pytest.mark.labelstudio

RUN = uuid.uuid4().hex[:8]
PARAMS = {
    "coco_cd_context": {},
    "cafe_verification": {},
    "spin_subparts": {"object": "dog", "part": "head", "subparts": ["eye", "ear & <tip>", 'the "nose"']},
    "spin_review": {"object": "dog", "part": "head", "subparts": ["eye", "ear & <tip>", 'the "nose"']},
    "vocab_adjudication": {"categories": ["cat", "dog & puppy", "<bird>"]},
}


@pytest.fixture
def files_folder(label_studio, request):
    """A fresh folder under the server's files root, removed afterwards."""
    folder = label_studio.files / f"pytest-{RUN}-{request.node.name[:40].replace('[', '-').strip(']')}"
    folder.mkdir(parents=True)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _png(path, color, size=(16, 12)):
    Image.new("RGB", size, color).save(path)
    return path.read_bytes()


def _choice(name, value):
    return {"from_name": name, "to_name": "image", "type": "choices", "value": {"choices": [value]}}


def test_every_label_config_is_accepted_by_the_server(label_studio):
    configs = label_configs()
    assert set(PARAMS) == set(configs)
    for name, params in PARAMS.items():
        project_id = label_studio.client.create_project(f"{name} {RUN}", configs[name].render(**params))
        assert label_studio.client.project_exists(project_id)


def test_a_broken_label_config_is_rejected_with_the_servers_message(label_studio):
    broken = (
        '<View><Image name="image" value="$image"/>'
        '<Choices name="c" toName="nowhere"><Choice value="a"/></Choices></View>'
    )
    with pytest.raises(InputError, match="nowhere") as caught:
        label_studio.client.create_project(f"broken {RUN}", broken)
    assert label_studio.url in str(caught.value)


def test_project_exists_is_false_for_an_unknown_project(label_studio):
    assert not label_studio.client.project_exists(987_654_321)


def test_images_under_the_files_root_are_served_to_the_project(label_studio, files_folder):
    client = label_studio.client
    project_id = client.create_project(f"files {RUN}", render_label_config("coco_cd_context"))
    png = _png(files_folder / "item 1.png", (200, 30, 30))
    client.allow_local_files(project_id, files_folder)
    client.allow_local_files(project_id, files_folder)  # idempotent
    relpath = f"{files_folder.name}/item 1.png"
    url = client.local_file_url(relpath)
    assert url == f"/data/local-files/?d={files_folder.name}/item%201.png"
    task_ids = client.import_tasks(project_id, [{"data": {"image": url, "item_id": "item-1"}}])
    assert client.task_item_ids(project_id) == {task_ids[0]: "item-1"}

    headers = {"Authorization": f"Token {label_studio.token}"}
    response = httpx.get(label_studio.url + url, headers=headers, timeout=30)
    assert response.status_code == 200 and response.content == png

    # A folder no project has a storage for stays private, even under the files root.
    other = label_studio.files / f"pytest-{RUN}-private"
    other.mkdir(exist_ok=True)
    try:
        _png(other / "secret.png", (0, 0, 0))
        secret = label_studio.url + client.local_file_url(f"{other.name}/secret.png")
        assert httpx.get(secret, headers=headers, timeout=30).status_code == 404
    finally:
        shutil.rmtree(other, ignore_errors=True)


def test_a_folder_outside_the_files_root_is_refused(label_studio, tmp_path):
    project_id = label_studio.client.create_project(f"outside {RUN}", render_label_config("coco_cd_context"))
    with pytest.raises(InputError, match="LOCAL_FILES_DOCUMENT_ROOT"):
        label_studio.client.allow_local_files(project_id, tmp_path)


def test_two_annotators_progress_and_export(label_studio, files_folder):
    client = label_studio.client
    config = render_label_config("spin_subparts", **PARAMS["spin_subparts"])
    project_id = client.create_project(f"crowd {RUN}", config, maximum_annotations=2)
    for name in ("a.png", "b.png", "c.png"):
        _png(files_folder / name, (10, 120, 10), size=(40, 20))
    client.allow_local_files(project_id, files_folder)
    tasks = [{"data": {"image": client.local_file_url(f"{files_folder.name}/{n}.png"), "item_id": n}} for n in "abc"]
    task_ids = client.import_tasks(project_id, tasks)
    assert client.task_item_ids(project_id) == dict(zip(task_ids, ["a", "b", "c"], strict=True))

    alice = client.create_user(f"alice-{RUN}@example.com", "Alice")
    bob = client.create_user(f"bob-{RUN}@example.com", "Bob", "B")
    polygon = {
        "from_name": "polygons",
        "to_name": "image",
        "type": "polygonlabels",
        "original_width": 40,
        "original_height": 20,
        "image_rotation": 0,
        "value": {"points": [[10, 10], [50, 10], [50, 80]], "closed": True, "polygonlabels": ["ear & <tip>"]},
    }
    client.annotate(task_ids[0], [_choice("part_visible", "yes"), _choice("has_ear_tip", "yes"), polygon], alice)
    client.annotate(task_ids[0], [_choice("part_visible", "no")], bob)
    client.annotate(task_ids[1], [_choice("part_visible", "no")], bob)

    assert client.progress(project_id) == {
        "tasks": 3,
        "done": 2,
        "annotations": 3,
        "by_annotator": {f"labelstudio:{alice}": 1, f"labelstudio:{bob}": 2},
        "done_items": ["a", "b"],
    }
    exported = {task["id"]: task for task in client.export(project_id)}
    assert set(exported) == set(task_ids)
    first = sorted(exported[task_ids[0]]["annotations"], key=lambda a: a["completed_by"] != alice)
    assert [a["completed_by"] for a in first] == [alice, bob]
    answers = {r["from_name"]: r["value"] for r in first[0]["result"]}
    assert answers["has_ear_tip"]["choices"] == ["yes"]
    assert answers["polygons"]["points"] == [[10, 10], [50, 10], [50, 80]]
    assert answers["polygons"]["polygonlabels"] == ["ear & <tip>"]
    assert exported[task_ids[2]]["annotations"] == []


def test_a_wrong_token_is_refused_without_showing_it(label_studio):
    token = "wrong-token-" + "x" * 28
    with LabelStudioClient(label_studio.url, token) as client, pytest.raises(ServiceError) as caught:
        client.check()
    message = str(caught.value)
    assert "refused the API token" in message and label_studio.url in message
    assert token not in message and token not in repr(caught.value.args)


def test_an_unreachable_server_names_the_url_and_how_to_check():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with LabelStudioClient(url, "t" * 40, timeout=5) as client, pytest.raises(ServiceError) as caught:
        client.check()
    assert url in str(caught.value) and "scripts/label-studio.sh status" in str(caught.value)


def test_local_file_urls_are_quoted_and_stay_under_the_files_root():
    assert LabelStudioClient.local_file_url("r1/a b&c.png") == "/data/local-files/?d=r1/a%20b%26c.png"
    for bad in ("/etc/passwd", "../up.png", "r1/../../x.png", ""):
        with pytest.raises(InputError):
            LabelStudioClient.local_file_url(bad)


def test_an_expired_access_token_is_refused_without_a_request_or_showing_it():
    import jwt

    token = jwt.encode({"exp": 1, "token_type": "refresh"}, "k" * 32, algorithm="HS256")
    with pytest.raises(ServiceError, match="expired or is not valid") as caught:
        LabelStudioClient("http://127.0.0.1:9", token)
    assert token not in str(caught.value)
