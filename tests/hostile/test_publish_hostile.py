"""``segbench publish`` refuses a tag it could not create, a link out of the data root and remote
credentials in a ``.dvc/config`` it would commit, before it changes anything: no DVC init, no
commit, no tag, the working tree as it was."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.hostile import assert_clean_failure, run_console, run_main, snapshot


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit, a tag v1 on it, and a data root with one dataset file."""
    git(tmp_path, "init", "-q")
    (tmp_path / "README").write_text("project\n")
    git(tmp_path, "add", "README")
    git(tmp_path, "commit", "-q", "-m", "start")
    git(tmp_path, "tag", "v1")
    (tmp_path / "README").write_text("project, edited\n")  # an uncommitted change must stay uncommitted
    (tmp_path / "data" / "set").mkdir(parents=True)
    (tmp_path / "data" / "set" / "file.txt").write_text("data\n")
    return tmp_path


def state(repo: Path) -> tuple[str, str, str, dict]:
    return (git(repo, "rev-parse", "HEAD"), git(repo, "status", "--porcelain", "--untracked-files=all"),
            git(repo, "tag", "--list"), snapshot(repo))


@pytest.mark.parametrize(("args", "names"), [
    (["--commit", "--tag", "bad tag"], ["'bad tag'", "not a valid git tag name"]),
    (["--commit", "--tag", "v1..2"], ["'v1..2'", "not a valid git tag name"]),
    (["--commit", "--tag", "-v1"], ["'-v1'", "not a valid git tag name"]),
    (["--commit", "--tag", "v1.lock"], ["'v1.lock'", "not a valid git tag name"]),
    (["--tag", "v2"], ["v2", "a tag needs a commit"]),
], ids=["space", "double-dot", "leading-dash", "dot-lock", "no-commit"])
def test_an_invalid_tag_is_refused_before_anything_changes(repo, args, names):
    before = state(repo)
    assert_clean_failure(run_main(repo, "publish", *args), *names)
    assert state(repo) == before
    assert not (repo / ".dvc").exists() and not (repo / "data.dvc").exists()


def test_a_tag_naming_another_commit_is_refused_before_anything_changes(repo):
    git(repo, "commit", "-q", "--allow-empty", "-m", "later")  # v1 now names an older commit than HEAD
    before = state(repo)
    assert_clean_failure(run_main(repo, "publish", "--commit", "--tag", "v1"), "'v1'", "already names commit")
    assert state(repo) == before and not (repo / ".dvc").exists()


def test_invalid_tag_through_the_console_script(repo):
    before = state(repo)
    assert_clean_failure(run_console(repo, "publish", "--commit", "--tag", "release 1"), "'release 1'")
    assert state(repo) == before


def test_an_unknown_remote_is_refused_before_anything_changes(repo):
    before = state(repo)
    assert_clean_failure(run_main(repo, "publish", "--remote", "nowhere"), "'nowhere'", "not configured",
                         "--remote-url")
    assert state(repo) == before and not (repo / ".dvc").exists()


def test_a_folder_outside_git_is_refused_before_prefect_starts(tmp_path):
    # A unit test's Prefect API answers nothing: reaching for it would be a different error.
    outcome = run_console(tmp_path, "publish")
    assert_clean_failure(outcome, str(tmp_path), "not a git repository", "--init-git")
    assert "Prefect" not in outcome.stderr and not (tmp_path / ".git").exists()


def test_a_link_out_of_the_data_root_is_refused_before_anything_changes(repo, tmp_path_factory):
    secret = tmp_path_factory.mktemp("elsewhere") / "passwd"
    secret.write_text("root:x:0:0\n")
    (repo / "data" / "set" / "passwd.txt").symlink_to(secret)
    before = state(repo)
    assert_clean_failure(run_main(repo, "publish"), "passwd.txt", str(secret), "outside the data folder")
    assert state(repo) == before and not (repo / ".dvc").exists()


def test_remote_credentials_in_the_committed_dvc_config_are_refused_before_anything_changes(repo):
    (repo / ".dvc").mkdir()
    (repo / ".dvc" / "config").write_text('[core]\n    remote = s3\n[\'remote "s3"\']\n    url = s3://bucket/data\n'
                                          "    secret_access_key = wJalrXUtnFEMIK7MDENG\n")
    before = state(repo)
    outcome = run_main(repo, "publish", "--commit")
    assert_clean_failure(outcome, "secret_access_key", "remote \"s3\"", "config.local")
    assert "wJalrXUtnFEMIK7MDENG" not in outcome.stderr + outcome.stdout
    assert state(repo) == before and not (repo / "data.dvc").exists()
