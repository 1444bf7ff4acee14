"""A release of a built dataset, written step by step: in this process, or as the tasks of a Prefect flow.

The dataset's ``tasks/<dataset>/release.py`` says what goes in (its :class:`ReleasePlan`),
:mod:`segbench.core.release.writer` writes it into a stage, and the stage replaces the output only
when everything is written and validated. Each split, the native files, the gallery and the
documents are one step (:class:`segbench.core.steps.Steps`): ``segbench release`` calls them here,
the ``release-dataset`` flow (``--track``) runs them as its tasks; both write the same bytes. The push
to the Hub, the only step that talks to the network, is the caller's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
from pathlib import Path

from segbench import progress, registry
from segbench.core.integrity import CheckedSource
from segbench.core.release import rounds, writer
from segbench.core.release.parquet import Shard
from segbench.core.release.plan import ImagePolicy, Licence, ReleasePlan, Table
from segbench.core.steps import Pending, Steps
from segbench.schemas.release import ReleaseFile, ReleaseInfo, ReleaseResult


def hub_url(repo_id: str, endpoint: str | None) -> str:
    """Where a pushed release is browsed: the dataset repository on the Hub (or the endpoint given)."""
    return f"{(endpoint or 'https://huggingface.co').rstrip('/')}/datasets/{repo_id}"


def _write_split(stage: Path, plan: ReleasePlan, table: Table, collected: writer.Collected) -> list[Shard]:
    rows = table.rows

    def tracked():
        return progress.track(rows(), f"{plan.name} {table.config} {table.split}", total=table.count)

    return writer.write_table(stage, plan, dataclasses.replace(table, rows=tracked), collected)


def _write_documents(stage: Path, plan: ReleasePlan, info: ReleaseInfo, shards: dict[tuple[str, str], list[Shard]],
                     collected: writer.Collected, gallery: list[str], url: str | None,
                     digests: dict[str, str]) -> list[ReleaseFile]:
    return writer.write_documents(stage, plan, info, shards, collected, gallery, url=url, digests=digests)


def _policy(info: ReleaseInfo) -> ImagePolicy:
    terms, annotations = info.images, info.source_annotations
    return ImagePolicy(
        terms=Licence(terms.license, terms.name, terms.url, terms.redistributable,
                      "every image of this release (as its maker states)") if terms else None,
        embed_restricted=info.embed_restricted,
        annotation_terms=Licence(annotations.license, annotations.name, annotations.url,
                                 annotations.redistributable, "annotations copied from the sources", of_images=False)
        if annotations else None)


def make_release(steps: Steps, dataset: str, out: Path, info: ReleaseInfo, repo: Path = Path("."),
                 rev: str | None = None, data_dir: str | None = None, push: str | None = None,
                 tag: str | None = None, hub_endpoint: str | None = None,
                 version: str | None = None) -> ReleaseResult:
    """Release ``dataset`` (its build in the working tree, or at DVC version ``rev``) into ``out``.

    The card names the data version: ``version`` if given (the demo passes the DVC version it just
    published), else ``rev``, else the build key. With ``push`` (a Hub repository), the card links
    to it and the result's ``tag`` is the tag to push under: ``tag``, else ``rev``, else the build key's.
    """
    spec = registry.dataset(dataset)
    make_plan = spec.need(spec.release_plan, "release plan")
    folder = data_dir or f"data/{spec.default_out}"
    with CheckedSource(repo, rev) as source:  # every file read must be what its build wrote
        plan = make_plan(source, folder, _policy(info))
        answers = rounds.answers_table(source, plan.rounds)  # every person's answers, to aggregate anew
        build_key = plan.version
        plan = dataclasses.replace(
            plan, tables=[*plan.tables, *([answers] if answers else [])], version=version or rev or build_key,
            collection=info.collection or plan.collection)  # the maker may know their sources better
        stage = writer.stage_for(out)
        collected = writer.Collected()
        url = hub_url(push, hub_endpoint) if push else None
        drawing: Pending[list[str]] | None = None
        try:
            # The gallery reads only the images it draws and writes only its own folder, so it is drawn
            # while the splits are written; not from a published version, whose DVC file system is not
            # known to be safe to share between threads.
            if rev is None:
                drawing = steps.beside("draw-gallery", writer.write_gallery, stage, plan)
            written: dict[str, list[Shard]] = {}  # a split that configs share is written once
            for table in plan.tables:
                if table.path not in written:
                    written[table.path] = steps.call("write-split", _write_split, stage, plan, table, collected)
            shards = {(table.config, table.split): written[table.path] for table in plan.tables}
            digests = steps.call("copy-native-files", writer.write_native, stage, plan, source)
            gallery = drawing.result() if drawing else steps.call("draw-gallery", writer.write_gallery, stage, plan)
            documents = steps.call("write-card-and-croissant", _write_documents, stage, plan, info, shards, collected,
                                   gallery, url, digests)
        except BaseException:
            if drawing is not None:  # it writes into the stage: let it end first
                with contextlib.suppress(Exception):
                    drawing.result()
            shutil.rmtree(stage, ignore_errors=True)  # nothing to resume: a release is rewritten whole
            raise
    writer.swap_in(stage, out)
    result = writer.result(plan, out, collected, shards, documents)
    if push:
        result.tag = tag or rev or f"build-{build_key[:12]}"
    return result


__all__ = ["hub_url", "make_release"]
