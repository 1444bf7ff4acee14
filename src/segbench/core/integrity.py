"""Data read as a build made it: every file is checked against its build's manifest.

A release is derived from a versioned build, and its card names that version; an evaluation at a
revision reports that version's scores. A file edited, truncated or replaced after the build (in
the working tree, the DVC cache or the remote) would be released or scored under the build's name;
instead the command stops, naming the file. A file belongs to the build whose ``manifest.json`` is
the nearest one above it (``data/coco_cd/manifest.json`` for ``data/coco_cd/masks/…``), and a file
there that its manifest does not list (a stray file, a link put there by hand) stops the command
too; files under no manifest (round records) are read as they are.
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from segbench.core.errors import InputError
from segbench.core.io import sha256_bytes
from segbench.core.resume import MANIFEST_NAME
from segbench.core.versioning import DatasetSource, parse_json


class CheckedSource(DatasetSource):
    """A :class:`DatasetSource` whose reads are checked against the manifests of the builds they belong to."""

    def __init__(self, repo: str | Path, rev: str | None = None) -> None:
        super().__init__(repo, rev)
        self._outputs: dict[str, dict[str, str] | None] = {}  # folder → its manifest's outputs (None: no manifest)
        self._checked: dict[str, str] = {}  # relpath → its sha256, read and found to be what its build wrote

    def _build_of(self, relpath: str) -> tuple[str, dict[str, str]] | None:
        folder = posixpath.dirname(relpath)
        while folder:
            if folder not in self._outputs:
                manifest = f"{folder}/{MANIFEST_NAME}"
                self._outputs[folder] = (parse_json(super().read_bytes(manifest), manifest).get("outputs") or {}
                                         if self.exists(manifest) else None)
            outputs = self._outputs[folder]
            if outputs is not None:
                return folder, outputs
            parent = posixpath.dirname(folder)
            if parent == folder:  # "/" of an absolute path: no build above it
                return None
            folder = parent
        return None

    def read_bytes(self, relpath: str) -> bytes:
        data = super().read_bytes(relpath)
        key = posixpath.normpath(relpath)
        build = self._build_of(key)
        if build is not None:
            folder, outputs = build
            name = key[len(folder) + 1:]  # the folder is one of the key's parents
            expected = outputs.get(name)
            if expected is None and name != MANIFEST_NAME:  # a stray file, or a link put there by hand
                raise InputError(f"not a file the build in {folder} wrote: its manifest does not list it",
                                 path=relpath, hint=f"remove it, or rebuild {folder}, then run the command again")
            if expected is not None and sha256_bytes(data) != expected:
                raise InputError("the file differs from what its build wrote (its manifest's sha256)", path=relpath,
                                 hint=f"rebuild {folder} (or restore it with `dvc checkout`), then run the command again")
            if expected is not None:
                self._checked[key] = expected
        return data

    def copy_to(self, relpath: str, target: Path) -> str:
        """As :meth:`DatasetSource.copy_to`; a file this source has read and checked already is not read
        again (the data root's lock keeps builds from changing while a command reads them)."""
        digest = self._checked.get(posixpath.normpath(relpath))
        if digest is None:
            return super().copy_to(relpath, target)
        self._put(relpath, target, None)
        return digest


def data_source(repo: str | Path, rev: str | None) -> DatasetSource:
    """The reader evaluations use: a version (``rev``) is checked against its builds' manifests, so
    data tampered with in a cache or remote is refused rather than scored; the working tree is read
    as it is."""
    return CheckedSource(repo, rev) if rev is not None else DatasetSource(repo)
