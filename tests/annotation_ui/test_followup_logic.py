"""Follow-up rounds without a flow: the --where grammar, which items a condition selects, how a
follow-up's answers merge with its chain's and who decided each item, and batch launches."""

from __future__ import annotations

import pytest

from segbench.annotation_ui.batches import BatchError, batch_rows, mark_batches_launched, plan_launch
from segbench.annotation_ui.followups import (
    CONDITION_FORMS,
    ConditionError,
    create_follow_up,
    matching_items,
    merge_chain,
    parse_condition,
)
from segbench.annotation_ui.rounds import RoundStore, mark_ingested, mark_launched, new_round
from segbench.core.agreement import aggregate
from segbench.core.errors import InputError, RoundStateError
from segbench.core.io import write_json
from segbench.schemas.rounds import Answer, RoundConfig, RoundItem, RoundStatus

T0, T1 = "2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00"


def _answer(item: str, worker: str, label: str, source: str | None = None, control: str = "context") -> Answer:
    return Answer(item_id=item, annotator=f"worker:{worker}", source_id=source or f"files:{worker}-{item}",
                  choices={control: [label]})


def _round(key: str = "r1", batches: dict[str, str | None] | None = None):
    batches = batches or {"a": None, "b": None, "c": None}
    items = [RoundItem(item_id=i, image=f"coco_cd/images/{i}.png", width=8, height=8, batch=b)
             for i, b in batches.items()]
    return new_round(key, "coco_cd_context_audit", "coco_cd", "v" * 64,
                     RoundConfig(label_config="coco_cd_context", overlap=3), items, "files", T0)


@pytest.mark.parametrize(("text", "kind", "control", "below"), [
    ("agreement<0.7", "agreement", None, 0.7),
    (" agreement < 1 ", "agreement", None, 1.0),
    ("agreement:context<0.5", "agreement", "context", 0.5),
    ("votes<3", "votes", None, 3),
    ("suspicious", "suspicious", None, 0),
    ("tie", "tie", None, 0),
])
def test_valid_conditions_parse(text, kind, control, below):
    condition = parse_condition(text)
    assert (condition.kind, condition.control, condition.below, condition.text) == (kind, control, below, text.strip())


@pytest.mark.parametrize("text", [
    "", "agreement", "agreement<", "agreement<0", "agreement<1.5", "agreement<nan", "agreement<inf",
    "agreement>0.5", "agreement<=0.5", "agreement:<0.5", "votes<0", "votes<2.5", "votes<-1", "votes<<2",
    "ties", "suspicious=1", "tie; rm -rf /", "Agreement<0.5",
])
def test_bad_conditions_are_refused_naming_the_condition_and_the_forms(text):
    with pytest.raises(ConditionError) as error:
        parse_condition(text)
    message = str(error.value)
    assert repr(text) in message
    assert all(form in message for form in CONDITION_FORMS)
    assert isinstance(error.value, InputError)


def test_each_condition_selects_its_items():
    answers = [
        _answer("a", "W1", "indoor"), _answer("a", "W2", "indoor"), _answer("a", "W3", "indoor"),   # unanimous
        _answer("b", "W1", "indoor"), _answer("b", "W2", "outdoor"),                                # tie, 2 votes
        _answer("c", "W1", "indoor"), _answer("c", "W2", "indoor"), _answer("c", "SPAM", "outdoor"),  # 2/3
    ]
    items = aggregate(answers, ["context"])
    ids = ["a", "b", "c", "d"]  # d: nobody answered

    def select(*texts, suspicious=frozenset()):
        return matching_items(ids, items, answers, [parse_condition(t) for t in texts], set(suspicious))

    assert select("tie") == {"b": ["tie"]}
    assert select("votes<3") == {"b": ["votes<3"], "d": ["votes<3"]}
    assert select("votes<1") == {"d": ["votes<1"]}
    assert select("agreement<0.7") == {"b": ["agreement<0.7"], "c": ["agreement<0.7"]}
    assert select("agreement:context<0.6") == {"b": ["agreement:context<0.6"]}
    assert select("agreement:other<0.9") == {}
    assert select("suspicious", suspicious={"worker:SPAM"}) == {"c": ["suspicious"]}
    assert select("suspicious", suspicious={"SPAM"}) == {"c": ["suspicious"]}  # a bare worker id matches too
    assert select("tie", "votes<3", "agreement<0.7") == {
        "b": ["tie", "votes<3", "agreement<0.7"], "c": ["agreement<0.7"], "d": ["votes<3"]}


