"""Every ``segbench`` command the README and the docs show exists, with every option it shows.

Their ``bash`` blocks are what a new user copies: a renamed command or option there fails here,
not in their terminal. The same check reads the commands that ``fix:`` lines name.
"""

from __future__ import annotations

import re

import pytest
from support.commands import check_fix_lines, check_invocation
from support.docs import text_of_pages

pytestmark = pytest.mark.unit

PROGRAM = ".venv/bin/segbench"


def _invocations() -> list[str]:
    """Each line of the pages (continuations joined) that runs segbench, from the program name on."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", text_of_pages(), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.split(r"\s#\s|\s\|\s(?!-)|&&|;", line)[0]  # comments and the next command off
            if PROGRAM in line:
                found.append(line[line.index(PROGRAM):].strip())
    return found


def test_the_readme_shows_segbench_commands():
    assert len(_invocations()) >= 30


@pytest.mark.parametrize("line", _invocations())
def test_every_command_the_readme_shows_exists_with_its_options(line):
    check_invocation(line)


@pytest.mark.parametrize("line", [f"{PROGRAM} rounds create coco_cd_context_audit r1 --per-groups 5", f"{PROGRAM} evaluate cocos --rev v1",
                                  f"{PROGRAM} --data-roots d build coco-cd"])
def test_a_renamed_command_or_option_would_fail(line):
    with pytest.raises(AssertionError):
        check_invocation(line)


@pytest.mark.parametrize("output", [
    "Error: x\n  fix: run `segbench predict-baseline` first",
    "Error: x\n  fix: segbench rounds creat audit-1",
    "Error: x\n  fix: pass it again (segbench build coco-cd --per-groups 5)",
    "Error: x\n  fix: start with\n  .venv/bin/segbench serve-ui\n",
])
def test_a_fix_naming_a_command_that_does_not_exist_fails(output):
    with pytest.raises(AssertionError, match="names a command that does not exist"):
        check_fix_lines(output)


def test_fixes_naming_real_commands_and_prose_pass():
    check_fix_lines("Error: a\n  fix: create one with `segbench rounds create coco_cd_context_audit` or `segbench spin import`\n"
                    "Error: b\n  fix: unset it (segbench then starts one itself); build it with segbench build first\n"
                    "Error: c\n  fix: delete it and run `segbench rounds ingest audit-1` again, or see segbench.toml")
