"""CAFE's quotas as verified counts: what each source × edit type should end with, how many
candidates to make for it, and the table of target against achieved.

The paper's counts (seed 000, Sec. 3: 1,239 / 513 / 394 per source, 1,111 / 593 / 442 per edit
type) are of *verified* pairs. People reject some edits, so candidates capped at the quota fall
short. Here a source's quota is dealt over the edit mix (largest remainders) into cells; a batch
of candidates asks for each cell's shortfall divided by the share people verified in that cell
so far, and the export keeps at most the target per cell.

The share is Laplace's rule of succession over the earlier rounds' answered items, ``(v + 1) /
(n + 2)``: it never reaches 0, so a cell whose first few edits were all rejected still gets a
finite top-up, and it moves towards the measured share as answers accumulate. Before any round
(or in a cell no round asked about) the expected share given by the user stands in.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from segbench.core.splits import apportion
from segbench.schemas.cafe import TargetRow
from segbench.schemas.edits import EditType

Cell = tuple[str, EditType]


def edit_type_weights(mix: Mapping[str, float]) -> dict[EditType, float]:
    """The mix by edit type, in SM, CC, OC order (types without a share left out)."""
    return {t: float(mix[t.name]) for t in EditType if mix.get(t.name, 0) > 0}


def cell_targets(quotas: Mapping[str, int], mix: Mapping[str, float]) -> dict[Cell, int]:
    """Each source's quota dealt over the edit mix: the verified samples each cell should end with."""
    weights = edit_type_weights(mix)
    return {(source, edit): n for source in sorted(quotas)
            for edit, n in apportion(quotas[source], weights).items()}


def acceptance(asked: Mapping[Cell, int], verified: Mapping[Cell, int], cells: Iterable[Cell],
               expected: float) -> dict[Cell, float]:
    """The share of candidates people are expected to verify in each cell (see the module's docstring)."""
    return {cell: (verified.get(cell, 0) + 1) / (asked[cell] + 2) if asked.get(cell) else expected
            for cell in cells}


def candidates_wanted(targets: Mapping[Cell, int], verified: Mapping[Cell, int],
                      shares: Mapping[Cell, float]) -> dict[Cell, int]:
    """Candidates to make per cell: the shortfall against the target over the expected share."""
    return {cell: math.ceil(max(0, target - verified.get(cell, 0)) / shares[cell] - 1e-9)
            for cell, target in targets.items()}


def target_rows(targets: Mapping[Cell, int], asked: Mapping[Cell, int], verified: Mapping[Cell, int],
                exported: Mapping[Cell, int]) -> list[TargetRow]:
    """One row per cell with a target or an asked item, by source then edit type."""
    cells = set(targets) | set(asked)
    order = {t: n for n, t in enumerate(EditType)}
    rows = []
    for cell in sorted(cells, key=lambda c: (c[0], order[c[1]])):
        target, done = targets.get(cell), exported.get(cell, 0)
        rows.append(TargetRow(source=cell[0], edit_type=cell[1].abbr, target=target, asked=asked.get(cell, 0),
                              verified=verified.get(cell, 0), exported=done,
                              short=0 if target is None else max(0, target - done)))
    return rows


def targets_markdown(rows: list[TargetRow], *, rounds: list[str]) -> str:
    """The target-against-achieved table as Markdown, with its totals."""
    lines = ["# CAFE: verified samples against the targets", "",
             f"Rounds: {', '.join(rounds)}. A target is the verified samples wanted per source and edit type "
             "(the source's quota dealt over the edit mix); '—' means the source had no quota.", "",
             "| source | edit type | target | asked | verified | exported | short |", "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r.source} | {r.edit_type} | {'—' if r.target is None else r.target} | {r.asked} | "
                     f"{r.verified} | {r.exported} | {r.short} |")
    with_target = [r for r in rows if r.target is not None]
    lines.append(f"| **all** | | {sum(r.target or 0 for r in with_target) if with_target else '—'} | "
                 f"{sum(r.asked for r in rows)} | {sum(r.verified for r in rows)} | {sum(r.exported for r in rows)} | "
                 f"{sum(r.short for r in rows)} |")
    return "\n".join(lines) + "\n"