def test_a_follow_up_merges_its_chain_without_counting_an_answer_twice(tmp_path):
    store = RoundStore(tmp_path)
    root = store.save(mark_ingested(mark_launched(_round(), None, T0), {}, T0))
    root_answers = [_answer("a", "W1", "indoor"), _answer("b", "W1", "indoor"), _answer("b", "W2", "outdoor")]
    root_items = merge_chain(store, root, root_answers).decide(aggregate(root_answers, ["context"]))
    assert {i.item_id: i.decided_by for i in root_items} == {"a": "r1", "b": "r1"}
    write_json(store.answers_path("r1"), {"answers": [a.model_dump(mode="json") for a in root_answers],
                                          "items": [i.model_dump(mode="json") for i in root_items]})
    follow = _round("r2", {"b": None}).model_copy(update={"follow_up_of": "r1"})
    # The follow-up's saved file already holds the root's answers: merging them again adds nothing.
    own = [_answer("b", "W3", "outdoor", source="files:F1"), *root_answers]
    merged = merge_chain(store, follow, own)
    assert sorted(a.source_id for a in merged.answers) == sorted(["files:F1", *(a.source_id for a in root_answers)])
    assert merged.own == {"files:F1"} and merged.items_answered() == 1
    items = {i.item_id: i for i in merged.decide(aggregate(merged.answers, ["context"]))}
    assert items["b"].majority == {"context": "outdoor"} and items["b"].decided_by == "r2"
    assert items["a"].decided_by == "r1"  # not asked again: the root's answer stands
    nothing_yet = merge_chain(store, follow, [])
    assert {i.item_id: i.decided_by for i in nothing_yet.decide(aggregate(nothing_yet.answers, ["context"]))} == {
        "a": "r1", "b": "r1"}
    assert nothing_yet.items_answered() == 0


def test_a_follow_up_of_a_round_without_answers_file_is_refused_at_ingest(tmp_path):
    store = RoundStore(tmp_path)
    store.save(_round())
    follow = _round("r2", {"b": None}).model_copy(update={"follow_up_of": "r1"})
    with pytest.raises(RoundStateError, match="segbench rounds ingest r1"):
        merge_chain(store, follow, [])


def test_batch_launches_add_batches_and_a_full_launch_ends_them():
    round_ = _round(batches={"a": "SM", "b": "CC", "c": "SM"})
    first, out = plan_launch(round_, "SM")
    assert [i.item_id for i in first.items] == ["a", "c"] and out == ["SM"]
    launched = mark_batches_launched(round_, None, out, T0)
    assert launched.status is RoundStatus.LAUNCHED and launched.launched_batches == ["SM"]
    assert batch_rows(launched, ["a"]) == [{"batch": "CC", "items": 1, "launched": 0, "answered": 0},
                                           {"batch": "SM", "items": 2, "launched": 2, "answered": 1}]
    ingested = mark_ingested(launched, {}, T1)
    second, out = plan_launch(ingested, "CC")  # after an ingest, the next batch may still go out
    assert [i.item_id for i in second.items] == ["a", "b", "c"] and out == ["CC", "SM"]
    both = mark_batches_launched(ingested, None, out, T1)
    assert both.status is RoundStatus.INGESTED and both.launched_batches == ["CC", "SM"]
    assert plan_launch(both, None) == (both, None)
    everything = mark_batches_launched(both, None, None, T1)
    with pytest.raises(RoundStateError, match="cannot launch"):
        plan_launch(everything, "CC")  # all out and ingested: nothing left to launch
    with pytest.raises(BatchError, match=r"no batch 'OC' \(batches: CC, SM\)"):
        plan_launch(round_, "OC")
    with pytest.raises(BatchError, match="its items carry no batch"):
        plan_launch(_round(), "SM")


def test_the_final_answers_are_those_of_the_deepest_ingested_follow_up(tmp_path):
    from segbench.annotation_ui.followups import chain, final_key, report_round

    store = RoundStore(tmp_path)
    done = mark_ingested(mark_launched(_round(), None, T0), {}, T0)
    store.save(done)
    middle = store.save(mark_ingested(mark_launched(_round("r2", {"b": None}), None, T0), {}, T0)
                        .model_copy(update={"follow_up_of": "r1"}))
    leaf = store.save(_round("r3", {"b": None}).model_copy(update={"follow_up_of": "r2"}))  # created only
    assert [final_key(store, k) for k in ("r1", "r2", "r3")] == ["r2", "r2", "r3"]
    assert [r.key for r in chain(store, leaf)] == ["r1", "r2", "r3"]
    assert [i.item_id for i in report_round(store, middle).items] == ["a", "b", "c"]  # the whole chain
    assert report_round(store, done) is done
    store.save(done.model_copy(update={"follow_up_of": "r3"}))  # a hand-edited record that loops
    with pytest.raises(InputError, match="loop"):
        chain(store, leaf)


def test_a_follow_up_of_a_round_kept_apart_goes_to_the_same_annotators_servers(tmp_path):
    store = RoundStore(tmp_path)
    apart = _round().model_copy(update={"backend": "labelstudio", "annotators": ["alice", "bob", "carol"]})
    store.save(mark_ingested(apart.model_copy(update={"status": RoundStatus.LAUNCHED, "launched_at": T0}), {}, T0))
    answers = [_answer("a", "W1", "indoor"), _answer("a", "W2", "outdoor")]
    write_json(store.answers_path("r1"), {"answers": [a.model_dump(mode="json") for a in answers],
                                          "items": [i.model_dump(mode="json") for i in
                                                    merge_chain(store, apart, answers).decide(
                                                        aggregate(answers, ["context"]))]})
    follow, matched = create_follow_up(store, "r1", "r2", [parse_condition("tie")], T1)
    assert list(matched) == ["a"] and follow.annotators == ["alice", "bob", "carol"]
    assert store.load("r2").annotators == ["alice", "bob", "carol"] and follow.launched_at is None
