"""The one sequence every build and evaluation follows: build key → up-to-date check → stage → manifest → swap.

A flow describes its output as a :class:`Build` (where it goes, what its key covers) and hands
:func:`run_build` a *body* that writes the output into a resumable stage and says what it made
(:class:`Built`). ``run_build`` skips the body when the output is up to date, writes the manifest
into the stage once the body returns, swaps the stage in, and returns the summary every build
returns, a model of the dataset's (:mod:`segbench.schemas.results`): ``out``, ``up_to_date``,
``counts``, ``units`` and the flow's own extras.

Evaluations go through :func:`segbench.core.evaluation_keys.run_evaluation`, which returns their
result shape. The SPIN taxonomy, whose folder also holds the SPIN dataset, cannot be swapped in
whole: it uses :class:`Build` for its key, up-to-date check, manifest and summary, and writes its
files in place.

Nothing here needs Prefect: the body runs Prefect tasks itself, and the flow passes its run logger.

A :class:`Build`'s ``logic_version`` comes from its dataset's ``tasks/<dataset>/versions.py``. A
version is part of its output's build key and manifest (``builder_version``): bump it whenever
the output changes for the same inputs and parameters, so that every built copy is rebuilt. The
golden test of the demo world (``tests/demo/test_demo_golden.py``) fails when an output changes
while its version does not. Prompt and offline-rule versions are part of the answer cache's keys
instead and stay beside their prompts.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from segbench.core.errors import InputError, OutputError, SegbenchError
from segbench.core.io import write_json
from segbench.core.manifest import build_manifest, read_manifest, write_manifest
from segbench.core.resume import (
    MANIFEST_NAME,
    SOURCES_NAME,
    Stage,
    build_key,
    is_up_to_date,
    resumable_stage,
    stage_path,
)
from segbench.locking import output_lock
from segbench.schemas.manifest import Manifest
from segbench.schemas.results import NO_UNITS, Result

R = TypeVar("R", bound=Result)


@dataclass(frozen=True)
class Build:
    """One output made under a build key (:func:`segbench.core.resume.build_key`).

    Attributes:
        out: the output folder.
        dataset: the name the key and the manifest record (``"coco_cd"``, ``"eval/spin"``).
        logic_version: the version of the code that makes it; the manifest's ``builder_version``.
        params: what the key covers besides the inputs; also the manifest's params unless the body
            records others (:attr:`Built.params`).
        input_hashes: sha256 per input label; the key covers them and the manifest lists them.
        manifest_name: the manifest's file name in ``out``.
        sources_root: the folder of the source files a build reads beyond ``input_hashes`` (files
            its key cannot list before the inputs are loaded, as COCO images): the body returns
            their hashes (:attr:`Built.sources`), they are written to ``sources.json`` in the
            output, and the up-to-date check hashes them again.
    """

    out: Path
    dataset: str
    logic_version: str
    params: Mapping[str, Any]
    input_hashes: Mapping[str, str]
    manifest_name: str = MANIFEST_NAME
    sources_root: Path | None = None

    @property
    def key(self) -> str:
        return build_key(dataset=self.dataset, logic_version=self.logic_version, params=self.params,
                         input_hashes=self.input_hashes)

    def is_up_to_date(self, force: bool = False) -> bool:
        """Whether ``out`` holds a finished output of this key (never when ``force``)."""
        return not force and is_up_to_date(self.out, self.key, manifest_name=self.manifest_name,
                                           sources_root=self.sources_root)

    def manifest(self, root: Path, built: Built, outputs: Mapping[str, str] | None = None) -> Manifest:
        """The manifest of what the body built under ``root`` (or of the files ``outputs`` lists)."""
        return build_manifest(dataset=self.dataset, builder_version=self.logic_version, root=root,
                              params=self.params if built.params is None else built.params, inputs={},
                              input_hashes=self.input_hashes, build_key=self.key, counts=built.counts,
                              seed=built.seed, skipped=built.skipped, outputs=outputs)

    def summary(self, built: Built, kind: type[R]) -> R:
        """The summary of a build that ran: what the body made."""
        return kind.model_validate({"out": self.out, "up_to_date": False, "counts": built.counts,
                                    "units": built.units, **built.extras})

    def up_to_date_summary(self, counts: Mapping[str, Any], extras: Mapping[str, Any], kind: type[R]) -> R:
        """The summary of a build that found its output up to date: the counts recorded when it was built."""
        return kind.model_validate({"out": self.out, "up_to_date": True, "counts": dict(counts), "units": NO_UNITS,
                                    **extras})


@dataclass
class Built:
    """What a build's body made.

    Attributes:
        counts: numbers a reader wants at a glance; recorded in the manifest and returned.
        units: ``{"computed", "reused"}`` units of work (``segbench.flows.units.count_units``), or
            ``None`` for a body that is not cut into units.
        extras: more of the summary that the manifest does not record (coverage, provider usage...).
        seed, skipped: recorded in the manifest.
        params: the manifest's params when they are not the key's (the vocabulary build records the
            spaCy model it loaded, which the key cannot know in advance).
        sources: sha256 per source file read under :attr:`Build.sources_root` (``core.resume.source_hashes``).
    """

    counts: dict[str, Any]
    units: dict[str, int] | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    skipped: int = 0
    params: Mapping[str, Any] | None = None
    sources: Mapping[str, str] | None = None


def run_build(build: Build, body: Callable[..., Built], kind: type[R], *, force: bool = False,
              prepare: Callable[[], Any] | None = None,
              finished: Callable[[Manifest], Mapping[str, Any]] | None = None,
              logger: logging.Logger | logging.LoggerAdapter | None = None) -> R:
    """Make ``build.out`` with ``body`` unless it is up to date; return the build's summary.

    Args:
        body: writes the output into the stage it is given and returns what it made; called as
            ``body(stage)``, or ``body(stage, prepare())`` with ``prepare``.
        kind: the dataset's summary model (a :class:`segbench.schemas.results.BuildSummary`). The
            summary is validated before the manifest is written: a count the model does not know
            fails the build and leaves the output as it was.
        force: run the body even when the output is up to date.
        prepare: work that comes after the up-to-date check but before the stage is made (loading
            and checking inputs), so that a bad input leaves no stage behind.
        finished: the summary's extras of an output found up to date, read back from it (given its
            manifest); none without it.
        logger: where to say that the output is up to date (a flow's run logger).

    Returns:
        ``kind`` made of ``out``, ``up_to_date``, ``counts``, ``units`` and the extras (:meth:`Build.summary`).

    Raises:
        Whatever ``prepare`` or ``body`` raise; after a failing body the stage is kept for the next
        run to resume. BusyError: another build is writing ``build.out``. OutputError: writing the
        output failed (a full disk...); InputError: reading a file failed (both name the file).
    """
    with output_lock(build.out, command=f"build {build.dataset}"):
        if build.is_up_to_date(force):
            if logger is not None:
                logger.info("%s is up to date", build.out)
            manifest = read_manifest(build.out, build.manifest_name)
            return build.up_to_date_summary(manifest.counts, finished(manifest) if finished is not None else {}, kind)
        prepared = prepare() if prepare is not None else None
        try:
            with resumable_stage(build.out, build.key) as stage:
                built = body(stage) if prepare is None else body(stage, prepared)
                summary = build.summary(built, kind)
                if build.sources_root is not None:
                    write_json(stage.path / SOURCES_NAME, {"files": dict(built.sources or {})}, indent=1)
                write_manifest(stage.path, build.manifest(stage.path, built), build.manifest_name)
        except OSError as exc:
            raise _os_error(exc, build) from exc
    return summary


def _os_error(exc: OSError, build: Build) -> SegbenchError:
    """A file system failure while building, as a typed error naming the file and what to do.

    The stage is kept on purpose: its finished units are reused when the same command runs again,
    so a build stopped by a full disk resumes once there is room.
    """
    stage = stage_path(build.out, build.key)
    where = exc.filename or stage
    reason = exc.strerror or str(exc)
    written = any(Path(where).resolve().is_relative_to(folder.resolve()) for folder in (stage, build.out))
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return OutputError(f"cannot write the output: {reason}", path=where,
                           hint=f"free space on the disk that holds {build.out.parent} (or pass --out on another "
                                f"disk) and run the same command again: it resumes from the unfinished build "
                                f"kept in {stage} (delete that folder to give up and free its space)")
    if written:
        return OutputError(f"cannot write the output: {reason}", path=where,
                           hint=f"check that {build.out.parent} is writable, then run the same command again "
                                f"(it resumes from {stage})")
    return InputError(f"cannot read an input: {reason}", path=where,
                      hint="check that the file exists and is readable, then run the same command again")


__all__ = ["Build", "Built", "NO_UNITS", "Stage", "run_build"]
