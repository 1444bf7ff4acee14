"""Sharing versions through an S3-compatible remote (moto's standalone server on 127.0.0.1).

A build is published to the bucket through the CLI, a fresh clone pulls that version from the
bucket and evaluates it by ``--rev``. The credentials live in the environment only: they must not
reach the command output, logs, manifests, reports or anything git tracks.
"""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from support.cli import run

from segbench.core.io import sha256_tree
from segbench.demo.world import generate_demo_world

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

SIZES = {"cat/indoor": 12, "cat/outdoor": 8, "dog/indoor": 8, "dog/outdoor": 12}
BUCKET = "segbench-versions"
KEY_ID = "AKIASEGBENCHTESTKEY7"
SECRET = "s3cr3t-segbench-test-Zq9Xv2Lm"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def s3_endpoint(tmp_path: Path):
    """A moto S3 server on a free local port, stopped (and waited for) at the end."""
    port = _free_port()
    log = (tmp_path / "moto.log").open("wb")
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url, timeout=2).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto server did not start: {(tmp_path / 'moto.log').read_text()}") from None
                time.sleep(0.3)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def _dvc(repo: Path, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=repo, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def _bucket_keys(endpoint: str) -> list[str]:
    import boto3

    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    if not client.list_buckets()["Buckets"]:
        client.create_bucket(Bucket=BUCKET)
    return [obj["Key"] for obj in client.list_objects_v2(Bucket=BUCKET).get("Contents", [])]


def test_publish_to_s3_then_a_fresh_clone_pulls_and_evaluates_that_version(s3_endpoint, tmp_path, monkeypatch,
                                                                            caplog):
    # Credentials in the environment only, as a team member's shell or CI secrets would set them.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    caplog.set_level(logging.DEBUG, logger="segbench")
    assert _bucket_keys(s3_endpoint) == []  # creates the empty bucket

    world = tmp_path / "world"
    generate_demo_world(world, seed=5, group_sizes=SIZES)
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    monkeypatch.chdir(project)
    outputs = [run(project, "build", "coco-cd", "--coco-root", str(world), "--stuff-root", str(world),
                   "--val-per-group", "2", "--test-per-group", "3").output]
    _dvc(project, "init", "-q")
    # The bucket is the team's: committed. The endpoint is this machine's: .dvc/config.local.
    _dvc(project, "remote", "add", "-d", "storage", f"s3://{BUCKET}/segbench")
    _dvc(project, "remote", "modify", "--local", "storage", "endpointurl", s3_endpoint)
    published = run(project, "publish", "--commit", "--tag", "v1", "-m", "COCO-CD v1")
    outputs.append(published.output)
    assert "storage" in published.output and "v1" in published.output
    assert any(key.startswith("segbench/files/md5/") for key in _bucket_keys(s3_endpoint))
    committed = _git(project, "show", "v1:.dvc/config")
    assert f"s3://{BUCKET}/segbench" in committed and s3_endpoint not in committed

    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "-q", "--branch", "v1", str(project), str(clone))
    assert not (clone / "data" / "coco_cd").exists()
    _dvc(clone, "remote", "modify", "--local", "storage", "endpointurl", s3_endpoint)
    outputs.append(_dvc(clone, "pull"))  # from the bucket: the clone has no cache of its own
    assert sha256_tree(clone / "data" / "coco_cd") == sha256_tree(project / "data" / "coco_cd")

    from segbench.flows.coco_cd.baseline import predict_baseline

    monkeypatch.chdir(clone)
    predictions = tmp_path / "predictions"
    predict_baseline(repo=clone, rev="v1", out=predictions, rho=0.95, split="test", dataset_dir="data/coco_cd")
    evaluated = run(clone, "evaluate", "coco-cd", "--rev", "v1", "--predictions", str(predictions),
                    "--repo", str(clone))
    outputs.append(evaluated.output)
    reports = list((clone / "reports").rglob("metrics.json"))
    assert len(reports) == 1 and '"rev": "v1"' in reports[0].read_text()

    tracked = _git(project, "log", "-p", "--all") + _git(clone, "log", "-p", "--all")
    written = [p.read_bytes() for root in (project, clone) for p in root.rglob("*")
               if p.is_file() and ".git" not in p.relative_to(root).parts[:1]]
    for secret in (KEY_ID, SECRET):
        assert secret not in "\n".join(outputs) + caplog.text + tracked
        assert not any(secret.encode() in content for content in written)


def test_publishing_to_a_missing_bucket_fails_with_a_fix_and_no_credentials(s3_endpoint, tmp_path, monkeypatch):
    from segbench.core.errors import VersioningError
    from segbench.core.io import atomic_write_bytes

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    project = tmp_path / "project"
    project.mkdir()
    _git(project, "init", "-q")
    atomic_write_bytes(project / "data" / "demo" / "labels.json", b"{}\n")
    _dvc(project, "init", "-q")
    _dvc(project, "remote", "add", "-d", "storage", "s3://no-such-bucket/segbench")
    _dvc(project, "remote", "modify", "--local", "storage", "endpointurl", s3_endpoint)
    monkeypatch.chdir(project)
    failed = run(project, "publish", "--commit", code=1)
    assert isinstance(failed.exception, VersioningError)
    message = str(failed.exception)
    assert "dvc push" in message and "bucket does not exist" in message and "reachable and writable" in message
    assert KEY_ID not in message + failed.output and SECRET not in message + failed.output
    assert _git(project, "rev-list", "--all") == "", "nothing is committed when the push fails"
