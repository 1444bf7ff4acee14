"""The build template (segbench.core.build): key → up-to-date check → stage → manifest → swap."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from segbench.core.build import Build, Built, run_build
from segbench.core.io import read_json
from segbench.core.manifest import build_manifest
from segbench.core.resume import Stage, stage_path
from segbench.schemas.results import BuildSummary, Counts


class ItemCounts(Counts):
    items: int = 0


class Summary(BuildSummary):
    counts: ItemCounts
    note: str | None = None


@pytest.fixture(autouse=True)
def fixed_build_time(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")


def _build(out: Path, **changes) -> Build:
    fields = {"out": out, "dataset": "demo", "logic_version": "3", "params": {"seed": 1},
              "input_hashes": {"b": "2" * 64, "a": "1" * 64}}
    return Build(**(fields | changes))


def _body(calls: list[Stage]):
    def body(stage: Stage) -> Built:
        calls.append(stage)
        (stage.path / "data.txt").write_text("data")
        return Built(counts={"items": 1}, units={"computed": 2, "reused": 0}, seed=7, skipped=1,
                     extras={"note": "made now"})
    return body


def test_a_build_writes_the_manifest_and_returns_the_summary(tmp_path):
    out, calls = tmp_path / "out", []
    build = _build(out)
    summary = run_build(build, _body(calls), Summary)
    assert summary.model_dump(mode="json") == {"out": str(out), "up_to_date": False, "counts": {"items": 1},
                                               "units": {"computed": 2, "reused": 0}, "note": "made now"}
    assert (out / "data.txt").read_text() == "data" and not stage_path(out, build.key).exists()
    expected = build_manifest(dataset="demo", builder_version="3", root=out, params={"seed": 1}, inputs={},
                              input_hashes=build.input_hashes, counts={"items": 1}, seed=7, skipped=1,
                              build_key=build.key)
    assert read_json(out / "manifest.json") == expected.model_dump(mode="json")


def test_an_up_to_date_output_is_left_alone_and_summarised_from_its_manifest(tmp_path):
    out, calls = tmp_path / "out", []
    run_build(_build(out), _body(calls), Summary)
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    again = run_build(_build(out), _body(calls), Summary,
                      finished=lambda manifest: {"note": f"skipped {manifest.skipped}"})
    assert len(calls) == 1 and {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
    assert again.model_dump(mode="json") == {"out": str(out), "up_to_date": True, "counts": {"items": 1},
                                             "units": {"computed": 0, "reused": 0}, "note": "skipped 1"}
    assert run_build(_build(out), _body(calls), Summary, force=True).up_to_date is False and len(calls) == 2
    assert run_build(_build(out, params={"seed": 2}), _body(calls), Summary).up_to_date is False


def test_prepare_runs_before_the_stage_and_a_failure_there_leaves_none(tmp_path):
    out = tmp_path / "out"

    def refuse() -> None:
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        run_build(_build(out), lambda stage, loaded: Built(counts={}), Summary, prepare=refuse)
    assert list(tmp_path.iterdir()) == []

    seen = []
    run_build(_build(out), lambda stage, loaded: seen.append((stage.path.exists(), loaded)) or Built(counts={}),
              Summary, prepare=lambda: "loaded")
    assert seen == [(True, "loaded")]


def test_a_failing_body_keeps_its_stage_and_the_old_output(tmp_path):
    out = tmp_path / "out"
    run_build(_build(out), _body([]), Summary)

    def crash(stage: Stage) -> Built:
        (stage.path / "half.txt").write_text("half")
        raise RuntimeError("killed")

    build = _build(out, params={"seed": 2})
    with pytest.raises(RuntimeError):
        run_build(build, crash, Summary)
    assert (stage_path(out, build.key) / "half.txt").is_file() and (out / "data.txt").is_file()


def test_the_manifest_may_record_other_params_than_the_key(tmp_path):
    out = tmp_path / "out"
    build = _build(out)
    run_build(build, lambda stage: Built(counts={}, params={"seed": 1, "loaded": "model-x"}), Summary)
    manifest = read_json(out / "manifest.json")
    assert manifest["params"] == {"seed": 1, "loaded": "model-x"} and manifest["build_key"] == build.key
    assert build.is_up_to_date()


@pytest.mark.parametrize("counts", [{"itmes": 1}, {"items": "many"}], ids=["misspelt", "not a number"])
def test_a_count_the_summary_model_refuses_fails_the_build_before_anything_is_written(tmp_path, counts):
    out = tmp_path / "out"
    build = _build(out)
    with pytest.raises(ValidationError, match=r"counts\.it"):
        run_build(build, lambda stage: Built(counts=counts), Summary)
    assert not out.exists() and not (stage_path(out, build.key) / "manifest.json").exists()
