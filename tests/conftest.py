"""Test-session environment: every state directory under one temporary folder, telemetry off.

This runs before any test module imports prefect or dvc, which read these variables at import time.

Markers: a test is ``unit`` unless it is ``integration`` (real Prefect flows, git + DVC, servers),
``labelstudio`` (the Label Studio test server) or ``browser`` (headless Chromium). Asking for the
``prefect_harness`` or ``label_studio`` fixture marks a test by itself. A unit test has no Prefect
API: one that reaches for it fails at once instead of starting a server of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

_SESSION_DIR = Path(tempfile.mkdtemp(prefix="segbench-tests-"))
os.environ.update(
    {
        "PREFECT_HOME": str(_SESSION_DIR / "prefect"),
        "PREFECT_LOCAL_STORAGE_PATH": str(_SESSION_DIR / "prefect" / "results"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        # A command without a Prefect API gets a private server that ends with it, not a background
        # one outliving the test (tests/integration/test_prefect_server.py tests that default).
        "SEGBENCH_SERVER_IDLE_MINUTES": "0",
        "DO_NOT_TRACK": "1",
        "DVC_NO_ANALYTICS": "1",
        "DVC_SITE_CACHE_DIR": str(_SESSION_DIR / "dvc-site-cache"),
        "MPLCONFIGDIR": str(_SESSION_DIR / "matplotlib"),
        "HF_HOME": str(_SESSION_DIR / "huggingface"),
        "GIT_AUTHOR_NAME": "segbench tests",
        "GIT_AUTHOR_EMAIL": "tests@segbench.invalid",
        "GIT_COMMITTER_NAME": "segbench tests",
        "GIT_COMMITTER_EMAIL": "tests@segbench.invalid",
    }
)
for _var in ("SEGBENCH_CONFIG", "PREFECT_API_URL"):
    os.environ.pop(_var, None)

SUITES = ("integration", "labelstudio", "browser", "localmodel", "fiftyone")
# Nothing listens on the discard port: a Prefect client pointed here fails on its first request.
NO_PREFECT_API = "http://127.0.0.1:9/api"
DEMO_SERVER_IDLE_MINUTES = 1  # the demo project's own Prefect server outlives the demo this long
FIXTURE_MARKS = {"prefect_harness": "integration", "label_studio": "labelstudio", "local_model": "localmodel",
                 "fiftyone_dir": "fiftyone"}


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_SESSION_DIR, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture, mark in FIXTURE_MARKS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(mark)
        if not any(item.get_closest_marker(name) for name in SUITES):
            item.add_marker("unit")


@pytest.fixture(autouse=True)
def _isolated_process_state(request: pytest.FixtureRequest):
    """Each test starts from the session's environment and working directory, and leaves them so.

    Commands run in-process export their settings (``PREFECT_HOME``, log levels, ...); without this
    they would reach the tests that follow.
    """
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    if request.node.get_closest_marker("unit") and "PREFECT_API_URL" not in os.environ:
        os.environ["PREFECT_API_URL"] = NO_PREFECT_API
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


@pytest.fixture(scope="session")
def prefect_harness():
    """One Prefect API for the whole session, for flows run in-process and for ``segbench`` commands
    the tests start as processes (``PREFECT_API_URL`` is exported): none of them pays a server start.

    The server is the one segbench starts per command when none is configured, tied to this process.
    """
    from segbench import prefect_server

    process, url = prefect_server.start_private_server(_SESSION_DIR / "prefect-server.log", timeout=120)
    from prefect.settings import PREFECT_API_URL, temporary_settings

    os.environ["PREFECT_API_URL"] = url
    try:
        with temporary_settings({PREFECT_API_URL: url}):
            yield url
            prefect_server.drain_prefect_workers()  # before the server stops: no errors at exit
    finally:
        os.environ.pop("PREFECT_API_URL", None)
        prefect_server.stop_private_server(process)


@pytest.fixture(scope="session")
def prefect_server_home(prefect_harness) -> Path:
    """The folder of the session's Prefect server: its database (runs, states, logs, events)."""
    return _SESSION_DIR / "prefect"


@pytest.fixture(scope="session")
def demo_project(prefect_harness, tmp_path_factory, worker_id):
    """``segbench --json demo --seed 0`` run once per test run, as a user runs it: ``(project, result)``.

    A process in the project folder, with no Prefect API configured: the demo starts the work dir's
    own server, as it does for a user, and that server stops after a minute without use (its runs
    stay in its database: ``segbench server start`` shows them again). ``result.stdout`` is the JSON
    summary and ``result.output`` everything meant for people (stderr). Under pytest-xdist the first
    worker to ask runs it and the others wait for it and read what it left. Read-only: a test that
    changes what the demo built works on a copy.
    """
    import subprocess
    import sys

    from filelock import FileLock
    from support.commands import check_fix_lines
    from support.hostile_builds import own_server_env

    # Every worker's base folder sits in the one folder of this test run.
    root = tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent
    project, record = root / "demo", root / "demo-output.json"
    with FileLock(str(root / "demo.lock")):
        if not record.is_file():
            project.mkdir()
            env = own_server_env(DEMO_SERVER_IDLE_MINUTES)
            done = subprocess.run([sys.executable, "-m", "segbench", "--data-root", str(project / "data"),
                                   "--work-dir", str(project / "work"), "--json", "demo", "--seed", "0"],
                                  cwd=project, env=env, capture_output=True, text=True, timeout=1800)
            assert done.returncode == 0, done.stderr[-5000:]
            check_fix_lines(done.stderr)
            record.write_text(json.dumps({"stdout": done.stdout, "output": done.stderr}))
    return project, SimpleNamespace(**json.loads(record.read_text()))


