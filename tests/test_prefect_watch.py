"""The watch over a command's Prefect API, in a process of its own (it ends the process it watches)."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import os, signal, sys, time, types
from segbench import prefect_watch

def terminated(signum, frame):  # as the command line's handler does
    raise SystemExit("terminated")

signal.signal(signal.SIGTERM, terminated)
prefect_watch.EVERY, prefect_watch.LOST_AFTER, prefect_watch.SILENT_AFTER, prefect_watch.GRACE = 0.05, 0.5, 3.0, 0.2
sys.modules.setdefault("prefect", types.ModuleType("prefect"))  # the command has started its flow
os.environ["PREFECT_API_URL"] = "http://127.0.0.1:1/api"
answer = {"up": True, "refused": False, "slow": None}[sys.argv[1]]
prefect_watch.watch(lambda url: answer, lambda text: print(text, file=sys.stderr, flush=True))
try:
    time.sleep(2.0)
except BaseException as exc:  # interrupted as SIGTERM would
    print("interrupted", type(exc).__name__, flush=True)
    time.sleep(5)
print("finished", flush=True)
"""


@pytest.mark.parametrize(("answer", "code", "said"), [("up", 0, "finished"), ("slow", 0, "finished"),
                                                      ("refused", 2, "interrupted")])
def test_only_a_server_that_is_gone_ends_the_command(answer, code, said):
    """Refused connections for LOST_AFTER: the command is told (as SIGTERM) and the process ends with 2.
    A server that is slow to answer is given SILENT_AFTER, longer than this command lasts."""
    done = subprocess.run([sys.executable, "-c", SCRIPT, answer], capture_output=True, text=True, timeout=60)
    assert done.returncode == code, done.stdout + done.stderr
    assert said in done.stdout
    assert ("lost the Prefect server" in done.stderr) == (answer == "refused")
