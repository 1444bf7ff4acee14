"""The last words of a stopped command: ``error:`` lines need nothing Ctrl-C may have cut short."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

# numpy as Ctrl-C can leave it, imported halfway: importing it again raises.
SCRIPT = """
import sys
sys.modules["numpy"] = None
from segbench import console
console.error("interrupted; fetch https://user:pw@example.com/x?token=abc again")
"""


def test_an_error_line_is_written_after_an_import_was_interrupted_halfway():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "error: interrupted; fetch https://***@example.com/x?*** again"
