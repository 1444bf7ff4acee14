"""Writing the SPIN statistics: Table 1, Fig. 3-, 5-, 6- and 7-style tables (JSON + Markdown) and plots.

Input is what ``stats.py`` computed; nothing here computes a measure. Plots are drawn on a
private Agg canvas (:func:`segbench.core.reports.figure_png`) and every file is written atomically.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from segbench.core.io import atomic_write_bytes, atomic_write_text, write_json
from segbench.core.reports import figure_png, legend_beside, markdown_table
from segbench.schemas.spin_results import Composition, SpinComposition
from segbench.tasks.spin.stats import MEASURES, PartCategoryCounts, SubpartStatistics

PANELS = {
    "subparts_per_part": "(a) subparts per part",
    "extent": "(b) extent",
    "boundary_complexity": "(c) boundary complexity",
    "image_coverage": "(d) image coverage",
    "part_coverage": "(e) part coverage",
    "object_coverage": "(f) object coverage",
}
SHORT = {"Aeroplane": "Aero", "Quadruped": "Quad"}
PLOT_NAME = "subpart_boxplots.png"
SHAPES_PLOT_NAME = "subpart_shapes.png"
PART_PLOT_NAME = "subparts_per_part_category.png"
SHAPE_PANELS = {"extent single": "(a) extent, single polygon", "extent multi": "(b) extent, several polygons",
                "boundary_complexity single": "(c) boundary complexity, single polygon",
                "boundary_complexity multi": "(d) boundary complexity, several polygons"}


def composition_markdown(table: SpinComposition) -> str:
    """Table 1 of the paper: images, and categories (annotations) per level, overall and per split."""

    def row(name: str, t: Composition) -> list[Any]:
        return [name, t.images, *(f"{lv.categories_used} ({lv.annotations})" for lv in (t.wholes, t.parts, t.subparts))]

    rows = [row("overall", table.overall)] + [row(split, t) for split, t in table.per_split.items()]
    return ("# SPIN composition\n\nCategories with at least one annotation (annotations in brackets).\n\n"
            + markdown_table(["split", "#images", "#object cat", "#part cat", "#subpart cat"], rows))


def measures_markdown(summary: SubpartStatistics) -> str:
    """Quartiles per measure and super-category, then COCO size buckets and multi-polygon counts."""
    lines = ["# SPIN subpart statistics", "",
             f"{summary['subparts']} subpart annotations. Definitions: `segbench.tasks.spin.stats`.", ""]
    for measure in MEASURES:
        rows = [[group, q["n"], q["mean"], q["q25"], q["median"], q["q75"]]
                for group, q in summary["measures"][measure].items()]
        lines += [f"## {PANELS[measure]}", "", markdown_table(["object", "n", "mean", "q25", "median", "q75"], rows)]
    per_object = [[group, q["n"], q["mean"], q["min"], q["q25"], q["median"], q["q75"], q["max"]]
                  for group, q in summary["subparts_per_object"].items()]
    if per_object:  # §4 gives the range: "a total of 4 to 15"
        lines += ["## Subparts per object (in all its parts)", "",
                  markdown_table(["object", "n", "mean", "min", "q25", "median", "q75", "max"], per_object)]
    rows = []
    for group, buckets in summary["sizes"].items():
        total = sum(buckets.values()) or 1
        rows.append([group, *(f"{buckets[b]} ({100 * buckets[b] / total:.2f}%)" for b in ("small", "medium", "large")),
                     summary["multi_polygon"][group]])
    lines += ["## Size (COCO: small < 32², medium < 96²) and multi-polygon subparts", "",
              markdown_table(["object", "small", "medium", "large", "multi-polygon"], rows)]
    holes = [[group, h["subparts"], h["with_holes"], "n/a" if h["share"] is None else f"{100 * h['share']:.2f}%",
              "n/a" if h["mean_holes"] is None else f"{h['mean_holes']:.2f}"] for group, h in summary["holes"].items()]
    lines += ["", "## Holes (supplementary 10.2)", "",
              markdown_table(["object", "subparts", "with holes", "share", "mean holes (of those)"], holes)]
    shapes = [[group, kind, q["extent"]["n"], q["extent"]["median"], q["boundary_complexity"]["median"]]
              for group, by_kind in summary["shapes"].items() for kind, q in by_kind.items()]
    lines += ["", "## Shape of single- and multi-polygon subparts (Fig. 7; medians)", "",
              markdown_table(["object", "polygons", "subparts", "extent", "boundary complexity"], shapes)]
    per_part = [[name, c["subparts"], c["multi_polygon"]] for name, c in summary["part_categories"].items()]
    lines += ["", "## Subpart annotations per part category (Fig. 5) and multi-polygon ones (Fig. 6)", "",
              markdown_table(["part category", "subpart annotations", "multi-polygon"], per_part)]
    return "\n".join(lines)


# What each panel's y axis measures (definitions in segbench.tasks.spin.stats).
UNITS = {
    "subparts_per_part": "subparts per part (count)",
    "extent": "pixels / bounding-box pixels",
    "boundary_complexity": "4πA / P² (1 = disk)",
    "image_coverage": "share of the image's pixels",
    "part_coverage": "share of the part's pixels",
    "object_coverage": "share of the object's pixels",
}


def boxplots_figure(groups: Mapping[str, Mapping[str, Sequence[float]]]) -> Figure:
    """Fig. 3 as one 2x3 figure: one boxplot per super-category and one overall, per measure."""
    figure = Figure(figsize=(15, 8), dpi=100)
    axes = figure.subplots(2, 3)
    for ax, measure in zip(axes.flat, MEASURES, strict=True):
        by_group = {g: list(v) for g, v in groups[measure].items() if v}
        if by_group:
            ax.boxplot(list(by_group.values()), tick_labels=[SHORT.get(g, g) for g in by_group])
        ax.set_title(PANELS[measure])
        ax.set_xlabel("super-category; rigid, non-rigid and all together")
        ax.set_ylabel(UNITS[measure])
        ax.tick_params(axis="x", labelrotation=45)
        ax.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    return figure


def boxplots_png(groups: Mapping[str, Mapping[str, Sequence[float]]]) -> bytes:
    """PNG bytes of :func:`boxplots_figure`."""
    return figure_png(boxplots_figure(groups))


def shapes_figure(panels: Mapping[str, Mapping[str, Sequence[float]]]) -> Figure:
    """Fig. 7 as one 2x2 figure: extent and boundary complexity of single- and multi-polygon subparts,
    one boxplot per group (``stats.shape_values``)."""
    figure = Figure(figsize=(12, 8), dpi=100)
    for ax, (panel, title) in zip(figure.subplots(2, 2).flat, SHAPE_PANELS.items(), strict=True):
        by_group = {g: list(v) for g, v in panels[panel].items() if v}
        if by_group:
            ax.boxplot(list(by_group.values()), tick_labels=[SHORT.get(g, g) for g in by_group])
        ax.set_title(title)
        ax.set_xlabel("super-category; rigid, non-rigid and all together")
        ax.set_ylabel(UNITS[panel.split()[0]])
        ax.set_ylim(0, 1.05)
        ax.tick_params(axis="x", labelrotation=45)
        ax.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    return figure


def part_categories_figure(per_part: Mapping[str, PartCategoryCounts]) -> Figure:
    """Fig. 5 and Fig. 6 in one bar chart: subpart annotations per part category, the multi-polygon
    ones darker (``summary["part_categories"]``), most annotated first."""
    names = sorted(per_part, key=lambda n: (-per_part[n]["subparts"], n))
    figure = Figure(figsize=(max(6.0, 0.35 * len(names) + 2), 5), dpi=100)
    ax = figure.subplots()
    positions = range(len(names))
    ax.bar(positions, [per_part[n]["subparts"] for n in names], color="#9ecae1", label="one polygon")
    ax.bar(positions, [per_part[n]["multi_polygon"] for n in names], color="#3182bd", label="several polygons")
    labels = [" ".join(SHORT.get(w, w) for w in n.split("-", 1)) for n in names]
    ax.set_xticks(list(positions), labels, rotation=60, ha="right")
    ax.set_xlabel("part category")
    ax.set_ylabel("subpart annotations")
    ax.set_title("Subpart annotations per part category (Fig. 5), several-polygon ones darker (Fig. 6)")
    legend_beside(ax)
    ax.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    return figure


def write_stats(out_dir: str | Path, *, table: SpinComposition, summary: SubpartStatistics,
                groups: Mapping[str, Mapping[str, Sequence[float]]],
                shapes: Mapping[str, Mapping[str, Sequence[float]]]) -> list[Path]:
    """Write ``composition.{json,md}``, ``subparts.{json,md}``, the two boxplot PNGs and the bar chart
    per part category into ``out_dir``."""
    out_dir = Path(out_dir)
    return [
        write_json(out_dir / "composition.json", table.model_dump(mode="json"), indent=1),
        atomic_write_text(out_dir / "composition.md", composition_markdown(table)),
        write_json(out_dir / "subparts.json", summary, indent=1),
        atomic_write_text(out_dir / "subparts.md", measures_markdown(summary)),
        atomic_write_bytes(out_dir / PLOT_NAME, boxplots_png(groups)),
        atomic_write_bytes(out_dir / SHAPES_PLOT_NAME, figure_png(shapes_figure(shapes))),
        atomic_write_bytes(out_dir / PART_PLOT_NAME, figure_png(part_categories_figure(summary["part_categories"]))),
    ]
