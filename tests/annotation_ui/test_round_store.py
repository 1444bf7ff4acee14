"""Round records on disk and their status transitions."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from segbench.annotation_ui.rounds import (
    RoundStore,
    mark_cancelled,
    mark_closed,
    mark_ingested,
    mark_launched,
    new_round,
)
from segbench.core.errors import InputError, RoundStateError
from segbench.schemas.rounds import RoundConfig, RoundItem, RoundStatus

T0, T1, T2, T3 = (f"2026-01-0{d}T00:00:00+00:00" for d in (1, 2, 3, 4))


def _items(*ids: str) -> list[RoundItem]:
    return [RoundItem(item_id=i, image=f"coco_cd/images/{i}.png", width=64, height=48) for i in ids]


def _round(key: str = "audit-1", backend: str = "labelstudio", labels: tuple[str, ...] = ("indoor", "outdoor")):
    config = RoundConfig(label_config="coco_cd_context", params={"labels": list(labels)}, overlap=2)
    return new_round(key, "coco_cd_context_audit", "coco_cd", "ab" * 32, config, _items("1", "2"), backend, T0)


def test_new_round_is_created_with_timestamps():
    r = _round()
    assert (r.status, r.created_at, r.updated_at, r.project_id) == (RoundStatus.CREATED, T0, T0, None)
    assert [i.item_id for i in r.items] == ["1", "2"]


def test_new_round_refuses_duplicate_ids_and_no_items():
    config = RoundConfig(label_config="coco_cd_context")
    with pytest.raises(InputError, match="repeated: 1"):
        new_round("k", "kind", "ds", "v", config, _items("1", "2", "1"), "files", T0)
    with pytest.raises(InputError, match="at least one item"):
        new_round("k", "kind", "ds", "v", config, [], "files", T0)
    with pytest.raises(InputError, match="invalid round key"):
        new_round("../k", "kind", "ds", "v", config, _items("1"), "files", T0)
    with pytest.raises(InputError, match="at most 100"):
        new_round("k" * 101, "kind", "ds", "v", config, _items("1"), "files", T0)
    assert new_round("k" * 100, "kind", "ds", "v", config, _items("1"), "files", T0).key == "k" * 100


@pytest.mark.parametrize("image", ["../x.png", "/abs.png", "coco_cd/../../x.png", "a\\b.png"])
def test_round_item_refuses_images_outside_the_data_root(image):
    with pytest.raises(ValidationError, match="relative to the data root"):
        RoundItem(item_id="1", image=image, width=1, height=1)


def test_create_load_save_list(tmp_path):
    store = RoundStore(tmp_path / "rounds")
    assert store.list() == []
    b, a = _round("b"), _round("a")
    store.create(b)
    store.create(a)
    assert store.load("a") == a
    assert [r.key for r in store.list()] == ["a", "b"]
    launched = mark_launched(a, 7, T1)
    store.save(launched)
    assert store.load("a") == launched
    assert store.answers_path("a") == tmp_path / "rounds" / "a.answers.json"
    store.answers_path("a").write_text("{}")  # an answers file is not a round
    assert store.keys() == ["a", "b"]
    assert sorted(p.name for p in (tmp_path / "rounds").iterdir()) == ["a.answers.json", "a.json", "b.json"]


def test_save_is_byte_stable(tmp_path):
    store = RoundStore(tmp_path)
    store.create(_round())
    first = (tmp_path / "audit-1.json").read_bytes()
    store.save(store.load("audit-1"))
    assert (tmp_path / "audit-1.json").read_bytes() == first


def test_create_refuses_an_existing_key_and_says_how_to_fix(tmp_path):
    store = RoundStore(tmp_path)
    store.create(_round())
    with pytest.raises(RoundStateError) as same:
        store.create(_round())
    assert "already exists" in str(same.value) and "same definition" in str(same.value)
    assert "another key" in str(same.value) and "overwrite=True" in str(same.value)
    with pytest.raises(RoundStateError, match=r"differs in: config"):
        store.create(_round(labels=("indoor", "outdoor", "ambiguous")))


def test_create_with_overwrite_replaces(tmp_path):
    store = RoundStore(tmp_path)
    store.create(_round())
    replacement = _round(labels=("a", "b"))
    store.create(replacement, overwrite=True)
    assert store.load("audit-1").config.params == {"labels": ["a", "b"]}


def test_load_missing_lists_existing_keys(tmp_path):
    store = RoundStore(tmp_path)
    store.create(_round("a"))
    store.create(_round("b"))
    with pytest.raises(InputError, match=r"no round with key 'zz'[\s\S]*existing rounds: a, b"):
        store.load("zz")
    with pytest.raises(InputError, match="invalid round key"):
        store.load("../a")


def test_load_malformed_record_is_an_input_error(tmp_path):
    (tmp_path / "bad.json").write_text('{"key": "bad"}')
    with pytest.raises(InputError, match="bad.json: not a valid round record"):
        RoundStore(tmp_path).load("bad")


def test_full_lifecycle():
    r = _round()
    launched = mark_launched(r, 7, T1)
    assert (launched.status, launched.project_id, launched.launched_at, launched.updated_at) == (
        RoundStatus.LAUNCHED, 7, T1, T1)
    assert r.status is RoundStatus.CREATED  # pure: the input is unchanged
    relaunched = mark_launched(launched, 7, T2)
    assert (relaunched.project_id, relaunched.launched_at, relaunched.updated_at) == (7, T1, T2)
    ingested = mark_ingested(relaunched, {"answers": 3}, T2)
    again = mark_ingested(ingested, {"answers": 4}, T3)
    assert (again.status, again.counts, again.ingested_at) == (RoundStatus.INGESTED, {"answers": 4}, T3)
    closed = mark_closed(again, T3)
    assert (closed.status, closed.closed_at) == (RoundStatus.CLOSED, T3)


def test_files_round_launches_without_a_project():
    launched = mark_launched(_round(backend="files"), None, T1)
    assert launched.project_id is None and launched.status is RoundStatus.LAUNCHED
    with pytest.raises(RoundStateError, match="files backend; it has no project"):
        mark_launched(_round(backend="files"), 3, T1)
    with pytest.raises(RoundStateError, match="needs a project id"):
        mark_launched(_round(), None, T1)


def test_relaunch_into_another_project_is_refused():
    launched = mark_launched(_round(), 7, T1)
    with pytest.raises(RoundStateError, match="launched as project 7; a relaunch reuses it"):
        mark_launched(launched, 8, T2)


def test_refused_transitions_name_round_status_and_next_steps():
    r = _round()
    with pytest.raises(RoundStateError) as err:
        mark_ingested(r, {}, T1)
    message = str(err.value)
    assert "cannot ingest round 'audit-1'" in message and "status is created" in message
    assert "ingest needs status launched or ingested" in message and "allowed next: launched, cancelled" in message
    with pytest.raises(RoundStateError, match="close needs status ingested"):
        mark_closed(mark_launched(r, 7, T1), T2)
    closed = mark_closed(mark_ingested(mark_launched(r, 7, T1), {}, T2), T3)
    with pytest.raises(RoundStateError, match=r"allowed next: none \(the round is final\)"):
        mark_cancelled(closed, T3)
    with pytest.raises(RoundStateError, match="status is closed"):
        mark_launched(closed, 7, T3)


def test_cancel_from_any_status_but_closed():
    r = _round()
    for step in (r, mark_launched(r, 7, T1), mark_ingested(mark_launched(r, 7, T1), {}, T2)):
        cancelled = mark_cancelled(step, T3)
        assert (cancelled.status, cancelled.updated_at) == (RoundStatus.CANCELLED, T3)
    cancelled = mark_cancelled(r, T1)
    assert mark_cancelled(cancelled, T2).status is RoundStatus.CANCELLED
    with pytest.raises(RoundStateError, match="status is cancelled"):
        mark_launched(cancelled, 7, T2)
