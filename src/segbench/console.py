"""Terminal output of the CLI: progress, summaries and error messages (rich, on stderr/stdout).

Only the CLI uses this module; library code reports through :mod:`segbench.progress` and logging.

Two audiences: in a terminal, live progress bars and tables that fold long cells instead of
cutting them; in a pipe or a log file, plain timestamped lines written (and flushed) as things
happen, and tables as wide as their content. With ``--json`` the command's summary is the only
thing on stdout, as JSON; everything meant for people goes to stderr.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import re
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from segbench.core.redaction import redact

# Wide enough for any path or key segbench prints: a pipe has no width, so a table takes its content's.
PIPE_WIDTH = 10_000

out = Console()
err = Console(stderr=True)
_json_mode = False
_verbose = False
_secrets: set[str] = set()
_summary: Any = None


class _LinesTrimmed:
    """Standard output or error, without the spaces rich pads a line's last cell with: a table written
    to a pipe is as wide as its content, and no line of a log ends in blanks. The stream is looked up
    at each write, as rich does for its own: a caller may replace ``sys.stdout`` (a test runner does)."""

    def __init__(self, stderr: bool) -> None:
        self._stderr = stderr

    @property
    def _stream(self) -> Any:
        return sys.stderr if self._stderr else sys.stdout

    def write(self, text: str) -> int:
        self._stream.write(re.sub(r"[ \t]+(?=\n)", "", text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, encoding: the stream's own
        return getattr(self._stream, name)


def _make(stderr: bool) -> Console:
    probe = Console(stderr=stderr)
    if probe.is_terminal:
        return probe
    # Not a terminal: no 80-column cut, no soft wrapping of long lines, no colour codes.
    stream = _LinesTrimmed(stderr)
    return Console(file=stream, width=PIPE_WIDTH, soft_wrap=True, no_color=True, highlight=False)  # type: ignore[arg-type]


HEADING_WIDTH = 80  # a rule under a heading, in a pipe: the console's own width there is PIPE_WIDTH


def heading(title: str) -> None:
    """A section heading: a rule across a terminal, or 80 characters wide in a pipe."""
    from rich.rule import Rule

    out.print(Rule(f"[bold]{escape(title)}[/]", align="left"),
              width=None if out.is_terminal else HEADING_WIDTH)


def configure(*, json_output: bool = False, verbose: bool = False) -> None:
    """Pick the consoles for where stdout and stderr go now (called by the root command).

    With ``json_output`` the human-readable output goes to stderr and :func:`emit_summary`
    writes the command's summary to stdout. With ``verbose`` an error is shown with its causes.
    """
    global out, err, _json_mode, _verbose, _summary
    err = _make(stderr=True)
    out = err if json_output else _make(stderr=False)
    _json_mode, _verbose, _summary = json_output, verbose, None
    _secrets.clear()


def hide_secrets(*values: str | None) -> None:
    """Values (API keys, tokens) that :func:`error` masks wherever they appear in what it prints.

    Each is masked as given, without surrounding whitespace (a token read from a file with Windows
    line endings), in the escaped form a ``bytes`` repr shows (``b'Bearer hf_…\\r'``) and base64-encoded
    (a server that echoes its ``Authorization`` value encoded)."""
    import base64

    for value in values:
        for form in {value, (value or "").strip()}:
            if not form or len(form) < 4:  # a few characters would mask ordinary words
                continue
            raw = form.encode("utf-8")
            _secrets.update({form, form.encode("unicode_escape").decode("ascii"),
                             base64.b64encode(raw).decode("ascii").rstrip("="),
                             base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")})


def verbose() -> bool:
    return _verbose


def set_summary(summary: Any) -> None:
    """What the running command prints with ``--json`` (the last value set wins)."""
    global _summary
    _summary = summary


def _jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):  # pydantic models (round records, params)
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Path):
        return value.as_posix()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    # Anything else a flow returns (a provider, a future) is not data: name its type.
    return f"<{type(value).__name__}>"


def summary_json(summary: Any) -> str:
    """The summary as indented JSON; keys sorted, so the same summary prints the same text."""
    return json.dumps(summary if summary is not None else {}, default=_jsonable, indent=2, sort_keys=True,
                      ensure_ascii=False)


def emit_summary() -> None:
    """With ``--json``: write the command's summary to stdout (``{}`` when it set none)."""
    if _json_mode:
        sys.stdout.write(summary_json(_summary) + "\n")
        sys.stdout.flush()


def _timestamp() -> str:
    return dt.datetime.now().strftime("%H:%M:%S")


