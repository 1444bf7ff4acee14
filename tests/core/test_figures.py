"""Report figures drawn in forked processes: the same bytes as drawn here, and nothing left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from support.cafe_eval_data import HAND_PAIRS, HAND_PREDS, cafe_gt
from support.processes import alive

from segbench.core.figures import drawing_processes, drawn
from segbench.launch import _evaluates
from segbench.tasks.cafe.eval_plots import plot_cgf1_by_iou

pytestmark = pytest.mark.unit

SUMMARY = {"cgF1": 0.25, "IL_MCC": 0.5,
           "per_iou": {"iou_thresholds": [0.5, 0.75, 0.95], "cgF1": [0.4, 0.25, -0.1],
                       "positive_micro_F1": [0.8, 0.5, 0.2]}}


def _python(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          timeout=timeout)


def test_figures_drawn_in_the_drawing_processes_are_the_bytes_drawn_here(tmp_path):
    done = _python(f"""
        import os, sys
        from segbench.core.figures import drawing_processes, drawn
        from segbench.tasks.cafe.eval_plots import plot_cgf1_by_iou
        with drawing_processes():
            out = drawn({{"png": (plot_cgf1_by_iou, ({SUMMARY!r},)), "pid": (os.getpid, ())}})
        open(sys.argv[1], "wb").write(out["png"])
        print(out["pid"] != os.getpid())
        """, str(tmp_path / "forked.png"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True"]  # drawn in another process
    assert (tmp_path / "forked.png").read_bytes() == plot_cgf1_by_iou(SUMMARY)


def test_without_drawing_processes_figures_are_drawn_here_in_order():
    assert drawn({"a": (os.getpid, ()), "b": (str, (7,))}) == {"a": os.getpid(), "b": "7"}


def test_no_fork_from_a_process_running_another_thread():
    stop = threading.Event()
    busy = threading.Thread(target=stop.wait, name="someone else's")
    busy.start()
    try:
        with drawing_processes():
            assert drawn({"pid": (os.getpid, ())}) == {"pid": os.getpid()}
    finally:
        stop.set()
        busy.join()


def test_a_failing_drawing_raises_its_error_in_the_command():
    done = _python("""
        from segbench.core.figures import drawing_processes, drawn
        with drawing_processes():
            try:
                drawn({"bad": (int, ("not a number",))})
            except ValueError as exc:
                print("raised", exc)
        """)
    assert done.returncode == 0, done.stderr
    assert "raised invalid literal for int()" in done.stdout



def test_drawing_processes_end_with_a_killed_command():
    command = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import time
        from segbench.core import figures
        with figures.drawing_processes():
            print(*figures._pool._processes, flush=True)
            time.sleep(60)
        """)], stdout=subprocess.PIPE, text=True)
    assert command.stdout is not None
    children = [int(pid) for pid in command.stdout.readline().split()]
    assert children and all(map(alive, children))
    command.send_signal(signal.SIGKILL)
    command.wait()
    deadline = time.monotonic() + 10
    while any(map(alive, children)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(map(alive, children))


def test_figures_are_drawn_here_when_the_drawing_process_died(tmp_path):
    done = _python(f"""
        import os, signal, sys, time
        from segbench.core import figures
        from segbench.tasks.cafe.eval_plots import plot_cgf1_by_iou
        with figures.drawing_processes():
            for pid in figures._pool._processes:
                os.kill(pid, signal.SIGKILL)
            time.sleep(0.5)
            out = figures.drawn({{"png": (plot_cgf1_by_iou, ({SUMMARY!r},)), "pid": (os.getpid, ())}})
        open(sys.argv[1], "wb").write(out["png"])
        print(out["pid"] == os.getpid())
        """, str(tmp_path / "here.png"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True"]
    assert (tmp_path / "here.png").read_bytes() == plot_cgf1_by_iou(SUMMARY)


@pytest.mark.parametrize(("argv", "expected"), [
    (["evaluate", "cafe", "--gt", "x"], True),
    (["--data-root", "d", "evaluate", "cgf1"], True),
    (["evaluate", "cafe", "--help"], False),
    (["build", "coco-cd"], False),
    ([], False),
])
def test_the_executable_forks_drawing_processes_only_for_evaluations(argv, expected):
    assert _evaluates(argv) is expected


def test_evaluate_cafe_as_a_user_types_it_draws_the_same_report_as_in_process(tmp_path):
    """The console entry point draws in its drawing processes; a program calling the app draws itself."""
    from typer.testing import CliRunner

    from segbench.cli import app

    (tmp_path / "gt.json").write_text(json.dumps(cafe_gt(HAND_PAIRS)))
    (tmp_path / "preds.json").write_text(json.dumps(HAND_PREDS))
    common = ["--data-root", str(tmp_path / "data"), "--work-dir", str(tmp_path / "work"), "evaluate", "cafe",
              "--gt", str(tmp_path / "gt.json"), "--predictions", str(tmp_path / "preds.json")]
    done = subprocess.run([sys.executable, "-m", "segbench", *common, "--out", str(tmp_path / "process")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    in_process = CliRunner().invoke(app, [*common, "--out", str(tmp_path / "here")])
    assert in_process.exit_code == 0, in_process.output
    files = sorted(p.name for p in (tmp_path / "process").iterdir())
    assert "standing.png" in files and files == sorted(p.name for p in (tmp_path / "here").iterdir())
    for name in files:
        if name != "manifest.json":  # it records when the report was written
            assert (tmp_path / "process" / name).read_bytes() == (tmp_path / "here" / name).read_bytes(), name


def test_ctrl_c_to_the_group_while_the_drawing_processes_fork_stops_the_command_alone():
    """Ctrl-C reaches the whole process group. Sent the moment the drawing process is forked, before it
    could ignore it, it is the command's KeyboardInterrupt, raised once the fork is done; the drawing
    process prints no traceback of it."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import os, signal, time
        from concurrent.futures import ProcessPoolExecutor
        from segbench.core import figures

        submit, ready = ProcessPoolExecutor.submit, figures._ready

        def slow_ready(*args):  # a drawing process slow to start, as under load
            time.sleep(0.5)
            ready(*args)

        figures._ready = slow_ready

        def submit_then_ctrl_c(self, *args):
            future = submit(self, *args)  # forks the drawing process
            os.killpg(0, signal.SIGINT)
            return future

        ProcessPoolExecutor.submit = submit_then_ctrl_c
        try:
            with figures.drawing_processes():
                print("the block ran", flush=True)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        """)], capture_output=True, text=True, timeout=120, start_new_session=True)
    assert done.stdout == "interrupted\n", done.stderr
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr


def test_a_ctrl_c_caught_before_the_fork_leaves_no_signal_blocked(monkeypatch):
    """``pthread_sigmask`` raises a Ctrl-C caught before it only once it has changed the mask."""
    from segbench.core import figures

    real = signal.pthread_sigmask

    def raises_after_blocking(how, mask):
        previous = real(how, mask)
        if how == signal.SIG_BLOCK and set(mask) == set(figures._STOPS):
            raise KeyboardInterrupt
        return previous

    before = real(signal.SIG_BLOCK, ())
    monkeypatch.setattr(figures.signal, "pthread_sigmask", raises_after_blocking)
    try:
        with pytest.raises(KeyboardInterrupt):
            figures._forked(1)
        assert real(signal.SIG_BLOCK, ()) == before
    finally:
        real(signal.SIG_SETMASK, before)
