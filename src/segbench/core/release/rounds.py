"""The human rounds behind a dataset, read from the round store (``data/rounds/<key>.json``): how the
card describes them, and every person's answers as a config of their own (workers pseudonymised)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from segbench.core.errors import InputError
from segbench.core.release.plan import AnnotationRound, Table
from segbench.core.versioning import DatasetSource
from segbench.schemas.rounds import Answer, AnswersFile, Round, RoundStatus

ROUNDS_DIR = "data/rounds"
M = TypeVar("M", bound=BaseModel)


def rounds_of(source: DatasetSource, datasets: set[str]) -> list[AnnotationRound]:
    """Every ingested round whose records belong to one of ``datasets``, by key.

    Raises:
        InputError: a round record or answers file that is not what segbench writes (names the file).
    """
    rounds = []
    for name in source.listdir(ROUNDS_DIR):
        if name.count(".") != 1 or not name.endswith(".json"):
            continue  # <key>.answers.json, <key>.workers.json: read with their round
        record = _read(source, f"{ROUNDS_DIR}/{name}", Round)
        if record.dataset not in datasets or record.status is not RoundStatus.INGESTED:
            continue
        answers_path = f"{ROUNDS_DIR}/{record.key}.answers.json"
        answers = _read(source, answers_path, AnswersFile) if source.exists(answers_path) else AnswersFile()
        decided: dict[str, Counter[str]] = {}
        for item in answers.items:
            for control, choice in item.majority.items():
                shown = ("no majority" if choice is None else
                         f"{choice} (people tied; settled by the aggregation model)" if control in item.model_settled
                         else str(choice))
                decided.setdefault(control, Counter())[shown] += 1
        threshold, counts = record.pass_threshold, record.counts
        rounds.append(AnnotationRound(
            key=record.key, kind=record.kind, platform=_platform(record.backend), created=record.created_at,
            ingested=record.ingested_at or "", overlap=record.config.overlap, items=counts.get("items", 0),
            answers=counts.get("answers", 0), annotators=counts.get("annotators", 0),
            aggregation=record.aggregation, gold=sum(1 for item in record.items if item.gold),
            qualification=f"workers pass at {threshold} on gold" if threshold is not None else "none",
            agreement={control: {"kappa": values.kappa, "alpha": values.alpha}
                       for control, values in sorted(answers.agreement.items())},
            decided={control: dict(sorted(counts.items())) for control, counts in sorted(decided.items())},
        ))
    return sorted(rounds, key=lambda r: r.key)


def _read(source: DatasetSource, relpath: str, model: type[M]) -> M:
    try:
        return model.model_validate(source.read_json(relpath))
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in error["loc"]) or "the file"
        raise InputError(f"not a {model.__name__} segbench wrote: {where}: {error['msg']}", path=relpath,
                         hint="restore it (`git checkout -- FILE`, or `dvc checkout` for a published version), "
                              "or ingest the round again") from None


def _platform(backend: str) -> str:
    return {"labelstudio": "Label Studio", "files": "task files for an external crowd"}.get(backend, backend)


def describe_rounds(rounds: list[AnnotationRound]) -> str:
    """One sentence per round, for the card, the datasheet and Croissant's annotation fields."""
    if not rounds:
        return "No human annotation round."
    lines = []
    for r in rounds:
        agreement = "; ".join(f"{control}: κ {_num(v['kappa'])}, α {_num(v['alpha'])}"
                              for control, v in r.agreement.items()) or "not computed"
        lines.append(f"{r.key} ({r.kind}) on {r.platform}: {r.items} items, {r.overlap or 1} answers per item, "
                     f"{r.annotators} workers, {r.answers} answers, {r.gold} gold items, qualification {r.qualification}, "
                     f"{r.aggregation} aggregation; agreement {agreement}.")
    return " ".join(lines)


# Below this κ the workers agreed little more than chance would (Landis and Koch's "slight").
LOW_KAPPA = 0.2


def _answers(data: dict[str, Any], path: str, key: str) -> list[Answer]:
    """The answers a round stored, typed; a malformed one stops the release, naming it."""
    out = []
    for index, raw in enumerate(data.get("answers", [])):
        try:
            out.append(Answer.model_validate(raw))
        except ValidationError as exc:
            raise InputError(f"a stored answer is malformed ({exc.errors()[0]['msg']})", path=path,
                             item=f"answers[{index}]",
                             hint=f"delete {path} and run `segbench rounds ingest {key}` again") from exc
    return out


def round_rows(rounds: list[AnnotationRound]) -> list[list[object]]:
    """One table row per round, for the card."""
    return [[f"`{r.key}`", r.kind, r.platform, r.items, r.overlap or 1, r.annotators, r.answers, r.gold,
             r.qualification, r.aggregation, timeframe([r])] for r in rounds]


