"""The bash blocks of the README and the docs marked as running after ``make demo`` run as written, line by line, on a
copy of the demo project. The other blocks need real datasets, a Label Studio server or a remote;
``tests/test_readme_commands.py`` checks that every command and option they show exists."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys

import pytest
from support.docs import text_of_pages
from support.hostile_builds import child_env

pytestmark = pytest.mark.integration

MARK = "<!-- runs as written after `make demo`"


def _marked_blocks() -> list[str]:
    return re.findall(re.escape(MARK) + r".*?-->\n```bash\n(.*?)```", text_of_pages(), re.S)


def _commands(block: str) -> list[list[str]]:
    lines = block.replace("\\\n", " ").splitlines()
    return [shlex.split(line, comments=True) for line in lines if line.strip()]


def test_the_readme_marks_blocks_to_run():
    assert len(_marked_blocks()) >= 2


@pytest.mark.parametrize("block", _marked_blocks(), ids=lambda b: b.split("\n", 1)[0][:60])
def test_a_marked_block_runs_as_written_after_the_demo(demo_copy, block):
    project = demo_copy
    env = {k: v for k, v in child_env().items() if not k.startswith("PREFECT_")}  # servers as a user gets them
    env["COLUMNS"] = "200"
    for command in _commands(block):
        assert command[0] == ".venv/bin/segbench", command
        done = subprocess.run([sys.executable, "-m", "segbench", *command[1:]], cwd=project, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{shlex.join(command)}\n{done.stdout}\n{done.stderr}"
