"""Versioning helpers that need no git or DVC run: redaction, argument checks, dataset discovery."""

from __future__ import annotations

from pathlib import Path

import pytest

from segbench.core.errors import InputError, VersioningError
from segbench.core.io import write_json
from segbench.core.manifest import build_manifest, write_manifest
from segbench.core.redaction import redact
from segbench.core.versioning import configure_remote, describe_datasets, publish


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("s3://bucket/path", "s3://bucket/path"),
        ("https://user:hunter2@host/dvc", "https://***@host/dvc"),
        ("push to azure://c/p?sv=1&sig=SECRET failed", "push to azure://c/p?*** failed"),
        ("/plain/local/path", "/plain/local/path"),
    ],
)
def test_redact(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_describe_datasets(tmp_path: Path) -> None:
    for name in ("b_set", "a_set"):
        root = tmp_path / name
        write_json(root / "x.json", {"n": 1})
        write_manifest(root, build_manifest(dataset=name.upper(), builder_version="2", root=root,
                                            params={}, inputs={}, counts={"n": 1}))
    (tmp_path / "cache").mkdir()  # no manifest: not a dataset
    entries = describe_datasets(tmp_path)
    assert [(e.folder, e.dataset, e.builder_version) for e in entries] == [("a_set", "A_SET", "2"), ("b_set", "B_SET", "2")]

    write_json(tmp_path / "broken" / "manifest.json", {"dataset": "x"})
    with pytest.raises(InputError, match="invalid manifest") as info:
        describe_datasets(tmp_path)
    assert info.value.path.endswith("broken/manifest.json")


def test_argument_errors(tmp_path: Path) -> None:
    with pytest.raises(VersioningError, match="a tag needs a commit"):
        publish(tmp_path, tag="v1")
    with pytest.raises(InputError, match="invalid remote name"):
        configure_remote(tmp_path, "/somewhere", name="bad name")
    with pytest.raises(InputError, match="data directory not found"):
        describe_datasets(tmp_path / "missing")


def test_a_report_names_a_moving_revision_by_its_commit(tmp_path: Path) -> None:
    import subprocess

    from segbench.core.versioning import revision_label

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    (tmp_path / "a").write_text("a")
    git("add", "a")
    git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "one")
    git("tag", "release/v1")
    head = git("rev-parse", "HEAD")
    assert revision_label(tmp_path, None) == "worktree"
    branch = git("branch", "--show-current")
    assert revision_label(tmp_path, "HEAD") == head[:12] == revision_label(tmp_path, branch)
    assert revision_label(tmp_path, "release/v1") == "release-v1"  # a tag keeps its name, as one folder
    assert revision_label(tmp_path, "no-such-rev") == "no-such-rev"  # reading it fails with its own message
    assert revision_label(tmp_path, "--output=x") == "--output=x"  # never passed to git as an option


def _built(tmp_path: Path) -> Path:
    """A project with one build, ``data/set``: two files and their manifest."""
    build = tmp_path / "data" / "set"
    (build / "masks").mkdir(parents=True)
    (build / "masks" / "a.png").write_bytes(b"mask a")
    (build / "masks" / "b.png").write_bytes(b"mask b")
    write_manifest(build, build_manifest(root=build, dataset="set", builder_version="1", params={}, inputs={}, counts={}))
    return tmp_path


def test_a_file_of_the_working_tree_is_linked_into_a_release_and_a_checked_one_is_not_read_again(tmp_path, monkeypatch):
    from segbench.core.integrity import CheckedSource
    from segbench.core.io import sha256_bytes

    project = _built(tmp_path)
    (tmp_path / "out").mkdir()
    source = CheckedSource(project)
    assert source.copy_to("data/set/masks/a.png", tmp_path / "out" / "a.png") == sha256_bytes(b"mask a")
    linked = tmp_path / "out" / "a.png"
    assert linked.read_bytes() == b"mask a" and linked.stat().st_ino == (project / "data/set/masks/a.png").stat().st_ino
    source.read_bytes("data/set/masks/b.png")
    monkeypatch.setattr(CheckedSource, "read_bytes", lambda *_: pytest.fail("read again"))
    assert source.copy_to("data/set/masks/b.png", tmp_path / "out" / "b.png") == sha256_bytes(b"mask b")


def test_without_hard_links_the_bytes_are_written_and_a_changed_file_is_refused(tmp_path, monkeypatch):
    import os

    from segbench.core.integrity import CheckedSource

    project = _built(tmp_path)
    (tmp_path / "out").mkdir()

    def no_links(*_args):
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", no_links)
    CheckedSource(project).copy_to("data/set/masks/a.png", tmp_path / "out" / "a.png")
    copied = tmp_path / "out" / "a.png"
    assert copied.read_bytes() == b"mask a" and copied.stat().st_ino != (project / "data/set/masks/a.png").stat().st_ino
    (project / "data/set/masks/b.png").write_bytes(b"changed")
    with pytest.raises(InputError, match="differs from what its build wrote") as refused:
        CheckedSource(project).copy_to("data/set/masks/b.png", tmp_path / "out" / "b.png")
    assert refused.value.path.endswith("b.png") and not (tmp_path / "out" / "b.png").exists()


def test_a_checked_read_by_absolute_path_outside_every_build_is_read_as_it_is(tmp_path):
    from segbench.core.integrity import CheckedSource

    project = _built(tmp_path)
    (project / "rounds").mkdir()
    (project / "rounds" / "r.json").write_text("{}")
    source = CheckedSource(project)
    # No manifest above it up to "/": the search for its build ends there (it once went round forever).
    assert source.read_bytes(str(project / "rounds" / "r.json")) == b"{}"
    assert source.read_bytes(str(project / "data" / "set" / "masks" / "a.png")) == b"mask a"
