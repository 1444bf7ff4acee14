"""Blocs: accounts answering as one are found without the aggregate and count as one voter."""

from __future__ import annotations

from segbench.core.agreement import aggregate
from segbench.core.blocs import as_one_voter, find_blocs, judgments
from segbench.core.screening import screen
from segbench.core.worker_quality import QualityRules
from segbench.schemas.rounds import Answer

RULES = {"min_shared": 8, "min_agreement": 1.0, "min_size": 3}


def answer(worker: str, item: str, label: str, second: int = 0) -> Answer:
    return Answer(item_id=item, annotator=worker, source_id=f"{worker}-{item}", choices={"context": [label]},
                  updated_at=f"2026-01-01T00:00:{second:02d}")


def sybil_round() -> tuple[dict[str, str], list[Answer]]:
    """12 items (truth: indoor on even items); four accounts answer by one policy that says outdoor
    on items 0, 2 and 4 too; three honest workers answer the truth, each wrong on one clear item of
    their own (so no two of them agree everywhere)."""
    truth = {f"i{n:02d}": "indoor" if n % 2 == 0 else "outdoor" for n in range(12)}
    policy = {item: "outdoor" if item in ("i00", "i02", "i04") else label for item, label in truth.items()}
    slips = {"h1": "i07", "h2": "i09", "h3": "i11"}
    answers = [answer(f"s{k}", item, label, n) for k in range(1, 5) for n, (item, label) in enumerate(policy.items())]
    answers += [answer(worker, item, "indoor" if item == slip else label, n)
                for worker, slip in slips.items() for n, (item, label) in enumerate(truth.items())]
    return truth, answers


def test_the_accounts_that_answer_alike_everywhere_are_one_bloc():
    _, answers = sybil_round()
    blocs = find_blocs(judgments(answers, ["context"]), **RULES)
    assert [b.members for b in blocs] == [("s1", "s2", "s3", "s4")]
    bloc = blocs[0]
    assert (bloc.pairs, bloc.shared, bloc.agreed) == (6, 72, 72)  # 6 pairs × 12 shared judgments
    assert bloc.voter == "bloc:s1"


def test_a_chain_of_pairs_or_too_few_shared_judgments_is_no_bloc():
    items = [f"i{n}" for n in range(10)]
    # a = b and b = c everywhere, but a and c differ on one item: no three accounts agree pairwise.
    labels = {"a": dict.fromkeys(items, "x"), "b": dict.fromkeys(items, "x"), "c": dict.fromkeys(items, "x")}
    labels["c"]["i0"] = "y"
    labels["b"] = {**labels["b"], "i0": "x"}
    assert find_blocs(labels, **RULES) == []
    # Identical, but on 7 shared judgments: too few to tell from three careful people.
    few = {w: dict.fromkeys(items[:7], "x") for w in "abc"}
    assert find_blocs(few, **RULES) == []
    # Two identical accounts are not enough for a bloc of 3; with min_size 2 they are one.
    pair = {w: dict.fromkeys(items, "x") for w in "ab"}
    assert find_blocs(pair, **RULES) == []
    assert [b.members for b in find_blocs(pair, **{**RULES, "min_size": 2})] == [("a", "b")]


def test_a_worker_linked_to_one_member_only_is_peeled_off():
    def answered(first: int, last: int, label: str = "x") -> dict[str, str]:
        return {f"i{n:02d}": label for n in range(first, last)}

    # s1, s2, s3 agree wherever they meet; h agrees with s1 (items 10-19) but not with s2 (20-29).
    labels = {"s1": answered(0, 20), "s2": {**answered(0, 10), **answered(20, 30)}, "s3": answered(0, 10),
              "h": {**answered(10, 20), **answered(20, 30, "y")}}
    assert [b.members for b in find_blocs(labels, **RULES)] == [("s1", "s2", "s3")]


