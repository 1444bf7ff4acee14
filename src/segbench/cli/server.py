"""``segbench server``: a persistent local Prefect server every later command uses.

Without one, the first command that runs a flow starts one in the background, which stops after
``server_idle_minutes`` without use; ``server start`` starts one that runs until ``server stop``.
The server keeps its SQLite database, log and state file under ``<work dir>/prefect-server/``.
"""

from __future__ import annotations

from pathlib import Path

import typer

from segbench import console, prefect_server
from segbench.cli.common import display_path, settings_of

app = typer.Typer(help="A persistent local Prefect server for every command (start, stop, status).",
                  no_args_is_help=True)


def register(build_app: typer.Typer, evaluate_app: typer.Typer, root: typer.Typer) -> None:
    """Add the ``server`` group to the root command."""
    root.add_typer(app, name="server")


def _work_dir(ctx: typer.Context) -> Path:
    return settings_of(ctx).work_dir


@app.command("start")
def start(
    ctx: typer.Context,
    timeout: float = typer.Option(prefect_server.START_TIMEOUT, "--timeout", min=1,
                                  help="Seconds to wait for the server to answer."),
) -> None:
    """Start the server on 127.0.0.1 and a free port, and return once it answers."""
    work_dir = _work_dir(ctx)
    state, started = prefect_server.start_server(work_dir, timeout=timeout)
    if started:
        console.out.print(f"Prefect server started at [bold]{state.url}[/] (pid {state.pid}); every segbench command "
                          f"with work dir {display_path(work_dir)} uses it. Stop it with: segbench server stop")
    else:
        console.out.print(f"Prefect server already running at [bold]{state.url}[/] (pid {state.pid}); it runs "
                          "until segbench server stop.")


@app.command("stop")
def stop(
    ctx: typer.Context,
    timeout: float = typer.Option(prefect_server.STOP_TIMEOUT, "--timeout", min=0,
                                  help="Seconds to wait after SIGTERM before SIGKILL."),
) -> None:
    """Stop the server (SIGTERM, then SIGKILL after the timeout)."""
    state = prefect_server.stop_server(_work_dir(ctx), timeout=timeout)
    console.out.print(f"Prefect server at {state.url} stopped." if state is not None
                      else "No Prefect server running.")


@app.command("status")
def status(ctx: typer.Context) -> None:
    """Whether the server is up, and its URL."""
    state, healthy = prefect_server.server_status(_work_dir(ctx))
    if state is None:
        console.out.print("Prefect server: down (start one with: segbench server start).")
    elif healthy:
        until = (f"; it stops after {state.idle_minutes:g} min without use" if state.idle_minutes is not None
                 else "; it runs until segbench server stop")
        console.out.print(f"Prefect server: up at [bold]{state.url}[/] (pid {state.pid}){until}.")
    else:
        console.out.print(f"Prefect server: running (pid {state.pid}) but not answering at {state.url}; "
                          "segbench server stop ends it.")
