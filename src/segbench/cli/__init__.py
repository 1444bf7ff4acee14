"""The ``segbench`` command line: build, evaluate, rounds, rebuild, publish, demo.

Every dataset adds its own commands (``register`` in its module named by the registry); the modules
here add the commands every dataset shares. Settings are resolved by the root command (flags >
environment > config file > defaults) and exported with :func:`segbench.settings.configure_runtime`
*before* any flow module (and so Prefect) is imported: command modules import flows inside the
commands, so ``segbench --help`` stays fast. Errors segbench raises on purpose end the command with
their message and exit code 2, never a traceback.
"""

from __future__ import annotations

import importlib
import math
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from pydantic import ValidationError

from segbench import console, prefect_server, prefect_watch, registry
from segbench.cli import demo, flip, help_text, leaderboard, publish, rebuild, release, rounds, server, view
from segbench.cli.help_text import Runner
from segbench.core import clock, process
from segbench.core.errors import SegbenchError, file_system_error

if TYPE_CHECKING:
    from segbench.settings import Settings

# Commands whose work outlives them on the server (schedules): a private server would die with them.
OWN_SERVER_COMMANDS = frozenset({"serve"})
INTERRUPTED = 130  # 128 + SIGINT, as shells report it
TERMINATED = 143  # 128 + SIGTERM
_RESUME = "a build keeps the units it finished: run the same command again to resume (it redoes only the rest)"
INTERRUPTED_HINT = f"interrupted; {_RESUME}"
TERMINATED_HINT = f"terminated (SIGTERM); {_RESUME}"

# A process of its own (the console entry point) ends when its Prefect API is lost; a program calling
# app() does not have its process ended under it.
_watch_prefect = False

help_text.tidy_flag_types()
help_text.join_paragraph_lines()
help_text.widen_help_in_pipes(sys.stdout is not None and sys.stdout.isatty(), os.environ)  # type: ignore[arg-type]
app = typer.Typer(
    help="Build segmentation evaluation datasets end to end and evaluate models on them.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
    result_callback=lambda *_, **__: console.emit_summary(),  # after a command succeeded: its --json summary
)
build_app = typer.Typer(help="Build a dataset into the data root.", no_args_is_help=True)
evaluate_app = typer.Typer(help="Evaluate predictions on a published dataset version.", no_args_is_help=True)
app.add_typer(build_app, name="build")
app.add_typer(evaluate_app, name="evaluate")
app.add_typer(rounds.app, name="rounds")
# Datasets first, then what every dataset shares (`rounds` adds a `rounds create` per registered kind).
for _module in (*(importlib.import_module(spec.cli) for spec in registry.DATASETS), rounds, rebuild, publish, release,
                demo, server, view, leaderboard, flip):
    _module.register(build_app, evaluate_app, app)


def _seconds(value: float) -> float:
    if not math.isfinite(value) or value < 0:
        raise typer.BadParameter(f"{value} is not a number of seconds; pass 0 or more")
    return value


@app.callback()
def _root(
    ctx: typer.Context,
    config: Path = typer.Option(None, "--config", help="TOML config file (default: ./segbench.toml if present)."),
    data_root: Path = typer.Option(None, "--data-root", help="Where datasets are written (default: data)."),
    work_dir: Path = typer.Option(None, "--work-dir", help="Prefect state, demo inputs, temporary files "
                                                          "(default: .segbench)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show Prefect's run logs."),
    wait: float = typer.Option(0.0, "--wait", show_default=False, callback=_seconds,
                               help="Seconds to wait when another command is writing to the same data root "
                                    "(default: stop at once)."),
    version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True,
                                 callback=lambda value: _print_version() if value else None),
    runner: Runner = typer.Option(None, "--runner", help="Where sharded work runs: threads (in this process) or dask "
                                                         "(default: dask when --dask-address or --workers is given)."),
    dask_address: str = typer.Option(None, "--dask-address", help="Scheduler of a running Dask cluster, e.g. "
                                                                  "tcp://10.0.0.5:8786 (workers need the same paths)."),
    workers: int = typer.Option(None, "--workers", min=1, help="Start a local Dask cluster of N worker processes "
                                                               "for this command."),
    json_output: bool = typer.Option(False, "--json", help="Print the command's summary as JSON on stdout, and "
                                                           "nothing else (progress and messages go to stderr)."),
) -> None:
    from segbench.flows.runner import RunnerSpec

    console.configure(json_output=json_output, verbose=verbose)
    try:
        runner_spec = RunnerSpec.from_options(runner.value if runner else None, dask_address, workers)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--runner/--dask-address/--workers") from exc
    from segbench.settings import configure_runtime, load_settings  # here: --help and --version need no settings

    settings = load_settings(config, data_root=data_root, work_dir=work_dir)
    clock.source_date_epoch()  # a bad value stops the command now, not when its first record is written
    console.hide_secrets(*(secret.get_secret_value() for secret in (settings.label_studio_token,
                                                                  settings.openai_api_key, settings.hub_token) if secret),
                         os.environ.get("OPENAI_API_KEY"), os.environ.get("HF_TOKEN"))
    if config is not None:  # flows read their secrets from the settings themselves
        os.environ["SEGBENCH_CONFIG"] = str(config.resolve())
    configure_runtime(settings, verbose=verbose)
    if ctx.invoked_subcommand not in OWN_SERVER_COMMANDS:  # serve lives on; every other command ends
        process.mark_one_command()
    _choose_prefect_api(settings, private_allowed=ctx.invoked_subcommand not in OWN_SERVER_COMMANDS)
    if _watch_prefect and ctx.invoked_subcommand not in OWN_SERVER_COMMANDS and "prefect" not in sys.modules:
        prefect_watch.watch(prefect_server.probe,
                            lambda text: console.err.print(text, markup=False, highlight=False, soft_wrap=True))
    ctx.obj = {"settings": settings, "wait": wait, "runner": runner_spec}


