"""Write the reference pages that come from the code: docs/reference/settings.md (from ``Settings``)
and docs/reference/cli.md (from the Typer app). ``tests/test_docs.py`` fails when either is stale.

    .venv/bin/python scripts/reference.py          # rewrite both
    .venv/bin/python scripts/reference.py --check  # exit 1, naming the stale pages, when either differs
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETTINGS_PAGE = ROOT / "docs" / "reference" / "settings.md"
CLI_PAGE = ROOT / "docs" / "reference" / "cli.md"

SETTINGS_HEAD = """# Settings

Flags beat environment variables (`SEGBENCH_<NAME>`), which beat a config file (`--config FILE`,
`$SEGBENCH_CONFIG` or `./segbench.toml`), which beats the defaults. This table is generated from
`segbench.settings.Settings` by `scripts/reference.py`.

| setting | variable | type | default | meaning |
|---|---|---|---|---|
"""


SETTINGS_TAIL = """
A config file that is not valid TOML or not UTF-8, an unknown key (the message suggests the closest
known one) or a value of the wrong type stops every command with exit code 2, naming the key and
where it was set (flag, `SEGBENCH_*` variable or file). `data_root` and `work_dir` must be folders
(or not exist yet).

Commands that write to a data root hold a lock on it (`.<data root>.lock` beside it) while they
run: a second one started at the same time stops at once, naming the command that holds it, or
waits with `segbench --wait SECONDS …`. A killed command never leaves the lock behind. Every build
also locks its output folder (`.<name>.build.lock` beside it, removed when the build ends), so two
builds from different data roots into the same `--out` cannot race: the second stops naming the
first, or waits with `--wait`.

Nothing is written to your home directory. Add `--verbose` to see Prefect's run logs, and for an error
what caused it (the chain of exceptions, with tokens, API keys and credentials in URLs masked); to
watch runs in the Prefect UI, start `segbench server start` (see [the Prefect server](../how-to/prefect-server.md)).
"""


def _cell(text: object) -> str:
    """Text as one markdown table cell: no column breaks, placeholders not read as HTML tags."""
    return str(text).replace(" | ", " or ").replace("<", "&lt;")


def _type(annotation: object) -> str:
    text = str(annotation).replace("<class '", "").replace("'>", "")
    for module in ("typing.", "pathlib.", "pydantic.types."):
        text = text.replace(module, "")
    return _cell(text)


def settings_page() -> str:
    from segbench.settings import Settings

    rows = []
    for name, field in Settings.model_fields.items():
        default = "derived" if field.default_factory is not None else field.default
        shown = "–" if default is None else f"`{default}`" if default != "derived" else "see meaning"
        rows.append(f"| `{name}` | `SEGBENCH_{name.upper()}` | {_type(field.annotation)} | {shown} "
                    f"| {_cell(field.description)} |")
    return SETTINGS_HEAD + "\n".join(rows) + "\n" + SETTINGS_TAIL


def cli_page() -> str:
    import click
    import typer.cli
    import typer.main

    from segbench.cli import app

    command = typer.main.get_command(app)
    docs = typer.cli.get_docs_for_click(obj=command, ctx=click.Context(command, info_name="segbench"),
                                        name="segbench", title="Commands")
    note = ("Generated from the command line itself by `scripts/reference.py`; "
            "`segbench COMMAND --help` prints the same.\n\n")
    head, _, rest = docs.partition("\n\n")
    return f"{head}\n\n{note}{rest.rstrip()}\n"


def main(argv: list[str]) -> int:
    pages = ((SETTINGS_PAGE, settings_page()), (CLI_PAGE, cli_page()))
    if "--check" in argv:
        stale = [page.relative_to(ROOT) for page, text in pages if page.read_text(encoding="utf-8") != text]
        for page in stale:
            print(f"{page} is stale: run .venv/bin/python scripts/reference.py", file=sys.stderr)
        return 1 if stale else 0
    for page, text in pages:
        page.write_text(text, encoding="utf-8")
        print(f"wrote {page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
