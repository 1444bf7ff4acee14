"""The human rounds behind a dataset, read from the round store (``data/rounds/<key>.json``)."""

from __future__ import annotations

from typing import Any

from segbench.core.release.plan import AnnotationRound
from segbench.core.versioning import DatasetSource

ROUNDS_DIR = "data/rounds"


def rounds_of(source: DatasetSource, datasets: set[str]) -> list[AnnotationRound]:
    """Every ingested round whose records belong to one of ``datasets``, by key."""
    rounds = []
    for name in source.listdir(ROUNDS_DIR):
        if name.count(".") != 1 or not name.endswith(".json"):
            continue  # <key>.answers.json, <key>.workers.json: read with their round
        record = source.read_json(f"{ROUNDS_DIR}/{name}")
        if record.get("dataset") not in datasets or record.get("status") != "ingested":
            continue
        key = record["key"]
        answers_path = f"{ROUNDS_DIR}/{key}.answers.json"
        answers: dict[str, Any] = source.read_json(answers_path) if source.exists(answers_path) else {}
        counts = record.get("counts", {})
        threshold = record.get("pass_threshold")
        rounds.append(AnnotationRound(
            key=key, kind=record.get("kind", ""), platform=_platform(record.get("backend", "")),
            overlap=record.get("config", {}).get("overlap"), items=counts.get("items", 0),
            answers=counts.get("answers", 0), annotators=counts.get("annotators", 0),
            aggregation=record.get("aggregation", ""),
            gold=sum(1 for item in record.get("items", []) if item.get("gold")),
            qualification=f"workers pass at {threshold} on gold" if threshold is not None else "none",
            agreement={control: {"kappa": values.get("kappa"), "alpha": values.get("alpha")}
                       for control, values in sorted(answers.get("agreement", {}).items())},
        ))
    return sorted(rounds, key=lambda r: r.key)


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


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
