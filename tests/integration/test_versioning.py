"""Publishing dataset versions with git + DVC and reading old versions back (real git, real DVC)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from segbench.core.errors import InputError, VersioningError
from segbench.core.io import atomic_write_bytes
from segbench.core.manifest import build_manifest, write_manifest
from segbench.core.versioning import DatasetSource, configure_remote, ensure_repo, publish, push_data

pytestmark = pytest.mark.integration


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


def _write_demo(repo: Path, labels: bytes) -> None:
    root = repo / "data" / "demo"
    # Replace by rename like every builder: tracked files are links into the DVC cache.
    atomic_write_bytes(root / "labels.json", labels)
    atomic_write_bytes(root / "images" / "a.bin", bytes(range(64)))
    manifest = build_manifest(dataset="demo", builder_version="1", root=root, params={}, inputs={},
                              counts={"images": 1})
    write_manifest(root, manifest)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repo with DVC, a local remote folder configured in .dvc/config.local, and demo data."""
    repo = ensure_repo(tmp_path / "project", init_git=True)
    configure_remote(repo, str(tmp_path / "remote"), local=True)
    _write_demo(repo, b'{"version": 1}\n')
    return repo


def test_publish_versions_and_read_back(repo: Path, tmp_path: Path) -> None:
    first = publish(repo, commit=True, tag="v1")
    assert first.committed and first.pushed and first.remote == "storage" and first.changed
    assert first.nfiles == 3 and first.size > 64 and first.md5.endswith(".dir")
    assert [(d.folder, d.dataset, d.builder_version, d.counts) for d in first.datasets] == [
        ("demo", "demo", "1", {"images": 1})
    ]
    assert str(tmp_path / "remote") not in first.model_dump_json()  # names the remote, not its URL
    assert (tmp_path / "remote").is_dir()

    labels = repo / "data" / "demo" / "labels.json"
    assert labels.stat().st_nlink == 2 and not labels.stat().st_mode & 0o222  # read-only link, not a copy
    atomic_write_bytes(labels, b'{"version": 2}\n')
    second = publish(repo, commit=True)
    assert second.committed and second.changed and second.commit != first.commit and second.md5 != first.md5

    head = _git(repo, "rev-parse", "HEAD")
    again = publish(repo, commit=True)  # unchanged: no empty commit, same record
    assert not again.committed and not again.changed and again.commit == head == second.commit
    assert _git(repo, "rev-parse", "HEAD") == head and "data.dvc" not in _git(repo, "status", "--porcelain")

    with DatasetSource(repo, rev=first.commit) as source:
        assert source.read_bytes("data/demo/labels.json") == b'{"version": 1}\n'
    shutil.rmtree(repo / ".dvc" / "cache")  # now the old version can only come from the remote
    with DatasetSource(repo, rev="v1") as source:
        assert source.read_json("data/demo/labels.json") == {"version": 1}
        assert source.exists("data/demo/images/a.bin")
        with pytest.raises(InputError, match="not found at revision"):
            source.read_bytes("data/demo/missing.json")
    assert DatasetSource(repo).read_bytes("data/demo/labels.json") == b'{"version": 2}\n'

    with pytest.raises(VersioningError, match="cannot open revision"):
        DatasetSource(repo, rev="no-such-rev").read_bytes("data/demo/labels.json")
    with pytest.raises(VersioningError, match="already names commit"):
        _write_demo(repo, b'{"version": 3}\n')
        publish(repo, commit=True, tag="v1")


def test_remote_added_after_the_version_still_reads(tmp_path: Path) -> None:
    """A version committed before any remote existed reads from the working tree's default remote."""
    repo = ensure_repo(tmp_path / "project", init_git=True)
    _write_demo(repo, b"old\n")
    first = publish(repo, commit=True)
    assert not first.pushed and first.remote is None
    configure_remote(repo, str(tmp_path / "remote"))  # in .dvc/config, committed by the next publish
    assert push_data(repo) == "storage"  # data.dvc still points at the first version
    _write_demo(repo, b"new\n")
    assert publish(repo, commit=True).pushed
    assert "storage" not in _git(repo, "show", f"{first.commit}:.dvc/config")
    shutil.rmtree(repo / ".dvc" / "cache")
    assert DatasetSource(repo, rev=first.commit).read_bytes("data/demo/labels.json") == b"old\n"
    shutil.rmtree(tmp_path / "remote")
    with pytest.raises(VersioningError, match="cannot read at revision"):
        DatasetSource(repo, rev=first.commit).read_bytes("data/demo/labels.json")