def agreement_rows(rounds: list[AnnotationRound]) -> list[list[object]]:
    """One table row per round and question: κ, α, how the majority answered, and a warning where κ is low."""
    rows: list[list[object]] = []
    for r in rounds:
        for control, values in r.agreement.items():
            kappa = values.get("kappa")
            note = (f"κ < {LOW_KAPPA}: the workers agreed little beyond chance; do not read this question's "
                    "answers as verified" if kappa is not None and kappa < LOW_KAPPA else "")
            majority = ", ".join(f"{answer} {n}" for answer, n in r.decided.get(control, {}).items()) or "–"
            rows.append([f"`{r.key}`", control, _num(kappa), _num(values.get("alpha")), majority, note])
    return rows


def low_agreement(rounds: list[AnnotationRound]) -> list[str]:
    """The questions whose κ is below :data:`LOW_KAPPA`, as ``round/question (κ …)``."""
    return [f"{r.key}/{control} (κ {_num(kappa)})" for r in rounds for control, values in r.agreement.items()
            if (kappa := values.get("kappa")) is not None and kappa < LOW_KAPPA]


def timeframe(rounds: list[AnnotationRound]) -> str:
    """From the first round's creation to the last ingest, as dates; empty when no round says."""
    starts = sorted(r.created[:10] for r in rounds if r.created)
    ends = sorted(r.ingested[:10] for r in rounds if r.ingested)
    if not starts:
        return ""
    return starts[0] if not ends or ends[-1] == starts[0] else f"{starts[0]} to {ends[-1]}"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


ANSWERS_CONFIG = "answers"
ANSWERS_DESCRIPTIONS = {
    "round": "the round's key (the card's round table describes each)",
    "item_id": ("the item's id in its round: CAFE's pair_id, COCO-CD's image_id, SPIN's image name and "
                "part annotation id (n01855672_1001-1)"),
    "worker": "the person who answered, as a pseudonym: worker-NNNN, numbered by first answer in this release and "
              "the same across its rounds; no platform id or e-mail is released",
    "choices": "the person's answer to each question of the item (a list, as a question may take several labels)",
    "polygons": "the polygons the person drew, as JSON (null when the round asks for none)",
    "gold": "whether the item is a gold item, whose answer is known and checks the workers",
    "left_out": "whether the round's screening left the worker out of SPIN's masks (rounds with polygons only; "
                "every answer counts in the aggregated labels, weighed by the worker model)",
}


def answers_table(source: DatasetSource, rounds: list[AnnotationRound]) -> Table | None:
    """Every person's answers in ``rounds`` as the ``answers`` config, so others can aggregate them anew.

    Workers get pseudonyms numbered in order of first answer (rounds by key, answers as the round
    stores them): stable within the release, and derived from nothing a platform knows.
    """
    from segbench.core.release.features import Features, List, Value

    answered = [r for r in rounds if source.exists(f"{ROUNDS_DIR}/{r.key}.answers.json")]
    if not answered:
        return None
    stored = {r.key: source.read_json(f"{ROUNDS_DIR}/{r.key}.answers.json") for r in answered}
    records = {r.key: source.read_json(f"{ROUNDS_DIR}/{r.key}.json") for r in answered}
    answers = {key: _answers(data, f"{ROUNDS_DIR}/{key}.answers.json", key) for key, data in stored.items()}
    pseudonyms: dict[str, str] = {}
    for key in sorted(answers):
        for answer in answers[key]:
            pseudonyms.setdefault(answer.annotator, f"worker-{len(pseudonyms) + 1:04d}")
    count = sum(map(len, answers.values()))
    features = Features({"round": Value("string"), "item_id": Value("string"), "worker": Value("string"),
                         "choices": List({"question": Value("string"), "answer": List(Value("string"))}),
                         "polygons": Value("string"), "gold": Value("bool"), "left_out": Value("bool")})

    def rows() -> Iterator[dict[str, Any]]:
        for key in sorted(answers):
            gold = {str(item["item_id"]) for item in records[key].get("items", []) if item.get("gold") is not None}
            left_out = {str(entry.get("worker")) for entry in stored[key].get("left_out", [])}
            for answer in answers[key]:
                polygons = {control: [p.model_dump(mode="json") for p in shapes]
                            for control, shapes in sorted(answer.polygons.items())}
                yield {"round": key, "item_id": answer.item_id, "worker": pseudonyms[answer.annotator],
                       "choices": [{"question": question, "answer": labels}
                                   for question, labels in sorted(answer.choices.items())],
                       "polygons": json.dumps(polygons, sort_keys=True) if polygons else None,
                       "gold": answer.item_id in gold, "left_out": answer.annotator in left_out}

    return Table(ANSWERS_CONFIG, ANSWERS_CONFIG, count, rows, features=features, descriptions=ANSWERS_DESCRIPTIONS)
