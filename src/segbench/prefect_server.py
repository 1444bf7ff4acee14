"""The one module that starts, stops and talks to Prefect API server processes.

Every flow reports to a Prefect API. segbench gives it one of two, both on 127.0.0.1:

* the **persistent server** of a work dir: ``prefect server start`` with its own SQLite database
  under ``<work dir>/prefect-server/``, recorded in ``server.json`` there (pid, port, URL). Every
  later command with the same work dir finds it and exports ``PREFECT_API_URL`` when it is about to
  import Prefect, so no command pays a server start. ``segbench server start`` starts one that stays
  up until ``segbench server stop``; the first command that runs a flow without one starts one in
  the background (:func:`server_on_demand`), watched by a small process that stops it after
  ``idle_minutes`` without a command using it, as long-lived tool daemons do. A command using it
  holds a shared lock on ``in-use`` and touches ``last-used``; the watcher stops the server only
  under the exclusive lock, so never under a running command.
* a **private per-command server** when idle stopping is off (``server_idle_minutes = 0``): the
  same process Prefect's own temporary server runs, but started by segbench, in a session of its
  own (so Ctrl-C on the terminal reaches the command, which then stops its flow cleanly, not the
  server under it) and with ``PR_SET_PDEATHSIG`` (so even a ``kill -9`` of the command takes it
  down). It starts only when the command imports Prefect, i.e. when it is about to run a flow, and
  says once how to avoid the wait.

Nothing here imports Prefect: commands that only read local state must not pay for it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType

from segbench.core.errors import ServiceError
from segbench.core.process import tie_to_parent

STATE_NAME = "server.json"
LOG_NAME = "server.log"
IN_USE_NAME, LAST_USED_NAME = "in-use", "last-used"
STOP_TIMEOUT = 10.0  # seconds between SIGTERM and SIGKILL
START_TIMEOUT = 120.0  # a first start on a new database takes 10-20 s here, more on a loaded machine
# Telemetry and update checks off: segbench makes no network calls of its own accord.
QUIET_ENV = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}
HINT = ("note: no Prefect server is running, so this command starts a temporary one (10-20 s); "
        "`segbench server start` keeps one up for every command")
STARTING_HINT = ("note: starting a local Prefect server for this and later commands (once, 10-20 s); it stops "
                 "after {minutes:g} min without use, `segbench server stop` stops it now")


@dataclasses.dataclass(frozen=True)
class ServerState:
    """A server segbench started: its process (pid and start time, against pid reuse) and where it listens."""

    pid: int
    started: int  # the process's start time in clock ticks since boot (/proc/<pid>/stat field 22)
    port: int
    idle_minutes: float | None = None  # stopped after this long without use; None: until `server stop`
    folder: str | None = None  # the server folder that started it: a copy of the work dir has a server of its own

    @property
    def url(self) -> str:
        """The address of the UI."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        """What ``PREFECT_API_URL`` must say."""
        return f"{self.url}/api"


def server_dir(work_dir: Path) -> Path:
    """Where the persistent server keeps its database, state file and log."""
    return Path(work_dir).resolve() / "prefect-server"


# --- processes ---------------------------------------------------------------------------------------

def _start_time(pid: int) -> int | None:
    """The start time of a live process (``None`` when there is none, or only a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # the command name in parentheses may contain spaces
    return None if fields[0] in "ZX" else int(fields[19])


def _is_alive(state: ServerState) -> bool:
    return _start_time(state.pid) == state.started


def free_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1 now (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _server_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}  # a server is not its own client
    return {**env, **QUIET_ENV, **extra}


def _spawn(args: Sequence[str], env: dict[str, str], log: Path, *, tied: bool) -> subprocess.Popen[bytes]:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(list(args), env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=tie_to_parent() if tied else None)


def _healthy(api_url: str, timeout: float = 2.0) -> bool:
    return probe(api_url, timeout) is True


def _wait_healthy(process: subprocess.Popen[bytes], api_url: str, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not _healthy(api_url):
        if process.poll() is not None:
            raise ServiceError(f"the Prefect server exited with code {process.returncode} while starting",
                               path=log, hint=f"see the end of {log}")
        if time.monotonic() > deadline:
            _terminate(process.pid)
            raise ServiceError(f"the Prefect server did not answer within {timeout:.0f} s", path=log,
                               hint="the machine may be busy: try again, or see the log")
        time.sleep(0.1)


def _terminate(pid: int, timeout: float = STOP_TIMEOUT) -> None:
    """SIGTERM the server's process group (it leads one), then SIGKILL what is left after ``timeout``."""
    started = _start_time(pid)
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + wait
        while started is not None and _start_time(pid) == started and time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # reap it when it is ours, or it stays a zombie
            time.sleep(0.05)
        if started is None or _start_time(pid) != started:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # a zombie child of ours: reap it
            return


# --- the persistent server -----------------------------------------------------------------------------

def read_state(work_dir: Path) -> ServerState | None:
    """The persistent server of ``work_dir`` if it is running. A stale state file counts as none, and so
    does one another folder wrote (a work dir copied with ``cp -a`` or restored from a backup): the
    copy's commands must not write their runs into the original's database."""
    folder = server_dir(work_dir)
    try:
        state = ServerState(**json.loads((folder / STATE_NAME).read_text()))
    except (OSError, ValueError, TypeError):
        return None
    if state.folder is not None and state.folder != str(folder):
        return None
    return state if _is_alive(state) else None


@contextlib.contextmanager
def _server_lock(work_dir: Path) -> Iterator[None]:
    """One start or stop at a time per work dir (two ``server start`` at once start one server)."""
    folder = server_dir(work_dir)
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def start_server(work_dir: Path, *, timeout: float = START_TIMEOUT, tied: bool = False,
                 idle_minutes: float | None = None) -> tuple[ServerState, bool]:
    """Start the persistent server of ``work_dir`` and wait until it answers; ``(state, started)``.

    Returns the running one (``started`` False) when it is already up; asked for one without
    ``idle_minutes``, a running one started on demand then runs until stopped too (its watcher lets
    it be). ``tied`` makes it end with this process; ``idle_minutes`` starts a watcher that stops it
    after that long without use.

    Raises:
        ServiceError: the server exited or did not answer within ``timeout`` (names its log).
    """
    folder = server_dir(work_dir)
    with _server_lock(work_dir):
        running = read_state(work_dir)
        if running is not None and running.idle_minutes is not None and idle_minutes is None:
            running = dataclasses.replace(running, idle_minutes=None)
            _write_state(folder, running)
        if running is not None:
            return running, False
        port, log = free_port(), folder / LOG_NAME
        env = _server_env({
            "PREFECT_HOME": str(folder / "home"),
            "PREFECT_API_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{folder / 'prefect.db'}",
            # The UI asks its own origin for the API: else it calls Prefect's default port, not this one.
            "PREFECT_UI_API_URL": "/api",
        })
        process = _spawn([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                          "--port", str(port)], env, log, tied=tied)
        state = ServerState(pid=process.pid, started=_start_time(process.pid) or 0, port=port,
                            idle_minutes=idle_minutes, folder=str(folder))
        _wait_healthy(process, state.api_url, log, timeout)
        _write_state(folder, state)
        if idle_minutes is not None:
            (folder / LAST_USED_NAME).touch()
            _spawn([sys.executable, "-m", "segbench.prefect_server", "watch", str(folder)], _server_env({}),
                   folder / "watch.log", tied=False)
        return state, True


def _write_state(folder: Path, state: ServerState) -> None:
    tmp = folder / f".{STATE_NAME}.tmp"
    tmp.write_text(json.dumps(dataclasses.asdict(state), sort_keys=True))
    tmp.replace(folder / STATE_NAME)


def stop_server(work_dir: Path, *, timeout: float = STOP_TIMEOUT,
                only: ServerState | None = None) -> ServerState | None:
    """Stop the persistent server of ``work_dir`` (SIGTERM, SIGKILL after ``timeout``); the one stopped, or None.

    With ``only``, nothing happens unless that is still its state (the idle watcher's stop, which a
    ``server start`` asking to keep the server may have overtaken)."""
    with _server_lock(work_dir):
        state = read_state(work_dir)
        if only is not None and state != only:
            return None
        if state is not None:
            _terminate(state.pid, timeout)
        (server_dir(work_dir) / STATE_NAME).unlink(missing_ok=True)
        return state


def server_status(work_dir: Path) -> tuple[ServerState | None, bool]:
    """``(state, healthy)``: the running server of ``work_dir`` (or None) and whether it answers."""
    state = read_state(work_dir)
    return state, state is not None and _healthy(state.api_url)


def drain_prefect_workers() -> None:
    """Send the logs and events Prefect still holds to its API now (if Prefect is in use)."""
    if "prefect" not in sys.modules:
        return
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    with contextlib.suppress(RuntimeError):  # never started
        APILogWorker.drain_all()
    EventsWorker.drain_all()


def check_configured_api(url: str) -> None:
    """Check the form of a ``PREFECT_API_URL`` the user set (whether it answers is
    :func:`ensure_api_answers`, when a flow is about to run).

    Raises:
        InputError: not an http(s) URL.
    """
    from urllib.parse import urlsplit

    from segbench.core.errors import InputError

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is no number, or out of range
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        valid = False
    if not valid:
        raise InputError(f"PREFECT_API_URL={url!r} is not an http(s) URL",
                         hint="set it to a Prefect API, e.g. http://127.0.0.1:4200/api, or unset it (segbench then "
                              "starts a server itself)")


def ensure_api_answers() -> None:
    """Before a command runs its flows: the Prefect API ``PREFECT_API_URL`` names answers (a server
    segbench starts answers by then), so a dead one is a clear error, not Prefect's traceback.

    Raises:
        ServiceError: nothing answers there.
    """
    url = os.environ.get("PREFECT_API_URL")
    if url and not _healthy(url.rstrip("/"), timeout=5.0):
        raise ServiceError(f"the Prefect API at PREFECT_API_URL={url} does not answer (GET /health)",
                           hint="start that server, or unset PREFECT_API_URL (segbench then starts one itself)")


# --- a server started on demand, stopped when idle ------------------------------------------------------

_in_use: list[object] = []  # the open lock files this process holds (released when it exits)


def mark_in_use(work_dir: Path) -> None:
    """Say this command uses the server of ``work_dir`` until it exits: a shared lock and ``last-used``.

    Taken before the server is looked up, so a watcher stopping it holds the exclusive lock and
    this command waits, then finds no server and starts one.
    """
    folder = server_dir(work_dir)
    folder.mkdir(parents=True, exist_ok=True)
    handle = (folder / IN_USE_NAME).open("a")
    fcntl.flock(handle, fcntl.LOCK_SH)
    _in_use.append(handle)
    (folder / LAST_USED_NAME).touch()
    import atexit

    atexit.register((folder / LAST_USED_NAME).touch)  # idle from the end of the command, not its start


def server_on_demand(work_dir: Path, idle_minutes: float, *, hint: Callable[[str], None]) -> None:
    """Give the first flow of this command the server of ``work_dir``, starting it if none runs.

    Nothing happens now: when Prefect is first imported (the command is about to run a flow) the
    command marks the server in use, starts it in the background unless it runs (saying so through
    ``hint`` first), and exports ``PREFECT_API_URL``. The server outlives the command and stops
    after ``idle_minutes`` without use.
    """
    if os.environ.get("PREFECT_API_URL") or "prefect" in sys.modules:
        return

    def start() -> None:
        if os.environ.get("PREFECT_API_URL"):
            return
        mark_in_use(work_dir)
        if read_state(work_dir) is None:
            hint(STARTING_HINT.format(minutes=idle_minutes))
        timeout = float(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", START_TIMEOUT))
        state, _ = start_server(work_dir, timeout=timeout, idle_minutes=idle_minutes)
        os.environ["PREFECT_API_URL"] = state.api_url

    sys.meta_path.insert(0, _BeforeImport("prefect", start))


def watch_idle(folder: Path) -> None:
    """Stop the server recorded in ``folder`` once it has gone ``idle_minutes`` without use; return
    when it is stopped, by this or by ``segbench server stop``, or is to run until stopped
    (``segbench server start`` asked for it while it ran)."""
    state = ServerState(**json.loads((folder / STATE_NAME).read_text()))
    idle = float(state.idle_minutes or 0) * 60
    while _is_alive(state):
        time.sleep(min(30.0, max(idle / 4, 0.2)))
        if read_state(folder.parent) != state:
            return
        with (folder / IN_USE_NAME).open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a command is using it
            try:
                unused = time.time() - (folder / LAST_USED_NAME).stat().st_mtime
            except OSError:
                unused = idle
            if unused >= idle:
                stop_server(folder.parent, only=state)
                return


# --- the private per-command server --------------------------------------------------------------------

def start_private_server(log: Path, *, timeout: float) -> tuple[subprocess.Popen[bytes], str]:
    """The process Prefect's temporary server runs (no UI, no scheduler), tied to this process."""
    for _ in range(3):  # the port may be taken between choosing and binding it
        port = free_port()
        env = _server_env({"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"})
        process = _spawn([sys.executable, "-m", "uvicorn", "--factory", "prefect.server.api.server:create_app",
                          "--host", "127.0.0.1", "--port", str(port), "--log-level", "error", "--lifespan", "on"],
                         env, log, tied=True)
        api_url = f"http://127.0.0.1:{port}/api"
        try:
            _wait_healthy(process, api_url, log, timeout)
        except ServiceError:
            if process.poll() is None:
                raise
            continue
        return process, api_url
    raise ServiceError("the temporary Prefect server could not start", path=log, hint=f"see the end of {log}")


def stop_private_server(process: subprocess.Popen[bytes]) -> None:
    """Stop a private server (SIGTERM, SIGKILL after 5 s) and reap it."""
    _terminate(process.pid, 5.0)


class _BeforeImport(importlib.abc.MetaPathFinder):
    """Runs ``action`` once, just before the first import of the top-level package ``name``."""

    def __init__(self, name: str, action: Callable[[], None]) -> None:
        self.name, self.action = name, action

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None,
                  ) -> importlib.machinery.ModuleSpec | None:
        if fullname == self.name and self in sys.meta_path:
            sys.meta_path.remove(self)  # once: the action may import the package itself
            self.action()
        return None  # the normal finders import it


def probe(api_url: str, timeout: float = 5.0) -> bool | None:
    """Whether the Prefect API at ``api_url`` answers ``GET /health``: True, False when nothing listens
    there (connection refused or reset), None when it did not answer in time (a busy server)."""
    import urllib.error
    import urllib.request  # here: the command line imports this module, and most commands never ask

    local = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1 never goes through a proxy
    try:
        with local.open(f"{api_url}/health", timeout=timeout) as response:
            return response.status == 200
    except urllib.error.URLError as exc:
        return False if isinstance(exc.reason, ConnectionError) else None
    except ConnectionError:
        return False
    except OSError:  # a timeout, or a read cut short: it may answer again
        return None


def private_server_on_demand(prefect_home: Path, *, hint: Callable[[str], None]) -> None:
    """Give the first flow of this command a private Prefect API, unless one is configured.

    Nothing starts now: when Prefect is first imported (the command is about to run a flow) a
    private server starts, ``PREFECT_API_URL`` names it, and ``hint`` is called once with how to
    avoid the wait. The server stops when this process exits, however it exits.
    """
    if os.environ.get("PREFECT_API_URL") or "prefect" in sys.modules:
        return  # a configured API (or an embedding program's Prefect) is left alone

    def start() -> None:  # in the thread importing Prefect: the main one, which lives as long as the command
        if os.environ.get("PREFECT_API_URL"):
            return  # set meanwhile (segbench demo starts a server for its duration)
        hint(HINT)
        timeout = float(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", START_TIMEOUT))
        process, api_url = start_private_server(Path(prefect_home) / "temporary-server.log", timeout=timeout)
        os.environ["PREFECT_API_URL"] = api_url
        import atexit

        # Registered before Prefect's own exit hooks, so it runs after them (they flush logs to it).
        atexit.register(stop_private_server, process)

    sys.meta_path.insert(0, _BeforeImport("prefect", start))


if __name__ == "__main__":  # python -m segbench.prefect_server watch FOLDER: the idle watcher start_server spawns
    if sys.argv[1:2] == ["watch"] and len(sys.argv) == 3:
        watch_idle(Path(sys.argv[2]))
