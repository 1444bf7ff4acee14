"""Build keys of evaluations, and the result every evaluation returns.

An evaluation's key (:func:`segbench.core.resume.build_key`) covers the version of its logic, its
parameters (thresholds, τ, prompt kinds, and the input names its report prints, since those are part
of its bytes) and the sha256 of the ground truth and of the predictions it reads. Equal keys mean
byte-equal reports, so an evaluation whose key matches its report's manifest is not run again
(:func:`run_evaluation`, the evaluation's form of :func:`segbench.core.build.run_build`).

Computing metrics is not here: the evaluation flows in ``segbench.flows`` do that.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypedDict

import orjson

from segbench.core.build import Build, Built, run_build
from segbench.core.io import read_json, sha256_bytes
from segbench.core.manifest import MANIFEST_NAME, read_manifest
from segbench.core.reports import METRICS_NAME
from segbench.core.resume import hash_inputs
from segbench.core.versioning import DatasetSource
from segbench.schemas.results import EvaluationResult, M, Result

GROUND_TRUTH = "gt"
PREDICTIONS = "pred"


def ground_truth_hashes(source: DatasetSource, relpaths: Iterable[str], dataset_dir: str | None = None
                        ) -> dict[str, str]:
    """sha256 standing for the ground-truth files an evaluation reads through ``source``.

    When every file belongs to a dataset segbench built (``{dataset_dir}/manifest.json`` lists it), the
    manifest's own hash stands for them all: it records the sha256 of every output, and a dataset is
    only ever swapped in whole, so one small file is read instead of every mask. Otherwise (no
    manifest, or a file it does not list) each file is hashed.

    Args:
        relpaths: the files, as the evaluation reads them from ``source`` (repo-relative).
        dataset_dir: the dataset folder holding them, as the same kind of path.

    Returns:
        ``{"gt:<path>": sha256}``; files are read in the order given, so the first missing one is the
        one the evaluation itself would have named.

    Raises:
        InputError: a file is missing (from :meth:`DatasetSource.read_bytes`, naming it).
    """
    relpaths = list(dict.fromkeys(relpaths))
    if dataset_dir is not None:
        root = dataset_dir.rstrip("/")
        manifest = f"{root}/{MANIFEST_NAME}"
        if source.exists(manifest):
            data = source.read_bytes(manifest)
            listed = _listed_outputs(data)
            if all(rel.startswith(f"{root}/") and rel[len(root) + 1:] in listed for rel in relpaths):
                return {f"{GROUND_TRUTH}:{manifest}": sha256_bytes(data)}
    return {f"{GROUND_TRUTH}:{rel}": sha256_bytes(source.read_bytes(rel)) for rel in relpaths}


def _listed_outputs(manifest: bytes) -> set[str]:
    try:
        outputs = orjson.loads(manifest).get("outputs")
    except (orjson.JSONDecodeError, AttributeError):
        return set()  # not a manifest we wrote: hash the files themselves
    return set(outputs) if isinstance(outputs, dict) else set()


def local_hashes(kind: str, files: Mapping[str, str | Path]) -> dict[str, str]:
    """sha256 of local files (predictions, a ground truth given as a path), labelled ``<kind>:<label>``.

    Raises:
        InputError: a file is missing (naming it).
    """
    return {f"{kind}:{label}": digest for label, digest in hash_inputs(files).items()}


def report_paths(out: str | Path) -> dict[str, str]:
    """``{file stem: path}`` of every top-level file a finished report's manifest lists.

    The stems are the names the report writers return their paths under (``metrics``, ``report``,
    ``per_group_iou``...), so a fresh and an up-to-date evaluation return the same paths.
    """
    out = Path(out)
    return {Path(rel).stem: str(out / rel) for rel in sorted(read_manifest(out).outputs) if "/" not in rel}


class MetricsFile(TypedDict):
    """A report's ``metrics.json``: what was evaluated and the metrics."""

    evaluated: dict[str, Any]
    metrics: dict[str, Any]


def finished_metrics(out: str | Path) -> MetricsFile:
    """The content of a finished report's ``metrics.json``."""
    return read_json(Path(out) / METRICS_NAME)


class _Report(Result):
    """What ``run_build`` returns for a report, before its files are listed."""

    counts: dict[str, Any]
    summary: dict[str, Any]


def run_evaluation(build: Build, body: Callable[..., Built], metrics: type[M], *,
                   force: bool = False, prepare: Callable[[], Any] | None = None,
                   paths: Callable[[str | Path], dict[str, str]] = report_paths,
                   logger: logging.Logger | logging.LoggerAdapter | None = None) -> EvaluationResult[M]:
    """Write the report in ``build.out`` with ``body`` unless it is up to date (:func:`run_build`).

    Args:
        body: as for ``run_build``; it puts the metrics it wrote under ``extras["summary"]``.
        metrics: the evaluation's metrics model; the summary is validated into it (fresh or read back).
        paths: the report's files by name (``report_paths``, or the flow's names for them).
        force, prepare, logger: as for ``run_build``.

    Returns:
        an :class:`EvaluationResult` with ``out``, ``up_to_date``, ``units``, ``summary`` and ``paths``:
        an up-to-date report's summary is read back from its ``metrics.json``.

    Raises:
        Whatever ``prepare`` or ``body`` raise (the stage is kept to resume).
    """
    report = run_build(build, body, _Report, force=force, prepare=prepare, logger=logger,
                       finished=lambda _manifest: {"summary": finished_metrics(build.out)["metrics"]})
    return EvaluationResult(out=report.out, up_to_date=report.up_to_date, units=report.units,
                            summary=metrics.model_validate(report.summary),
                            paths={name: Path(path) for name, path in paths(build.out).items()})