@pytest.fixture
def demo_copy(demo_project, tmp_path) -> Path:
    """A copy of the demo project for a test that changes it, without its releases, Prefect state or caches."""
    copy = tmp_path / "project"
    # The data root's lock file comes and goes with the commands other tests run in the demo project.
    shutil.copytree(demo_project[0], copy, symlinks=True,
                    ignore=shutil.ignore_patterns("releases", "prefect", "prefect-server", "huggingface",
                                                  ".data.lock*"))
    return copy


@pytest.fixture(scope="session")
def label_studio():
    """The Label Studio test server that scripts/test.sh starts, with a client for it.

    Reads ``SEGBENCH_LABEL_STUDIO_URL``, ``_TOKEN`` and ``_FILES`` (the server's files root). When
    the server cannot be reached the test fails under CI and is skipped elsewhere.
    """
    from segbench.annotation_ui.client import LabelStudioClient
    from segbench.core.errors import ServiceError

    start = (
        "start it with: SEGBENCH_LABEL_STUDIO_TEST=1 scripts/label-studio.sh start && "
        'eval "$(SEGBENCH_LABEL_STUDIO_TEST=1 scripts/label-studio.sh env)" (or run bash scripts/test.sh)'
    )
    give_up = pytest.fail if os.environ.get("CI") else pytest.skip
    names = ("SEGBENCH_LABEL_STUDIO_URL", "SEGBENCH_LABEL_STUDIO_TOKEN", "SEGBENCH_LABEL_STUDIO_FILES")
    missing = [name for name in names if not os.environ.get(name)]
    if missing:
        give_up(f"Label Studio test server not configured ({', '.join(missing)} unset); {start}")
    url, token, files = (os.environ[name] for name in names)
    client = LabelStudioClient(url, token)
    try:
        client.check()
    except ServiceError as exc:
        client.close()
        give_up(f"Label Studio test server not usable: {exc.message}; {start}")
    from segbench.schemas.rounds import LabelStudioConnection

    connection = LabelStudioConnection(url=url, token=token, files=Path(files))
    yield SimpleNamespace(url=url, token=token, files=Path(files), client=client, connection=connection)
    client.close()


@pytest.fixture(scope="session")
def local_model():
    """The real small model scripts/test.sh serves (scripts/local-llm.sh): its base URL and the file
    the server logs each request to. Fails under CI and is skipped elsewhere when it is not running."""
    import httpx

    start = "start it with: scripts/local-llm.sh install && scripts/local-llm.sh start (or run bash scripts/test.sh)"
    give_up = pytest.fail if os.environ.get("CI") else pytest.skip
    url, requests = os.environ.get("SEGBENCH_TEST_LOCAL_LLM"), os.environ.get("SEGBENCH_TEST_LOCAL_LLM_REQUESTS")
    if not url or not requests:
        give_up(f"local model server not configured (SEGBENCH_TEST_LOCAL_LLM unset); {start}")
    try:
        httpx.get(f"{url.removesuffix('/v1')}/health", timeout=5).raise_for_status()
    except httpx.HTTPError as exc:
        give_up(f"local model server at {url} not answering ({type(exc).__name__}); {start}")
    return SimpleNamespace(url=url, requests=Path(requests))


@pytest.fixture(scope="session")
def fiftyone_dir() -> Path:
    """FiftyOne's folder as scripts/test.sh installs it (scripts/fiftyone.sh): a test gives it to
    segbench as SEGBENCH_FIFTYONE_DIR. Fails under CI and is skipped elsewhere when it is missing."""
    give_up = pytest.fail if os.environ.get("CI") else pytest.skip
    folder = os.environ.get("SEGBENCH_TEST_FIFTYONE_DIR")
    if not folder or not (Path(folder) / "venv" / "bin" / "python").is_file():
        give_up("FiftyOne not installed (SEGBENCH_TEST_FIFTYONE_DIR unset or empty); install it with: "
                "scripts/fiftyone.sh install, then export SEGBENCH_TEST_FIFTYONE_DIR=.segbench/fiftyone "
                "(or run bash scripts/test.sh)")
    return Path(folder).resolve()


@pytest.fixture
def openai_server():
    """A local OpenAI-compatible server (tests/support/openai_server.py), one per test."""
    from support.openai_server import OpenAICompatServer

    with OpenAICompatServer() as server:
        yield server
