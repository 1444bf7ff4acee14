"""What every ``segbench`` command module shares: settings, running a flow, ``--force``, what a run did, paths."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from segbench import console
from segbench.core.steps import EVALUATION_LOGGER

if TYPE_CHECKING:
    from segbench.schemas.results import Result
    from segbench.settings import Settings


def settings_of(ctx: typer.Context) -> Settings:
    """The settings the root command resolved (flags > environment > config file > defaults)."""
    return ctx.find_root().obj["settings"]


def run_flow(ctx: typer.Context, fn: Any, *args: Any, reads_only: bool = False, **kwargs: Any) -> Any:
    """Run a flow with progress on stderr (bars on a terminal, lines otherwise), holding the data root's lock, on the chosen runner.

    The runner comes from the root options (``--runner``, ``--dask-address``, ``--workers``); a local
    Dask cluster lives only for this call. ``reads_only``: the flow writes nothing in the data root
    (an evaluation), which may then be on a read-only disk.
    """
    from segbench import progress
    from segbench.flows.runner import RunnerSpec, runner_session, with_runner, without_heartbeats

    spec = ctx.find_root().obj.get("runner") or RunnerSpec()
    with flow_command_lock(ctx, reads_only=reads_only), console.listener() as listener, progress.listening(listener), \
            runner_session(spec) as live, without_heartbeats():
        result = with_runner(fn, live)(*args, **kwargs)
    console.set_summary(result)  # what --json prints, unless the command sets a summary of its own
    return result


@contextlib.contextmanager
def flow_command_lock(ctx: typer.Context, *, reads_only: bool = False) -> Iterator[None]:
    """The data root's lock for a command that runs flows; once it is held, the Prefect API must
    answer (a dead one is one message, not Prefect's traceback from inside the first flow)."""
    from segbench import prefect_server
    from segbench.locking import command_lock
    from segbench.settings import ensure_prefect_home

    with command_lock(ctx, reads_only=reads_only):
        ensure_prefect_home()  # this command's work dir (an earlier command in this process may have had another)
        prefect_server.ensure_api_answers()
        yield


TRACK = typer.Option(False, "--track", help="Run as a Prefect flow reported to the server, so the Prefect UI "
                                           "shows the run (default: in this process, without the engine; "
                                           "setting track_evaluations).")


def run_evaluation(ctx: typer.Context, track: bool, function: str, flow: str, **kwargs: Any) -> Any:
    """Run an evaluation: its Prefect ``flow`` with ``--track`` (or the setting ``track_evaluations``),
    else the ``function`` the flow wraps, in this process (``"package.module:name"`` both).

    In this process nothing imports Prefect, so no server is started or contacted; both write the
    same bytes.
    """
    from segbench import registry

    if track or settings_of(ctx).track_evaluations:
        return run_flow(ctx, registry.load(flow), reads_only=True, **kwargs)
    return run_here(ctx, registry.load(function), **kwargs)


def run_here(ctx: typer.Context, fn: Any, **kwargs: Any) -> Any:
    """``fn(**kwargs)`` in this process, without Prefect, holding the data root's lock shared (``fn``
    only reads it), with progress on stderr and its log lines with ``--verbose``."""
    from segbench import progress
    from segbench.locking import command_lock

    with command_lock(ctx, reads_only=True), console.listener() as listener, progress.listening(listener), \
            _evaluation_log():
        result = fn(**kwargs)
    console.set_summary(result)
    return result


@contextlib.contextmanager
def _evaluation_log() -> Iterator[None]:
    """The evaluation's log lines on stderr with ``--verbose`` (as a flow's run logs), else none:
    what matters of them the command prints itself."""
    logger = logging.getLogger(EVALUATION_LOGGER)
    handler: logging.Handler = logging.NullHandler()
    if console.verbose():
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s | %(levelname)-7s | %(message)s", "%H:%M:%S"))
        logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def relative_to_repo(path: Path, repo: Path) -> str:
    """``path`` as DVC and git name it inside ``repo`` (as given when it is outside)."""
    try:
        return path.resolve().relative_to(repo.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it is below it, for messages."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


FORCE_BUILD = typer.Option(False, "--force", help="Rebuild even when the output is up to date.")
FORCE_EVALUATION = typer.Option(False, "--force", help="Evaluate again even when the report is up to date.")


def build_status(summary: Result) -> str:
    """``Up to date`` (with how to rebuild), or how many units ran and how many a killed run had finished."""
    if summary.up_to_date:
        return "[green]Up to date[/]: same inputs, options and builder version; nothing rebuilt (--force rebuilds)."
    units = summary.units
    if not units:
        return "[green]Built.[/]"
    return f"[green]Built[/]: {units.computed} unit(s) computed, {units.reused} reused from an interrupted run."


def print_up_to_date(result: Result, out: str | Path) -> None:
    """Say so when the evaluation found its report up to date (the summary printed next is that report's)."""
    if result.up_to_date:
        console.out.print(f"Evaluation up to date: {display_path(Path(out))} (nothing it reads changed; "
                          "--force evaluates again).")


def seed_option(default: int | None, help: str) -> Any:
    """A ``--seed`` option that refuses negative seeds (see :func:`non_negative_seed`)."""
    return typer.Option(default, "--seed", callback=non_negative_seed, help=help)


def non_negative_seed(value: int | None) -> int | None:
    """``--seed``'s check: Python draws the same numbers for seeds -n and n, so a negative seed is refused."""
    if value is not None and value < 0:
        raise typer.BadParameter(f"{value} is negative, and seed {value} draws exactly what seed {-value} draws; "
                                 "pass 0 or a positive integer")
    return value


def existing(param: typer.CallbackParam, value: Any) -> Any:
    """Option callback: every path given must exist, checked when the command line is read, so a
    mistyped path is answered at once instead of after the engine starts (None passes).

    Raises:
        InputError: a path that does not exist (named, with the option).
    """
    from segbench.core.errors import InputError

    for path in value if isinstance(value, (list, tuple)) else [value]:
        if path is not None and not Path(path).exists():
            option = param.opts[0] if param.opts else param.name
            raise InputError(f"input not found (given to {option})", path=path,
                             hint=f"check the path given to {option}: no such file or folder")
    return value
