"""Every command's help reads the same way, and output suits people and pipes alike.

Help: every command of the tree renders, no help text loses characters to rich markup, options
with a fixed set of values list them, flags show no value type, a default is said once. Output:
with stdout captured (not a terminal) tables are as wide as their content, progress comes as
timestamped lines in order, and ``--json`` prints only the summary.
"""

from __future__ import annotations

import concurrent.futures
import io
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import typer
from rich.text import Text
from support.cli import run
from typer.testing import CliRunner

from segbench import console, progress
from segbench.annotation_ui.rounds import RoundStore, new_round
from segbench.cli import app
from segbench.schemas.rounds import RoundConfig, RoundItem

WIDE = {"COLUMNS": "250", "TERMINAL_WIDTH": "250"}


@pytest.fixture(autouse=True)
def _help_width(monkeypatch):
    """typer reads TERMINAL_WIDTH once, when its help renderer is first imported, whatever test runs
    then: every test here sets the width it renders help at (WIDE unless it says otherwise)."""
    import typer.rich_utils

    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", int(WIDE["TERMINAL_WIDTH"]))


def _commands() -> list[tuple[list[str], Any]]:
    found = []

    def walk(command: Any, path: list[str]) -> None:
        found.append((path, command))
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


COMMANDS = _commands()


def _options(command: Any) -> list[Any]:
    # Typer builds its commands from its own copy of click: recognise options by what they are.
    return [p for p in command.params if p.param_type_name == "option"]


def test_the_tree_holds_every_command_group():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"build coco-cd", "build waterbirds", "rounds create", "rounds list", "spin import", "evaluate cgf1"} <= names


