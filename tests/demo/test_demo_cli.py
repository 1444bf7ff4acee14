"""`segbench demo` as a user runs it: every registered dataset built, published and evaluated offline."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from segbench import registry
from segbench.schemas.cafe import CafeDemo
from segbench.schemas.coco_cd import CocoCdDemo
from segbench.schemas.results import DemoResult
from segbench.schemas.spin_results import SpinDemo
from segbench.schemas.vocab import VocabDemo
from segbench.schemas.waterbirds import WaterbirdsDemo

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

COMMITTED_DATA_VERSION = Path(__file__).resolve().parents[2] / "data.dvc"


@pytest.fixture
def demo(demo_project):
    return demo_project


def _data_version(dvc_file: Path) -> dict:
    out = yaml.safe_load(dvc_file.read_text())["outs"][0]
    return {key: out[key] for key in ("md5", "nfiles", "size")}


def test_the_demo_builds_publishes_and_evaluates_every_dataset(demo):
    project, result = demo
    for title in ("COCO-CD", "Waterbirds-seg", "Vocabulary coco_cd", "CAFE", "SPIN taxonomy", "Published"):
        assert title in result.output
    assert "Demo finished." in result.output
    assert (project / "data.dvc").is_file() and (project / ".git").is_dir()
    for spec in registry.DATASETS:
        if spec.name != "vocab":  # the vocabulary lands under vocab/<category set>
            assert (project / "data" / spec.default_out / "manifest.json").is_file(), spec.name
    for evaluated in ("coco_cd/demo-baseline", "cafe/demo-prompt-blind", "spin/demo-parent-mask"):
        assert (project / "reports" / evaluated / "report.md").is_file()
    # The README: a baseline evaluated on COCO-CD, CAFE and SPIN, every dataset released under releases/.
    assert {p.name for p in (project / "reports").iterdir()} == {"coco_cd", "cafe", "spin"}
    assert {p.name for p in (project / "releases").iterdir() if (p / "README.md").is_file()} == set(registry.names())
    assert not (project / "data" / "eval").exists()  # reports are results, not part of the data version


def test_each_summary_is_headed_by_its_dataset_in_the_order_they_ran(demo):
    _, result = demo
    lines = [line for line in result.output.splitlines() if re.fullmatch(r"(\w.*?) ─{3,}", line)]
    titles = [spec.title for spec in registry.DATASETS if spec.demo_printer]
    built = [f"{title} ({number} of {len(titles)})" for number, title in enumerate(titles, start=1)]
    evaluated = [f"{title}: evaluation of the published version" for title in ("COCO-CD", "CAFE")]
    assert [line.split(" ─")[0] for line in lines] == [*built, *evaluated, "Published version"]
    assert all(len(line) == 80 for line in lines), "a heading's rule is 80 characters in a pipe, not the pipe's width"


def test_each_summary_is_printed_as_soon_as_its_dataset_is_built(demo):
    _, output = demo[0], demo[1].output
    # COCO-CD's summary comes before SPIN's crowd rounds start, and SPIN's before CAFE's edits are planned.
    assert output.index("COCO-CD (1 of 5)") < output.index("Round demo-context-audit ingested") \
        < output.index("SPIN crowd rounds (simulated workers): started")
    assert output.index("SPIN (4 of 5)") < output.index("edit plans: started") < output.index("CAFE (5 of 5)")


def test_the_demo_in_a_pipe_has_short_lines_without_trailing_blanks(demo):
    _, result = demo
    lines = result.output.splitlines()
    assert max(map(len, lines)) <= 200
    assert [line for line in lines if line != line.rstrip()] == []


def test_the_demo_ends_with_the_prefect_ui_of_its_runs_and_a_rebuild_plan(demo):
    project, result = demo
    tail = result.output[result.output.index("Demo finished."):]
    assert re.search(r"Prefect UI \(the demo's runs\)\s+http://127\.0\.0\.1:\d+", tail), tail
    assert re.search(r"rebuild plan \(segbench serve --plan \.\.\.\)\s+work/rebuild.toml", tail), tail


def test_the_publish_summary_lists_every_dataset_built(demo):
    _, result = demo
    published = result.output[result.output.index("Published"):]
    for folder in ("coco_cd", "waterbirds_seg", "cafe", "spin/dataset", "vocab/coco_cd"):
        assert folder in published, folder


def test_the_json_summary_is_the_demo_result_with_each_dataset_in_its_model(demo):
    project, result = demo
    summary = json.loads(result.stdout)
    assert set(summary) == set(DemoResult.model_fields) == {"datasets", "publish", "paths"}
    models = {"coco_cd": CocoCdDemo, "waterbirds": WaterbirdsDemo, "vocab": VocabDemo, "cafe": CafeDemo,
              "spin": SpinDemo}
    assert set(summary["datasets"]) == set(models)
    for name, part in summary["datasets"].items():
        assert models[name].model_validate(part).model_dump(mode="json") == part, name
    assert summary["publish"]["md5"] == _data_version(project / "data.dvc")["md5"]


def test_the_demo_rebuilds_the_committed_data_version_to_the_byte(demo):
    """The repository's ``data.dvc`` is what ``make demo`` builds: the same data, file for file.

    When this fails after a change to what the demo builds, run ``make demo`` and commit ``data.dvc``.
    """
    project, _ = demo
    assert _data_version(project / "data.dvc") == _data_version(COMMITTED_DATA_VERSION)


def test_the_demos_reports_rank_in_a_leaderboard_the_cafe_one_among_the_published_models(demo, tmp_path):
    from support.hostile_builds import console_run

    project, _ = demo
    reports = sorted(str(path.parent) for path in (project / "reports").glob("*/*/metrics.json"))
    out = tmp_path / "leaderboard.md"
    done = console_run(project, "--json", "leaderboard", *reports, "--out", str(out))
    assert done.returncode == 0, done.stderr
    tables = {table["title"]: table for table in json.loads(done.stdout)}
    assert {"CAFE", "COCO-CD", "SPIN"} <= set(tables)
    cafe = tables["CAFE"]
    assert len(cafe["rows"]) == 7 and sum(row["source"] == "evaluated" for row in cafe["rows"]) == 1
    assert cafe["ranks"][:6] == [1, 2, 3, 4, 5, 6]  # the published models: 63.3 down to 9.9 cgF1
    assert "## CAFE" in out.read_text() and "## SPIN" in out.read_text()
