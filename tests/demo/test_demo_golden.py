"""Every output of the demo world, recorded with the logic version that made it.

``tests/golden/demo_outputs.json`` holds, per manifest the demo writes (datasets under ``data/``,
evaluations under ``reports/``), its logic version and one fingerprint of its output files. An
output that changes while its version stays is a stale build key: every copy built before the
change would be taken as up to date. Re-record after bumping the version:

    SEGBENCH_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/demo/test_demo_golden.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from segbench.core.io import fingerprint
from segbench.core.manifest import read_manifest
from segbench.tasks.cafe import versions as cafe
from segbench.tasks.coco_cd import versions as coco_cd
from segbench.tasks.flip import versions as flip
from segbench.tasks.spin import versions as spin
from segbench.tasks.vocab import versions as vocab
from segbench.tasks.waterbirds import versions as waterbirds

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "demo_outputs.json"

# A manifest's ``dataset`` -> (the module of its version, the version's name there). The demo writes
# every build and the COCO-CD, CAFE and SPIN evaluations.
VERSIONS = {
    "coco_cd": (coco_cd, "BUILD"),
    "eval/COCO-CD": (flip, "EVALUATION"),
    "waterbirds_seg": (waterbirds, "BUILD"),
    "eval/Waterbirds-seg": (flip, "EVALUATION"),
    "vocab": (vocab, "BUILD"),
    "eval/vocab": (vocab, "EVALUATION"),
    "cafe_candidates": (cafe, "CANDIDATES"),
    "cafe": (cafe, "EXPORT"),
    "eval/cafe": (cafe, "EVALUATION"),
    "eval/cgf1": (cafe, "CGF1"),
    "spin-taxonomy": (spin, "TAXONOMY"),
    "spin": (spin, "DATASET"),
    "eval/spin": (spin, "EVALUATION"),
}


# Evaluation reports are checked for their logic version only: the CAFE evaluation records the absolute
# paths of its inputs, and the plots of the COCO-CD one differ between a command and the test session.
VERSION_ONLY_ROOTS = {"reports"}


def _recorded_now(project: Path) -> dict[str, dict[str, str]]:
    """Per manifest (its path in the project): the dataset, its logic version and its outputs' fingerprint."""
    found = {}
    for root in ("data", "reports"):
        for path in sorted((project / root).rglob("*manifest*.json")):
            if ".partial" in str(path) or "cache" in path.relative_to(project).parts:
                continue
            manifest = read_manifest(path.parent, path.name)
            found[path.relative_to(project).as_posix()] = {
                "dataset": manifest.dataset, "logic_version": manifest.builder_version,
                "outputs": None if root in VERSION_ONLY_ROOTS else fingerprint(manifest.outputs)}
    return found


@pytest.fixture
def outputs(demo_project) -> dict[str, dict[str, str]]:
    project, _ = demo_project
    found = _recorded_now(project)
    if os.environ.get("SEGBENCH_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    return found


def test_every_output_is_made_under_its_datasets_recorded_logic_version(outputs):
    assert {entry["dataset"] for entry in outputs.values()} <= set(VERSIONS), "a manifest kind has no version"
    for path, entry in outputs.items():
        module, name = VERSIONS[entry["dataset"]]
        assert entry["logic_version"] == getattr(module, name), f"{path} is not made under {module.__name__}.{name}"


def test_no_output_changes_while_its_logic_version_stays(outputs):
    golden = json.loads(GOLDEN.read_text())
    assert sorted(outputs) == sorted(golden), "the demo writes other outputs than recorded: re-record (see above)"
    for path, now in outputs.items():
        before = golden[path]
        module, name = VERSIONS[now["dataset"]]
        where = f"{module.__name__}.{name}"
        if now["logic_version"] == before["logic_version"]:
            assert now["outputs"] == before["outputs"], (
                f"{path} changed while {where} stayed {now['logic_version']}: bump {where} in "
                f"{Path(module.__file__).name} and re-record with SEGBENCH_UPDATE_GOLDEN=1 (see {Path(__file__).name})")
        else:
            assert now == before, f"{where} is now {now['logic_version']}: re-record with SEGBENCH_UPDATE_GOLDEN=1"
