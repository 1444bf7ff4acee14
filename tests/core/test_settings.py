"""Settings precedence (flags > env > config file > defaults) and the runtime environment."""

import os

import pytest

from segbench.core.errors import InputError
from segbench.settings import configure_runtime, load_settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for key in list(os.environ):
        if key.startswith("SEGBENCH_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)


def test_defaults_keep_everything_inside_the_project():
    s = load_settings()
    assert str(s.data_root) == "data" and str(s.cache_dir) == "data/cache"
    assert str(s.prefect_home) == ".segbench/prefect"
    assert str(s.prefect_result_storage) == ".segbench/prefect/results"
    assert s.provider == "offline"


def test_precedence_flags_over_env_over_file(tmp_path, monkeypatch):
    (tmp_path / "segbench.toml").write_text('data_root = "from-file"\nwork_dir = "wd-file"\nprovider = "openai"\n')
    s = load_settings()
    assert str(s.data_root) == "from-file" and s.provider == "openai"
    monkeypatch.setenv("SEGBENCH_DATA_ROOT", "from-env")
    s = load_settings()
    assert str(s.data_root) == "from-env" and str(s.work_dir) == "wd-file"
    assert str(load_settings(data_root="from-flag").data_root) == "from-flag"


def test_explicit_config_file_and_missing_one(tmp_path):
    cfg = tmp_path / "other.toml"
    cfg.write_text('label_studio_url = "http://127.0.0.1:9000"\n')
    assert load_settings(cfg).label_studio_url == "http://127.0.0.1:9000"
    with pytest.raises(InputError, match="config file not found"):
        load_settings(tmp_path / "absent.toml")


def test_invalid_and_unknown_keys_name_the_key_and_file(tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text('provider = "magic"\n')
    with pytest.raises(InputError, match="bad.toml: invalid setting 'provider'"):
        load_settings(cfg)
    cfg.write_text('data_rot = "x"\n')
    with pytest.raises(InputError, match="bad.toml: unknown setting 'data_rot'") as info:
        load_settings(cfg)
    assert "did you mean 'data_root'" in info.value.hint


def test_secrets_are_not_shown(monkeypatch):
    monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_TOKEN", "s3cr3t-token")
    s = load_settings()
    assert "s3cr3t-token" not in repr(s) and "s3cr3t-token" not in str(s.model_dump())
    assert s.label_studio_token.get_secret_value() == "s3cr3t-token"


def test_configure_runtime_exports_state_dirs_and_disables_telemetry(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "environ", {})  # restored afterwards: the session's Prefect must not move
    configure_runtime(load_settings(work_dir=tmp_path / "wd"))
    assert os.environ["PREFECT_HOME"] == str(tmp_path / "wd" / "prefect")
    assert os.environ["DVC_SITE_CACHE_DIR"].startswith(str(tmp_path / "wd"))
    assert os.environ["DO_NOT_TRACK"] == "1" and os.environ["DVC_NO_ANALYTICS"] == "1"
    assert os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"


def test_a_label_studio_server_started_by_the_script_is_found(tmp_path, monkeypatch):
    folder = tmp_path / ".segbench" / "label-studio"
    folder.mkdir(parents=True)
    (folder / "connection.json").write_text(
        '{"url": "http://127.0.0.1:8123", "token": "t0ken", "files": "/srv/ls/files"}')
    s = load_settings()
    assert s.label_studio_url == "http://127.0.0.1:8123" and s.label_studio_token.get_secret_value() == "t0ken"
    assert str(s.label_studio_files) == "/srv/ls/files"
    monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_URL", "http://127.0.0.1:9000")  # explicit settings win
    assert load_settings().label_studio_url == "http://127.0.0.1:9000"


def test_the_annotators_own_servers_the_script_started_are_found(tmp_path):
    folder = tmp_path / ".segbench" / "label-studio"
    for name, port in (("bob", 8101), ("alice", 8100)):
        (folder / "annotators" / name).mkdir(parents=True)
        (folder / "annotators" / name / "connection.json").write_text(
            f'{{"url": "http://127.0.0.1:{port}", "token": "t0ken-{name}", "files": "/srv/ls/files"}}')
    (folder / "annotators" / "carol").mkdir()  # never started: no connection recorded
    servers = load_settings(label_studio_timeout=7).label_studio().annotators
    assert list(servers) == ["alice", "bob"]
    assert servers["bob"].url == "http://127.0.0.1:8101" and servers["bob"].token.get_secret_value() == "t0ken-bob"
    assert str(servers["alice"].files) == "/srv/ls/files" and servers["alice"].timeout == 7
    (folder / "annotators" / "bob" / "connection.json").write_text("[]")
    with pytest.raises(InputError, match="unreadable Label Studio connection file") as error:
        load_settings().label_studio()
    assert "annotators/bob/connection.json" in str(error.value.path)


def test_an_unreadable_label_studio_connection_file_is_named(tmp_path):
    folder = tmp_path / ".segbench" / "label-studio"
    folder.mkdir(parents=True)
    (folder / "connection.json").write_text('{"url": ')
    with pytest.raises(InputError, match="connection.json"):
        load_settings()


def test_reports_go_beside_the_data_root():
    assert str(load_settings().reports_dir) == "reports"
    assert str(load_settings(data_root="/srv/project/data").reports_dir) == "/srv/project/reports"


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/v1", "http://localhost:11434/v1", "http://[::1]:8000/v1"])
def test_a_model_server_on_this_machine_gets_one_request_at_a_time_and_long_deadlines(url, monkeypatch):
    local = load_settings(openai_base_url=url)
    assert (local.openai_concurrency, local.openai_timeout, local.openai_max_retries) == (1, 300, 1)
    monkeypatch.setenv("SEGBENCH_OPENAI_CONCURRENCY", "3")  # what is set still wins
    assert load_settings(openai_base_url=url).openai_concurrency == 3
    assert load_settings(openai_base_url=url, openai_timeout=20).openai_timeout == 20


@pytest.mark.parametrize("url", [None, "https://api.example.org/v1", "http://10.0.0.5:8000/v1"])
def test_a_hosted_or_remote_server_keeps_the_hosted_defaults(url):
    hosted = load_settings(openai_base_url=url)
    assert (hosted.openai_concurrency, hosted.openai_timeout, hosted.openai_max_retries) == (4, 60, 4)
