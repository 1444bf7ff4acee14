"""Gold items and qualification rounds: what a round knows the answer to, and who may count.

A gold item is a :class:`RoundItem` with ``gold`` set (its known answer). Nothing shown to people
tells it apart: one seeded shuffle orders all the round's items, work and gold, and a round with gold
gets a ``task_salt``, so every task shows an opaque task id of one form
(:meth:`~segbench.schemas.rounds.Round.task_id`) in the task files, the Label Studio task data and
the served image names; only ``data`` and the image are shown. Gold drawn from candidates is
balanced per known answer (not a copy of the work items' imbalance: a worker who gives everything
the majority label must not pass), and the round records how it was chosen (``gold_selection``). Ingest keeps gold answers out of the answers and
items that dataset builds read (:func:`split_answers`) and scores them per worker
(:mod:`segbench.core.worker_quality`).

A qualification round (``purpose="qualification"``) holds only gold items; its ingest writes the
pass list ``data/rounds/<key>.qualified.json`` (workers whose gold accuracy reaches
``pass_threshold``), and for the files backend also ``data/rounds/<key>/qualification.csv``, the pass
list as an MTurk worker qualification upload (``Worker ID`` and ``UPDATE-<qualification>`` score
columns, as the requester site's "Upload CSV" of Manage Workers expects). A round created with
``requires=<key>`` counts only the answers of workers on that list.
"""

from __future__ import annotations

import csv
import io
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal, TypedDict

from pydantic import ValidationError

from segbench.annotation_ui.crowd_files import spreadsheet_safe
from segbench.annotation_ui.rounds import RoundStore
from segbench.core.errors import InputError, RoundStateError
from segbench.core.io import atomic_write_text, fingerprint, read_json, write_json
from segbench.core.worker_quality import POLYGONS, QualityRules, passed
from segbench.schemas.rounds import Answer, Round, RoundItem

QUALIFIED_SUFFIX = ".qualified.json"
GOLD_FILE_FORMAT = ('a JSON list of items: {"item_id", "image", "width", "height", "data": {...}, '
                    '"gold": {<control>: <label>} or {"polygons": [{"label", "points": [[x, y], ...]}]}}')


@dataclass(frozen=True)
class QualityOptions:
    """What a create command adds to a round: gold items, qualification, a gate, its worker rules."""

    gold: int = 0
    gold_file: Path | None = None
    gold_from: str | None = None
    purpose: Literal["work", "qualification"] = "work"
    pass_threshold: float | None = None
    requires: str | None = None
    seed: int = 0
    rules: Mapping[str, float] = field(default_factory=dict)


class QualityArgs(TypedDict):
    """The options of :class:`QualityOptions` a create command reads, as keyword arguments (the seed is its own)."""

    gold: int
    gold_file: Path | None
    gold_from: str | None
    purpose: Literal["work", "qualification"]
    pass_threshold: float | None
    requires: str | None
    rules: dict[str, float]


class AnswersExtras(TypedDict, total=False):
    """What an answers file gains in a round with gold items or a gate."""

    gold_answers: list[dict[str, Any]]
    qualified_workers: list[str]


def gold_count(value: str | int | None, *, overlap: int = 1, workers: int | None = None,
               rules: Mapping[str, float] | None = None) -> int:
    """``--gold N`` or ``--gold auto``: a count of gold items.

    ``auto`` is the smallest count that lets each of ``workers`` expected workers see the worker
    report's ``min_gold_answers`` gold answers when tasks spread evenly: ⌈min × workers / overlap⌉,
    and never fewer than that minimum (a worker answers each gold item once).

    Raises:
        InputError: negative, not a number, or ``auto`` without ``workers``.
    """
    if value is None:
        return 0
    if str(value).strip().lower() == "auto":
        if not workers:
            raise InputError("--gold auto needs the number of workers you expect", item="--gold",
                             hint="add --expected-workers N (e.g. --expected-workers 30), or pass a count: --gold 32")
        least = QualityRules.with_overrides(rules).min_gold_answers
        return max(least, math.ceil(least * workers / overlap))
    try:
        count = int(str(value).strip())
    except ValueError:
        raise InputError(f"--gold {value}: expected a count or 'auto'", item="--gold",
                         hint="pass --gold 32, or --gold auto --expected-workers N") from None
    if count < 0:
        raise InputError(f"--gold {value}: the number of gold items cannot be negative", item="--gold",
                         hint="pass --gold 0 (no gold) or a positive count, e.g. --gold 10")
    return count


