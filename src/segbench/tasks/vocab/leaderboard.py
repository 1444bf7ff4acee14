"""The open-ended benchmark's leaderboard: the Lexical Alignment Curve's areas (mIoU, PQ, AP) and mIoU at each level."""

from __future__ import annotations

from segbench.core.leaderboard import Board, Column, Metrics

LEVELS = ("exact", "synonyms", "hyponyms", "meronyms")


def _area(name: str) -> Column:
    return Column(f"LAC {name} area", lambda m: ((m.get("lac") or {}).get(name) or {}).get("area"))


def _level(level: str) -> Column:
    def value(metrics: Metrics) -> float | None:
        found = next((row for row in metrics.get("levels") or [] if row.get("level") == level), None)
        return None if found is None else found.get("miou")

    return Column(f"mIoU {level}", value, percent=True)


VOCAB = Board(evaluation="eval/vocab", title="Open-ended (valid vocabularies)",
              columns=(_area("miou"), *(_level(level) for level in LEVELS), _area("pq"), _area("ap")))
