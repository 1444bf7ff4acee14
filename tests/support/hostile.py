"""Running ``segbench`` as its console entry point on hostile inputs, and checking that it failed cleanly.

A clean failure is exit code 2, a message on stderr that names the path or item (and, for segbench's
own errors, the fix), no Python traceback, and every file that was there before left as it was.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest

import segbench
from segbench.core.io import sha256_tree

from .commands import check_fix_lines

# The sources under test, for subprocesses (the tests may run from a worktree, not the installed copy).
SOURCES = str(Path(segbench.__file__).resolve().parents[1])

def _permissions_enforced() -> bool:
    """False for root (which ignores file modes), unless it runs without CAP_DAC_OVERRIDE, e.g. under
    ``setpriv --bounding-set=-dac_override,-dac_read_search``: then the permission tests run too."""
    if os.geteuid() != 0:
        return True
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        probe = Path(folder) / "probe"
        probe.write_text("x")
        probe.chmod(0)
        try:
            probe.read_text()
        except PermissionError:
            return True
        return False


skip_as_root = pytest.mark.skipif(not _permissions_enforced(), reason="root ignores file permissions")


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str


def project_args(project: Path) -> list[str]:
    return ["--data-root", str(project / "data"), "--work-dir", str(project / "work")]


def run_main(project: Path, *args: str, root_args: list[str] | None = None) -> Outcome:
    """``segbench.cli.main`` in this process, with ``sys.argv`` patched, from inside ``project``.

    Whatever escapes ``main`` other than ``SystemExit`` is what a user would see as a traceback: it
    is written to the returned stderr (with the word Traceback) so :func:`assert_clean_failure` fails.
    The environment and working directory are restored afterwards (the root command exports settings).
    """
    from segbench.cli import main

    argv = ["segbench", *(project_args(project) if root_args is None else root_args), *args]
    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    code = 0
    try:
        os.chdir(project)
        with mock.patch.object(sys, "argv", argv), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:  # noqa: BLE001 - exactly what must never reach a user
                err.write(traceback.format_exc())
                code = -1
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    check_fix_lines(err.getvalue())
    return Outcome(code, out.getvalue(), err.getvalue())


def run_console(project: Path, *args: str, root_args: list[str] | None = None, timeout: float = 120,
                env: dict[str, str] | None = None) -> Outcome:
    """``python -m segbench ARGS`` in a subprocess from inside ``project``, with ``env`` added to the
    environment: exactly what a user runs."""
    env = {**os.environ, **(env or {}), "PYTHONPATH": SOURCES + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("SEGBENCH_CONFIG", None)
    cmd = [sys.executable, "-m", "segbench", *(project_args(project) if root_args is None else root_args), *args]
    proc = subprocess.run(cmd, cwd=project, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    check_fix_lines(proc.stderr)
    return Outcome(proc.returncode, proc.stdout, proc.stderr)


def assert_clean_failure(outcome: Outcome, *names: str, fix: bool = True) -> None:
    """Exit code 2, no traceback, every one of ``names`` in the message and (``fix``) a ``fix:`` line."""
    shown = f"exit code {outcome.code}\n--- stderr\n{outcome.stderr}\n--- stdout\n{outcome.stdout}"
    assert "Traceback" not in outcome.stderr + outcome.stdout, shown
    assert outcome.code == 2, shown
    message = " ".join(re.sub("[│╭╮╰╯─]", " ", outcome.stderr).split())  # rich may wrap lines and draw boxes
    for name in names:
        assert " ".join(str(name).split()) in message, f"{name!r} not named\n{shown}"
    if fix:
        assert "fix:" in outcome.stderr, f"no fix given\n{shown}"


def snapshot(*roots: Path) -> dict[str, dict[str, str]]:
    """sha256 of every file under each root (missing roots are empty): compare before and after.

    Resumable stages (``.<name>.<key>.partial/``, see ``core.resume``) are left out: a command that
    stops keeps its stage on purpose, so that the next run resumes; they are never outputs.
    """
    def outputs(root: Path) -> dict[str, str]:
        return {rel: digest for rel, digest in sha256_tree(root).items()
                if not any(part.startswith(".") and part.endswith(".partial") for part in rel.split("/"))}
    return {str(root): outputs(root) if root.is_dir() else {} for root in roots}


def latin1(path: Path, text: str = "caption\ncafé crème\n") -> Path:
    """A text file in Latin-1: not UTF-8 as soon as it holds an accented letter."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("latin-1"))
    return path
