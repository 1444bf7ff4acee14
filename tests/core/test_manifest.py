"""The manifest: what was built, from what, with which code; and checking an output against it."""

import datetime as dt

from segbench.core.io import sha256_file
from segbench.core.manifest import build_manifest, read_manifest, verify_outputs, write_manifest

NOW = dt.datetime(2026, 1, 2, 3, 4, 5, 678, tzinfo=dt.timezone.utc)


def make(tmp_path):
    out = tmp_path / "out"
    (out / "splits").mkdir(parents=True)
    (out / "splits" / "a.json").write_text("{}")
    (out / "context.jsonl").write_text("{}\n")
    source = tmp_path / "in.json"
    source.write_text('{"images": []}')
    manifest = build_manifest(dataset="demo", builder_version="3", root=out, params={"rho": [0.5]},
                              inputs={"instances": source}, counts={"images": 2}, seed=13, now=NOW)
    write_manifest(out, manifest)
    return out, source, manifest


def test_manifest_records_hashes_params_and_versions(tmp_path):
    out, source, manifest = make(tmp_path)
    assert manifest.outputs == {"context.jsonl": sha256_file(out / "context.jsonl"),
                                "splits/a.json": sha256_file(out / "splits" / "a.json")}
    assert manifest.inputs == {"instances": sha256_file(source)}
    assert manifest.created_at == "2026-01-02T03:04:05+00:00"
    assert read_manifest(out) == manifest
    assert manifest.segbench_version and manifest.builder_version == "3" and manifest.seed == 13


def test_verify_outputs_finds_changed_missing_and_extra_files(tmp_path):
    out, _, _ = make(tmp_path)
    assert verify_outputs(out) == {"changed": [], "missing": [], "extra": []}
    (out / "context.jsonl").write_text("edited\n")
    (out / "splits" / "a.json").unlink()
    (out / "stray.txt").write_text("x")
    assert verify_outputs(out) == {"changed": ["context.jsonl"], "missing": ["splits/a.json"], "extra": ["stray.txt"]}