@pytest.mark.parametrize("path", [path for path, _ in COMMANDS], ids=lambda p: " ".join(p) or "segbench")
def test_every_help_renders_without_markup_loss_or_bool_types(path):
    result = CliRunner().invoke(app, [*path, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    assert "<bool>" not in result.output  # flags take no value
    command = dict((" ".join(p), c) for p, c in COMMANDS)[" ".join(path)]
    texts = [command.help or ""] + [p.help or "" for p in _options(command)]
    for text in texts:
        # Rich markup would swallow e.g. "[[x, y], …]": what is shown must be what was written.
        assert Text.from_markup(text).plain == text.replace("\\[", "["), text


@pytest.mark.parametrize("path", [path for path, _ in COMMANDS], ids=lambda p: " ".join(p) or "segbench")
def test_every_help_at_80_columns_cuts_nothing_and_breaks_no_summary(path, monkeypatch):
    import typer.rich_utils

    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", 80)  # see _help_width
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert not re.search(r"…\s*│", result.output), result.output  # a word too long for its column ends in …
    command = dict((" ".join(p), c) for p, c in COMMANDS)[" ".join(path)]
    for sub in getattr(command, "commands", {}).values():  # a command list shows each summary as one paragraph
        assert "\n" not in (sub.help or "").split("\n\n")[0].strip(), sub.name
    # the description above the boxes wraps to the page: inside a paragraph only its last line is short
    description = result.output.split("╭")[0].split("\n")[3:]
    for line, following in zip(description, description[1:], strict=False):
        if line.strip() and following.strip():
            assert len(line.rstrip()) > 60, f"a paragraph breaks mid-sentence: {line!r}\n{result.output}"


def test_spin_import_help_shows_the_polygon_format():
    result = CliRunner().invoke(app, ["spin", "import", "--help"], env=WIDE)
    assert '"points": [[x, y], …]' in result.output or "points: [[x, y], …]" in result.output


def _shows_default(option: Any) -> bool:
    if option.show_default is False or option.default is None:
        return False
    return not (option.is_flag and option.default is False)


@pytest.mark.parametrize("path", [path for path, _ in COMMANDS], ids=lambda p: " ".join(p) or "segbench")
def test_defaults_are_said_once(path):
    command = dict((" ".join(p), c) for p, c in COMMANDS)[" ".join(path)]
    twice = [o.name for o in _options(command) if _shows_default(o) and "default" in (o.help or "").lower()]
    assert not twice, f"{' '.join(path)}: help text and [default: …] both state the default of {twice}"


def test_options_with_a_fixed_set_of_values_list_them():
    expected = {(): {"--runner": "threads|dask"},
                ("build", "waterbirds"): {"--species-match": "tokens|substring", "--on-error": "fail|skip"},
                ("build", "coco-cd"): {"--on-error": "fail|skip"},
                ("rounds", "create", "coco_cd_context_audit"): {"--backend": "labelstudio|files"}}
    for path, options in expected.items():
        rows = CliRunner().invoke(app, [*path, "--help"], env=WIDE).output.splitlines()
        for option, choices in options.items():
            row = next(r for r in rows if re.search(rf"\s{option}\s", r))
            assert f"<{choices}>" in row, (path, row)


def test_rounds_create_has_a_command_for_every_registered_round_kind_under_its_one_name(tmp_path):
    from segbench import registry

    kinds = registry.round_kinds()
    listed = CliRunner().invoke(app, ["rounds", "create", "--help"], env=WIDE).output
    assert kinds and all(re.search(rf"│ {name}\s", listed) for name in kinds), listed
    failed = run(tmp_path, "rounds", "create", "coco_cd_context_audit", "audit-1", code=1)  # needs a COCO-CD build
    assert "coco_cd" in str(failed.exception)
    assert "No such command 'coco-cd-audit'" in run(tmp_path, "rounds", "create", "coco-cd-audit", "audit-1",
                                                     code=2).output


def test_every_build_of_a_sharded_dataset_has_the_same_build_options():
    by_path = {" ".join(p): c for p, c in COMMANDS}
    shared = {"publish", "on_error", "shard_size", "force", "seed", "out"}
    for path in ("build coco-cd", "build waterbirds"):
        assert shared <= {o.name for o in _options(by_path[path])}, path


def test_round_kinds_have_one_name_from_create_to_list(tmp_path):
    config = RoundConfig(label_config="coco_cd_context", overlap=1)
    long_key = "demo-spin-biped-head-with-a-long-name-that-a-narrow-table-would-cut"
    items = [RoundItem(item_id="1", image="coco_cd/images/1.png", width=64, height=48)]
    round_ = new_round(long_key, "coco_cd_context_audit", "coco_cd", "ab" * 32, config, items, "files",
                       "2026-01-01T00:00:00+00:00")
    RoundStore(tmp_path / "data" / "rounds").save(round_)
    listed = run(tmp_path, "rounds", "list")
    assert long_key in listed.stdout  # whole: not cut at 80 columns though stdout is not a terminal
    assert "coco_cd_context_audit" in listed.stdout
    row = next(line for line in listed.stdout.splitlines() if "coco_cd_context_audit" in line)
    assert "│ coco_cd_context_audit │ created │ files   │     1 │" in row  # text left, the count right

    as_json = run(tmp_path, "--json", "rounds", "list")
    rounds = json.loads(as_json.stdout)
    assert [(r["key"], r["kind"]) for r in rounds] == [(long_key, "coco_cd_context_audit")]


def test_tables_in_a_pipe_take_the_width_of_their_content():
    console.configure()
    buffer = io.StringIO()
    wide = console.Console(file=buffer, width=console.PIPE_WIDTH, soft_wrap=True, no_color=True)
    name = "abstract-" + "x" * 150
    wide.print(console.table("Subparts", ["subpart", "count"], [[name, 3], ["eye", 0.123456]]))
    text = buffer.getvalue()
    assert name in text and "0.1235" in text and "…" not in text


def test_in_a_pipe_lines_end_without_blanks_on_whatever_stdout_is_now(monkeypatch):
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    console.configure()
    later = io.StringIO()
    monkeypatch.setattr(sys, "stdout", later)  # replaced after the console was made, as a test runner does
    console.out.print(console.key_values("Counts", {"a": 1, "a longer name": 22}))
    lines = later.getvalue().splitlines()
    assert lines == ["Counts", " a              1", " a longer name  22"]


def test_progress_in_a_pipe_is_timestamped_lines_written_in_order():
    stream = io.StringIO()
    with progress.listening(console.LineListener(stream, every=0.0)):
        with progress.step("Reading", 2) as reading:
            reading.advance()
            reading.advance()
        for _ in progress.track(range(3), "Writing"):
            pass
    lines = stream.getvalue().splitlines()
    assert all(re.match(r"\d\d:\d\d:\d\d ", line) for line in lines), lines
    steps = [line[9:] for line in lines]
    assert steps[0] == "Reading: started (2 items)" and steps[-1].startswith("Writing: done, 3 items")
    assert steps.index("Reading: 2/2") < next(i for i, s in enumerate(steps) if s.startswith("Writing: started"))


class _Shard:
    """A finished shard the way ``gather`` sees a Prefect future."""

    def __init__(self, items: int, report: bool) -> None:
        self.items, self.report = items, report

    def result(self) -> int:
        for _ in range(self.items if self.report else 0):
            progress.item_done("test.shards")
        return self.items


class _Recorder:
    def __init__(self) -> None:
        self.seen: list[int] = []

    def start(self, description: str, total: int | None) -> object:
        return description

    def advance(self, handle: object, amount: int = 1) -> None:
        self.seen.append(amount)

    def finish(self, handle: object, completed: bool = True) -> None:
        return None


def test_sharded_progress_moves_per_item_and_counts_replayed_shards_once():
    recorder = _Recorder()
    progress.item_done("test.shards", 2)  # finished before the stage started gathering: still counted
    with progress.listening(recorder):
        progress.gather([_Shard(3, report=True), _Shard(4, report=False), _Shard(5, report=True)],
                        "Rendering", 12, units=int, channel="test.shards")
    assert sum(recorder.seen) == 12  # never past the total
    assert recorder.seen[:3] == [2, 1, 1]  # item by item, not one jump per shard


class _Future:
    """A Prefect future the way ``gather`` sees one: a result, and the concurrent.futures one it wraps."""

    def __init__(self, wrapped: concurrent.futures.Future) -> None:
        self.wrapped_future = wrapped

    def result(self) -> Any:
        return self.wrapped_future.result()


def test_an_interrupted_gather_stops_its_shards_and_says_where_it_stopped():
    """Ctrl-C while gathering: shards not started are cancelled, a running one stops at its next item, the
    progress line says where the step stopped instead of "done", and a later stage on the channel runs."""
    stream = io.StringIO()
    started, interrupted = threading.Event(), threading.Event()
    items_done = []

    def shard() -> int:
        for item in range(1000):
            started.set()
            interrupted.wait(5)
            items_done.append(item)
            time.sleep(0.05)  # the stop is raised in the gathering thread meanwhile
            progress.item_done("test.stopping")
        return 1000

    class _Interrupting:
        def result(self) -> int:
            started.wait(5)
            interrupted.set()
            raise KeyboardInterrupt

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        running, waiting = _Future(pool.submit(shard)), _Future(pool.submit(shard))
        with progress.listening(console.LineListener(stream, every=0.0)), pytest.raises(KeyboardInterrupt):
            progress.gather([_Interrupting(), running, waiting], "Rendering", 2000, units=int,
                            channel="test.stopping")
        assert running.wrapped_future.done()  # stopped before gather returned, not after its thousand items
        with pytest.raises(progress.StageStopped):
            running.result()
        assert waiting.wrapped_future.cancelled()
    assert len(items_done) == 1
    last = stream.getvalue().splitlines()[-1][9:]
    assert last.startswith("Rendering: stopped at 0/2000 after "), last
    progress.item_done("test.stopping")  # the next stage on the channel is not stopped


def test_json_prints_only_the_summary_on_stdout(tmp_path):
    result = CliRunner().invoke(app, ["--data-root", str(tmp_path / "data"), "--work-dir", str(tmp_path / "w"),
                                      "--json", "rounds", "list"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == []
    assert f"No rounds in {tmp_path / 'data' / 'rounds'} yet" in " ".join(result.stderr.split())


def test_summary_json_names_paths_and_models_plainly():
    text = console.summary_json({"out": Path("data/x"), "values": {0.5, 0.25}, "flag": True})
    assert json.loads(text) == {"flag": True, "out": "data/x", "values": [0.25, 0.5]}


def test_help_in_a_pipe_is_laid_out_wide_unless_a_width_is_set(monkeypatch):
    import typer.rich_utils

    from segbench.cli.help_text import PIPE_HELP_WIDTH, widen_help_in_pipes

    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", None)
    widen_help_in_pipes(True, {})
    assert typer.rich_utils.MAX_WIDTH is None  # a terminal keeps its width
    widen_help_in_pipes(False, {"COLUMNS": "90"})
    assert typer.rich_utils.MAX_WIDTH is None  # so does a width the user set
    widen_help_in_pipes(False, {})
    assert typer.rich_utils.MAX_WIDTH == PIPE_HELP_WIDTH
    text = CliRunner().invoke(app, ["rounds", "ingest", "--help"]).output
    assert "<screened|majority|dawid-skene|glad>" in text  # not split over two lines
    # A command in a pipe has not imported typer's help renderer yet: the width reaches it through TERMINAL_WIDTH.
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TERMINAL_WIDTH")}
    done = subprocess.run([sys.executable, "-m", "segbench", "rounds", "ingest", "--help"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert "<screened|majority|dawid-skene|glad>" in done.stdout, done.stdout


@pytest.mark.parametrize("args", [
    ["build", "vocab", "--captions", "absent.json"],
    ["build", "spin", "--partimagenet", "absent"],
    ["rounds", "create", "spin_subparts", "k", "--partimagenet", "absent"],
    ["rounds", "create", "coco_cd_context_audit", "k", "--gold-file", "absent.json"],
    ["vocab", "map", "--vocab", "absent.json", "--descriptions", "absent.json", "--out", "o.json"],
])
def test_a_missing_input_is_refused_when_the_command_line_is_read(tmp_path, args):
    from segbench.core.errors import InputError

    # Unit tests have no Prefect API: a command that got as far as its flow would fail otherwise.
    failed = run(tmp_path, *args, code=1)
    assert isinstance(failed.exception, InputError) and "input not found" in str(failed.exception)
    assert args[args.index(next(a for a in args if "absent" in a)) - 1] in failed.exception.hint
