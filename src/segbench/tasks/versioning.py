"""Dataset versions: DVC tracking of ``data/`` and reading a published version back.

This module is the only one that runs ``git`` or ``dvc`` or imports ``dvc.api``.
"""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Any

from segbench.errors import InputError, VersioningError


class DatasetSource:
    """Read files of the project's data, either from the working tree or at a git revision.

    Args:
        repo: the project (git + DVC) root; paths are given relative to it, e.g.
            ``"data/coco_cd/splits/rho_0.95/test.json"``.
        rev: a git revision (commit, tag, branch). ``None`` reads the working tree directly.

    With a revision, files are read through DVC, from the local cache or the configured remote.
    """

    def __init__(self, repo: str | Path, rev: str | None = None) -> None:
        self.repo = Path(repo).resolve()
        self.rev = rev

    @cached_property
    def _fs(self) -> Any:
        from dvc.api import DVCFileSystem

        try:
            return DVCFileSystem(str(self.repo), rev=self.rev)
        except Exception as exc:  # dvc raises many unrelated types for a bad repo or rev
            raise VersioningError(
                f"cannot open revision {self.rev!r} ({exc})",
                path=self.repo,
                hint="check the revision with `git log`, and that the folder is a git + DVC repo",
            ) from None

    def describe(self) -> str:
        return f"{self.repo}@{self.rev}" if self.rev else str(self.repo)

    def exists(self, relpath: str) -> bool:
        if self.rev is None:
            return (self.repo / relpath).is_file()
        return bool(self._fs.isfile(relpath))

    def read_bytes(self, relpath: str) -> bytes:
        """The bytes of one file. Raises :class:`InputError` naming the file when it is absent."""
        if self.rev is None:
            path = self.repo / relpath
            if not path.is_file():
                raise InputError("file not found", path=path, hint="build or publish the dataset first")
            return path.read_bytes()
        try:
            with self._fs.open(relpath, mode="rb") as handle:
                return handle.read()
        except FileNotFoundError:
            raise InputError(
                f"file not found at revision {self.rev}",
                path=relpath,
                hint="check the dataset path and that this revision published it",
            ) from None
        except Exception as exc:
            raise VersioningError(
                f"cannot read at revision {self.rev} ({exc})",
                path=relpath,
                hint="run `dvc pull` or configure the DVC remote that holds this version",
            ) from None

    def read_json(self, relpath: str) -> Any:
        data = self.read_bytes(relpath)
        try:
            return json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"not valid JSON ({exc})", path=relpath) from None
