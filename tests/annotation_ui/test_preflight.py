"""A round step's checks live once: the command runs them before Prefect starts, the flow runs the same."""

from __future__ import annotations

import inspect

import pytest
from support.cli import run

from segbench.annotation_ui.preflight import check_ingest, check_launch, keep_apart
from segbench.annotation_ui.rounds import RoundStore, mark_launched, new_round
from segbench.cli import rounds as rounds_cli
from segbench.core.errors import InputError, OnError, RoundStateError
from segbench.flows import rounds as rounds_flows
from segbench.schemas.rounds import RoundConfig, RoundItem

T0 = "2026-01-01T00:00:00+00:00"


@pytest.mark.parametrize(("command", "flow", "check"), [
    (rounds_cli.launch, rounds_flows.launch_round, "check_launch"),
    (rounds_cli.ingest, rounds_flows.ingest_round, "check_ingest"),
])
def test_the_command_and_its_flow_run_one_preflight(command, flow, check):
    assert f"{check}(" in inspect.getsource(command)
    assert f"{check}(" in inspect.getsource(flow.fn)


def _saved(tmp_path, key="a1", launched=False):
    config = RoundConfig(label_config="coco_cd_context", params={"labels": ["indoor", "outdoor"]}, overlap=1)
    items = [RoundItem(item_id=i, image=f"coco_cd/images/{i}.png", width=8, height=8) for i in ("1", "2")]
    round_ = new_round(key, "coco_cd_context_audit", "coco_cd", "ab" * 32, config, items, "files", T0)
    if launched:
        round_ = mark_launched(round_, None, T0)
    RoundStore(tmp_path / "data" / "rounds").save(round_)
    return round_


def test_an_ingest_of_a_round_not_launched_fails_alike_in_the_check_and_the_command(tmp_path):
    _saved(tmp_path)
    with pytest.raises(RoundStateError) as checked:
        check_ingest(tmp_path / "data", "a1", None, OnError.FAIL)
    command = run(tmp_path, "rounds", "ingest", "a1", code=1)
    assert str(command.exception) == str(checked.value) and "launch" in str(checked.value)


def test_a_launch_checks_the_batch_and_an_ingest_reads_the_crowds_files(tmp_path):
    _saved(tmp_path, launched=False)
    with pytest.raises(InputError, match="batch"):
        check_launch(tmp_path / "data", "a1", None, "no-such-batch")
    assert check_launch(tmp_path / "data", "a1", None, None).batches_out is None
    _saved(tmp_path, key="a2", launched=True)
    results = tmp_path / "data" / "rounds" / "a2" / "results"
    results.mkdir(parents=True)
    (results / "batch.csv").write_text("not,a,results,file\n1,2,3,4\n")
    with pytest.raises(InputError):
        check_ingest(tmp_path / "data", "a2", None, OnError.FAIL)


def _labelstudio(tmp_path, overlap=2, **update):
    config = RoundConfig(label_config="coco_cd_context", overlap=overlap)
    items = [RoundItem(item_id="1", image="coco_cd/images/1.png", width=8, height=8)]
    round_ = new_round("a1", "coco_cd_context_audit", "coco_cd", "ab" * 32, config, items, "labelstudio", T0)
    return round_.model_copy(update=update)


@pytest.mark.parametrize(("update", "names", "error", "message"), [
    ({}, ["alice"], InputError, "1 annotator.s. named, but the round asks 2 answer.s. per task"),
    ({}, ["alice", "alice"], InputError, "named twice"),
    ({}, ["Alice", "bob"], InputError, "lowercase letters, digits"),
    ({"backend": "files"}, ["alice", "bob"], InputError, "is a files round"),
    ({"launched_at": T0, "project_id": 4}, ["alice", "bob"], RoundStateError, "launched on the shared server"),
    ({"launched_at": T0, "annotators": ["alice", "carol"]}, ["alice", "bob"], RoundStateError,
     "launched on the servers of alice, carol"),
])
def test_annotators_kept_apart_must_fit_the_round(tmp_path, update, names, error, message):
    with pytest.raises(error, match=message):
        keep_apart(_labelstudio(tmp_path, **update), names)


def test_annotators_kept_apart_are_recorded_sorted_and_kept_by_a_relaunch(tmp_path):
    round_ = keep_apart(_labelstudio(tmp_path), ["bob", "alice"])
    assert round_.annotators == ["alice", "bob"]
    relaunch = round_.model_copy(update={"launched_at": T0})
    assert keep_apart(relaunch, ["alice", "bob"]).annotators == ["alice", "bob"]
    assert keep_apart(relaunch, None) is relaunch


def test_the_commands_name_annotators_that_do_not_fit(tmp_path, monkeypatch):
    monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_DIR", str(tmp_path / "ls"))
    _saved(tmp_path)  # a files round
    launched = run(tmp_path, "rounds", "launch", "a1", "--annotator", "alice", code=1)
    assert "is a files round; --annotator puts Label Studio rounds" in str(launched.exception)
    invited = run(tmp_path, "rounds", "invite", "--annotator", "zed", code=1)
    assert "no Label Studio server of annotator zed was ever started here (those that were: none)" in str(
        invited.exception)
    assert invited.exception.hint == "scripts/label-studio.sh start --annotator zed"
