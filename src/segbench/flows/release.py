"""The ``release`` flow: a built dataset as a folder others load without segbench (parquet, card, Croissant).

Thin: the dataset's ``tasks/<dataset>/release.py`` says what goes in (its :class:`ReleasePlan`),
:mod:`segbench.core.release.writer` writes it into a stage, and the stage replaces the output only
when everything is written and validated. Each split, the native files, the gallery and the
documents are one task each; the push to the Hub is the only step that talks to the network.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from pydantic import SecretStr

from segbench import progress, registry
from segbench.core.integrity import CheckedSource
from segbench.core.release import rounds, writer
from segbench.core.release.parquet import Shard
from segbench.core.release.plan import ImagePolicy, Licence, ReleasePlan, Table
from segbench.core.versioning import DatasetSource
from segbench.flows.prefect_ui import run_name, task_name
from segbench.schemas.release import ReleaseInfo, ReleaseResult


@task(**task_name("write-split"), cache_policy=NO_CACHE)
def write_split_task(stage: Path, plan: ReleasePlan, table: Table, collected: writer.Collected) -> list[Shard]:
    rows = table.rows

    def tracked():
        return progress.track(rows(), f"{plan.name} {table.config} {table.split}", total=table.count)

    return writer.write_table(stage, plan, dataclasses.replace(table, rows=tracked), collected)


@task(**task_name("copy-native-files"), cache_policy=NO_CACHE)
def native_task(stage: Path, plan: ReleasePlan, source: DatasetSource) -> int:
    return writer.write_native(stage, plan, source)


@task(**task_name("draw-gallery"), cache_policy=NO_CACHE)
def gallery_task(stage: Path, plan: ReleasePlan) -> list[str]:
    return writer.write_gallery(stage, plan)


@task(**task_name("write-card-and-croissant"), cache_policy=NO_CACHE)
def documents_task(stage: Path, plan: ReleasePlan, info: ReleaseInfo, shards: dict, collected: writer.Collected,
                   gallery: list[str], url: str | None) -> None:
    writer.write_documents(stage, plan, info, shards, collected, gallery, url=url)


def hub_url(repo_id: str, endpoint: str | None) -> str:
    """Where a pushed release is browsed: the dataset repository on the Hub (or the endpoint given)."""
    return f"{(endpoint or 'https://huggingface.co').rstrip('/')}/datasets/{repo_id}"


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
    """Release ``dataset`` (its build in the working tree, or at DVC version ``rev``) into ``out``.

    The card names the data version: ``version`` if given (the demo passes the DVC version it just
    published), else ``rev``, else the build key.
    """
    spec = registry.dataset(dataset)
    make_plan = spec.need(spec.release_plan, "release plan")
    folder = data_dir or f"data/{spec.default_out}"

    terms = info.images
    policy = ImagePolicy(
        terms=Licence(terms.license, terms.name, terms.url, terms.redistributable,
                      "every image of this release (as its maker states)") if terms else None,
        embed_restricted=info.embed_restricted,
        annotation_terms=Licence(info.source_annotations.license, info.source_annotations.name,
                                 info.source_annotations.url, info.source_annotations.redistributable,
                                 "annotations copied from the sources", of_images=False)
        if info.source_annotations else None)
    with CheckedSource(repo, rev) as source:  # every file read must be what its build wrote
        plan = make_plan(source, folder, policy)
        answers = rounds.answers_table(source, plan.rounds)  # every person's answers, to aggregate anew
        build_key = plan.version
        plan = dataclasses.replace(
            plan, tables=[*plan.tables, *([answers] if answers else [])], version=version or rev or build_key,
            collection=info.collection or plan.collection)  # the maker may know their sources better
        stage = writer.stage_for(out)
        collected = writer.Collected()
        url = hub_url(push, hub_endpoint) if push else None
        try:
            written: dict[str, list[Shard]] = {}  # a split that configs share is written once
            for table in plan.tables:
                if table.path not in written:
                    written[table.path] = write_split_task(stage, plan, table, collected)
            shards = {(table.config, table.split): written[table.path] for table in plan.tables}
            native_task(stage, plan, source)
            gallery = gallery_task(stage, plan)
            documents_task(stage, plan, info, shards, collected, gallery, url)
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)  # nothing to resume: a release is rewritten whole
            raise
    writer.swap_in(stage, out)
    result = writer.result(plan, out, collected)
    if push:
        result.tag = tag or rev or f"build-{build_key[:12]}"
        result.pushed_to = push_task(out, push, result.tag, hub_endpoint, hub_token)
    return result