def parse_rules(values: Sequence[str]) -> dict[str, float]:
    """``--rule NAME=VALUE`` options as a mapping (checked by :func:`check_rules`).

    Raises:
        InputError: a value without ``=`` or not a number.
    """
    out = {}
    for text in values:
        name, sep, value = text.partition("=")
        try:
            if not sep:
                raise ValueError(text)
            out[name.strip()] = float(value)
        except ValueError:
            raise InputError(f"--rule {text}: expected NAME=NUMBER", item="--rule",
                             hint="e.g. --rule min_kappa=0.3 (rules: " + ", ".join(QualityRules.__dataclass_fields__)
                                  + ")") from None
    return out


def thin_gold_warning(round_: Round, workers: int | None) -> str | None:
    """Why the round's gold is too thin for the worker report to judge workers on it, or None.

    With ``workers``, each sees about gold × overlap / workers gold items; without, a worker sees at
    most every gold item."""
    if round_.purpose == "qualification":
        return None
    gold = sum(1 for i in round_.items if i.gold)
    least = round_rules(round_).min_gold_answers
    if gold and gold < least:
        return (f"round {round_.key} has {gold} gold items: no worker can reach the {least} gold answers the worker "
                f"report needs to judge them on gold (create it again with --gold {least} or more)")
    if gold and workers:
        each = gold * round_.config.overlap / workers
        if each < least:
            return (f"with {workers} workers each sees about {each:.1f} gold items, fewer than the {least} the worker "
                    f"report needs (create it again with --overwrite --gold auto --expected-workers {workers})")
    return None


def read_gold_file(path: Path) -> list[RoundItem]:
    """Gold items from a JSON file (see :data:`GOLD_FILE_FORMAT`).

    Raises:
        InputError: unreadable, not a list, an entry that is no valid item or has no ``gold``.
    """
    entries = read_json(path)
    if not isinstance(entries, list):
        raise InputError("a gold file is a JSON list of items", path=path, hint=f"write {GOLD_FILE_FORMAT}")
    items = []
    for index, entry in enumerate(entries):
        where = f"entry {index}" + (f" ({entry.get('item_id')})" if isinstance(entry, dict) else "")
        try:
            item = RoundItem.model_validate(entry)
        except ValidationError as exc:
            error = exc.errors()[0]
            raise InputError(f"not a gold item ({'.'.join(map(str, error['loc']))}: {error['msg']})", path=path,
                             item=where, hint=f"write {GOLD_FILE_FORMAT}") from exc
        if not item.gold:
            raise InputError("item has no 'gold' answer", path=path, item=where, hint=f"write {GOLD_FILE_FORMAT}")
        items.append(item)
    return items


def choose_gold(candidates: Sequence[RoundItem], count: int, seed: int, *,
                taken: set[str]) -> tuple[list[RoundItem], str]:
    """``count`` gold items drawn (seeded) from ``candidates`` whose ids are not ``taken``, balanced
    per known answer: each answer gets an equal share (the first answers in sorted order take the
    remainder), and an answer with too few candidates leaves its share to the others.

    Returns:
        The items (sorted by id) and how they were chosen, in words.

    Raises:
        InputError: fewer candidates than asked.
    """
    pool = sorted((c for c in candidates if c.item_id not in taken), key=lambda c: c.item_id)
    if count > len(pool):
        raise InputError(f"--gold {count}: only {len(pool)} items with a known answer are available",
                         item="--gold", hint=f"pass --gold {len(pool)} or less, or add items with --gold-file")
    by_answer: dict[str, list[RoundItem]] = {}
    for item in pool:
        by_answer.setdefault(_answer_key(item.gold or {}), []).append(item)
    shares = dict.fromkeys(sorted(by_answer), 0)
    while sum(shares.values()) < count:  # one more for each answer that still has candidates, in turn
        for answer in shares:
            if sum(shares.values()) < count and shares[answer] < len(by_answer[answer]):
                shares[answer] += 1
    rng = random.Random(f"gold:{seed}")
    chosen = [item for answer, n in shares.items() for item in rng.sample(by_answer[answer], n)]
    spread = ", ".join(f"{answer}: {n} of {len(by_answer[answer])}" for answer, n in shares.items())
    how = (f"{count} of {len(pool)} candidates with a known answer, balanced per known answer ({spread}), "
           f"seed {seed}")
    return sorted(chosen, key=lambda c: c.item_id), how


