"""Hostile inputs for the build commands: small worlds, hostile files and the checks every case makes.

Every hostile case asserts the same things: the command ends with a segbench error (exit code 2 from
the console entry point; in-process, exit 1 with the typed error on ``result.exception``), the
message names the file or item and says what to do, no traceback is printed, and an output that was
there before is byte-identical afterwards (:func:`tree_hash`).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PIL import Image
from typer.testing import CliRunner

import segbench
from segbench.cli import app
from segbench.core.errors import SegbenchError
from segbench.core.io import fingerprint, sha256_tree

from .commands import check_fix_lines

WORLD_SIZES = {"cat/indoor": 12, "cat/outdoor": 8, "dog/indoor": 8, "dog/outdoor": 12}
COCO_CD_OPTIONS = ("--val-per-group", "2", "--test-per-group", "3")
BOMB_SIDE = 30_000  # 9·10⁸ pixels: over twice Pillow's limit, so opening it raises DecompressionBombError


def bomb_png(path: Path, side: int = BOMB_SIDE) -> Path:
    """A valid PNG header claiming ``side`` × ``side`` grey pixels, with one tiny IDAT (a few bytes on disk)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00" * 16))
                     + chunk(b"IEND", b""))
    return path


def tree_hash(root: Path) -> str | None:
    """One hash of every file (hidden ones too) under ``root`` and its path; None when it does not exist."""
    return fingerprint(sha256_tree(root)) if root.exists() else None


def invoke(project: Path, *args: str, data_root: Path | None = None):
    """``segbench --data-root … --work-dir … ARGS`` in-process; the result, whatever its exit code."""
    data = data_root or project / "data"
    result = CliRunner().invoke(app, ["--data-root", str(data), "--work-dir", str(project / "work"), *args])
    check_fix_lines(f"{result.output}\n{result.exception or ''}")
    return result


def refused(project: Path, *args: str, names: tuple[str, ...], data_root: Path | None = None,
            error: type[SegbenchError] = SegbenchError) -> SegbenchError:
    """Run a command that must end in a segbench error whose message holds every one of ``names``
    and a fix; returns the error. In-process the error stays on ``result.exception`` (the console
    entry point prints its message and exits 2: see :func:`console_run`)."""
    result = invoke(project, *args, data_root=data_root)
    assert result.exit_code == 1 and isinstance(result.exception, error), (result.output, repr(result.exception))
    message = str(result.exception)
    for name in names:
        assert str(name) in message, f"{name!r} not named in: {message}"
    assert "fix:" in message, f"no fix in: {message}"
    assert "Traceback" not in result.output
    return result.exception


def usage_refused(project: Path, *args: str, option: str) -> str:
    """A command refused by its option parser: exit code 2, the option named, no traceback."""
    result = invoke(project, *args)
    assert result.exit_code == 2, (result.output, repr(result.exception))
    assert option in result.output and "Traceback" not in result.output
    return result.output


def child_env() -> dict[str, str]:
    """The environment of a child Python that imports the segbench under test (not another install)."""
    source = str(Path(segbench.__file__).resolve().parent.parent)
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH")) if p)}


def own_server_env(idle_minutes: int) -> dict[str, str]:
    """A child's environment with no Prefect API or home of the session: segbench starts the work dir's
    own server, as for a user, which stops after ``idle_minutes`` without use."""
    kept = ("PREFECT_SERVER_ANALYTICS_ENABLED", "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS")
    env = {key: value for key, value in child_env().items() if not key.startswith("PREFECT_") or key in kept}
    return {**env, "SEGBENCH_SERVER_IDLE_MINUTES": str(idle_minutes)}


def console_run(project: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m segbench --data-root … ARGS`` as a user types it (console entry point, its own Prefect
    home; the API is the session's server, which the test asks for with ``prefect_harness``)."""
    env = {**child_env(), "COLUMNS": "200"}
    for key in ("PREFECT_HOME", "PREFECT_LOCAL_STORAGE_PATH"):
        env.pop(key, None)
    command = [sys.executable, "-m", "segbench", "--data-root", str(project / "data"), "--work-dir",
               str(project / "work"), *args]
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=timeout)
    check_fix_lines(done.stderr)
    return done


def copy_tree(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)
    return target


def edit_json(path: Path, edit: Callable[[Any], Any]) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def used_coco_image(out: Path) -> dict[str, Any]:
    """The first test image of a finished COCO-CD build (its record in ``splits/rho_0.95/test.json``)."""
    return json.loads((out / "splits" / "rho_0.95" / "test.json").read_text())["images"][0]


def coco_instances_file(world: Path, image_id: int) -> Path:
    """The instances file of the world that lists ``image_id``."""
    for split in ("train2017", "val2017"):
        path = world / "annotations" / f"instances_{split}.json"
        if any(image["id"] == image_id for image in json.loads(path.read_text())["images"]):
            return path
    raise AssertionError(f"image {image_id} is in no instances file")


def resize_png(path: Path, size: tuple[int, int]) -> None:
    with Image.open(path) as image:
        resized = image.resize(size)
    resized.save(path)