class RichListener:
    """A :class:`segbench.progress.Listener` drawing one live bar per step on a terminal.

    A first "Starting" line with a spinner shows from the first second, until the first step starts.
    """

    def __init__(self, first: str = "Starting") -> None:
        self.progress = Progress(
            SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), console=err, transient=False, refresh_per_second=8,
        )
        self._first = first
        self._starting: object | None = None

    def __enter__(self) -> RichListener:
        self.progress.start()
        self._starting = self.progress.add_task(self._first, total=None)
        return self

    def __exit__(self, *exc: object) -> None:
        self._end_starting()
        self.progress.stop()

    def _end_starting(self) -> None:
        if self._starting is not None:
            self.progress.remove_task(self._starting)  # type: ignore[arg-type]
            self._starting = None

    def start(self, description: str, total: int | None) -> object:
        self._end_starting()
        return self.progress.add_task(description, total=total)

    def advance(self, handle: object, amount: int = 1) -> None:
        self.progress.advance(handle, amount)  # type: ignore[arg-type]

    def finish(self, handle: Any, completed: bool = True) -> None:
        if not completed:  # the bar stays where the step stopped
            return
        task = self.progress.tasks[[t.id for t in self.progress.tasks].index(handle)]
        if task.total is None:
            self.progress.update(handle, total=task.completed or 1, completed=task.completed or 1)


class LineListener:
    """A :class:`segbench.progress.Listener` for pipes and log files: plain timestamped lines, flushed.

    One line when a step starts, one at most every ``every`` seconds while it advances, one when it
    ends, each written at once, so ``segbench ... > log`` shows the run as it happens and in order.
    """

    def __init__(self, stream: Any = None, every: float = 5.0) -> None:
        self._stream = stream
        self._every = every
        self._lock = threading.Lock()
        self._steps: dict[int, dict[str, Any]] = {}

    def __enter__(self) -> LineListener:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def _write(self, text: str) -> None:
        stream = self._stream or sys.stderr
        stream.write(f"{_timestamp()} {text}\n")
        stream.flush()

    def start(self, description: str, total: int | None) -> object:
        with self._lock:
            handle = len(self._steps)
            now = time.monotonic()
            self._steps[handle] = {"description": description, "total": total, "done": 0, "start": now, "last": now}
        self._write(f"{description}: started" + (f" ({total} items)" if total is not None else ""))
        return handle

    def advance(self, handle: object, amount: int = 1) -> None:
        with self._lock:
            state = self._steps[handle]  # type: ignore[index]
            state["done"] += amount
            now = time.monotonic()
            if now - state["last"] < self._every:
                return
            state["last"] = now
            line = f"{state['description']}: {state['done']}" + (f"/{state['total']}" if state["total"] else "")
        self._write(line)

    def finish(self, handle: object, completed: bool = True) -> None:
        with self._lock:
            state = self._steps[handle]  # type: ignore[index]
            seconds = time.monotonic() - state["start"]
        if not completed:
            total = f"/{state['total']}" if state["total"] is not None else ""
            self._write(f"{state['description']}: stopped at {state['done']}{total} after {seconds:.1f} s")
            return
        done = state["done"] if state["total"] is None else max(state["done"], state["total"])
        self._write(f"{state['description']}: done, {done} items in {seconds:.1f} s")


def listener() -> RichListener | LineListener:
    """The progress listener for where stderr goes: live bars in a terminal, lines otherwise."""
    return RichListener() if err.is_terminal else LineListener()


# A cell that reads as a number (or its absence): such columns are right-aligned, text left.
_NUMBER = re.compile(r"[-+]?[\d.,]+(e[-+]?\d+)?%?|n/a|–|-|")


def table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> Table:
    """A table whose cells fold rather than being cut when the terminal is narrow; numbers are
    right-aligned, text left."""
    from segbench.core.reports import cell  # numpy comes with it: not for every command

    cells = [[cell(v) for v in row] for row in rows]
    t = Table(title=title, title_justify="left", title_style="bold")
    for index, header in enumerate(headers):
        column = [row[index] for row in cells if index < len(row)]
        numeric = index > 0 and column and all(_NUMBER.fullmatch(str(text).strip()) for text in column)
        t.add_column(header, justify="right" if numeric else "left", overflow="fold")
    for row in cells:
        t.add_row(*row)
    return t


def key_values(title: str, items: Mapping[str, Any]) -> Table:
    from segbench.core.reports import cell

    t = Table(title=title, title_justify="left", title_style="bold", show_header=False, box=None)
    t.add_column(style="dim", overflow="fold")
    t.add_column(overflow="fold")
    for key, value in items.items():
        t.add_row(key, cell(value))
    return t


def error(message: str, exc: BaseException | None = None) -> None:
    """``error: MESSAGE`` on stderr; under ``--verbose`` the chain of ``exc``'s causes comes first,
    with credentials in URLs and the secrets of :func:`hide_secrets` masked."""
    if _verbose and exc is not None and (exc.__cause__ is not None or exc.__context__ is not None):
        import traceback

        chain = "".join(traceback.format_exception(exc))
        err.print(_masked(chain), markup=False, highlight=False, soft_wrap=True)
    err.print(f"[bold red]error:[/] {escape(_masked(message))}", highlight=False, soft_wrap=True, markup=True)


def _masked(text: str) -> str:
    for secret in sorted(_secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    return redact(text)