def test_a_bloc_gives_one_vote_per_item():
    _, answers = sybil_round()
    blocs = find_blocs(judgments(answers, ["context"]), **RULES)
    # Earlier answers, changed since (two per account), count neither for the bloc nor against it.
    earlier = [answer(f"s{k}", "i00", "indoor").model_copy(update={"updated_at": f"2025-12-3{day}T00:00:00",
                                                                    "source_id": f"s{k}-old{day}"})
               for k in range(1, 5) for day in (0, 1)]
    answers = [*earlier, *answers]
    votes = as_one_voter(answers, blocs, ["context"])
    assert len(votes) == 12 * 4  # the bloc's voter and three honest workers, 12 items each
    assert {a.annotator for a in votes} == {"bloc:s1", "h1", "h2", "h3"}
    assert {a.item_id: a.choices["context"][0] for a in votes if a.annotator == "bloc:s1"}["i00"] == "outdoor"


def test_a_bloc_holding_the_majority_no_longer_outvotes_the_honest_workers():
    truth, answers = sybil_round()
    plain = {i.item_id: i.majority["context"] for i in aggregate(answers, ["context"], method="majority")}
    assert [item for item in truth if plain[item] != truth[item]] == ["i00", "i02", "i04"]  # 4 accounts against 3
    result = screen(answers, answers, ["context"], {})
    assert {i.item_id: i.majority["context"] for i in result.items} == truth
    assert [b.members for b in result.blocs] == [("s1", "s2", "s3", "s4")]


def _timed(worker: str, item: str, label: str, second: float, took: float = 10.0) -> Answer:
    import datetime as dt

    when = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=second)
    return Answer(item_id=item, annotator=worker, source_id=f"{worker}-{item}", choices={"context": [label]},
                  updated_at=when.isoformat(), seconds=took)


def lockstep_round(side_by_side: bool = False) -> list[Answer]:
    """12 items, a minute apart. One person answers each item with accounts s1..s4, one after another
    (20 s each), flipping one answer per account so no two accounts match; three honest people
    answer at their own times an hour apart. ``side_by_side``: the four accounts are four people who
    work on each item at once (their work overlaps)."""
    items = [f"i{n:02d}" for n in range(12)]
    answers = []
    for n, item in enumerate(items):
        for k in range(1, 5):
            label = "outdoor" if n == 2 * k else "indoor"  # each account's own slip
            start = 60 * n + (2 * k if side_by_side else 20 * (k - 1))
            answers.append(_timed(f"s{k}", item, label, start + 10))
        for h in range(1, 4):
            answers.append(_timed(f"h{h}", item, "indoor" if n != h else "outdoor", 3600 * h + 45 * n))
    return answers


def test_accounts_worked_one_after_another_are_a_bloc_though_their_answers_differ():
    from segbench.core.blocs import Lockstep, judgment_times

    answers = lockstep_round()
    labels, times = judgments(answers, ["context"]), judgment_times(answers, ["context"])
    assert find_blocs(labels, **RULES) == []  # no two accounts answer alike everywhere
    lockstep = Lockstep(seconds=180, share=0.8, agreement=0.7)
    blocs = find_blocs(labels, **RULES, times=times, lockstep=lockstep)
    assert [b.members for b in blocs] == [("s1", "s2", "s3", "s4")]
    assert (blocs[0].shared, blocs[0].agreed) == (72, 60)  # each pair differs on its two slips

    # Four people working on each item at the same moments are not one person.
    side = lockstep_round(side_by_side=True)
    assert find_blocs(judgments(side, ["context"]), **RULES, times=judgment_times(side, ["context"]),
                      lockstep=lockstep) == []
    # Nor are accounts in lockstep that disagree too often, nor answers without a work time.
    assert find_blocs(labels, **RULES, times=times, lockstep=Lockstep(180, 0.8, 0.9)) == []
    untimed = [a.model_copy(update={"seconds": None}) for a in answers]
    assert judgment_times(untimed, ["context"]) == {}


def test_screening_counts_a_lockstep_bloc_as_one_voter():
    result = screen(lockstep_round(), lockstep_round(), ["context"], {})
    assert [b.members for b in result.blocs] == [("s1", "s2", "s3", "s4")]
    off = screen(lockstep_round(), lockstep_round(), ["context"], {},
                 rules=QualityRules(bloc_lockstep_seconds=0))
    assert off.blocs == ()
