"""What the resumable dataset flows share around :mod:`segbench.tasks.resume`.

Hashing a build's inputs with a named error when one is missing (the loaders that would have said so
run after the up-to-date check), the manifest of a finished stage, and the summary of a build that
found its output up to date.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from segbench.errors import InputError
from segbench.schemas.manifest import Manifest
from segbench.tasks.manifest import build_manifest, read_manifest
from segbench.tasks.resume import Stage, hash_inputs


def hash_sources(inputs: Mapping[str, str | Path], *, hint: str = "check the path") -> dict[str, str]:
    """:func:`~segbench.tasks.resume.hash_inputs`, raising :class:`InputError` naming a missing input."""
    for path in inputs.values():
        if not Path(path).exists():
            raise InputError("input not found", path=path, hint=hint)
    return hash_inputs(inputs)


def stage_manifest(stage: Stage, **fields: Any) -> Manifest:
    """The manifest of a finished stage, under its build key (``fields`` as for ``build_manifest``)."""
    return build_manifest(root=stage.path, build_key=stage.key, **fields)


def up_to_date_summary(out: Path, **extra: Any) -> dict[str, Any]:
    """The summary of a build that changed nothing: the counts recorded when ``out`` was built."""
    return {"out": str(out), "up_to_date": True, "counts": read_manifest(out).counts, **extra}
