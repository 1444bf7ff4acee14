"""One writing command at a time per data root.

Every build, round, publish or evaluation command run from the CLI holds an exclusive lock on its
data root for as long as it runs, so two commands started at once never interleave their writes:
the second waits (``--wait SECONDS``) or stops with a message naming the command that holds the
lock. Outputs are already swapped in atomically (``core.resume.resumable_stage``); the lock keeps
whole commands — build, then publish — from crossing each other.

The lock is an OS file lock (``fcntl`` through ``filelock``) on ``.<data root name>.lock`` next to
the data root, outside it so DVC never versions it. The OS drops it when its process dies, even
under ``kill -9``, so a crash never leaves a stale lock behind. Who holds it is written to a
sidecar ``.lock.json`` for the message only; the lock itself never trusts that file.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from filelock import FileLock, Timeout

from segbench.core.errors import BusyError


def lock_path(data_root: Path) -> Path:
    root = Path(data_root).resolve()
    return root.parent / f".{root.name}.lock"


def lock_holder(data_root: Path) -> dict | None:
    """What the current holder wrote about itself (pid, command, since), if anything."""
    try:
        return json.loads(lock_path(data_root).with_suffix(".lock.json").read_text())
    except (OSError, ValueError):
        return None


@contextmanager
def data_root_lock(data_root: Path, *, command: str, wait: float = 0.0,
                   on_wait: Callable[[dict | None], None] | None = None) -> Iterator[None]:
    """Hold the data root's lock for the duration of the ``with`` block.

    Args:
        command: what this process is doing, shown to a command that finds the lock taken.
        wait: seconds to wait for the lock; 0 fails at once.
        on_wait: called once with the holder's record before waiting.

    Raises:
        BusyError: the lock is still held after ``wait`` seconds.
    """
    path = lock_path(data_root)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if wait > 0 and on_wait is not None:
            on_wait(lock_holder(data_root))
        try:
            lock.acquire(timeout=max(wait, 0))
        except Timeout:
            holder = lock_holder(data_root) or {}
            raise BusyError(
                f"another segbench command is writing to this data root"
                f" (pid {holder.get('pid', '?')}: {holder.get('command', 'unknown')}, since {holder.get('since', '?')})",
                path=Path(data_root), hint="wait for it to finish, or pass --wait SECONDS to queue behind it",
            ) from None
    sidecar = path.with_suffix(".lock.json")
    try:
        since = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        sidecar.write_text(json.dumps({"pid": os.getpid(), "command": command, "since": since}))
        yield
    finally:
        sidecar.unlink(missing_ok=True)
        lock.release()



@contextmanager
def command_lock(ctx: typer.Context) -> Iterator[None]:
    """The data root's lock for a running CLI command (the root context holds settings and ``--wait``)."""
    from segbench import console

    obj = ctx.find_root().obj
    data_root = obj["settings"].data_root

    def waiting(holder: dict | None) -> None:
        who = f"pid {holder['pid']}: {holder['command']}" if holder else "another command"
        console.err.print(f"waiting for {who} to release {data_root} …")

    with data_root_lock(data_root, command=ctx.command_path, wait=obj.get("wait", 0.0), on_wait=waiting):
        yield
