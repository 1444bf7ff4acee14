"""Bad settings end every command with exit code 2 and a message naming the file or key and the fix:
``segbench.toml`` (syntax, types, unknown keys, encoding, a directory), ``--data-root`` / ``--work-dir``
pointing at a regular file, and folders or files this user may not read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.hostile import (
    assert_clean_failure,
    latin1,
    project_args,
    run_console,
    run_main,
    skip_as_root,
    snapshot,
)

from segbench.core.io import write_json


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    """A project whose data root already holds an output (to keep intact).

    Settings from the test run's own environment (the test Label Studio server's URL and token)
    would beat the config file under test, so they are cleared.
    """
    for name in [name for name in os.environ if name.startswith("SEGBENCH_")]:
        monkeypatch.delenv(name)
    write_json(tmp_path / "data" / "coco_cd" / "manifest.json", {"kept": True})
    return tmp_path


def _root(project: Path, *extra: str) -> list[str]:
    return ["--data-root", str(project / "data"), "--work-dir", str(project / "work"), *extra]


CONFIGS = {
    "toml-syntax": ('data_root = \n', ["segbench.toml", "not valid TOML", "line 1"]),
    "toml-unquoted-string": ('provider = offline\n', ["segbench.toml", "not valid TOML"]),
    "wrong-type-int": ('openai_concurrency = "many"\n', ["segbench.toml", "openai_concurrency", "'many'"]),
    "wrong-type-bool": ('replay_only = "perhaps"\n', ["segbench.toml", "replay_only"]),
    "wrong-choice": ('provider = "magic"\n', ["segbench.toml", "provider"]),
    "unknown-key": ('data_rot = "data"\n', ["segbench.toml", "unknown setting 'data_rot'", "did you mean 'data_root'"]),
    "table-instead-of-value": ("[provider]\nx = 1\n", ["segbench.toml", "provider"]),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_an_invalid_segbench_toml_in_the_working_directory(project, name):
    text, names = CONFIGS[name]
    (project / "segbench.toml").write_text(text)
    before = snapshot(project / "data")
    assert_clean_failure(run_main(project, "rounds", "list"), *names)
    assert snapshot(project / "data") == before


def test_a_secret_of_the_wrong_type_is_named_but_not_shown(project):
    (project / "segbench.toml").write_text('label_studio_token = ["s3cr3t-value"]\n')
    outcome = run_main(project, "rounds", "list")
    assert_clean_failure(outcome, "label_studio_token")
    assert "s3cr3t-value" not in outcome.stderr


def test_a_non_utf8_config_given_with_config(project):
    config = latin1(project / "latin1.toml", 'label_studio_url = "http://café"\n')
    assert_clean_failure(run_main(project, "rounds", "list", root_args=_root(project, "--config", str(config))),
                         "latin1.toml", "not UTF-8")


def test_a_directory_given_as_config(project):
    (project / "conf").mkdir()
    assert_clean_failure(run_main(project, "rounds", "list", root_args=_root(project, "--config", str(project / "conf"))),
                         "conf", "expected a config file, found a directory")


def test_segbench_config_variable_naming_a_directory(project, monkeypatch):
    (project / "conf").mkdir()
    monkeypatch.setenv("SEGBENCH_CONFIG", str(project / "conf"))
    assert_clean_failure(run_main(project, "rounds", "list"), "conf", "found a directory")


def test_a_setting_from_the_environment_names_the_variable(project, monkeypatch):
    monkeypatch.setenv("SEGBENCH_OPENAI_TIMEOUT", "soon")
    outcome = run_main(project, "rounds", "list")
    assert_clean_failure(outcome, "openai_timeout", "SEGBENCH_OPENAI_TIMEOUT")


@pytest.mark.parametrize("option", ["--data-root", "--work-dir"])
def test_a_regular_file_where_a_folder_is_expected(project, option):
    afile = project / "not-a-folder"
    afile.write_text("x\n")
    args = {"--data-root": str(project / "data"), "--work-dir": str(project / "work"), option: str(afile)}
    outcome = run_main(project, "rounds", "list", root_args=[a for pair in args.items() for a in pair])
    assert_clean_failure(outcome, "not-a-folder", "expected a directory, found a file", option)
    assert afile.read_text() == "x\n"


def test_a_data_root_below_a_regular_file(project):
    (project / "blocker").write_text("x\n")
    outcome = run_main(project, "rounds", "list",
                       root_args=["--data-root", str(project / "blocker" / "data"), "--work-dir", str(project / "w")])
    assert_clean_failure(outcome, "blocker", "expected a directory, found a file", "--data-root")


def test_bad_config_through_the_console_script(project):
    (project / "segbench.toml").write_text("data_root = [\n")
    before = snapshot(project / "data")
    assert_clean_failure(run_console(project, "rounds", "list"), "segbench.toml", "not valid TOML")
    assert snapshot(project / "data") == before


# --- permissions (root ignores them) -------------------------------------------------------------------

@skip_as_root
@pytest.mark.parametrize("given", ["flag", "config"])
def test_an_unreadable_data_root(project, given):
    data = project / "data"
    before = snapshot(data)
    if given == "config":
        (project / "segbench.toml").write_text(f'data_root = "{data}"\nwork_dir = "{project / "work"}"\n')
    root_args = None if given == "flag" else []
    data.chmod(0)
    try:
        outcome = run_main(project, "rounds", "list", root_args=root_args)
    finally:
        data.chmod(0o755)
    # click refuses an unreadable --data-root itself; one from the config file is segbench's check.
    if given == "flag":
        assert_clean_failure(outcome, "--data-root", str(data), "not readable", fix=False)
    else:
        assert_clean_failure(outcome, str(data), "permission denied")
    assert snapshot(data) == before


@skip_as_root
@pytest.mark.parametrize(("name", "text", "args", "names", "fix"), [
    # the config is read by segbench; a --plan path typed on the command line is refused by click
    ("segbench.toml", 'provider = "offline"\n', ["rounds", "list"], ["segbench.toml", "permission denied"], True),
    ("plan.toml", "[publish]\n", ["rebuild", "--plan", "{path}"], ["--plan", "plan.toml", "not readable"], False),
], ids=["config", "plan"])
def test_an_unreadable_file(project, name, text, args, names, fix):
    path = project / name
    path.write_text(text)
    path.chmod(0)
    try:
        outcome = run_main(project, *(arg.format(path=path) for arg in args))
        assert_clean_failure(outcome, *names, fix=fix)
    finally:
        path.chmod(0o644)


# --- --verbose shows what caused an error, secrets masked -----------------------------------------

def test_verbose_shows_the_cause_of_an_error_and_plain_output_does_not(project):
    (project / "segbench.toml").write_text("data_root = [\n")
    plain = run_main(project, "rounds", "list")
    assert_clean_failure(plain, "segbench.toml", "not valid TOML")
    assert "TOMLDecodeError" not in plain.stderr
    verbose = run_main(project, "rounds", "list", root_args=["--verbose", *project_args(project)])
    assert verbose.code == 2
    assert "TOMLDecodeError" in verbose.stderr and "direct cause" in verbose.stderr
    assert verbose.stderr.rstrip().splitlines()[-2].startswith("error: ")  # the message still ends it


def test_verbose_masks_the_secrets_a_cause_carries(capsys):
    from segbench import console
    from segbench.core.errors import ServiceError

    console.configure(verbose=True)
    console.hide_secrets("tok-1234567890")
    try:
        try:
            raise ValueError("server said: Authorization: Token tok-1234567890 via https://user:pw@host/x")
        except ValueError as cause:
            raise ServiceError("the server refused the request") from cause
    except ServiceError as exc:
        console.error(str(exc), exc)
    finally:
        console.configure()
    shown = capsys.readouterr().err
    assert "ValueError" in shown and "the server refused the request" in shown
    assert "tok-1234567890" not in shown and "user:pw" not in shown and "***" in shown


def test_a_token_is_masked_with_a_trailing_newline_escaped_and_base64_encoded(capsys):
    import base64

    from segbench import console

    token = "hf_AbCdEfGhIjKlMnOpQrStUv\r\n"  # read from a file with Windows line endings
    console.configure()
    console.hide_secrets(token)
    console.error(f"Illegal header value {('Bearer ' + token).encode()!r}; the server echoed "
                  f"{base64.b64encode(token.strip().encode()).decode()} and {token.strip()}")
    console.configure()
    shown = capsys.readouterr().err
    assert "AbCdEf" not in shown and base64.b64encode(token.strip().encode()).decode()[:12] not in shown
    assert shown.count("***") == 3, shown


@pytest.mark.parametrize("value", ["yesterday", "1.7e9", "-5", "99999999999999"])
def test_a_bad_source_date_epoch_stops_the_command_naming_it(project, monkeypatch, value):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", value)
    before = snapshot(project / "data")
    assert_clean_failure(run_main(project, "rounds", "list"), "SOURCE_DATE_EPOCH", repr(value), "git log -1")
    assert snapshot(project / "data") == before


def test_a_valid_source_date_epoch_fixes_the_recorded_time(monkeypatch):
    from segbench.core import clock

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1704067200")
    assert clock.timestamp() == "2024-01-01T00:00:00+00:00"


def test_a_segbench_toml_with_a_byte_order_mark_is_read(project):
    (project / "segbench.toml").write_bytes(b"\xef\xbb\xbf" + b'provider = "offline"\n')
    outcome = run_main(project, "rounds", "list")
    assert outcome.code == 0, outcome