def _answer_key(gold: Mapping[str, Any]) -> str:
    """A known answer as one readable key (``context=indoor``); reference polygons count by their labels."""
    parts = []
    for control, known in sorted(gold.items()):
        if control == POLYGONS:
            known = sorted({p["label"] for p in known})
        parts.append(f"{control}={'|'.join(known) if isinstance(known, list) else known}")
    return "; ".join(parts)


def with_quality(round_: Round, candidates: Sequence[RoundItem], options: QualityOptions, store: RoundStore) -> Round:
    """The round with its gold items mixed in and its purpose, pass threshold, gate and rules set.

    Gold and work items are shuffled together (seeded), and a round with gold gets a ``task_salt``
    (its tasks show opaque ids); a qualification round keeps only the gold items.

    Raises:
        InputError: bad options (the message names the option and the fix), an unknown ``requires``
            round or one that is no qualification round, a gold item id that is also a work item.
    """
    _check_options(options, store)
    work = list(round_.items)
    taken = set() if options.purpose == "qualification" else {i.item_id for i in work}
    gold, how = choose_gold(candidates, options.gold, options.seed, taken=taken) if options.gold else ([], None)
    if options.gold_file is not None:
        extra = read_gold_file(options.gold_file)
        clash = sorted({i.item_id for i in extra} & (taken | {g.item_id for g in gold}))
        if clash:
            raise InputError(f"gold item {clash[0]!r} is also an item of the round", path=options.gold_file,
                             item=clash[0], hint="give gold items ids of their own (the same form as the others)")
        _check_folders(work, extra, options.gold_file)
        gold += extra
        how = "; ".join(filter(None, [how, f"{len(extra)} from {options.gold_file.name}"]))
    if options.gold_from is not None:
        decided = [i for i in adjudicated(store, options.gold_from, round_.kind)
                   if i.item_id not in taken | {g.item_id for g in gold}]  # an item of this round is no gold
        if not decided:
            raise InputError(f"round {options.gold_from} has no item that at least {ADJUDICATED_VOTERS} people "
                             "decided unanimously and that this round does not ask about", item="--gold-from",
                             hint="name an ingested round of the same kind with such items")
        gold += decided
        how = "; ".join(filter(None, [how, f"{len(decided)} decided unanimously by at least {ADJUDICATED_VOTERS} "
                                           f"people in round {options.gold_from}"]))
    if options.purpose == "qualification":
        items = [i for i in [*work, *gold] if i.gold]
        if not items:
            raise InputError("a qualification round needs gold items", item=f"round {round_.key}",
                             hint="pass --gold N and/or --gold-file PATH")
    else:
        items = shuffle([*work, *gold], options.seed) if gold else work
    has_gold = any(i.gold for i in items)
    return Round.model_validate({
        **round_.model_dump(), "items": [i.model_dump() for i in items], "purpose": options.purpose,
        "pass_threshold": options.pass_threshold, "requires": options.requires,
        "quality_rules": dict(sorted(check_rules(options.rules).items())), "gold_selection": how,
        "task_salt": fingerprint(f"tasks:{round_.key}:{options.seed}:{round_.dataset_version}") if has_gold else None})


ADJUDICATED_VOTERS = 3  # people who all gave an item the same answer, for it to be gold for later rounds


def adjudicated(store: RoundStore, key: str, kind: str) -> list[RoundItem]:
    """The work items of the ingested round ``key`` (of ``kind``) that at least
    :data:`ADJUDICATED_VOTERS` people answered, all alike on every question, as gold with that answer.

    Such items cover what the rules behind automatic gold cannot: an image whose evidence is ambiguous
    but whose answer people agree on is gold a plausible wrong policy can fail.

    Raises:
        InputError: no such round, or one of another kind. RoundStateError: not ingested yet.
    """
    earlier = store.load(key)
    if earlier.kind != kind:
        raise InputError(f"round {key} is a {earlier.kind} round, not {kind}", item="--gold-from",
                         hint=f"name a {kind} round")
    if earlier.ingested_at is None:
        raise RoundStateError(f"round {key} has no answers yet", item="--gold-from",
                              hint=f"segbench rounds ingest {key}")
    from segbench.annotation_ui.followups import report_round  # a follow-up stands for its chain's items

    items = {item.item_id: item for item in report_round(store, earlier).items if not item.gold}
    out = []
    for decided in store.load_ingested(key)[1]:
        known = {control: decided.people_label(control) for control in sorted(decided.majority)}
        if (decided.item_id in items and len(decided.annotators) >= ADJUDICATED_VOTERS and known and not decided.polygons
                and all(label is not None and decided.agreement.get(control) == 1.0
                        for control, label in known.items())):
            out.append(items[decided.item_id].model_copy(update={"gold": known}))
    return sorted(out, key=lambda item: item.item_id)


