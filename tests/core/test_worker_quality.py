"""Worker scoring: gold accuracy (labels and polygons), agreement with the aggregate, the SPIN signals,
outlying task times, and the reasons a worker is called suspicious."""

from __future__ import annotations

import pytest

from segbench.core.agreement import aggregate
from segbench.core.worker_quality import QualityRules, polygon_iou, robust_z, score_workers
from segbench.schemas.rounds import Answer, Polygon

SQUARE = [(2.0, 2.0), (12.0, 2.0), (12.0, 12.0), (2.0, 12.0)]


def choice(item: str, worker: str, label: str, seconds: float | None = None) -> Answer:
    return Answer(item_id=item, annotator=worker, source_id=f"{worker}-{item}", choices={"context": [label]},
                  seconds=seconds)


def scored(answers, gold=None, **kwargs):
    work = [a for a in answers if a.item_id not in (gold or {})]
    return score_workers(answers, aggregate(work, ["context"]), gold or {}, **kwargs)


def rows(report):
    return {w["worker"]: w for w in report["workers"]}


def test_gold_accuracy_and_agreement_name_the_spammer():
    gold = {"g1": ({"context": "indoor"}, (16, 16)), "g2": ({"context": "outdoor"}, (16, 16))}
    answers = []
    for worker in ("a", "b", "c"):
        answers += [choice(f"w{i}", worker, "indoor") for i in range(6)]
        answers += [choice("g1", worker, "indoor"), choice("g2", worker, "outdoor")]
    answers += [choice(f"w{i}", "spam", "outdoor") for i in range(6)]
    answers += [choice("g1", "spam", "outdoor"), choice("g2", "spam", "outdoor")]
    report = scored(answers, gold)
    by = rows(report)
    assert (by["a"]["gold_accuracy"], by["a"]["agreement_with_aggregate"]) == (1.0, 1.0)
    assert (by["spam"]["gold_accuracy"], by["spam"]["agreement_with_aggregate"]) == (0.5, 0.0)
    assert by["spam"]["answers"] == 8 and by["spam"]["gold_answers"] == 2
    # Two gold judgments each: too sparse to judge on gold, so only the agreement speaks.
    assert report["suspicious"] == [{"worker": "spam", "reasons": [
        "agreement with the aggregate 0.00 < 0.50 over 6 judgments"]}]
    assert report["too_sparse"] == ["a", "b", "c", "spam"]
    assert by["spam"]["flags"]["raised"] == ["low_agreement"]


def test_agreement_needs_enough_judgments_before_it_flags():
    answers = [choice("w1", w, "indoor") for w in ("a", "b")] + [choice("w1", "c", "outdoor")]
    report = scored(answers)
    assert rows(report)["c"]["agreement_with_aggregate"] == 0.0 and report["suspicious"] == []


def test_answers_on_tied_items_are_counted_apart_from_the_agreement():
    """Two workers who agree on w1 and disagree on w2 and w3 (ties): agreement 1.0 over the one decided
    item, and two tied judgments each, so the report does not read as full agreement."""
    answers = [choice("w1", "a", "indoor"), choice("w1", "b", "indoor"),
               choice("w2", "a", "indoor"), choice("w2", "b", "outdoor"),
               choice("w3", "a", "outdoor"), choice("w3", "b", "indoor")]
    by = rows(scored(answers))
    for worker in ("a", "b"):
        assert (by[worker]["agreement_with_aggregate"], by[worker]["agreement_judgments"],
                by[worker]["undecided_judgments"]) == (1.0, 1, 2)


def test_an_outlying_median_time_is_flagged_by_robust_z():
    answers = [choice(f"w{i}", w, "indoor", seconds) for i in range(3)
               for w, seconds in (("a", 30), ("b", 34), ("c", 28), ("d", 31), ("fast", 1))]
    report = scored(answers)
    by = rows(report)
    assert by["fast"]["median_seconds"] == 1.0 and by["fast"]["flags"]["time_z"] < -3.5
    assert abs(by["a"]["flags"]["time_z"]) < 3.5
    assert [s["worker"] for s in report["suspicious"]] == ["fast"]
    assert "robust z" in report["suspicious"][0]["reasons"][0]


def test_robust_z_is_undefined_without_spread_or_with_few_workers():
    assert robust_z({"a": 1.0, "b": 50.0}) == {"a": None, "b": None}
    assert robust_z({"a": 5.0, "b": 5.0, "c": 5.0, "d": 80.0})["d"] is None  # MAD 0: no scale to judge by
    assert robust_z({"a": 1.0, "b": 2.0, "c": 3.0})["b"] == 0.0


