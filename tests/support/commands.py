"""Checking that a ``segbench …`` written for a user (in the README, in a ``fix:`` line) exists.

:func:`check_invocation` resolves the words of a command line against the CLI's command tree and
checks every ``--option`` it shows. :func:`check_fix_lines` finds each ``segbench …`` in the ``fix:``
lines of a command's output and checks it the same way: a hint that names a command that does not
exist sends the user nowhere.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import typer.main

from segbench.cli import app

# Words that follow "segbench" in prose ("segbench then starts one itself"), not commands. A new
# one fails check_fix_lines until it is added here.
PROSE = frozenset({"then", "does", "bug", "is", "can", "may", "will", "writes", "reads", "waits", "starts"})


@cache
def root_command() -> Any:
    return typer.main.get_command(app)


def _options(command: Any) -> set[str]:
    return {"--help"} | {name for param in command.params for name in (*param.opts, *param.secondary_opts)}


def check_invocation(line: str) -> None:
    """Assert that ``line`` (``PROGRAM WORDS… [ARGS] [--OPTIONS]``) names a command and its options.

    Placeholders (``[--gt CAFE.json | --rev v1]``, ``…``) are read as the options they name.
    """
    root = root_command()
    tokens = [t.strip("[]|") for t in line.split()[1:]]
    tokens = [t for t in tokens if t and t not in ("…", "...")]
    command = root  # typer's click commands; a group has subcommands
    root_options = _options(root)
    position = 0
    while position < len(tokens) and hasattr(command, "commands"):  # root options, then the words of the command
        token = tokens[position]
        if token == "--help":  # every group has it: `segbench rounds create --help`
            position += 1
            break
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


def fix_lines(output: str) -> list[str]:
    """The text of each ``fix:`` in ``output``, with the lines it wraps onto joined (rich wraps and
    draws boxes)."""
    found = []
    for block in re.split(r"\n\s*\n", output):
        for part in re.split(r"\bfix:", block)[1:]:
            part = re.split(r"\n\S", part)[0]  # up to the next line that starts at the margin
            found.append(" ".join(re.sub("[│╭╮╰╯─]", " ", part).split()))
    return found


def named_commands(fix: str) -> list[str]:
    """Each ``segbench WORDS… [--OPTIONS]`` a fix names, cut where its sentence goes on."""
    named = []
    for match in re.finditer(r"(?<![\w.-])segbench\s+([^`();,]*)", fix):
        words = re.split(r"\s(?:or|and|first|again)\b|\.\s|\.$", match.group(1))[0].split()
        if words and words[0] not in PROSE:
            named.append(" ".join(["segbench", *words]))
    return named


def check_fix_lines(output: str) -> None:
    """Assert that every ``segbench …`` a ``fix:`` line in ``output`` names exists, with its options."""
    for fix in fix_lines(output):
        for line in named_commands(fix):
            try:
                check_invocation(line)
            except AssertionError as exc:
                raise AssertionError(f"the fix {fix!r} names a command that does not exist: {exc}") from None
