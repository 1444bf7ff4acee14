"""The COCO-CD context audit as a round on the real Label Studio server: create → launch (twice) →
two annotators answer through the API → progress → ingest → ingest again → more answers → ingest
(converges) → agreement and audit table. Plus the faults: a dead server or a wrong token change
no round state, and an ingest cut short by an unreachable server completes when run again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import SecretStr

from segbench.core.errors import ServiceError
from segbench.core.io import read_json
from segbench.demo.world import generate_demo_world
from segbench.schemas.coco_cd import CocoCdParams

pytestmark = [pytest.mark.integration, pytest.mark.labelstudio, pytest.mark.usefixtures("prefect_harness")]

SIZES = {"cat/indoor": 12, "cat/outdoor": 8, "dog/indoor": 8, "dog/outdoor": 12}
DEAD_URL = "http://127.0.0.1:9"  # discard port: nothing listens there


@pytest.fixture
def data_root(tmp_path) -> Path:
    from segbench.flows.coco_cd.build import build_coco_cd

    world = tmp_path / "world"
    generate_demo_world(world, seed=4, group_sizes=SIZES)
    root = tmp_path / "data"
    build_coco_cd(world, world, root / "coco_cd", CocoCdParams(val_per_group=3, test_per_group=2, size=64))
    return root


def _choice(label: str) -> list[dict]:
    return [{"from_name": "context", "to_name": "image", "type": "choices", "value": {"choices": [label]}}]


def test_audit_round_on_label_studio(data_root, label_studio, monkeypatch):
    from segbench.flows.coco_cd.audit import create_coco_cd_audit
    from segbench.flows.rounds import ingest_round, launch_round, round_progress

    client = label_studio.client
    monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_TOKEN", label_studio.token)
    key = f"audit-{data_root.parent.name}"[:60]
    create_coco_cd_audit(data_root, key, per_group=2, seed=3, backend="labelstudio", overlap=2)

    with pytest.raises(ServiceError, match="127.0.0.1:9"):
        launch_round(data_root, key, label_studio.connection.model_copy(update={"url": DEAD_URL}))
    assert read_json(data_root / "rounds" / f"{key}.json")["status"] == "created"

    launched = launch_round(data_root, key, label_studio.connection)
    relaunched = launch_round(data_root, key, label_studio.connection)
    assert launched.project_id == relaunched.project_id and relaunched.counts["tasks_imported"] == 0
    tasks = client.task_item_ids(launched.project_id)
    assert sorted(tasks.values()) == sorted(item.item_id for item in launched.items)  # 8 tasks, none twice
    project = client._sdk.projects.get(launched.project_id)  # the settings as the server keeps them
    assert project.show_instruction and "Label All Tasks" in project.expert_instruction
    assert not project.show_annotation_history and not project.show_collab_predictions

    val = read_json(data_root / "coco_cd" / "splits" / "rho_0.5" / "val.json")
    auto = {str(image["id"]): image["context"] for image in val["images"]}
    alice, bob = (client.create_user(f"{name}-{key}@example.com") for name in ("alice", "bob"))
    task_ids = sorted(tasks)
    for task_id in task_ids:
        client.annotate(task_id, _choice(auto[tasks[task_id]]), completed_by=alice)
    for task_id in task_ids[:4]:
        client.annotate(task_id, _choice(auto[tasks[task_id]]), completed_by=bob)

    progress = round_progress(data_root, key, label_studio.connection)
    assert progress.done == 8 and progress.tasks == 8
    assert progress.by_annotator == {f"labelstudio:{alice}": 8, f"labelstudio:{bob}": 4}
    assert progress.names == {f"labelstudio:{alice}": f"alice-{key}@example.com",
                              f"labelstudio:{bob}": f"bob-{key}@example.com"}
    from support.cli import run

    shown = run(data_root.parent, "rounds", "status", key).output
    assert f"labelstudio:{alice}" in shown and f"alice-{key}@example.com" in shown

    first = ingest_round(data_root, key, label_studio.connection)
    answers_file = Path(first.answers)
    first_bytes = answers_file.read_bytes()
    assert first.counts.answers == 12 and first.counts.annotators == 2
    assert first.agreement["context"].kappa is None  # 8 items with 1 or 2 ratings: no kappa
    assert ingest_round(data_root, key, label_studio.connection).counts == first.counts
    assert answers_file.read_bytes() == first_bytes

    for task_id in task_ids[4:]:  # bob finishes, disagreeing once
        label = auto[tasks[task_id]] if task_id != task_ids[-1] else "ambiguous"
        client.annotate(task_id, _choice(label), completed_by=bob)
    with pytest.raises(ServiceError):  # the server goes away mid-way: nothing changes
        ingest_round(data_root, key, label_studio.connection.model_copy(update={"url": DEAD_URL}))
    assert answers_file.read_bytes() == first_bytes

    final = ingest_round(data_root, key, label_studio.connection)
    assert final.counts.answers == 16
    answers = read_json(answers_file)["answers"]
    assert len({a["source_id"] for a in answers}) == 16
    agreement = final.agreement["context"]
    assert agreement.method == "cohen" and agreement.kappa is not None and agreement.kappa < 1
    table = json.loads(Path(final.reports["audit_json"]).read_text())
    assert table["overall"]["items"] == 8 and table["overall"]["no_majority"] == 1  # 1 vs 1 on the last item
    assert table["overall"]["agree"] == table["overall"]["judged"] == 7

    # An annotation deleted on the server leaves the answers at the next ingest.
    deleted = client.export(launched.project_id)[0]["annotations"][0]["id"]
    client._sdk.annotations.delete(deleted)
    after = ingest_round(data_root, key, label_studio.connection)
    assert after.counts.answers == 15
    assert f"labelstudio:{deleted}" not in {a["source_id"] for a in read_json(answers_file)["answers"]}


def test_wrong_token_is_refused_without_changing_the_round(data_root, label_studio, monkeypatch):
    from segbench.flows.coco_cd.audit import create_coco_cd_audit
    from segbench.flows.rounds import launch_round

    create_coco_cd_audit(data_root, "audit-token", per_group=1, backend="labelstudio")
    wrong = "x" * 40
    with pytest.raises(ServiceError, match="token") as info:
        launch_round(data_root, "audit-token", label_studio.connection.model_copy(update={"token": SecretStr(wrong)}))
    assert wrong not in str(info.value) and label_studio.url in str(info.value)
    assert read_json(data_root / "rounds" / "audit-token.json")["status"] == "created"


def test_the_command_line_finds_the_server_the_script_started(data_root, label_studio, monkeypatch):
    """No URL, token or files folder set: segbench reads what ``scripts/label-studio.sh start`` recorded."""
    from support.cli import run

    server_dir = Path(__file__).resolve().parents[2] / ".segbench" / "test-label-studio"  # label-studio.test.env
    connection = server_dir / "connection.json"
    assert connection.is_file(), "scripts/label-studio.sh start records the server in connection.json"
    assert connection.stat().st_mode & 0o077 == 0  # it holds the token: the owner's eyes only
    for name in ("URL", "TOKEN", "FILES"):
        monkeypatch.delenv(f"SEGBENCH_LABEL_STUDIO_{name}", raising=False)
    monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_DIR", str(server_dir))
    key = f"cli-{data_root.parent.name}"[:60]

    run(data_root.parent, "rounds", "create", "coco_cd_context_audit", key, "--backend", "labelstudio", "--per-group", "1")
    launched = run(data_root.parent, "rounds", "launch", key)
    assert label_studio.url in launched.output
    assert "0 / 4" in run(data_root.parent, "rounds", "status", key).output
    assert label_studio.token not in launched.output


def test_a_launch_uses_the_server_recorded_under_the_work_dir_and_keeps_its_token_out_of_prefect(
        data_root, label_studio, monkeypatch):
    """``--work-dir X`` with X/label-studio/connection.json (what scripts/label-studio.sh start writes
    there): the command resolves the server once and the round's backend signs in with that token."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName
    from support.cli import run

    project = data_root.parent
    for name in ("URL", "TOKEN", "FILES", "DIR"):
        monkeypatch.delenv(f"SEGBENCH_LABEL_STUDIO_{name}", raising=False)
    recorded = project / "work" / "label-studio" / "connection.json"
    recorded.parent.mkdir(parents=True)
    recorded.write_text(json.dumps({"url": label_studio.url, "token": label_studio.token,
                                    "files": str(label_studio.files)}))
    key = f"wd-{project.name}"[:60]
    run(project, "rounds", "create", "coco_cd_context_audit", key, "--backend", "labelstudio", "--per-group", "1")
    launched = run(project, "rounds", "launch", key)
    project_id = read_json(data_root / "rounds" / f"{key}.json")["project_id"]
    assert f"{label_studio.url}/projects/{project_id}" in launched.output
    assert len(label_studio.client.task_item_ids(project_id)) == 4
    assert label_studio.token not in launched.output

    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["round-launch"])))
    stored = [r.parameters for r in runs if r.parameters.get("key") == key]
    assert stored and label_studio.token not in json.dumps(stored, default=str)
    assert stored[0]["label_studio"]["url"] == label_studio.url


