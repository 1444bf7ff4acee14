"""Writing and checking ``manifest.json``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import segbench
from segbench.core import clock
from segbench.core.io import read_json, sha256_file, sha256_tree, write_json
from segbench.core.resume import MANIFEST_NAME, NONCE_NAME
from segbench.schemas.manifest import Manifest


def build_manifest(
    *,
    dataset: str,
    builder_version: str,
    root: str | Path,
    params: Mapping[str, Any],
    inputs: Mapping[str, str | Path],
    counts: Mapping[str, Any],
    seed: int | None = None,
    skipped: int = 0,
    now: dt.datetime | None = None,
    input_hashes: Mapping[str, str] | None = None,
    build_key: str | None = None,
    outputs: Mapping[str, str] | None = None,
) -> Manifest:
    """Describe the finished output under ``root``.

    Args:
        inputs: a label per input file (e.g. ``"instances_train2017"``) -> its path; hashed here.
        counts: numbers a reader wants at a glance (images kept, per split, per group, ...).
        now: the timestamp to record (default: ``$SOURCE_DATE_EPOCH`` if set, else the current UTC time).
        input_hashes: the inputs' sha256 when the caller has them already (see ``core.resume``).
        build_key: the build key the output was made under (see ``core.resume.build_key``).
        outputs: the sha256 of each output file when ``root`` is not the output's own folder (the
            SPIN taxonomy shares its folder with the dataset); by default every file under ``root``.
    """
    now = now or clock.now()
    return Manifest(
        dataset=dataset,
        builder_version=builder_version,
        segbench_version=segbench.__version__,
        created_at=now.replace(microsecond=0).isoformat(),
        seed=seed,
        params=dict(params),
        inputs=dict(sorted(input_hashes.items())) if input_hashes is not None
        else {label: sha256_file(path) for label, path in sorted(inputs.items())},
        outputs=dict(outputs) if outputs is not None
        else sha256_tree(root, exclude=[MANIFEST_NAME, NONCE_NAME]),  # the nonce is a stage's bookkeeping
        counts=dict(counts),
        skipped=skipped,
        build_key=build_key,
    )



def write_manifest(root: str | Path, manifest: Manifest, name: str = MANIFEST_NAME) -> Path:
    """Write ``root/name`` atomically; returns its path."""
    return write_json(Path(root) / name, manifest.model_dump(mode="json"), indent=1)


def read_manifest(root: str | Path, name: str = MANIFEST_NAME) -> Manifest:
    """The manifest ``root/name``.

    Raises:
        InputError: it is missing or not JSON (from ``read_json``); ValidationError: not a manifest.
    """
    return Manifest.model_validate(read_json(Path(root) / name))


def verify_outputs(root: str | Path) -> dict[str, list[str]]:
    """Compare the files under ``root`` with its manifest.

    Returns:
        ``{"changed": [...], "missing": [...], "extra": [...]}`` (relative paths, sorted); all
        three empty when the output is exactly what was built.
    """
    root = Path(root)
    expected = read_manifest(root).outputs
    actual = sha256_tree(root, exclude=[MANIFEST_NAME])
    return {
        "changed": sorted(r for r in expected if r in actual and actual[r] != expected[r]),
        "missing": sorted(r for r in expected if r not in actual),
        "extra": sorted(r for r in actual if r not in expected),
    }
