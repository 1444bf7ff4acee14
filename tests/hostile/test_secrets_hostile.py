"""Servers that echo the secret they were sent: the Label Studio token, the OpenAI key and the Hub
token stay out of everything segbench writes, prints or reports to Prefect.

Each command runs as a user runs it, against a stand-in on 127.0.0.1 that answers every request with
an error quoting its ``Authorization`` header. Afterwards every byte of the project (outputs, rounds,
the work folder), the command's output and the Prefect server's files (its database with the flow
runs' parameters, states, logs and events, and the stored results) is searched for the secret.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.bad_http import BadServer, Reply, Request
from support.hostile import Outcome, run_console

from segbench.annotation_ui.rounds import RoundStore
from segbench.schemas.rounds import Round, RoundConfig, RoundItem, RoundStatus

pytestmark = pytest.mark.integration

ANSWERS = ["--annotations-license", "cc-by-4.0", "--intended-uses", "testing", "--social-impact", "none known",
           "--personal-information", "none", "--maintainer", "Data Team <data@example.org>"]


def _echo(request: Request) -> Reply:
    """An error quoting what the client sent, as some proxies and debug servers do."""
    if request.path.rstrip("/").endswith("/health"):
        return Reply(200, b'{"status": "UP"}')
    if request.path.rstrip("/").endswith("/whoami"):  # the token passes the command's check, then the
        return Reply(200, json.dumps({"id": 1, "email": _authorization(request)}).encode())  # flow is refused
    said = _authorization(request)
    return Reply(403, json.dumps({"detail": f"refused {said}", "error": {"message": f"refused {said}"}}).encode())


def _authorization(request: Request) -> str:
    return " ".join(value for name, value in request.headers.items() if name.lower() == "authorization")


def _files_holding(secret: str, *roots: Path) -> list[str]:
    found = []
    for root in roots:
        for path in (p for p in root.rglob("*") if p.is_file()):
            if secret.encode() in path.read_bytes():
                found.append(str(path))
    return found


def _assert_nowhere(secret: str, outcome: Outcome, project: Path, prefect_home: Path, flow_run: str) -> None:
    assert outcome.code != 0, "the stand-in refused everything: the command must fail"
    assert secret not in outcome.stdout + outcome.stderr
    assert _files_holding(flow_run, prefect_home), "the search reaches the database holding the flow run"
    assert not _files_holding(secret, project, prefect_home)


def test_the_label_studio_token_echoed_back_is_nowhere(tmp_path, prefect_server_home):
    token = "ls-token-ECHOED-7d41c0a9e2"
    stamp = "2026-01-01T00:00:00+00:00"
    RoundStore(tmp_path / "data" / "rounds").save(Round(
        key="audit-1", kind="coco_cd_context_audit", dataset="coco_cd", dataset_version="0" * 64,
        config=RoundConfig(label_config="coco_cd_context"), backend="labelstudio", status=RoundStatus.CREATED,
        created_at=stamp, updated_at=stamp,
        items=[RoundItem(item_id=str(i), image=f"coco_cd/images/{i}.png", width=4, height=4) for i in (1, 2)]))
    with BadServer(_echo) as server:
        outcome = run_console(tmp_path, "--verbose", "rounds", "launch", "audit-1", env={
            "SEGBENCH_LABEL_STUDIO_URL": server.url, "SEGBENCH_LABEL_STUDIO_TOKEN": token,
            "SEGBENCH_LABEL_STUDIO_FILES": str(tmp_path / "files")})
    assert any(token in _authorization(r) for r in server.requests), outcome
    _assert_nowhere(token, outcome, tmp_path, prefect_server_home, "round-launch key=audit-1")


def test_the_openai_key_echoed_back_is_nowhere(tmp_path, prefect_server_home):
    key = "sk-ECHOED-5b2f19c8d4e7a6"
    captions = tmp_path / "captions.txt"
    captions.write_text("a cat on the sofa\na cat by the window\na dog in the park\na dog on the grass\n")
    with BadServer(_echo) as server:
        outcome = run_console(tmp_path, "--verbose", "build", "vocab", "--captions", str(captions), "--min-count",
                              "1", env={"SEGBENCH_PROVIDER": "openai", "SEGBENCH_OPENAI_BASE_URL": server.url + "/v1",
                                        "OPENAI_API_KEY": key})
    assert any(key in _authorization(r) for r in server.requests), outcome
    _assert_nowhere(key, outcome, tmp_path, prefect_server_home, "build-vocab")


@pytest.mark.parametrize("track", [True, False], ids=["as-a-flow", "in-process"])
def test_the_hub_token_echoed_back_is_nowhere(demo_copy, prefect_server_home, track):
    token = "hf_ECHOED_3c9a7e1f0b"
    project = demo_copy
    with BadServer(_echo) as server:
        outcome = run_console(project, "--verbose", "release", "vocab", "--out", str(project / "rel"), *ANSWERS,
                              "--push", "org/vocab", *(["--track"] if track else []), root_args=[],
                              env={"HF_TOKEN": token, "SEGBENCH_HUB_ENDPOINT": server.url})
    assert any(token in _authorization(r) for r in server.requests), outcome
    assert "cannot push the release to org/vocab" in outcome.stderr
    if track:
        _assert_nowhere(token, outcome, project, prefect_server_home, "release-dataset")
    else:
        assert outcome.code != 0 and token not in outcome.stdout + outcome.stderr
        assert not _files_holding(token, project)
