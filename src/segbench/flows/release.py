"""The ``release-dataset`` flow: :func:`segbench.core.release.make.make_release` with its steps as tasks.

``segbench release --track`` runs it, so the Prefect UI shows the run; the command otherwise writes
the same files in its own process, without Prefect. The push to the Hub is a task of its own.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from pydantic import SecretStr

from segbench.core.release.make import make_release
from segbench.flows.prefect_ui import run_name, task_name
from segbench.flows.steps import PrefectSteps
from segbench.schemas.release import ReleaseInfo, ReleaseResult


# The push retries within its own deadline (providers.hub.push_folder): one deadline for the whole push.
@task(**task_name("push-to-hub"), cache_policy=NO_CACHE)
def push_task(out: Path, repo_id: str, tag: str, endpoint: str | None, token: SecretStr | None) -> str:
    from segbench.providers.hub import push_folder

    return push_folder(out, repo_id, tag=tag, endpoint=endpoint, token=token)


@flow(name="release-dataset", flow_run_name=run_name("release-dataset", ("dataset", "rev")))
def release_dataset(dataset: str, out: Path, info: ReleaseInfo, repo: Path = Path("."), rev: str | None = None,
                    data_dir: str | None = None, push: str | None = None, tag: str | None = None,
                    hub_endpoint: str | None = None, hub_token: SecretStr | None = None,
                    version: str | None = None) -> ReleaseResult:
    """Release ``dataset`` into ``out`` (:func:`make_release`), then push it to the Hub repository ``push``."""
    result = make_release(PrefectSteps(), dataset, out, info, repo=repo, rev=rev, data_dir=data_dir, push=push,
                          tag=tag, hub_endpoint=hub_endpoint, version=version)
    if push and result.tag:
        result.pushed_to = push_task(out, push, result.tag, hub_endpoint, hub_token)
    return result