def test_many_parts_absent_and_missing_segmentations_are_the_spin_signals():
    def spin(item: str, worker: str, has: dict[str, str], drawn: list[str]) -> Answer:
        return Answer(item_id=item, annotator=worker, source_id=f"{worker}-{item}",
                      choices={f"has_{k}": [v] for k, v in has.items()},
                      polygons={"polygons": [Polygon(label=name, points=SQUARE) for name in drawn]})

    answers = []
    for i in range(6):
        answers.append(spin(f"p{i}", "careful", {"eye": "yes", "ear": "no"}, ["Eye"]))
        answers.append(spin(f"p{i}", "lazy", {"eye": "no", "ear": "no"}, []))
        answers.append(spin(f"p{i}", "sloppy", {"eye": "yes", "ear": "yes"}, []))
    report = score_workers(answers, [], {})
    by = rows(report)
    assert by["careful"]["flags"]["absent_rate"] == 0.5 and by["careful"]["flags"]["missing_segmentation_rate"] == 0.0
    assert by["lazy"]["flags"]["absent_rate"] == 1.0
    assert by["sloppy"]["flags"]["missing_segmentation_rate"] == 1.0
    reasons = {s["worker"]: s["reasons"] for s in report["suspicious"]}
    assert set(reasons) == {"lazy", "sloppy"}
    assert reasons["lazy"] == ["marked 100% of 12 parts absent (> 75%)"]
    assert reasons["sloppy"] == ["no polygon for 100% of 12 parts marked present (> 50%)"]


def test_a_worker_asked_no_parts_is_scored_when_the_minimum_judgments_is_zero():
    # Choice rounds ask no parts: the absent and missing rates are None, which a minimum of 0 lets through.
    answers = [choice(f"i{i}", worker, "indoor") for i in range(4) for worker in ("a", "b")]
    report = scored(answers, rules=QualityRules.with_overrides({"min_judgments": 0}))
    assert rows(report)["a"]["flags"]["absent_rate"] is None
    assert report["suspicious"] == []


def test_polygon_gold_is_scored_by_iou():
    reference = [{"label": "Eye", "points": SQUARE}]
    gold = {"g": ({"polygons": reference}, (16, 16))}
    near = [(3.0, 2.0), (12.0, 2.0), (12.0, 12.0), (3.0, 12.0)]
    far = [(12.0, 12.0), (15.0, 12.0), (15.0, 15.0), (12.0, 15.0)]
    answers = [Answer(item_id="g", annotator=w, source_id=w, polygons={"polygons": [Polygon(label="Eye", points=pts)]})
               for w, pts in (("near", near), ("far", far))]
    by = rows(score_workers(answers, [], gold))
    assert (by["near"]["gold_accuracy"], by["far"]["gold_accuracy"]) == (1.0, 0.0)
    assert polygon_iou([Polygon(label="Eye", points=near)], [Polygon(label="Eye", points=SQUARE)], 16, 16) == \
        pytest.approx(0.9, abs=0.05)
    assert polygon_iou([], [], 16, 16) == 1.0


def test_workers_off_the_pass_list_are_named_and_rules_are_reported():
    answers = [choice("w1", "a", "indoor"), choice("w1", "b", "indoor")]
    report = scored(answers, qualified={"a"}, rules=QualityRules(min_gold_accuracy=0.9))
    assert rows(report)["a"]["flags"]["qualified"] is True and rows(report)["b"]["flags"]["qualified"] is False
    assert report["suspicious"] == [{"worker": "b", "reasons": [
        "not on the qualification pass list: answers recorded, not counted"]}]
    assert report["rules"]["min_gold_accuracy"] == 0.9


def test_a_repeated_answer_counts_once_the_latest():
    first = Answer(item_id="g", annotator="a", source_id="1", updated_at="2026-01-01T00:00:00", choices={"context": ["x"]})
    latest = Answer(item_id="g", annotator="a", source_id="2", updated_at="2026-01-02T00:00:00",
                    choices={"context": ["indoor"]})
    by = rows(score_workers([latest, first], [], {"g": ({"context": "indoor"}, (4, 4))}))
    assert by["a"]["answers"] == 1 and by["a"]["gold_accuracy"] == 1.0


