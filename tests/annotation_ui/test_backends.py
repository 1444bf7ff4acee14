"""Round backends without a server: the lookup, the files backend end to end, and the parts of the
Label Studio backend that need no server (a stand-in client plays the server's part)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image
from support.label_studio_stand_in import StandInClient

from segbench.annotation_ui.backends import BackendContext, backend_for, backend_type
from segbench.annotation_ui.backends.files import FilesBackend, files_dir
from segbench.annotation_ui.backends.labelstudio import LabelStudioBackend, copy_images
from segbench.annotation_ui.rounds import new_round
from segbench.core.errors import AnnotationError, ImportPolicy, InputError, OnError, RoundStateError, SegbenchError
from segbench.demo.crowd import write_results_csv
from segbench.schemas.rounds import LabelStudioConnection, RoundConfig, RoundItem

T0 = "2026-01-01T00:00:00+00:00"


def _round(backend: str, key: str = "audit-1", project_id: int | None = None):
    items = [RoundItem(item_id=i, image=f"coco_cd/images/{i}.png", width=8, height=6, data={"group": "cat"})
             for i in ("1", "2", "3")]
    round_ = new_round(key, "coco_cd_context_audit", "coco_cd", "ab" * 32, RoundConfig(label_config="coco_cd_context"),
                       items, backend, T0)
    return round_.model_copy(update={"project_id": project_id})


def _row(worker: str, item: str, context: str) -> dict[str, str]:
    return {"WorkerId": worker, "AssignmentId": f"{worker}-{item}", "Input.item_id": item, "Answer.context": context}


def test_lookup_by_round_or_name():
    assert backend_type("files") is FilesBackend and backend_type("labelstudio") is LabelStudioBackend
    assert isinstance(backend_for(_round("files"), Path("data")), FilesBackend)
    backend = backend_for("labelstudio", "data", label_studio=LabelStudioConnection(url="http://ls:1"))
    assert isinstance(backend, LabelStudioBackend) and backend.context.label_studio.url == "http://ls:1"


def test_unknown_backend_is_a_named_error():
    with pytest.raises(InputError, match="unknown round backend 'pigeon'.*labelstudio, files"):
        backend_for("pigeon", Path("data"))


def test_files_backend_writes_tasks_and_reads_results(tmp_path):
    backend, round_ = FilesBackend(BackendContext(tmp_path)), _round("files")
    assert backend.launch(round_) == (None, {"tasks_written": 3})
    folder = files_dir(tmp_path, "audit-1")
    assert (folder / "tasks.csv").read_text().splitlines()[0] == "item_id,image,width,height,group"
    assert backend.progress(round_) == {"tasks": 3, "done": 0, "annotations": 0, "by_annotator": {},
                                        "done_items": []}

    write_results_csv([_row("WA", i, "indoor") for i in ("1", "2")], folder / "results" / "a.csv")
    write_results_csv([_row("WB", "1", "outdoor")], folder / "results" / "b.csv")
    assert backend.progress(round_) == {"tasks": 3, "done": 2, "annotations": 3,
                                        "by_annotator": {"worker:WA": 2, "worker:WB": 1}, "done_items": ["1", "2"]}
    answers = backend.fetch_answers(round_, ImportPolicy(on_error=OnError.FAIL))
    assert sorted((a.annotator, a.item_id, a.choices["context"][0]) for a in answers) == [
        ("worker:WA", "1", "indoor"), ("worker:WA", "2", "indoor"), ("worker:WB", "1", "outdoor")]
    assert backend.launch_hint(round_) == (f"Tasks: {folder}/tasks.csv, their page {folder}/hit.html — put the "
                                           f"crowd's results files in {folder}/results/")
    assert (folder / "hit.html").is_file()


def test_files_backend_refuses_labels_the_config_does_not_offer(tmp_path):
    backend, round_ = FilesBackend(BackendContext(tmp_path)), _round("files")
    write_results_csv([_row("WA", "1", "underwater")], files_dir(tmp_path, "audit-1") / "results" / "a.csv")
    with pytest.raises(AnnotationError, match="underwater"):
        backend.fetch_answers(round_, ImportPolicy(on_error=OnError.FAIL))


def test_each_backend_checks_the_project_id_a_launch_records():
    FilesBackend.check_project_id(_round("files"), None)
    with pytest.raises(RoundStateError, match="files backend; it has no project"):
        FilesBackend.check_project_id(_round("files"), 3)
    LabelStudioBackend.check_project_id(_round("labelstudio"), 3)
    with pytest.raises(RoundStateError, match="needs a project id"):
        LabelStudioBackend.check_project_id(_round("labelstudio"), None)


def _images(data_root: Path, round_) -> None:
    for item in round_.items:
        (data_root / item.image).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (item.width, item.height)).save(data_root / item.image)


def test_label_studio_launch_creates_the_project_once_and_runs_its_steps(tmp_path, monkeypatch):
    client, steps = StandInClient(), []

    def step(name, fn, *args):
        steps.append(name)
        return fn(*args)

    round_ = _round("labelstudio")
    _images(tmp_path / "data", round_)
    monkeypatch.setattr(LabelStudioBackend, "client", lambda self, connection=None: client)
    connection = LabelStudioConnection(url="http://stand-in", files=tmp_path / "files")
    backend = LabelStudioBackend(BackendContext(tmp_path / "data", label_studio=connection, step=step))
    project_id, counts = backend.launch(round_)
    assert (project_id, counts, steps) == (1, {"tasks_imported": 3}, ["copy-round-images", "import-round-tasks"])
    assert client.projects[1]["title"] == "segbench · audit-1" and 'name="context"' in client.projects[1]["config"]
    assert client.folders == [tmp_path / "files" / "audit-1"] and (tmp_path / "files" / "audit-1" / "2.png").is_file()
    relaunch = backend.launch(round_.model_copy(update={"project_id": project_id}))
    assert relaunch == (1, {"tasks_imported": 0}) and len(client.projects) == 1


def test_a_label_studio_launch_killed_before_recording_its_project_is_resumed_not_duplicated(tmp_path, monkeypatch):
    client = StandInClient()
    round_ = _round("labelstudio")
    _images(tmp_path / "data", round_)
    monkeypatch.setattr(LabelStudioBackend, "client", lambda self, connection=None: client)
    connection = LabelStudioConnection(url="http://stand-in", files=tmp_path / "files")
    backend = LabelStudioBackend(BackendContext(tmp_path / "data", label_studio=connection,
                                                step=lambda name, fn, *args: fn(*args)))
    project_id, _ = backend.launch(round_)
    client.projects[project_id]["tasks"].pop()  # killed mid-import, and before the id reached the round record
    assert backend.launch(round_) == (project_id, {"tasks_imported": 1}) and len(client.projects) == 1
    # A project left by an earlier round under the same key (other tasks) is not taken over.
    other = _round("labelstudio").model_copy(update={"task_salt": "another round"})
    assert backend.launch(other)[0] != project_id and len(client.projects) == 2


def test_label_studio_copy_names_a_missing_image(tmp_path):
    with pytest.raises(InputError, match="image of a round item not found"):
        copy_images(_round("labelstudio"), tmp_path, tmp_path / "files")


def test_label_studio_backend_needs_a_launch_and_a_token_before_any_request(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no segbench.toml
    monkeypatch.delenv("SEGBENCH_LABEL_STUDIO_TOKEN", raising=False)
    backend = LabelStudioBackend(BackendContext(tmp_path, label_studio=LabelStudioConnection(url="http://127.0.0.1:9/")))
    with pytest.raises(SegbenchError, match="round audit-1 is not launched yet"):
        backend.progress(_round("labelstudio"))
    with pytest.raises(SegbenchError, match="not launched yet"):
        backend.fetch_answers(_round("labelstudio"), ImportPolicy(on_error=OnError.FAIL))
    with pytest.raises(InputError, match="no Label Studio API token"):
        backend.progress(_round("labelstudio", project_id=7))
    assert backend.launch_hint(_round("labelstudio", project_id=7)) == "Annotate at http://127.0.0.1:9/projects/7"


def _context(label: str) -> list[dict]:
    return [{"from_name": "context", "to_name": "image", "type": "choices", "value": {"choices": [label]}}]


def test_a_round_kept_apart_has_every_task_on_each_annotators_own_server(tmp_path, monkeypatch):
    clients = {url: StandInClient() for url in ("http://shared", "http://alice", "http://bob")}
    monkeypatch.setattr(LabelStudioBackend, "client",
                        lambda self, connection=None: clients[(connection or self.connection()).url])
    own = {name: LabelStudioConnection(url=f"http://{name}", files=tmp_path / "files") for name in ("alice", "bob")}
    connection = LabelStudioConnection(url="http://shared", files=tmp_path / "files", annotators=own)
    backend = LabelStudioBackend(BackendContext(tmp_path / "data", label_studio=connection))
    round_ = _round("labelstudio").model_copy(update={
        "annotators": ["alice", "bob"], "config": RoundConfig(label_config="coco_cd_context", overlap=2)})
    _images(tmp_path / "data", round_)

    assert backend.launch(round_) == (None, {"tasks_imported": 6})
    assert backend.launch(round_) == (None, {"tasks_imported": 0})  # each project found again by its title
    assert not clients["http://shared"].projects
    tasks = {}
    for name in ("alice", "bob"):
        (project_id, project), = clients[f"http://{name}"].projects.items()
        assert project["maximum_annotations"] == 1  # one person per server answers each task
        tasks[name] = {item: task for task, item in clients[f"http://{name}"].task_item_ids(project_id).items()}
        assert sorted(tasks[name]) == ["1", "2", "3"]
    # Each server numbers its users and answers alike: the server's name keeps them apart.
    clients["http://alice"].annotate(tasks["alice"]["1"], _context("indoor"), completed_by=2)
    clients["http://bob"].annotate(tasks["bob"]["1"], _context("outdoor"), completed_by=2)
    launched = round_.model_copy(update={"launched_at": T0})
    answers = backend.fetch_answers(launched, ImportPolicy(on_error=OnError.FAIL))
    assert [(a.item_id, a.annotator, a.choices["context"]) for a in answers] == [
        ("1", "labelstudio@alice:2", ["indoor"]), ("1", "labelstudio@bob:2", ["outdoor"])]
    assert len({a.source_id for a in answers}) == 2 and answers[0].source_id.startswith("labelstudio@alice:")
    progress = backend.progress(launched)
    assert (progress["tasks"], progress["done"], progress["done_items"]) == (6, 2, ["1"])
    assert progress["by_annotator"] == {"labelstudio@alice:2": 1, "labelstudio@bob:2": 1}
    assert backend.launch_hint(launched) == ("Each annotator annotates on their own server: alice at "
                                             "http://alice/projects; bob at http://bob/projects")
    with pytest.raises(InputError, match="no Label Studio server of annotator carol was ever started here") as error:
        backend.progress(launched.model_copy(update={"annotators": ["alice", "carol"]}))
    assert error.value.hint == "scripts/label-studio.sh start --annotator carol"
    clients["http://bob"].projects.clear()  # a server reset under the round
    with pytest.raises(SegbenchError, match="bob's server at http://bob has no project of round audit-1"):
        backend.fetch_answers(launched, ImportPolicy(on_error=OnError.FAIL))
