"""The taxonomy as a figure (the SPIN paper's Fig. 2): how many subparts each part category has, split
into those asked of every object class and those restricted to some (§3.1: 168 general, 38 specific)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from segbench.core.reports import figure_png, legend_beside
from segbench.schemas.spin import Taxonomy

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def subparts_per_part_png(taxonomy: Taxonomy) -> bytes:
    """PNG bytes of :func:`subparts_per_part_figure`."""
    return figure_png(subparts_per_part_figure(taxonomy))


def subparts_per_part_figure(taxonomy: Taxonomy) -> Figure:
    """One horizontal bar per part category with subparts, general and object-specific stacked."""
    from matplotlib.figure import Figure

    parts = [p for p in taxonomy.parts if p.subparts][::-1]  # the first part on top
    general = [sum(s.objects is None for s in p.subparts) for p in parts]
    specific = [sum(s.objects is not None for s in p.subparts) for p in parts]
    fig = Figure(figsize=(9, 0.24 * len(parts) + 1.4))
    ax = fig.add_subplot()
    names = [p.key for p in parts]
    ax.barh(names, general, color="#4c72b0", label="asked of every class")
    bars = ax.barh(names, specific, left=general, color="#dd8452", label="restricted to some classes")
    ax.bar_label(bars, labels=[str(g + s) for g, s in zip(general, specific, strict=True)], fontsize=7, padding=2)
    ax.set_xlabel("subpart categories")
    ax.set_ylabel("part category")
    ax.tick_params(axis="y", labelsize=7)
    ax.set_xlim(0, max((g + s for g, s in zip(general, specific, strict=True)), default=1) * 1.12)
    total, restricted = sum(general) + sum(specific), sum(specific)
    ax.set_title(f"Subparts per part category: {total} ({restricted} restricted to some object classes)", fontsize=9)
    legend_beside(ax)
    fig.tight_layout()
    return fig
