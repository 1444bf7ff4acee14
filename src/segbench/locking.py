"""One writing command at a time per data root; reading commands side by side.

Every build, round or publish command run from the CLI holds an exclusive lock on its data root for
as long as it runs, so two commands started at once never interleave their writes: the second
waits (``--wait SECONDS``) or stops with a message naming the command that holds the lock.
Evaluations and releases only read the data root: they share the lock with each other and are kept
apart from writers. Outputs are already swapped in atomically (``core.resume.resumable_stage``); the
lock keeps whole commands — build, then publish — from crossing each other.

The lock is an OS file lock (``fcntl.flock``, shared or exclusive) on ``.<data root name>.lock`` next
to the data root, outside it so DVC never versions it. The OS drops it when its process dies, even
under ``kill -9``, so a crash never leaves a stale lock behind, and the last holder removes the file.
A writer writes who it is to a sidecar ``.lock.json`` for the message only; the lock itself never
trusts that file.

Every build also locks its output folder (:func:`output_lock`: ``.<name>.build.lock`` beside it,
removed on release), so two builds with different data roots but the same ``--out`` cannot race
either: the second stops (or waits, with ``--wait``) with the same kind of message.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from segbench.core.errors import BusyError
from segbench.core.paths import check_writable_folder

if TYPE_CHECKING:
    import typer

# What the running CLI command is and how long it may wait for a lock: set by command_lock, read by
# output_lock, which the builders take deep inside a flow where the command line is not known.
_running: dict[str, Any] = {"command": None, "wait": 0.0}


def lock_path(data_root: Path) -> Path:
    root = Path(data_root).resolve()
    return root.parent / f".{root.name}.lock"


def output_lock_path(out: Path) -> Path:
    out = Path(out).resolve()
    return out.parent / f".{out.name}.build.lock"


def _holder(path: Path) -> dict | None:
    try:
        return json.loads(path.with_suffix(".lock.json").read_text())
    except (OSError, ValueError):
        return None


def lock_holder(data_root: Path) -> dict | None:
    """What the current holder wrote about itself (pid, command, since), if anything."""
    return _holder(lock_path(data_root))


@contextmanager
def _held(path: Path, *, target: Path, shared: bool, command: str, wait: float,
          on_wait: Callable[[dict | None], None] | None) -> Iterator[None]:
    """Hold the OS lock on ``path`` (for ``target``), shared or exclusive; a writer records who it is
    in the sidecar. The lock file goes when its last holder releases it."""
    deadline = time.monotonic() + max(wait, 0.0)
    announced = False
    while (fd := _try_lock(path, shared=shared)) is None:
        holder = _holder(path)
        if time.monotonic() >= deadline:
            if holder is None:  # only readers write no record
                busy = "segbench commands are reading this data root (evaluations, releases)"
            else:
                busy = (f"another segbench command is writing to this data root (pid {holder.get('pid', '?')}: "
                        f"{holder.get('command', 'unknown')}, since {holder.get('since', '?')})")
            raise BusyError(busy, path=target, hint="wait for it to finish, or pass --wait SECONDS to queue behind it")
        if not announced and on_wait is not None:
            on_wait(holder)
            announced = True
        time.sleep(0.2)
    sidecar = path.with_suffix(".lock.json")
    try:
        if not shared:
            since = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            sidecar.write_text(json.dumps({"pid": os.getpid(), "command": command, "since": since}))
        yield
    finally:
        if not shared:
            sidecar.unlink(missing_ok=True)
        _release(fd, path)


def _release(fd: int, path: Path) -> None:
    """Release the lock of ``fd``; its last holder removes the file, so a command leaves nothing behind.

    Whoever can take it exclusively is the last (a reader may lose its shared lock in the attempt:
    it is leaving anyway); the file is unlinked while held, and a process that opened it meanwhile
    finds the inode gone once it gets the lock, and opens the new file (:func:`_try_lock`).
    """
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pass  # others hold it: it stays for them
    else:
        with contextlib.suppress(FileNotFoundError):
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                os.unlink(path)
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


@contextmanager
def data_root_lock(data_root: Path, *, command: str, wait: float = 0.0, shared: bool = False,
                   on_wait: Callable[[dict | None], None] | None = None) -> Iterator[None]:
    """Hold the data root's lock for the duration of the ``with`` block.

    Args:
        command: what this process is doing, shown to a command that finds the lock taken.
        wait: seconds to wait for the lock; 0 fails at once.
        shared: a command that only reads the data root: readers share the lock, a writer excludes
            them all (and they it).
        on_wait: called once with the writer's record (None while readers hold it) before waiting.

    Raises:
        BusyError: the lock is still held after ``wait`` seconds.
    """
    with _held(lock_path(data_root), target=Path(data_root), shared=shared, command=command, wait=wait,
               on_wait=on_wait):
        yield


@contextmanager
def output_lock(out: Path, *, command: str) -> Iterator[None]:
    """Hold the lock of a build's output folder (``.<name>.build.lock`` beside it) for the block.

    Builds from different data roots may name the same ``--out``; the data root's lock cannot keep
    them apart, this one does. It waits as long as the running command's ``--wait`` allows.

    Unlike the data root's lock file, this one sits beside a (DVC-versioned) output, so it is
    removed on release; the holder's record is the file's content. A process killed while holding
    it leaves the file, unlocked, and the next build takes it over.

    Raises:
        BusyError: another build holds it (names that build and its pid).
    """
    from segbench import console

    path, wait = output_lock_path(out), float(_running["wait"] or 0.0)
    deadline = time.monotonic() + max(wait, 0.0)
    announced = False
    while (fd := _try_lock(path)) is None:
        holder = _read_holder(path)
        if time.monotonic() >= deadline:
            raise BusyError(f"another segbench build is writing this output folder (pid {holder.get('pid', '?')}: "
                            f"{holder.get('command', 'unknown')}, since {holder.get('since', '?')})", path=Path(out),
                            hint="wait for it to finish, or pass --wait SECONDS to queue behind it")
        if not announced:
            console.err.print(f"waiting for pid {holder.get('pid', '?')}: {holder.get('command', 'another build')} "
                              f"to finish writing {out} …")
            announced = True
        time.sleep(0.2)
    try:
        since = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        record = {"pid": os.getpid(), "command": _running["command"] or command, "since": since}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode(), 0)
        yield
    finally:
        # Unlink while still holding it: a process that opened the old file re-checks the inode and retries.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _try_lock(path: Path, *, shared: bool = False) -> int | None:
    """An fd holding the lock on ``path`` (exclusive, or ``shared``), or None when another process
    holds it in a mode that excludes ours."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)  # the holder removed it between our open and our lock: take the new file


def _read_holder(path: Path) -> dict:
    try:
        return json.loads(path.read_text()) or {}
    except (OSError, ValueError):
        return {}


@contextmanager
def command_lock(ctx: typer.Context, *, reads_only: bool = False) -> Iterator[None]:
    """The data root's lock for a running CLI command (the root context holds settings and ``--wait``).

    A command that writes in the data root (``reads_only`` False) is refused at once when it cannot:
    a read-only mount, no permission, a name too long."""
    from segbench import console

    obj = ctx.find_root().obj
    data_root = obj["settings"].data_root

    def waiting(holder: dict | None) -> None:
        who = f"pid {holder['pid']}: {holder['command']}" if holder else "the commands reading it"
        console.err.print(f"waiting for {who} to release {data_root} …")

    wait = obj.get("wait", 0.0)
    if not reads_only:
        check_writable_folder(data_root, "data root")
    with data_root_lock(data_root, command=ctx.command_path, wait=wait, shared=reads_only, on_wait=waiting):
        previous = dict(_running)
        _running.update(command=ctx.command_path, wait=wait)
        try:
            yield
        finally:
            _running.update(previous)
