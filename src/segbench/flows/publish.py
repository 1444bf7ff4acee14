"""The ``publish-data`` flow: version ``data/`` with DVC, push it, and commit the pointer in git.

Thin Prefect wrappers around the steps in :mod:`segbench.core.versioning`; all git and DVC logic
lives there. Only the push does network I/O, so only the push retries. The tasks have side effects
on the repository, so none of them is cached.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.logging import get_run_logger

from segbench.core import versioning
from segbench.flows.prefect_ui import run_name, task_name
from segbench.schemas.versioning import CommitInfo, DatasetEntry, PublishRecord, TrackedData


@task(**task_name("ensure-repo"), cache_policy=NO_CACHE)
def ensure_repo_task(repo: str | Path) -> Path:
    return versioning.ensure_repo(repo)


@task(**task_name("configure-remote"), cache_policy=NO_CACHE)
def configure_remote_task(repo: Path, url: str, name: str) -> None:
    versioning.configure_remote(repo, url, name, local=True)


@task(**task_name("describe-datasets"), cache_policy=NO_CACHE)
def describe_datasets_task(data: Path) -> list[DatasetEntry]:
    return versioning.describe_datasets(data)


@task(**task_name("dvc-add"), cache_policy=NO_CACHE)
def track_data_task(repo: Path, data_dir: str) -> TrackedData:
    return versioning.track_data(repo, data_dir)


# A push is idempotent (content-addressed), so retrying after a network error is safe.
@task(**task_name("dvc-push"), cache_policy=NO_CACHE, retries=2, retry_delay_seconds=[2, 10])
def push_data_task(repo: Path, data_dir: str, remote: str | None) -> str | None:
    return versioning.push_data(repo, data_dir, remote)


@task(**task_name("git-commit"), cache_policy=NO_CACHE)
def commit_version_task(repo: Path, data_dir: str, message: str, tag: str | None) -> CommitInfo:
    return versioning.commit_version(repo, data_dir, message, tag)


@flow(name="publish-data", flow_run_name=run_name("publish-data", ("data_dir", "tag")))
def publish_data(
    repo: str = ".",
    data_dir: str = "data",
    remote: str | None = None,
    commit: bool = False,
    message: str | None = None,
    tag: str | None = None,
    remote_url: str | None = None,
) -> PublishRecord:
    """Publish the data directory of ``repo`` as a dataset version (see :func:`versioning.publish`).

    Args:
        repo: the git + DVC repository root.
        data_dir: the directory to version, relative to ``repo``.
        remote: DVC remote name to push to (default: the configured default remote, if any).
        commit: commit ``<data_dir>.dvc`` and DVC's git files.
        message: commit message (default names the hash and the datasets).
        tag: annotated tag for the commit (needs ``commit``).
        remote_url: configure this URL first as the default remote ``remote or "storage"``, in
            ``.dvc/config.local`` (never committed).

    Returns:
        The :class:`PublishRecord` (no URL, no credentials).
    """
    logger = get_run_logger()
    versioning.check_publishable(repo, data_dir, tag, commit=commit)  # before anything changes
    root = ensure_repo_task(repo)
    if remote_url:
        remote = remote or versioning.DEFAULT_REMOTE
        configure_remote_task(root, remote_url, remote)
    datasets = describe_datasets_task(root / data_dir)
    tracked = track_data_task(root, data_dir)
    versioning.check_tag_for(root, tag, tracked)
    pushed_to = push_data_task(root, data_dir, remote)
    info = None
    if commit:
        text = message or versioning.default_message(data_dir, tracked, datasets)
        info = commit_version_task(root, data_dir, text, tag)
    record = PublishRecord.from_steps(data_dir, tracked, datasets, pushed_to, info)
    logger.info(
        "published %s %s (%d files, %d datasets)%s%s",
        data_dir, record.md5, record.nfiles, len(record.datasets),
        f", pushed to {record.remote}" if record.pushed else ", not pushed",
        f", commit {record.commit[:12]}" if record.commit else "",
    )
    return record
