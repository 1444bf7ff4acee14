"""What every build and evaluation returns: the shared base of the per-dataset result models.

A flow returns one of these models; the command line reads its attributes, and ``--json`` prints
``model_dump(mode="json")``. Counts are validated when the build finishes, before its manifest is
written, so a misspelt or missing count fails the build that made it, not the command that reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, SerializeAsAny, SerializerFunctionWrapHandler, model_serializer

from segbench.schemas.versioning import PublishRecord


class Units(BaseModel):
    """Units of work of a resumable build: computed now, or reused from an interrupted run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    computed: int
    reused: int


# What an output found up to date computed and replayed: nothing.
NO_UNITS = Units(computed=0, reused=0)


class Usage(BaseModel):
    """What a provider spent in one run: calls made, cache hits, tokens, estimated cost."""

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    reasks: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, other: Usage) -> Usage:
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})

    def since(self, before: Usage) -> Usage:
        """What was spent between ``before`` and this (a provider's usage only grows)."""
        return Usage(**{k: getattr(self, k) - getattr(before, k) for k in Usage.model_fields})


class WithoutNone(BaseModel):
    """A model whose entries that are None are left out of its JSON (optional counts not counted)."""

    model_config = ConfigDict(extra="forbid")

    @model_serializer(mode="wrap")
    def _without_none(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {key: value for key, value in handler(self).items() if value is not None}


class Counts(BaseModel):
    """The base of a dataset's counts (the numbers its manifest records): a name it does not declare is refused."""

    model_config = ConfigDict(extra="forbid")


class Result(BaseModel):
    """What every build and evaluation returns: where the output is, whether it was up to date, its units."""

    model_config = ConfigDict(extra="forbid")

    out: Path
    up_to_date: bool
    units: Units | None = None


class BuildSummary(Result):
    """A build's summary; each dataset narrows ``counts`` and adds its extras.

    ``publish`` is set when the command also published a DVC version, and left out of the JSON otherwise.
    """

    counts: Counts
    publish: PublishRecord | None = None

    @model_serializer(mode="wrap")
    def _without_unset_publish(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if self.publish is None:
            data.pop("publish", None)
        return data


# An evaluation's metrics model (FlipSummary, CafeMetrics, CgF1Summary, SpinMetrics, VocabMetrics, ...).
M = TypeVar("M", bound=BaseModel)


class EvaluationResult(Result, Generic[M]):
    """An evaluation's result: its metrics as the evaluation's model (``metrics.json``'s ``metrics`` is
    their dump) and the report's files by name (``report``, ``metrics``, plots...).

    Typed ``EvaluationResult[CafeMetrics]`` and so on; the metrics serialise as their own model.
    """

    summary: SerializeAsAny[M]
    paths: dict[str, Path]

    @property
    def report(self) -> Path:
        """The report for people (``report.md``): every evaluation writes one."""
        return self.paths["report"]


class DemoPart(BaseModel):
    """The base of one dataset's results in ``segbench demo``: what it built, and the paths worth opening."""

    model_config = ConfigDict(extra="forbid")

    paths: dict[str, Path]


class DemoResult(BaseModel):
    """What ``segbench demo`` returns: each dataset's results, the DVC version published, the paths to open."""

    model_config = ConfigDict(extra="forbid")

    datasets: dict[str, SerializeAsAny[DemoPart]]
    publish: PublishRecord
    paths: dict[str, Path]