def _check_folders(work: Sequence[RoundItem], gold: Sequence[RoundItem], path: Path) -> None:
    """Gold images live where work images do: a folder of their own would give them away in the task files."""
    folders = {PurePosixPath(i.image).parent for i in work}
    for item in gold:
        if folders and PurePosixPath(item.image).parent not in folders:
            shown = ", ".join(sorted(map(str, folders))[:3])
            raise InputError(f"gold item's image {item.image!r} is in a folder no work item uses: its path would "
                             "tell it from the work items", path=path, item=item.item_id,
                             hint=f"put the image beside the work items' ({shown}) and name it the same way")


def shuffle(items: Sequence[RoundItem], seed: int) -> list[RoundItem]:
    """All ``items``, work and gold, in one seeded order (sorted by id first, so the input order
    does not matter): neither order nor position tells gold from work."""
    out = sorted(items, key=lambda i: i.item_id)
    random.Random(f"shuffle:{seed}").shuffle(out)
    return out


def check_rules(rules: Mapping[str, float]) -> dict[str, float]:
    """``rules`` if every name is a :class:`QualityRules` rule (``--rule NAME=VALUE``).

    Raises:
        InputError: an unknown name or a bad value (the message lists the rules).
    """
    try:
        QualityRules.with_overrides(rules)
    except (TypeError, ValueError) as exc:
        raise InputError(str(exc), item="--rule", hint="pass --rule NAME=VALUE with a rule of the worker report, "
                                                       "e.g. --rule min_kappa=0.4") from exc
    return dict(rules)


def round_rules(round_: Round) -> QualityRules:
    """The worker report rules of ``round_``: the defaults with the round's own values."""
    return QualityRules.with_overrides(round_.quality_rules)


def _check_options(options: QualityOptions, store: RoundStore) -> None:
    if options.purpose == "qualification":
        if options.pass_threshold is None or not 0 < options.pass_threshold <= 1:
            raise InputError(f"--pass-threshold {options.pass_threshold}: a qualification round needs a gold "
                             "accuracy to pass, above 0 and at most 1", item="--pass-threshold",
                             hint="pass e.g. --pass-threshold 0.8")
        if options.requires:
            raise InputError("a qualification round cannot itself require one", item="--requires",
                             hint="drop --requires, or create a work round")
    elif options.pass_threshold is not None:
        raise InputError("--pass-threshold applies to qualification rounds only", item="--pass-threshold",
                         hint="add --qualification, or drop --pass-threshold")
    if options.requires:
        required = store.load(options.requires)  # names the existing rounds when unknown
        if required.purpose != "qualification":
            raise InputError(f"round {options.requires!r} is not a qualification round", item="--requires",
                             path=store.path(options.requires),
                             hint="pass the key of a round created with --qualification")


# --- ingest -----------------------------------------------------------------------------------------------

def gold_index(round_: Round) -> dict[str, tuple[dict[str, Any], tuple[int, int]]]:
    """Gold item id → (known answer, (height, width))."""
    return {i.item_id: (i.gold, (i.height, i.width)) for i in round_.items if i.gold}


def without_gold(round_: Round) -> Round:
    """The round as dataset reports see it: its work items only."""
    return round_.model_copy(update={"items": [i for i in round_.items if not i.gold]})


def split_answers(round_: Round, answers: Sequence[Answer]) -> tuple[list[Answer], list[Answer]]:
    """(answers on work items, answers on gold items)."""
    gold = set(gold_index(round_))
    return [a for a in answers if a.item_id not in gold], [a for a in answers if a.item_id in gold]


