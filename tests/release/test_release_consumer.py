"""The releases `segbench demo` writes, loaded as a consumer would: no segbench, no network."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.docs import text_of_pages

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

CONSUMER = Path(__file__).with_name("consumer.py")
DATASETS = ("coco_cd", "waterbirds", "cafe", "spin", "vocab")


def _consume(folder: Path, dataset: str, cache: Path) -> dict:
    # The datasets cache goes to the test's own folder, not to the shared demo project it reads.
    env = {**os.environ, "HF_HOME": str(cache)}
    done = subprocess.run([sys.executable, str(CONSUMER), str(folder), dataset], capture_output=True, text=True,
                          timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("dataset", DATASETS)
def test_a_consumer_without_segbench_loads_every_config_and_matches_the_native_files(demo_project, dataset, tmp_path):
    project, _ = demo_project
    summary = _consume(project / "releases" / dataset, dataset, tmp_path / "huggingface")
    assert summary["configs"], "no config loaded"
    answers = summary["configs"].pop("answers", None)
    assert (answers is not None) == (dataset in ("coco_cd", "cafe", "spin")), "a config of the people's answers"
    if answers:
        assert answers["rows"] > 0 and answers["workers"] >= 2
    for config, splits in summary["configs"].items():
        labels = splits.pop("labels")
        assert all(split["rows"] > 0 for split in splits.values()), (config, splits)
        if dataset in ("coco_cd", "waterbirds"):
            assert labels["class"] == (["cat", "dog"] if dataset == "coco_cd" else ["landbird", "waterbird"])
            assert set(splits) == {"train", "validation", "test"} and config.startswith("rho_")
            # the demo's images are its own: every image and mask is embedded
            assert all(split["embedded"] == 2 * split["rows"] for split in splits.values())
        if dataset == "cafe":
            assert labels["edit_type"] == ["SM", "CC", "OC"]
        if dataset == "vocab":
            assert labels["level"] == ["exact", "synonym", "hyponym", "meronym"]
    if dataset == "cafe":
        configs = summary["configs"]
        assert set(configs) == {"all", "SM", "CC", "OC"}
        assert configs["all"]["test"]["rows"] == sum(configs[c]["test"]["rows"] for c in ("SM", "CC", "OC"))


@pytest.mark.parametrize("dataset", DATASETS)
def test_the_card_names_its_version_and_every_document_is_there(demo_project, dataset):
    project, result = demo_project
    folder = project / "releases" / dataset
    card = (folder / "README.md").read_text(encoding="utf-8")
    header = yaml.safe_load(card.split("---\n")[1])
    assert header["license"] == "cc0-1.0" and header["task_categories"] == ["image-segmentation"]
    named = {path for c in header["configs"] for f in c["data_files"] for path in folder.glob(f["path"])}
    assert named == set(folder.glob("data/*/*.parquet")), "every parquet file belongs to a config, and is there"
    if dataset in ("coco_cd", "waterbirds"):  # val and test are drawn once for every ρ: written once
        shared = {f["path"] for c in header["configs"] if c["config_name"].startswith("rho_")
                  for f in c["data_files"] if f["split"] != "train"}
        assert shared == {"data/balanced/validation-*.parquet", "data/balanced/test-*.parquet"}
    assert [c["config_name"] for c in header["dataset_info"]] == [c["config_name"] for c in header["configs"]]
    md5 = json.loads(result.stdout)["publish"]["md5"]
    assert f"dvc md5 {md5}" in card, "the card names the published data version"
    for name in ("DATASHEET.md", "LICENSES.md", "licenses.json", "croissant.json", "splits.json"):
        assert (folder / name).is_file(), name
    datasheet = (folder / "DATASHEET.md").read_text(encoding="utf-8")
    # the demo states how its sources came about: no claim of COCO photos beside "drawn by a program"
    assert "drawn by segbench's demo world from a seed" in datasheet and "COCO 2017" not in datasheet
    assert [line for line in datasheet.splitlines() if line.startswith("## ")] == [
        "## 1. Motivation", "## 2. Composition", "## 3. Collection process",
        "## 4. Preprocessing, cleaning and labelling", "## 5. Uses", "## 6. Distribution", "## 7. Maintenance"]
    sheets = sorted((folder / "gallery").glob("*.png"))
    assert sheets and f"gallery/{sheets[0].name}" in card
    croissant = json.loads((folder / "croissant.json").read_text())
    for field in ("rai:dataCollection", "rai:dataPreprocessingProtocol", "rai:dataAnnotationProtocol",
                  "rai:dataBiases", "rai:dataLimitations", "rai:dataUseCases", "rai:dataReleaseMaintenancePlan",
                  "rai:machineAnnotationTools", "rai:annotationsPerItem"):
        assert croissant.get(field), field
    shards = [d for d in croissant["distribution"] if d["@type"] == "cr:FileObject"]
    assert shards and all(len(d["sha256"]) == 64 for d in shards)


def test_the_demo_lists_the_releases(demo_project):
    project, result = demo_project
    assert json.loads(result.stdout)["paths"]["releases"].endswith("releases")
    assert "releases" in result.output


def test_the_card_header_has_no_yaml_anchors(demo_project):
    project, _ = demo_project
    header = (project / "releases" / "coco_cd" / "README.md").read_text().split("---\n")[1]
    assert "&id" not in header and "*id" not in header


def test_the_readmes_loading_code_runs_as_written_without_segbench(demo_project, tmp_path):
    project, _ = demo_project
    code = next(block for block in re.findall(r"```python\n(.*?)```", text_of_pages(), re.S) if "load_dataset" in block)
    code += "\nimport sys\nassert 'segbench' not in sys.modules\n"
    done = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HOME": str(tmp_path / "huggingface"), "HF_DATASETS_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
