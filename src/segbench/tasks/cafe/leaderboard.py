"""CAFE's leaderboards: ``evaluate cafe`` reports beside the CAFE leaderboard's and paper's published
numbers (``resources/published/cafe.json``), and ``evaluate cgf1`` reports among themselves."""

from __future__ import annotations

from segbench.core.leaderboard import Board, Column, Entry, Metrics
from segbench.tasks.cafe.published import CAFE_SUBSETS, published, source_line


def _at(subset: str, name: str) -> Column:
    def value(metrics: Metrics) -> float | None:
        if subset == "Overall" and not all((metrics.get(s) or {}).get("N") for s in CAFE_SUBSETS[:-1]):
            return None  # an Overall over part of the subsets is not the leaderboard's Overall
        return (metrics.get(subset) or {}).get(name)

    title = name if subset == "Overall" else f"{name} {subset}"
    return Column(title, value, percent=name != "IL_MCC")


def _published_cafe() -> list[Entry]:
    data = published("cafe")
    rows = []
    for model in data["models"]:
        values = {(name if subset == "Overall" else f"{name} {subset}"): value
                  for name, metric in model["metrics"].items() for subset, value in metric["values"].items()}
        used = {metric["source"] for metric in model["metrics"].values()}
        rows.append(Entry(name=model["model"], source="published: " + ", ".join(sorted(used)),
                          values={column.name: values.get(column.name) for column in CAFE.columns}))
    return rows


CAFE = Board(evaluation="eval/cafe", title="CAFE",
             columns=(_at("Overall", "cgF1"), *(_at(s, "cgF1") for s in CAFE_SUBSETS[:-1]),
                      _at("Overall", "IL_MCC"), _at("Overall", "pmF1")),
             published=_published_cafe,
             sources=lambda: [f"{key}: {source_line(published('cafe'), key)}" for key in published("cafe")["sources"]])

CGF1 = Board(evaluation="eval/cgf1", title="cgF1 (SAM 3's metric)",
             columns=(Column("cgF1", lambda m: m.get("cgF1"), percent=True),
                      Column("IL_MCC", lambda m: m.get("IL_MCC")),
                      Column("pmF1", lambda m: m.get("pmF1"), percent=True)))
