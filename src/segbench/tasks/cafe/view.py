"""CAFE in ``segbench view``: every exported pair, its edited image with the target mask in field
``target``, the prompts (``text_input``) and the edit's plan as fields."""

from __future__ import annotations

from pathlib import Path

from segbench.schemas.views import ViewFile


def view_files(dataset: Path, rho: str | None = None) -> list[ViewFile]:
    """``CAFE.json`` with its images (``rho`` does not apply)."""
    return [ViewFile(path=Path(dataset) / "CAFE.json", split="test", field="target", images=Path(dataset) / "images")]
