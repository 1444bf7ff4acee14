"""The one module that runs FiftyOne: ``segbench view``'s documents loaded, and its App served.

FiftyOne lives in an environment of its own (``scripts/fiftyone.sh install`` puts it in
``<fiftyone_dir>/venv``): its pinned web stack cannot share segbench's. A view document is written as
JSON and loaded by ``resources/fiftyone_view.py`` run with that environment's Python, which serves
the App on 127.0.0.1 until the command ends. FiftyOne's database, its home and telemetry setting stay
under ``<fiftyone_dir>``: nothing is written to ``$HOME`` and nothing is sent anywhere.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from segbench.core.errors import InputError, ServiceError
from segbench.core.io import atomic_write_text
from segbench.core.process import tie_to_parent
from segbench.schemas.views import ViewDocument, ViewLoaded

INSTALL_HINT = "install FiftyOne with: scripts/fiftyone.sh install (its own environment, about 1 GB)"


def python(fiftyone_dir: Path) -> Path:
    """The Python of FiftyOne's environment.

    Raises:
        InputError: FiftyOne is not installed there.
    """
    path = Path(fiftyone_dir) / "venv" / "bin" / "python"
    if not path.is_file():
        raise InputError("FiftyOne is not installed", path=path.parent.parent, hint=INSTALL_HINT)
    return path


def _env(fiftyone_dir: Path) -> dict[str, str]:
    folder = Path(fiftyone_dir).resolve()
    return {**os.environ, "HOME": str(folder / "home"), "FIFTYONE_DATABASE_DIR": str(folder / "database"),
            "FIFTYONE_DO_NOT_TRACK": "true", "FIFTYONE_DATABASE_VALIDATION": "false",
            "FIFTYONE_SHOW_PROGRESS_BARS": "false"}


def show(document: ViewDocument, fiftyone_dir: Path, *, port: int | None,
         ready: Callable[[ViewLoaded], None]) -> ViewLoaded:
    """Load ``document`` into FiftyOne; with ``port``, serve the App there until SIGINT/SIGTERM.

    ``ready`` is told what was loaded (and the App's address) as soon as it is; the call then waits.

    Raises:
        InputError: FiftyOne is not installed.
        ServiceError: FiftyOne failed (the file holding its output is named).
    """
    executable = python(fiftyone_dir)
    folder = Path(fiftyone_dir) / "views"
    path = atomic_write_text(folder / f"{document.name}.json", document.model_dump_json())
    log = folder / f"{document.name}.log"
    script = resources.files("segbench.resources").joinpath("fiftyone_view.py")
    command = [str(executable), str(script), str(path), *(["--port", str(port)] if port is not None else [])]
    with log.open("w") as errors:
        # A session of its own (Ctrl-C reaches the command, which stops it) and tied to the command.
        process = subprocess.Popen(command, env=_env(fiftyone_dir), stdout=subprocess.PIPE, stderr=errors, text=True,
                                   start_new_session=True, preexec_fn=tie_to_parent())
        try:
            return _follow(process, log, port, ready)
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()


READY_SECONDS = 600.0  # loading and starting the App; a FiftyOne silent for longer is stopped


def _follow(process: subprocess.Popen[str], log: Path, port: int | None,
            ready: Callable[[ViewLoaded], None]) -> ViewLoaded:
    """Read the loader's lines: what it loaded, then (with a port) the App's address; then wait.

    A loader that is not ready within :data:`READY_SECONDS` is stopped, so a hung FiftyOne does not hang
    the command.
    """
    assert process.stdout is not None
    hung = threading.Event()

    def stop_hung() -> None:
        hung.set()
        process.terminate()

    deadline = threading.Timer(READY_SECONDS, stop_hung)
    deadline.start()
    loaded: ViewLoaded | None = None
    try:
        for line in process.stdout:
            if loaded is None and line.startswith("{"):
                loaded = ViewLoaded.model_validate_json(line)
                if port is None:
                    break
            elif loaded is not None and line.startswith("app: "):
                deadline.cancel()
                loaded = loaded.model_copy(update={"app": line.removeprefix("app: ").strip()})
                ready(loaded)
                process.wait()  # the App is served until the command is interrupted
                return loaded
        if process.wait(timeout=120) == 0 and loaded is not None and port is None:
            ready(loaded)
            return loaded
    finally:
        deadline.cancel()
    if hung.is_set():
        raise ServiceError(f"FiftyOne was not ready after {READY_SECONDS:g} s and was stopped", path=log,
                           hint="its output so far is in the file named; " + INSTALL_HINT)
    tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.is_file() else []
    raise ServiceError("FiftyOne did not load the view" + (f": {tail[0]}" if tail else ""), path=log,
                       hint="its whole output is in the file named; " + INSTALL_HINT)