def saved_gold_answers(store: RoundStore, key: str) -> list[Answer]:
    """The gold answers the last ingest saved (under ``gold_answers`` in the answers file)."""
    path = store.answers_path(key)
    if not path.exists():
        return []
    saved = read_json(path)
    records = saved.get("gold_answers", []) if isinstance(saved, dict) else []
    out = []
    for index, record in enumerate(records if isinstance(records, list) else [records]):
        try:
            out.append(Answer.model_validate(record))
        except ValidationError as exc:
            raise InputError(f"saved gold answer is malformed ({exc.errors()[0]['msg']})", path=path,
                             item=f"gold_answers[{index}]",
                             hint=f"delete {path} and run `segbench rounds ingest {key}` again: every answer is "
                                  "fetched again from the backend") from exc
    return out


def saved_left_out(store: RoundStore, key: str) -> list[dict[str, Any]]:
    """The workers the last screened ingest of ``key`` left out of SPIN's masks, with their reasons."""
    path = store.answers_path(key)
    if not path.is_file():
        return []
    saved = read_json(path)
    entries = saved.get("left_out", []) if isinstance(saved, dict) else []
    return [e for e in entries if isinstance(e, dict) and isinstance(e.get("worker"), str)]


def counted(answers: Sequence[Answer], qualified: set[str] | None) -> list[Answer]:
    """The answers that count in aggregation: all, or those of qualified workers in a gated round."""
    return list(answers) if qualified is None else [a for a in answers if a.annotator in qualified]


def gold_counts(round_: Round, gold_answers: Sequence[Answer], answers: Sequence[Answer],
                counted_answers: Sequence[Answer]) -> dict[str, int]:
    """Counts an ingest adds for gold and gates (none for a round without either, so its counts stay)."""
    out: dict[str, int] = {}
    if gold_index(round_):
        out |= {"gold_items": len(gold_index(round_)), "gold_answers": len(gold_answers)}
    if round_.requires:
        out["answers_not_counted"] = len(answers) - len(counted_answers)
    return out


def answers_fields(gold_answers: Sequence[Answer], qualified: set[str] | None) -> AnswersExtras:
    """What the answers file gains: the gold answers (kept apart from ``answers`` and ``items``, which
    builds read) and, in a gated round, who was not counted."""
    out: AnswersExtras = {}
    if gold_answers:
        out["gold_answers"] = [a.model_dump(mode="json") for a in gold_answers]
    if qualified is not None:
        out["qualified_workers"] = sorted(qualified)
    return out


def qualified_path(store: RoundStore, key: str) -> Path:
    return store.root / f"{key}{QUALIFIED_SUFFIX}"


def pass_list(store: RoundStore, round_: Round) -> set[str] | None:
    """The workers whose answers count in ``round_`` (None: the round is not gated).

    Raises:
        RoundStateError: the qualification round has no pass list yet (not ingested).
    """
    if not round_.requires:
        return None
    path = qualified_path(store, round_.requires)
    if not path.is_file():
        store.load(round_.requires)  # an unknown key names the existing rounds
        raise RoundStateError(f"round {round_.key!r} requires qualification round {round_.requires!r}, "
                              "which has no pass list yet", path=path, item=round_.requires,
                              hint=f"ingest the qualification first: segbench rounds ingest {round_.requires}")
    return {w["worker"] for w in read_json(path)["passed"]}


def write_pass_list(store: RoundStore, round_: Round, report: dict[str, Any], files_folder: Path) -> dict[str, Path]:
    """A qualification round's pass list (and, for the files backend, its MTurk qualification CSV)."""
    threshold = round_.pass_threshold if round_.pass_threshold is not None else 1.0
    winners = passed(report, threshold)
    paths = {"pass_list": write_json(qualified_path(store, round_.key),
                                     {"round": round_.key, "pass_threshold": threshold, "passed": winners}, indent=1)}
    if round_.backend == "files":
        paths["qualification_csv"] = atomic_write_text(files_folder / "qualification.csv",
                                                        mturk_qualification_csv(round_.key, winners))
    return paths


def mturk_qualification_csv(key: str, winners: Sequence[dict[str, Any]]) -> str:
    """Workers who passed as MTurk's worker CSV upload: ``Worker ID`` and ``UPDATE-<qualification>``
    (the score to assign, 0–100: gold accuracy in percent). Only crowd workers (``worker:<id>``)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    column = f"UPDATE-segbench-{key}"
    writer.writerow(["Worker ID", column])
    for winner in winners:
        if winner["worker"].startswith("worker:"):
            writer.writerow([spreadsheet_safe(winner["worker"][len("worker:"):]), round(100 * winner["gold_accuracy"])])
    return buffer.getvalue()