def test_a_round_launched_group_by_group_and_followed_up_on_label_studio(data_root, label_studio, monkeypatch):
    from segbench.annotation_ui.followups import create_follow_up, parse_condition
    from segbench.annotation_ui.rounds import RoundStore
    from segbench.flows.coco_cd.audit import create_coco_cd_audit
    from segbench.flows.rounds import ingest_round, launch_round, round_progress

    client = label_studio.client
    monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_TOKEN", label_studio.token)
    key = f"phased-{data_root.parent.name}"[:40]
    create_coco_cd_audit(data_root, key, per_group=1, seed=3, backend="labelstudio", overlap=3, batch_by_group=True)
    first = launch_round(data_root, key, label_studio.connection, batch="cat-indoors")
    assert len(client.task_item_ids(first.project_id)) == 1 and first.launched_batches == ["cat-indoors"]
    rest = launch_round(data_root, key, label_studio.connection)
    tasks = client.task_item_ids(rest.project_id)
    assert rest.project_id == first.project_id and len(tasks) == 4 and rest.launched_batches is None

    alice, bob, carol = (client.create_user(f"{name}-{key}@example.com") for name in ("alice", "bob", "carol"))
    task_ids = sorted(tasks)
    for task_id in task_ids:
        client.annotate(task_id, _choice("indoor"), completed_by=alice)
    for task_id in task_ids[:2]:
        client.annotate(task_id, _choice("outdoor"), completed_by=bob)  # 1 vs 1: ties
    progress = round_progress(data_root, key, label_studio.connection)
    assert sum(b.answered for b in progress.batches) == 4 and all(b.launched == 1 for b in progress.batches)
    ingest_round(data_root, key, label_studio.connection, aggregation="majority")  # ties: majority vote has them

    store = RoundStore(data_root / "rounds")
    follow, matched = create_follow_up(store, key, f"{key}-f", [parse_condition("tie")], "2026-01-01T00:00:00+00:00")
    assert sorted(matched) == sorted(tasks[t] for t in task_ids[:2])
    launched = launch_round(data_root, follow.key, label_studio.connection)
    follow_tasks = client.task_item_ids(launched.project_id)
    assert launched.project_id != rest.project_id and sorted(follow_tasks.values()) == sorted(matched)
    for task_id in follow_tasks:
        client.annotate(task_id, _choice("indoor"), completed_by=carol)

    merged = ingest_round(data_root, follow.key, label_studio.connection)
    answers_file = merged.answers
    items = {i["item_id"]: i for i in read_json(answers_file)["items"]}
    assert {k: i["decided_by"] for k, i in items.items()} == {
        tasks[t]: (follow.key if tasks[t] in matched else key) for t in task_ids}
    assert all(items[i]["majority"] == {"context": "indoor"} for i in matched)
    before = answers_file.read_bytes()
    ingest_round(data_root, follow.key, label_studio.connection)
    assert answers_file.read_bytes() == before


def test_an_annotator_is_added_with_the_invite_link_and_reports_show_their_email(tmp_path, label_studio, monkeypatch):
    import re

    import httpx
    from support.cli import run

    monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_TOKEN", label_studio.token)
    shown = run(tmp_path, "rounds", "invite").output
    link = re.search(r"(http://\S+/user/signup/\?token=\S+)", shown).group(1)
    assert link.startswith(label_studio.url)
    page = httpx.get(link, timeout=30)
    assert page.status_code == 200 and 'name="email"' in page.text and 'name="password"' in page.text

    import uuid

    email = f"annotator-{uuid.uuid4().hex[:10]}@example.com"
    user = label_studio.client.create_user(email)
    from segbench.annotation_ui.backends import backend_for
    from segbench.schemas.rounds import Round

    backend = backend_for("labelstudio", tmp_path / "data", label_studio=label_studio.connection)
    names = backend.worker_names(Round.model_construct(key="any"))
    assert names[f"labelstudio:{user}"] == email
