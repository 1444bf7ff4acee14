"""The manifest every builder writes next to its output."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Manifest(BaseModel):
    """What was built, from what, by which code, with which parameters.

    Everything but ``created_at`` is a function of the inputs, the parameters and the code, so two
    builds of the same inputs give manifests that differ only in that timestamp (and not even there
    when ``SOURCE_DATE_EPOCH`` fixes it, as reproducible-build tooling does).
    """

    dataset: str
    builder_version: str = Field(description="version of the builder's logic; bumped when output changes")
    segbench_version: str
    created_at: str
    seed: int | None = None
    params: dict[str, Any]
    inputs: dict[str, str] = Field(description="input file (as given) -> sha256")
    outputs: dict[str, str] = Field(description="output file relative to the dataset root -> sha256")
    counts: dict[str, Any]
    skipped: int = 0
    build_key: str | None = Field(
        default=None, description="hash of dataset, logic version, params and input hashes; a rebuild with it is a no-op"
    )