def _crowd_of(labels_by_worker: dict[str, list[str]], truth: list[str], gold_every: int = 0):
    """Answers of workers on items ``i0..``; every ``gold_every``-th item is gold with its true label."""
    gold = {f"i{n}": ({"context": t}, (16, 16)) for n, t in enumerate(truth) if gold_every and n % gold_every == 0}
    answers = [Answer(item_id=f"i{n}", annotator=w, source_id=f"{w}-{n}", choices={"context": [label]},
                      updated_at=f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}")
               for w, labels in labels_by_worker.items() for n, label in enumerate(labels)]
    return answers, gold


def _truth(n: int = 60) -> list[str]:
    return ["indoor" if k % 5 else "outdoor" for k in range(n)]  # 80/20


def test_a_worker_giving_one_label_to_everything_is_flagged_despite_matching_the_majority():
    truth = _truth()
    honest = {w: list(truth) for w in ("a", "b", "c")}
    answers, gold = _crowd_of({**honest, "same": ["indoor"] * len(truth)}, truth)
    by = rows(scored(answers, gold))
    assert by["same"]["agreement_with_aggregate"] == 0.8  # raw agreement would pass it
    assert by["same"]["kappa"] == 0.0 and by["same"]["label_distance"] == 0.2
    assert by["same"]["flags"]["raised"] == ["chance_agreement"]  # 0.2 is within the default distance of 0.25
    stricter = rows(scored(answers, gold, rules=QualityRules(max_label_distance=0.15)))
    assert stricter["same"]["flags"]["raised"] == ["chance_agreement", "one_sided_labels"]
    assert by["a"]["flags"]["raised"] == [] and by["a"]["kappa"] == 1.0


def test_copied_answer_sheets_are_collusion_and_honest_pairs_are_not():
    import random

    truth = _truth()
    rng = random.Random(0)
    sheet = [rng.choice(["indoor", "outdoor"]) for _ in truth]
    honest = {w: [t if rng.random() < 0.9 else ("outdoor" if t == "indoor" else "indoor") for t in truth]
              for w in ("a", "b", "c", "d", "e")}
    answers, gold = _crowd_of({**honest, "ring1": sheet, "ring2": sheet}, truth)
    report = scored(answers, gold)
    assert [p["workers"] for p in report["colluding_pairs"]] == [["ring1", "ring2"]]
    assert rows(report)["ring1"]["flags"]["colluding_with"] == ["ring2"]
    assert not any(rows(report)[w]["flags"]["colluding_with"] for w in honest)


def test_gold_accuracy_is_judged_with_a_confidence_bound_over_enough_gold():
    truth = _truth(40)
    wrong = ["outdoor" if t == "indoor" else "indoor" for t in truth]
    lucky = [t if n < 5 else w for n, (t, w) in enumerate(zip(truth, wrong, strict=True))]
    answers, gold = _crowd_of({"a": list(truth), "b": list(truth), "c": list(truth), "bad": wrong,
                               "lucky": lucky}, truth, gold_every=4)
    by = rows(scored(answers, gold))
    assert by["bad"]["gold_answers"] == 10 and by["bad"]["gold_interval"][1] < 0.7
    assert "low_gold_accuracy" in by["bad"]["flags"]["raised"]
    assert "low_gold_accuracy" not in by["a"]["flags"]["raised"]
    rules = QualityRules(min_gold_answers=11)
    assert "low_gold_accuracy" not in rows(scored(answers, gold, rules=rules))["bad"]["flags"]["raised"]


def test_accuracy_that_falls_over_the_round_is_flagged():
    truth = _truth(60)
    wrong = ["outdoor" if t == "indoor" else "indoor" for t in truth]
    drifting = [t if n < 30 else w for n, (t, w) in enumerate(zip(truth, wrong, strict=True))]
    answers, gold = _crowd_of({"a": list(truth), "b": list(truth), "c": list(truth), "drift": drifting}, truth)
    by = rows(scored(answers, gold, rules=QualityRules(min_kappa=-1.0, min_agreement=0.0)))
    assert by["drift"]["accuracy_early_late"] == [1.0, 0.0]
    assert "falling_accuracy" in by["drift"]["flags"]["raised"]
    assert "falling_accuracy" not in by["a"]["flags"]["raised"]


def test_rules_can_be_overridden_by_name_and_unknown_names_are_refused():
    assert QualityRules.with_overrides({"min_kappa": 0.5, "min_gold_answers": 8}).min_gold_answers == 8
    with pytest.raises(ValueError, match="unknown quality rule 'min_kapa'"):
        QualityRules.with_overrides({"min_kapa": 0.5})


MTURK_DAYS = ["Wed Nov 26", "Thu Nov 27", "Fri Nov 28", "Sat Nov 29", "Sun Nov 30", "Mon Dec 01"]


