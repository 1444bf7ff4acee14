"""What the resumable dataset flows share around :mod:`segbench.core.resume`.

The manifest of a finished stage, and the summary of a build that found its output up to date.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from segbench.schemas.manifest import Manifest
from segbench.core.manifest import build_manifest, read_manifest
from segbench.core.resume import Stage


def stage_manifest(stage: Stage, **fields: Any) -> Manifest:
    """The manifest of a finished stage, under its build key (``fields`` as for ``build_manifest``)."""
    return build_manifest(root=stage.path, build_key=stage.key, **fields)


def up_to_date_summary(out: Path, **extra: Any) -> dict[str, Any]:
    """The summary of a build that changed nothing: the counts recorded when ``out`` was built."""
    return {"out": str(out), "up_to_date": True, "counts": read_manifest(out).counts, **extra}
