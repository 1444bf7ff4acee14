"""Checks on the folders a command is told to write to, made before any work starts.

Kept free of heavy imports: the command line runs them while it parses its options.
"""

from __future__ import annotations

import os
from pathlib import Path

from segbench.core.errors import InputError


def blocking_file(path: Path) -> Path | None:
    """The regular file that keeps ``path`` from being (or becoming) a folder: itself or a parent."""
    existing = next((p for p in (path, *path.parents) if _exists(p)), None)
    return existing if existing is not None and not existing.is_dir() else None


def check_output_folder(path: str | Path | None) -> Path | None:
    """``path`` (None passes) if it is a folder or can be made one.

    Commands run it on their ``--out`` folder (a typer callback) rather than failing on the first
    write after minutes of work.

    Raises:
        InputError: ``path`` or one of its parents is a regular file, or it cannot be written
            (:func:`check_writable_folder`).
    """
    if path is None:
        return None
    path = Path(path)
    blocker = blocking_file(path)
    if blocker is not None:
        raise InputError("expected a folder, found a file", path=blocker,
                         hint=f"give a folder (new or existing) as {path}, or move the file away")
    return check_writable_folder(path, "output folder")


# A folder's name gains up to this many characters in the names of the working copies a command
# puts beside it: ``.<name>.<64-hex key>.partial``, ``.<name>.build.lock``, ``.<name>.previous``.
SIBLING_NAME_EXTRA = 76
# Room left for the deepest file a command writes inside its folder (``splits/rho_0.95/...``).
INNER_PATH_ROOM = 200


def check_writable_folder(path: str | Path, role: str) -> Path:
    """``path`` if segbench can write in it (or create it) and name what it writes there.

    Checked before any work, so a read-only mount, a folder the user may not write or a name the file
    system cannot hold is one message, not an ``OSError`` minutes later.

    Raises:
        InputError: the nearest existing folder is read-only or not writable, or a name is too long.
    """
    path = Path(path)
    existing = _nearest_existing(path)
    name_max = _limit(existing, "PC_NAME_MAX", 255)
    too_long = next((part for part in path.parts if len(part.encode()) > name_max), None)
    if too_long is None and len(path.name.encode()) + SIBLING_NAME_EXTRA > name_max:
        too_long = path.name
    if too_long is not None:
        raise InputError(f"the {role} has a name of {len(too_long.encode())} bytes; the file system takes names of "
                         f"up to {name_max}, and segbench's working copies beside it add {SIBLING_NAME_EXTRA}",
                         path=path, hint=f"choose a shorter name for the {role}")
    path_max = _limit(existing, "PC_PATH_MAX", 4096)
    if len(str(path.absolute()).encode()) + INNER_PATH_ROOM > path_max:
        raise InputError(f"the {role}'s path is too long for the files segbench writes in it (the file system takes "
                         f"paths of up to {path_max} bytes)", path=path, hint=f"choose a shorter path for the {role}")
    # The folder itself is written, and replaced from beside it: both it and its parent must take writes.
    for folder in dict.fromkeys((existing, _nearest_existing(path.absolute().parent))):
        if not folder.is_dir():
            continue
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            raise InputError(f"the {role} is on a read-only file system", path=folder,
                             hint=f"choose a {role} on a writable disk, or remount it read-write")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise InputError(f"this user may not write in {folder}", path=path,
                             hint=f"choose a {role} you may write in, or change the folder's permissions (chmod u+w)")
    return path


def _nearest_existing(path: Path) -> Path:
    return next((p for p in (path, *path.parents) if _exists(p)), Path("/"))


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long to look up does not exist
        return False


def _limit(folder: Path, name: str, default: int) -> int:
    try:
        return os.pathconf(folder, name)
    except (OSError, ValueError):
        return default
