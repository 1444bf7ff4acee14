"""Every ``segbench`` command the README shows exists, with every option it shows.

The README's ``bash`` blocks are what a new user copies: a renamed command or option there fails
here, not in their terminal. Placeholders (``[--gt CAFE.json | --rev v1]``, ``…``) are read as the
options they name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer.main

from segbench.cli import app

pytestmark = pytest.mark.unit

README = Path(__file__).resolve().parents[1] / "README.md"
PROGRAM = ".venv/bin/segbench"


def _invocations() -> list[str]:
    """Each README line (continuations joined) that runs segbench, from the program name on."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.split(r"\s#\s|\s\|\s(?!-)|&&|;", line)[0]  # comments and the next command off
            if PROGRAM in line:
                found.append(line[line.index(PROGRAM):].strip())
    return found


def _options(command: Any) -> set[str]:
    return {name for param in command.params for name in (*param.opts, *param.secondary_opts)}


def _check(line: str, root: Any) -> None:
    tokens = [t.strip("[]|") for t in line.split()[1:]]
    tokens = [t for t in tokens if t and t not in ("…", "...")]
    command = root  # typer's click commands; a group has subcommands
    root_options = _options(root)
    position = 0
    while position < len(tokens) and hasattr(command, "commands"):  # root options, then the words of the command
        token = tokens[position]
        if token.startswith("-"):
            assert token.split("=")[0] in root_options, f"{line}: {token} is no option of segbench"
            takes_value = next(p for p in root.params if token.split("=")[0] in p.opts).is_flag is False
            position += 2 if takes_value and "=" not in token else 1
            continue
        assert token in command.commands, f"{line}: no command {token!r} (there are {sorted(command.commands)})"
        command = command.commands[token]
        position += 1
    for token in tokens[position:]:
        if token.startswith("--"):
            name = token.split("=")[0]
            assert name in _options(command) | root_options, f"{line}: {name} is no option of {command.name}"


def test_the_readme_shows_segbench_commands():
    assert len(_invocations()) >= 30


@pytest.mark.parametrize("line", _invocations())
def test_every_command_the_readme_shows_exists_with_its_options(line):
    _check(line, typer.main.get_command(app))


@pytest.mark.parametrize("line", [f"{PROGRAM} rounds create r1 --per-groups 5", f"{PROGRAM} evaluate cocos --rev v1",
                                  f"{PROGRAM} --data-roots d build coco-cd"])
def test_a_renamed_command_or_option_would_fail(line):
    with pytest.raises(AssertionError):
        _check(line, typer.main.get_command(app))
