"""Every figure segbench writes reads on its own: both axes labelled, legends beside the data (never
over it), and a colour bar wherever a colour stands for a value.

Each figure builder is run on small data and its matplotlib Figure inspected after drawing, before
any PNG is written. A builder added to one of the report modules without a case here fails the
last test.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from support.flip_summaries import flip_summary
from support.spin_eval_data import perfect_predictions, write_dataset

from segbench.core.versioning import DatasetSource
from segbench.tasks.flip import report as flip_report
from segbench.tasks.flip.metrics import WATERBIRDS_NAMES
from segbench.tasks.spin import report as spin_report
from segbench.tasks.spin import stats_report, taxonomy_plot
from segbench.tasks.spin.inputs import read_ground_truth
from segbench.tasks.spin.metrics import Prediction, SpinAccumulator
from segbench.tasks.spin.stats import MEASURES, shape_values
from segbench.tasks.vocab import lac, lac_report

MODULES = (flip_report, spin_report, stats_report, taxonomy_plot, lac_report)

def _spin_summary(tmp_path) -> dict:
    write_dataset(tmp_path / "data" / "spin")
    with DatasetSource(tmp_path, None) as source:
        truth = read_ground_truth(source, "data/spin", "test")
    by_image: dict[int, list[Prediction]] = {}
    for prompt in ("general", "specific"):
        for level, entries in perfect_predictions(prompt).items():
            for e in entries:
                by_image.setdefault(e["image_id"], []).append(
                    Prediction(level, e["category_id"], prompt, e["segmentation"], 1.0))
    acc = SpinAccumulator()
    for image_id, image in truth.images.items():
        acc.update(image, by_image.get(image_id, []), truth.hierarchy, ("general", "specific"))
    return acc.summarize(truth.hierarchy).model_dump(mode="json")


def _lac_summary(baseline: bool) -> dict:
    acc = lac.LacAccumulator(3)
    gt = lac.to_class_index(np.array([[0, 0, 1, 1], [2, 2, 255, 1]]), (0, 1, 2))
    regions = {0: [0, 0, 1, 1], 1: [1, 1, 1, 1], 2: [2, 2, 2, 2]}
    acc.update(gt, regions, baseline={0: 0, 1: 2, 2: 2} if baseline else None, image_id="img")
    return acc.summarize(("a", "b", "c")).model_dump(mode="json")


def _shape_panels() -> dict:
    rows = [{"object": obj, "polygons": polygons, "extent": 0.3 + 0.1 * k, "boundary_complexity": 0.5}
            for k, (obj, polygons) in enumerate((("Car", 1), ("Car", 3), ("Fish", 1), ("Fish", 2)))]
    return shape_values(rows)


def _restricted_taxonomy():
    from segbench.tasks.spin import taxonomy_edits as se
    from segbench.tasks.spin.taxonomy import build_taxonomy, load_catalog

    catalog = load_catalog()
    edits, sha = se.load_edits(se.default_edits_path(), catalog)
    return build_taxonomy(se.apply_edits(catalog, {}, "x:y", edits).parts, provider="x", model="y",
                          edits_file="edits.yaml", edits_sha256=sha)


def _boxplot_groups() -> dict:
    rng = np.random.default_rng(0)
    return {m: {"Bird": list(rng.random(5)), "Quadruped": list(rng.random(4)), "Overall": list(rng.random(9))}
            for m in MEASURES}


CASES = {
    "per_group_iou_figure coco-cd": lambda tmp: flip_report.per_group_iou_figure(flip_summary(True)),
    "per_group_iou_figure waterbirds": lambda tmp: flip_report.per_group_iou_figure(
        flip_summary(True, WATERBIRDS_NAMES), WATERBIRDS_NAMES),
    "flip_by_risk_decile_figure": lambda tmp: flip_report.flip_by_risk_decile_figure(flip_summary(True)),
    "flip_by_risk_decile_figure without risk": lambda tmp: flip_report.flip_by_risk_decile_figure(
        flip_summary(False)),
    "miou_by_level_figure": lambda tmp: spin_report.miou_by_level_figure(_spin_summary(tmp)),
    "consistency_figure": lambda tmp: spin_report.consistency_figure(_spin_summary(tmp)),
    "per_supercategory_figure": lambda tmp: spin_report.per_supercategory_figure(_spin_summary(tmp)),
    "lac_figure": lambda tmp: lac_report.lac_figure(_lac_summary(baseline=False)),
    "lac_figure with baseline": lambda tmp: lac_report.lac_figure(_lac_summary(baseline=True)),
    "boxplots_figure": lambda tmp: stats_report.boxplots_figure(_boxplot_groups()),
    "shapes_figure": lambda tmp: stats_report.shapes_figure(_shape_panels()),
    "part_categories_figure": lambda tmp: stats_report.part_categories_figure(
        {"Car-Body": {"subparts": 9, "multi_polygon": 3}, "Quadruped-Head": {"subparts": 12, "multi_polygon": 1}}),
    "subparts_per_part_figure": lambda tmp: taxonomy_plot.subparts_per_part_figure(_restricted_taxonomy()),
}


def _drawn(figure):
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    return canvas.get_renderer()


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_figure_labels_its_axes_keeps_legends_off_the_data_and_explains_its_colours(case, tmp_path):
    figure = CASES[case](tmp_path)
    renderer = _drawn(figure)
    colour_bars = {image.colorbar.ax for ax in figure.axes for image in ax.images if image.colorbar is not None}
    plots = [ax for ax in figure.axes if ax.axison and ax not in colour_bars]
    for ax in plots:
        assert ax.get_xlabel().strip(), (case, ax.get_title(), "x axis without a label")
        assert ax.get_ylabel().strip(), (case, ax.get_title(), "y axis without a label")
        for image in ax.images:  # a heat map: its colours are values, so they need a scale
            assert image.colorbar is not None, (case, ax.get_title(), "colours without a colour bar")
    for bar in colour_bars:
        assert bar.get_ylabel().strip() or bar.get_xlabel().strip(), (case, "colour bar without a label")
    legends = [ax.get_legend() for ax in plots if ax.get_legend() is not None]
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in plots:
            assert not box.overlaps(ax.get_window_extent(renderer)), (case, "legend drawn over a plot")
        whole = figure.bbox
        assert whole.x0 <= box.x0 and box.x1 <= whole.x1 and whole.y0 <= box.y0 and box.y1 <= whole.y1, (
            case, "legend cut off by the figure's edge")


def test_a_figure_without_data_says_why_instead_of_drawing_empty_axes():
    figure = flip_report.flip_by_risk_decile_figure(flip_summary(False))
    _drawn(figure)
    texts = [t.get_text() for ax in figure.axes for t in ax.texts]
    assert not any(ax.axison for ax in figure.axes) and any("Flip-risk unavailable" in t for t in texts)


def test_every_figure_builder_of_the_report_modules_is_checked_here():
    builders = {name for module in MODULES for name, member in inspect.getmembers(module, inspect.isfunction)
                if name.endswith("_figure") and member.__module__ == module.__name__}
    checked = {case.split()[0] for case in CASES}
    assert builders == checked


def test_the_part_category_chart_draws_the_tables_counts_most_annotated_first():
    figure = stats_report.part_categories_figure({"Car-Body": {"subparts": 9, "multi_polygon": 3},
                                                  "Quadruped-Head": {"subparts": 12, "multi_polygon": 1}})
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Quad Head", "Car Body"]
    assert [p.get_height() for p in ax.patches] == [12, 9, 1, 3]  # all annotations, then the multi-polygon ones