def _choose_prefect_api(settings: Settings, *, private_allowed: bool) -> None:
    """Point Prefect at the server of this work dir, started in the background by the first command
    that runs a flow (or a private server for this command with ``server_idle_minutes = 0``). Before
    Prefect is imported: it reads the URL then."""
    if "prefect" in sys.modules:
        return  # a program that already set Prefect up
    if os.environ.get("PREFECT_API_URL"):
        prefect_server.check_configured_api(os.environ["PREFECT_API_URL"])  # the user's own server
        return

    def hint(text: str) -> None:
        console.err.print(text, markup=False, highlight=False, soft_wrap=True)

    if private_allowed and settings.server_idle_minutes > 0:
        prefect_server.server_on_demand(settings.work_dir, settings.server_idle_minutes, hint=hint)
        return
    state = prefect_server.read_state(settings.work_dir)
    if state is not None:
        os.environ["PREFECT_API_URL"] = state.api_url
    elif private_allowed:
        prefect_server.private_server_on_demand(settings.prefect_home, hint=hint)


def _print_version() -> None:
    from segbench import __version__

    console.out.print(f"segbench {__version__}")
    raise typer.Exit()


def _check_process() -> tuple[str, str] | None:
    """What makes any command fail before it starts (a closed stdout, a deleted working folder) and its fix."""
    if sys.stdout is None:
        return "standard output is closed: nothing can be printed", "redirect it instead, e.g. >/dev/null"
    try:
        os.getcwd()
    except FileNotFoundError:
        return "the current folder no longer exists", "cd into an existing folder, then run again"
    return None


class Terminated(BaseException):
    """SIGTERM arrived: raised where the main thread is, as Ctrl-C raises KeyboardInterrupt."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


def main() -> None:
    """Console entry point: segbench errors end with their message and exit code 2."""
    global _watch_prefect
    _watch_prefect = True
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:  # (a caller that ignores SIGTERM keeps it ignored)
        # SIGTERM ends a command the way Ctrl-C does: its units kept, its locks and temporary files
        # released, one message, and exit code 143 (a Prefect flow maps it to its own signal and back).
        signal.signal(signal.SIGTERM, _raise_terminated)
    problem = _check_process()
    if problem is not None:
        if sys.stderr is not None:
            print(f"error: {problem[0]}\n  fix: {problem[1]}", file=sys.stderr)
        sys.exit(2)
    if not sys.stdout.isatty() and hasattr(sys.stdout, "reconfigure"):
        # In a pipe, stdout is block-buffered while progress lines go to stderr at once: a log would
        # show every summary after every progress line. Line by line, each summary lands after its step.
        sys.stdout.reconfigure(line_buffering=True)
    try:
        app()  # click handles its own usage errors and exits; typer turns Ctrl-C into exit code 130
    except SystemExit as exc:
        if exc.code == INTERRUPTED:
            console.error(INTERRUPTED_HINT)
        raise
    except SegbenchError as exc:
        console.error(str(exc), exc)
        sys.exit(2)
    except ValidationError as exc:
        first = exc.errors()[0]
        console.error(f"invalid parameter {'.'.join(map(str, first['loc']))}: {first['msg']}")
        sys.exit(2)
    except OSError as exc:  # a file system failure no step named: still one message, not a traceback
        error = file_system_error(exc)
        if error is None:
            raise
        console.error(str(error), exc)
        sys.exit(2)
    except KeyboardInterrupt:  # outside a command (while parsing)
        console.error(INTERRUPTED_HINT)
        sys.exit(INTERRUPTED)
    except Terminated:
        if prefect_watch.lost():  # it has said so
            sys.exit(prefect_watch.EXIT_CODE)
        console.error(TERMINATED_HINT)
        sys.exit(TERMINATED)
    except Exception as exc:
        # Every server segbench talks to has a module that turns its failures into ServiceError; an
        # HTTP error that escapes is the Prefect API going away under a running flow.
        if not type(exc).__module__.startswith("httpx"):
            raise
        if prefect_watch.lost():
            sys.exit(prefect_watch.EXIT_CODE)
        console.error(f"lost the Prefect server this command runs its flow on ({type(exc).__name__}: {exc})\n"
                      f"  fix: {prefect_watch.LOST_HINT}", exc)
        sys.exit(2)
