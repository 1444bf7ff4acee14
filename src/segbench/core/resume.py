"""Resuming builds: build keys, skipping up-to-date outputs, and stages that survive a crash.

A *build key* is a hash of everything an output depends on: the dataset, the version of the
builder's logic, the parameters and the sha256 of every input file. It is recorded in the output's
manifest, so a rebuild whose key matches the finished output does nothing (:func:`is_up_to_date`).

A build writes into a *resumable stage*, a sibling folder named after the target and the build key,
and the stage replaces the target whole only when it is complete. The stage is kept when the process
dies (or a step raises), so the next run with the same key finds it and its finished units. Each unit (a shard
of rendered images, a batch of mined captions) is a Prefect task cached under :meth:`Stage.unit_key`;
the key includes the stage's nonce, so units are only reused with the files they wrote: a stage
that was deleted or already swapped in gets a fresh nonce and every unit runs again.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from segbench.core.errors import InputError, OutputError
from segbench.core.io import atomic_write_text, fingerprint, read_json, sha256_file, sha256_tree

NONCE_NAME = ".stage-nonce"
MANIFEST_NAME = "manifest.json"
SOURCES_NAME = "sources.json"  # source files read beyond the build key's inputs: see source_hashes


def hash_inputs(inputs: Mapping[str, str | Path], *, hint: str = "check the path") -> dict[str, str]:
    """sha256 of every input, keyed by its label and sorted; a folder hashes to the hash of its tree.

    Raises:
        InputError: an input does not exist (named, with ``hint``): the loaders that would have said
            so run only after the up-to-date check.
    """
    for path in inputs.values():
        if not Path(path).exists():
            raise InputError("input not found", path=path, hint=hint)
    hashes = {}
    for label, path in sorted(inputs.items()):
        path = Path(path)
        hashes[label] = fingerprint(sha256_tree(path)) if path.is_dir() else sha256_file(path)
    return hashes


def build_key(*, dataset: str, logic_version: str, params: Mapping[str, Any], input_hashes: Mapping[str, str]) -> str:
    """The key of one build: equal keys mean equal outputs (the builders are deterministic)."""
    return fingerprint(
        {"dataset": dataset, "logic": logic_version, "params": dict(params), "inputs": dict(input_hashes)}
    )


def is_up_to_date(out: str | Path, key: str, *, manifest_name: str = MANIFEST_NAME,
                  sources_root: str | Path | None = None) -> bool:
    """Whether ``out`` holds a finished build with this key, every file its manifest lists intact.

    Every listed output is hashed again and compared with its manifest entry, so a damaged or
    replaced output (a truncated mask) is rebuilt instead of trusted; this reads the output once,
    far less than building it. With ``sources_root``, the source files the build recorded in
    ``sources.json`` (files read beyond the key's inputs, e.g. COCO images) are hashed again too
    and must be unchanged (:func:`source_hashes`).
    """
    out = Path(out)
    try:
        manifest = read_json(out / manifest_name)
    except Exception:  # missing or unreadable: not up to date, the build will replace it
        return False
    if not isinstance(manifest, dict) or manifest.get("build_key") != key:
        return False
    outputs = manifest.get("outputs", {})
    if not isinstance(outputs, dict) or not all(_same_file(out / rel, digest) for rel, digest in outputs.items()):
        return False
    if sources_root is None:
        return True
    if SOURCES_NAME not in outputs:
        return False
    try:
        recorded = read_json(out / SOURCES_NAME)["files"]
    except Exception:  # damaged: rebuild
        return False
    return all(_same_file(Path(sources_root) / rel, digest) for rel, digest in recorded.items())


def _same_file(path: Path, digest: str) -> bool:
    try:
        return path.is_file() and sha256_file(path) == digest
    except OSError:
        return False


def source_hashes(root: str | Path, names: Iterable[str]) -> dict[str, str]:
    """sha256 of the files ``names`` (relative to ``root``) a build read, sorted by name.

    A builder that reads files its build key cannot list in advance (COCO images, known only once
    the annotations are loaded) writes these into ``sources.json`` in its output, and the
    up-to-date check (:func:`is_up_to_date` with ``sources_root``) re-hashes them.
    """
    return {name: sha256_file(Path(root) / name) for name in sorted(set(names))}


@dataclass(frozen=True)
class Stage:
    """A folder a build writes into before it becomes the output."""

    path: Path
    key: str
    nonce: str

    def unit_key(self, unit: str) -> str:
        """The cache key of one unit of work inside this stage (``unit`` names it: ``"render/3"``)."""
        return fingerprint({"build": self.key, "stage": self.nonce, "unit": unit})


def check_removable(tree: Path, what: str) -> None:
    """Raise unless every folder under ``tree`` can be emptied and removed by this user: checked
    before an output is replaced, so a folder that cannot be removed stops the swap before it starts,
    not half-way with the old and the new output side by side.

    Raises:
        OutputError: naming the first folder that cannot be read or changed.
    """
    def refuse(folder: str | None) -> None:
        raise OutputError(f"{what} holds a folder this user cannot remove", path=folder or tree,
                          hint=f"give yourself the rights (chmod -R u+rwX {tree}) or remove it, then run the same "
                               "command again")

    for folder, _, _ in os.walk(tree, onerror=lambda exc: refuse(exc.filename)):
        if not os.access(folder, os.R_OK | os.W_OK | os.X_OK):
            refuse(folder)


def check_stage_name_free(path: Path) -> None:
    """Refuse a stage name held by something not a folder (a file, a link): it is not ours to delete.

    Raises:
        OutputError: naming it.
    """
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise OutputError("the stage's name is taken by a file or a link", path=path,
                          hint="move it away (segbench writes its unfinished output there), then run again")


def stage_path(target: str | Path, key: str) -> Path:
    target = Path(target)
    return target.with_name(f".{target.name}.{key[:16]}.partial")


@contextlib.contextmanager
def resumable_stage(target: str | Path, key: str) -> Iterator[Stage]:
    """Build ``target`` in a stage kept across crashes, and swap it in when the block succeeds.

    On entry, an existing stage for the same key is reused with whatever finished units it holds,
    minus the temporary files of writes a crash interrupted.
    On success the stage replaces ``target`` whole and stale stages of other keys are removed. On an
    exception the stage is kept, so fixing the cause and running again resumes.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    path = stage_path(target, key)
    check_stage_name_free(path)
    nonce_file = path / NONCE_NAME
    if nonce_file.is_file():
        nonce = nonce_file.read_text().strip()
        for leftover in path.rglob(".*.tmp"):  # an atomic write the crash cut between write and rename
            leftover.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)  # a stage without its nonce never finished being made
        path.mkdir(mode=0o755)
        nonce = secrets.token_hex(8)
        atomic_write_text(nonce_file, nonce)
    yield Stage(path=path, key=key, nonce=nonce)
    # One flush for everything written into the stage, before it becomes visible. It comes before the
    # nonce goes: a kill during the flush (it can take seconds) then leaves a stage that still resumes.
    os.sync()
    previous = target.with_name(f".{target.name}.previous")
    if previous.exists():  # left by a swap that was killed between its two renames
        check_removable(previous, "a previous output left beside the new one")
        shutil.rmtree(previous)
    if target.exists():
        check_removable(target, "the previous output")
    nonce_file.unlink()
    try:
        if target.exists():
            os.replace(target, previous)
        os.replace(path, target)
    except OSError as exc:
        if previous.exists() and not target.exists():
            os.replace(previous, target)
        atomic_write_text(nonce_file, nonce)  # the stage still resumes
        raise OutputError(f"cannot swap the new output in ({exc.strerror or exc})", path=target,
                          hint=f"check that you may write in {target.parent}, then run the same command again "
                               f"(it resumes from {path})") from exc
    shutil.rmtree(previous, ignore_errors=True)
    for stale in target.parent.glob(f".{target.name}.*.partial"):
        if stale.is_dir():  # stages; the output's lock file (segbench.locking) is a file of that name too
            shutil.rmtree(stale, ignore_errors=True)
