"""Written files get the mode the user's umask gives new files: shared under 022, private under 077
(round records hold worker ids and e-mails)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

WRITE = ("import os, sys; os.umask(int(sys.argv[2], 8)); from segbench.core.io import atomic_write_text; "
         "atomic_write_text(sys.argv[1], 'x'); print(oct(os.stat(sys.argv[1]).st_mode & 0o777))")


@pytest.mark.parametrize(("umask", "mode"), [("022", "0o644"), ("077", "0o600"), ("002", "0o664")])
def test_a_written_file_follows_the_umask(tmp_path, umask, mode):
    done = subprocess.run([sys.executable, "-c", WRITE, str(tmp_path / "f.txt"), umask], capture_output=True,
                          text=True, check=True)
    assert done.stdout.strip() == mode