def test_mturk_times_over_several_days_keep_the_timeline_in_order():
    """MTurk writes "Wed Nov 26 09:00:37 PST 2025": sorted as text, a batch over six days runs Fri, Mon,
    Sat, Sun, Thu, Wed, and a worker whose accuracy falls would read as one whose accuracy rises."""
    truth = _truth(60)
    wrong = ["outdoor" if t == "indoor" else "indoor" for t in truth]
    drifting = [t if n < 30 else w for n, (t, w) in enumerate(zip(truth, wrong, strict=True))]
    answers, gold = _crowd_of({"a": list(truth), "b": list(truth), "c": list(truth), "drift": drifting}, truth)
    answers = [a.model_copy(update={"updated_at": f"{MTURK_DAYS[int(a.item_id[1:]) // 10]} "
                                                  f"09:{int(a.item_id[1:]) % 10:02d}:00 PST 2025"})
               for a in answers]
    by = rows(scored(answers, gold, rules=QualityRules(min_kappa=-1.0, min_agreement=0.0)))
    assert by["drift"]["accuracy_early_late"] == [1.0, 0.0]
    assert "falling_accuracy" in by["drift"]["flags"]["raised"]


def test_the_latest_of_a_repeated_answer_is_the_latest_in_time_whatever_the_format():
    answers = [Answer(item_id="g", annotator="a", source_id=source, updated_at=when, choices={"context": [label]})
               for source, when, label in [("1", "Sat Nov 29 23:00:00 PST 2025", "indoor"),  # 2025-11-30T07:00Z
                                           ("2", "2025-11-30T06:00:00Z", "outdoor"),
                                           ("3", "Thu Nov 27 09:00:00 PST 2025", "outdoor")]]
    by = rows(score_workers(answers, [], {"g": ({"context": "indoor"}, (4, 4))}))
    assert by["a"]["answers"] == 1 and by["a"]["gold_accuracy"] == 1.0
    assert aggregate(answers, ["context"])[0].majority == {"context": "indoor"}


@pytest.mark.parametrize(("text", "utc"), [
    ("Wed Nov 26 09:00:37 PST 2025", "2025-11-26T17:00:37+00:00"),
    ("Sun Jun 01 09:00:37 PDT 2025", "2025-06-01T16:00:37+00:00"),
    ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00+00:00"),
    ("2026-01-01T01:00:00.5+01:00", "2026-01-01T00:00:00.500000+00:00"),
    ("2026-01-01 00:00:00", "2026-01-01T00:00:00+00:00"),  # no zone: UTC
    ("yesterday", None), ("Wed Nov 26 09:00:37 XYZ 2025", None), ("Wed Foo 26 09:00:37 PST 2025", None),
])
def test_times_are_read_in_every_form_the_backends_write(text, utc):
    from segbench.core.clock import parse_time

    parsed = parse_time(text)
    assert (parsed.isoformat() if parsed else None) == utc


def test_a_label_right_far_above_its_base_rate_marks_a_specialist_not_a_guesser():
    from segbench.core.worker_signals import informative_labels

    rules = {"min_said": 5, "min_precision": 0.85, "max_p": 0.01}
    indoor, outdoor = "context=indoor", "context=outdoor"
    # Sure of outdoor scenes, guessing on indoor ones: every "indoor" they give is right.
    specialist = [(outdoor, outdoor)] * 10 + [(indoor, indoor)] * 15 + [(outdoor, indoor)] * 15
    assert informative_labels(specialist, **rules) == [indoor]
    one_label = [(indoor, indoor)] * 30 + [(indoor, outdoor)] * 10
    assert informative_labels(one_label, **rules) == []  # right at exactly its base rate
    guesser = [(indoor, indoor)] * 15 + [(outdoor, indoor)] * 15 + [(indoor, outdoor)] * 5 + [(outdoor, outdoor)] * 5
    assert informative_labels(guesser, **rules) == []
    rare = [(outdoor, outdoor)] * 4 + [(indoor, indoor)] * 30
    assert informative_labels(rare, **rules) == [indoor], "four answers are too few to count for outdoor"
    # A yes to every question is evidence of nothing, however many other questions there are.
    yes_sayer = [("valid=yes", "valid=yes")] * 20 + [("valid=yes", "valid=no")] * 2 + [
        ("clean=yes", "clean=yes")] * 20 + [("clean=yes", "clean=no")] * 2
    assert informative_labels(yes_sayer, **rules) == []
