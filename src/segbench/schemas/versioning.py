"""Records of published dataset versions (what ``segbench publish`` returns and logs).

Only the shapes live here; running git and DVC belongs to :mod:`segbench.core.versioning`.
No field holds a remote URL or a credential: a record names the remote, never its location.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class DatasetEntry(BaseModel):
    """One dataset found in the published data folder (a top-level folder with a manifest)."""

    model_config = ConfigDict(frozen=True)

    folder: str = Field(description="folder name under the data directory")
    dataset: str = Field(description="the manifest's `dataset`")
    builder_version: str
    counts: dict[str, Any]


class TrackedData(BaseModel):
    """What ``dvc add`` recorded for the data directory (read back from its ``.dvc`` file)."""

    model_config = ConfigDict(frozen=True)

    md5: str = Field(description="DVC's directory hash, as in the .dvc file (ends in '.dir')")
    nfiles: int
    size: int = Field(description="total size of the tracked files in bytes")
    changed: bool = Field(description="the hash differs from the one tracked before this publish")


class CommitInfo(BaseModel):
    """The git commit that holds a published version."""

    model_config = ConfigDict(frozen=True)

    sha: str
    created: bool = Field(description="False when there was nothing to commit and HEAD already held it")
    tag: str | None = None


class PublishRecord(BaseModel):
    """The outcome of one publish: which data version, where it was pushed, which commit holds it."""

    model_config = ConfigDict(frozen=True)

    data_dir: str = Field(description="the tracked directory, relative to the repository root")
    md5: str
    nfiles: int
    size: int
    changed: bool
    pushed: bool
    remote: str | None = Field(description="name of the DVC remote pushed to (never its URL)")
    commit: str | None = Field(description="sha of the commit holding data.dvc, when committing")
    committed: bool = Field(description="a new commit was created by this publish")
    tag: str | None = None
    datasets: list[DatasetEntry]

    @classmethod
    def from_steps(
        cls,
        data_dir: str,
        tracked: TrackedData,
        datasets: list[DatasetEntry],
        remote: str | None,
        commit: CommitInfo | None,
    ) -> PublishRecord:
        """Assemble the record from the outcomes of the publish steps (``remote``: pushed to, or None)."""
        return cls(
            data_dir=data_dir,
            md5=tracked.md5,
            nfiles=tracked.nfiles,
            size=tracked.size,
            changed=tracked.changed,
            pushed=remote is not None,
            remote=remote,
            commit=commit.sha if commit else None,
            committed=bool(commit and commit.created),
            tag=commit.tag if commit else None,
            datasets=datasets,
        )