def test_a_version_whose_data_is_gone_says_so_not_file_not_found(repo: Path, tmp_path: Path) -> None:
    first = publish(repo, commit=True)
    shutil.rmtree(repo / ".dvc" / "cache")
    shutil.rmtree(tmp_path / "remote")  # the version's listing is now in neither cache nor remote
    with DatasetSource(repo, rev=first.commit) as source, pytest.raises(VersioningError) as info:
        source.read_bytes("data/demo/labels.json")
    text = str(info.value)
    assert "in neither the local DVC cache nor a reachable remote" in text and "dvc pull" in text
    assert "not found" not in text
    with DatasetSource(repo, rev=first.commit) as source, pytest.raises(InputError, match="not found at revision"):
        source.read_bytes("elsewhere/labels.json")  # outside the tracked data: a plain missing file


def test_a_tag_on_the_previous_version_is_not_given_to_new_data(repo: Path) -> None:
    first = publish(repo, commit=True, tag="v1")
    _write_demo(repo, b'{"version": 2}\n')
    with pytest.raises(VersioningError, match="already names the previous version.*nothing was pushed"):
        publish(repo, commit=True, tag="v1")
    assert _git(repo, "rev-parse", "HEAD") == first.commit == _git(repo, "rev-parse", "v1^{commit}")
    assert _git(repo, "diff", "--cached", "--name-only") == ""  # nothing left staged
    assert publish(repo, commit=True, tag="v2").commit != first.commit


def test_a_version_tampered_with_in_the_remote_is_refused_not_read(repo: Path, tmp_path: Path) -> None:
    import hashlib

    from segbench.core.integrity import data_source

    first = publish(repo, commit=True)
    original = (repo / "data" / "demo" / "labels.json").read_bytes()
    md5 = hashlib.md5(original).hexdigest()
    stored = tmp_path / "remote" / "files" / "md5" / md5[:2] / md5[2:]
    stored.chmod(0o644)
    stored.write_bytes(b'{"version": 666}\n')  # same object name, other bytes
    shutil.rmtree(repo / ".dvc" / "cache")
    with data_source(repo, first.commit) as source, pytest.raises(InputError, match="differs from what its build"):
        source.read_bytes("data/demo/labels.json")


def test_failing_commands_raise_versioning_error(repo: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the remote folder should be")
    configure_remote(repo, str(blocker / "remote"), name="broken", local=True)
    with pytest.raises(VersioningError) as info:
        publish(repo, remote="broken")
    text = str(info.value)
    assert "dvc push" in text and "exit code" in text and "Not a directory" in text and "fix:" in text and "reachable" in text
    with pytest.raises(VersioningError, match="not configured"):
        publish(repo, remote="nowhere")
    with pytest.raises(VersioningError, match="not a git repository"):
        ensure_repo(tmp_path)


def test_publish_writes_nothing_to_home(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "GIT_CONFIG"))}
    # An empty HOME also shows that no global git config is needed (identity comes from GIT_AUTHOR_*).
    env["HOME"] = str(home)
    script = textwrap.dedent(
        f"""
        from segbench.core.versioning import publish
        print(publish({str(repo)!r}, commit=True).model_dump_json())
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["committed"]
    assert list(home.rglob("*")) == []


@pytest.mark.usefixtures("prefect_harness")
def test_publish_flow(repo: Path, tmp_path: Path) -> None:
    from segbench.flows.publish import publish_data

    record = publish_data(repo=str(repo), commit=True, tag="v1", remote_url=str(tmp_path / "other"))
    assert record.committed and record.pushed and record.remote == "storage" and record.tag == "v1"
    assert (tmp_path / "other" / "files").is_dir()
    assert _git(repo, "rev-parse", "v1^{commit}") == record.commit
    assert [d.dataset for d in record.datasets] == ["demo"]


def test_an_interrupted_build_is_never_published(repo: Path) -> None:
    stage = repo / "data" / ".demo.0123456789abcdef.partial"  # what a killed build leaves to resume
    atomic_write_bytes(stage / "labels.json", b"half a build\n")
    record = publish(repo, commit=True)
    assert record.nfiles == 3  # the finished dataset's files only
    assert ".*.partial" in (repo / ".dvcignore").read_text().splitlines()
    assert ensure_repo(repo) == repo and (repo / ".dvcignore").read_text().count(".*.partial") == 1
