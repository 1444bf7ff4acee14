"""SPIN's leaderboard: mIoU per level and the consistency scores, for the general prompts (the
specific ones where a report has only those)."""

from __future__ import annotations

from typing import Any

from segbench.core.leaderboard import Board, Column, Metrics


def _prompts(metrics: Metrics) -> dict[str, Any]:
    prompts = metrics.get("prompts") or {}
    return prompts.get("general") or prompts.get("specific") or {}


def _miou(level: str) -> Column:
    return Column(f"mIoU {level}", lambda m: ((_prompts(m).get("levels") or {}).get(level) or {}).get("miou"),
                  percent=True)


SPIN = Board(evaluation="eval/spin", title="SPIN", columns=(
    _miou("subparts"), _miou("parts"), _miou("wholes"),
    Column("SpCS-S2P", lambda m: ((_prompts(m).get("spcs") or {}).get("s2p") or {}).get("score"), percent=True),
    Column("SpCS-P2O", lambda m: ((_prompts(m).get("spcs") or {}).get("p2o") or {}).get("score"), percent=True),
    Column("SeCS", lambda m: (_prompts(m).get("secs") or {}).get("score"), percent=True),
))
