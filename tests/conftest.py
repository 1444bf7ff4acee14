"""Test-session environment: every state directory under one temporary folder, telemetry off.

This runs before any test module imports prefect or dvc, which read these variables at import time.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

_SESSION_DIR = Path(tempfile.mkdtemp(prefix="segbench-tests-"))
os.environ.update(
    {
        "PREFECT_HOME": str(_SESSION_DIR / "prefect"),
        "PREFECT_LOCAL_STORAGE_PATH": str(_SESSION_DIR / "prefect" / "results"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "DO_NOT_TRACK": "1",
        "DVC_NO_ANALYTICS": "1",
        "DVC_SITE_CACHE_DIR": str(_SESSION_DIR / "dvc-site-cache"),
        "MPLCONFIGDIR": str(_SESSION_DIR / "matplotlib"),
        "GIT_AUTHOR_NAME": "segbench tests",
        "GIT_AUTHOR_EMAIL": "tests@segbench.invalid",
        "GIT_COMMITTER_NAME": "segbench tests",
        "GIT_COMMITTER_EMAIL": "tests@segbench.invalid",
    }
)
for _var in ("SEGBENCH_CONFIG", "PREFECT_API_URL"):
    os.environ.pop(_var, None)


@pytest.fixture(scope="session")
def prefect_harness():
    """One temporary Prefect API for the whole session (starting one costs 8-17 s)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=90):
        yield
