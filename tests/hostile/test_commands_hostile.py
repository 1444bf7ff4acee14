"""The hostile cases of ``test_servers_hostile.py`` and ``test_files_hostile.py`` through the commands a
user types: each ends as a clean failure (exit code 2, the thing named, a fix, no traceback), in
bounded time, without the token or key in what is printed. (A server that drips is tested on the
client, with a short deadline: through a command it takes the 120 s a request may last.)
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from support.bad_http import BadServer, Reply
from support.cafe_eval_data import HAND_PAIRS, HAND_PREDS, cafe_gt
from support.hostile import assert_clean_failure, run_main

from segbench.annotation_ui.backends.files import files_dir
from segbench.annotation_ui.rounds import RoundStore
from segbench.demo.cafe.sources import generate_demo_cafe
from segbench.schemas.rounds import Round, RoundConfig, RoundItem, RoundStatus

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]  # in-process commands share one API

TOKEN = "ls-token-SECRET-0123456789abcdef"
KEY = "sk-test-SECRET-0123456789abcdef"
T0 = "2026-01-01T00:00:00+00:00"


def _launched_round(data_root: Path, backend: str, project_id: int | None = None) -> str:
    RoundStore(data_root / "rounds").save(Round(
        key="audit-1", kind="coco_cd_context_audit", dataset="coco_cd", dataset_version="0" * 64,
        config=RoundConfig(label_config="coco_cd_context"), backend=backend, status=RoundStatus.LAUNCHED,
        created_at=T0, updated_at=T0, launched_at=T0, project_id=project_id,
        items=[RoundItem(item_id=str(i), image=f"coco_cd/images/{i}.png", width=4, height=4) for i in (1, 2)]))
    return "audit-1"


def test_rounds_status_against_a_label_studio_answering_garbage(tmp_path, monkeypatch):
    key = _launched_round(tmp_path / "data", "labelstudio", project_id=1)
    with BadServer(lambda request: Reply(200, b"[1, 2]")) as server:
        monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_URL", server.url)
        monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_TOKEN", TOKEN)
        monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_FILES", str(tmp_path / "files"))
        outcome = run_main(tmp_path, "rounds", "status", key)
    assert_clean_failure(outcome, server.url)
    assert TOKEN not in outcome.stdout + outcome.stderr


def test_rounds_status_against_a_label_studio_that_drips_ends_within_its_deadline(tmp_path, monkeypatch):
    key = _launched_round(tmp_path / "data", "labelstudio", project_id=1)
    with BadServer(lambda request: Reply(200, b"[" + b" " * 600 + b"]", drip=0.5)) as server:
        monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_URL", server.url)
        monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_TOKEN", TOKEN)
        monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_TIMEOUT", "1")  # a request may last 4 s
        start = time.monotonic()
        outcome = run_main(tmp_path, "rounds", "status", key)
    assert_clean_failure(outcome, server.url, "4 s")
    assert time.monotonic() - start < 15


RESULTS_FILES = {
    "a column twice": ("WorkerId,AssignmentId,Input.item_id,Answer.context,WorkerId\nW1,A1,1,indoor,\n",
                       "appears twice"),
    "semicolons": ("WorkerId;AssignmentId;Input.item_id;Answer.context\nW1;A1;1;indoor\n", "separated by semicolons"),
    "a workbook": ("PK\x03\x04" + "\x00" * 64, "a zip archive named .csv"),
    "an answer not in the label config": ("WorkerId,AssignmentId,Input.item_id,Answer.context\nW1,A1,1,underwater\n",
                                          "'underwater' is not allowed"),
    "a FIFO": (None, "FIFO"),
}


@pytest.mark.parametrize("how", sorted(RESULTS_FILES))
def test_rounds_ingest_names_a_results_file_it_cannot_read_before_prefect_starts(tmp_path, monkeypatch, how):
    key = _launched_round(tmp_path / "data", "files")
    results = files_dir(tmp_path / "data", key) / "results"
    results.mkdir(parents=True)
    path = results / "batch.csv"
    text, expected = RESULTS_FILES[how]
    if text is None:
        os.mkfifo(path)
    else:
        path.write_text(text)
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # reached only if the file passed
    assert_clean_failure(run_main(tmp_path, "rounds", "ingest", key), str(path), expected)


@pytest.mark.parametrize("command", ["launch", "ingest"])
@pytest.mark.parametrize(("unset", "expected"), [
    ("SEGBENCH_LABEL_STUDIO_TOKEN", ["no Label Studio API token", "SEGBENCH_LABEL_STUDIO_TOKEN"]),
    (None, ["cannot reach Label Studio at http://127.0.0.1:9", "scripts/label-studio.sh status"]),
], ids=["no-token", "no-server"])
def test_a_label_studio_round_command_says_what_it_lacks_before_prefect_starts(tmp_path, monkeypatch, command,
                                                                              unset, expected):
    key = _launched_round(tmp_path / "data", "labelstudio", project_id=1)
    monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_URL", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("SEGBENCH_LABEL_STUDIO_TOKEN", TOKEN)
    if unset:
        monkeypatch.delenv(unset)
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # reached only past the checks
    outcome = run_main(tmp_path, "rounds", command, key)
    assert_clean_failure(outcome, *expected)
    assert TOKEN not in outcome.stdout + outcome.stderr


def test_evaluate_names_the_input_size_limit(tmp_path, monkeypatch):
    (tmp_path / "gt.json").write_text(json.dumps(cafe_gt(HAND_PAIRS)))
    (tmp_path / "preds.json").write_text(json.dumps(HAND_PREDS))
    monkeypatch.setenv("SEGBENCH_MAX_INPUT_MB", "0.0001")
    outcome = run_main(tmp_path, "evaluate", "cgf1", "--gt", str(tmp_path / "gt.json"), "--predictions",
                       str(tmp_path / "preds.json"), "--out", str(tmp_path / "out"))
    assert_clean_failure(outcome, "SEGBENCH_MAX_INPUT_MB")
    assert not (tmp_path / "out").exists()


def test_build_vocab_with_a_model_server_asking_to_wait_an_hour(tmp_path, monkeypatch):
    captions = tmp_path / "captions.txt"
    captions.write_text("a cat on the sofa\na cat by the window\na dog in the park\na dog on the grass\n")
    reply = Reply(429, b'{"error": {"message": "slow down"}}', {"Content-Type": "application/json",
                                                                  "Retry-After": "3600"})
    with BadServer(lambda request: reply) as server:
        monkeypatch.setenv("SEGBENCH_PROVIDER", "openai")
        monkeypatch.setenv("SEGBENCH_OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        start = time.monotonic()
        outcome = run_main(tmp_path, "build", "vocab", "--captions", str(captions), "--min-count", "1")
    assert_clean_failure(outcome, "3600 s", "more than the 120 s")
    assert time.monotonic() - start < 120 and KEY not in outcome.stdout + outcome.stderr


def test_build_vocab_with_a_model_server_that_drips_ends_after_two_timeouts(tmp_path, monkeypatch):
    """Each request ends at its deadline; two in a row without a complete answer end the command, instead of
    retrying every question against a server that never finishes one."""
    captions = tmp_path / "captions.txt"
    captions.write_text("a cat on the sofa\na cat by the window\na dog in the park\na dog on the grass\n")
    with BadServer(lambda request: Reply(200, b"{" + b" " * 600 + b"}", drip=0.5)) as server:
        monkeypatch.setenv("SEGBENCH_PROVIDER", "openai")
        monkeypatch.setenv("SEGBENCH_OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("SEGBENCH_OPENAI_TIMEOUT", "2")
        monkeypatch.setenv("SEGBENCH_OPENAI_CONCURRENCY", "1")
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        start = time.monotonic()
        outcome = run_main(tmp_path, "build", "vocab", "--captions", str(captions), "--min-count", "1")
        asked = len(server.requests)
    assert_clean_failure(outcome, "requests in a row", "hangs or sends too slowly")
    # two requests timed out (one in flight at a time), and none was sent after them
    assert asked == 2 and time.monotonic() - start < 60 and KEY not in outcome.stdout + outcome.stderr


def test_the_language_stages_against_a_model_server_that_drops_every_connection(tmp_path, monkeypatch):
    """A local server that accepts and closes: one typed message per command, after the local profile's
    one retry per question, and no traceback."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def drop() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            accepted.append(connection.recv(60))  # the request line, then nothing
            connection.close()

    threading.Thread(target=drop, daemon=True).start()
    captions = tmp_path / "captions.txt"
    captions.write_text("a cat on the sofa\na cat by the window\na dog in the park\na dog on the grass\n")
    monkeypatch.setenv("SEGBENCH_PROVIDER", "openai")
    monkeypatch.setenv("SEGBENCH_OPENAI_BASE_URL", f"http://127.0.0.1:{listener.getsockname()[1]}/v1")
    monkeypatch.setenv("SEGBENCH_EDITOR", "pillow")
    try:
        outcome = run_main(tmp_path, "build", "vocab", "--captions", str(captions), "--min-count", "1",
                           "--categories", "coco_cd")
        assert_clean_failure(outcome, "vocab.relations: 2 of 2 questions failed", "gave up after 2 attempts: "
                             "connection failed")
        assert len(accepted) == 2 * 2  # one question per category, one retry each on a server on this machine
        monkeypatch.setenv("SEGBENCH_OPENAI_MAX_RETRIES", "0")  # the other two ask more: keep them short
        outcome = run_main(tmp_path, "build", "spin-taxonomy")
        assert_clean_failure(outcome, "spin.subparts: 40 of 40 questions failed", "connection failed")
        sources = generate_demo_cafe(tmp_path / "sources", seed=0, sizes={"coco": 2, "lvis": 1})
        outcome = run_main(tmp_path, "build", "cafe-candidates", *[
            arg for spec in sources for arg in ("--source", f"{spec.name}={spec.annotations}:{spec.images}")])
        assert_clean_failure(outcome, "cafe.edit_plan", "questions failed", "connection failed")
    finally:
        listener.close()


@pytest.fixture
def mounted(tmp_path):
    """``mount(options)``: a fresh tmpfs at a new folder under ``tmp_path``, unmounted afterwards
    (skips where this user may not mount)."""
    points: list[Path] = []

    def mount(options: str) -> Path:
        point = tmp_path / f"mount{len(points)}"
        point.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)],
                          capture_output=True).returncode != 0:
            pytest.skip("this user may not mount a file system")
        points.append(point)
        return point

    yield mount
    for point in points:
        subprocess.run(["umount", "-l", str(point)], capture_output=True)


def test_a_data_root_on_a_read_only_mount_is_refused_before_any_work(tmp_path, mounted):
    point = mounted("size=4m")
    key = _launched_round(point, "files")
    results = files_dir(point, key) / "results"
    results.mkdir(parents=True)
    (results / "batch.csv").write_text("WorkerId,AssignmentId,Input.item_id,Answer.context\nW1,A1,1,indoor\n")
    subprocess.run(["mount", "-o", "remount,ro", str(point)], check=True)
    outcome = run_main(tmp_path, "rounds", "ingest", key, root_args=["--data-root", str(point), "--work-dir",
                                                                      str(tmp_path / "work")])
    assert_clean_failure(outcome, str(point), "read-only file system")


def test_an_output_folder_whose_name_the_file_system_cannot_hold_is_refused_up_front(tmp_path):
    (tmp_path / "gt.json").write_text(json.dumps(cafe_gt(HAND_PAIRS)))
    (tmp_path / "preds.json").write_text(json.dumps(HAND_PREDS))
    out = tmp_path / ("report-" + "x" * 233)  # 240 bytes: fits, but not its working copies' names
    outcome = run_main(tmp_path, "evaluate", "cgf1", "--gt", str(tmp_path / "gt.json"), "--predictions",
                       str(tmp_path / "preds.json"), "--out", str(out))
    assert_clean_failure(outcome, "name of 240 bytes", "shorter name")
    assert not out.exists()


def test_a_full_disk_under_the_report_is_one_message(tmp_path, mounted):
    (tmp_path / "gt.json").write_text(json.dumps(cafe_gt(HAND_PAIRS)))
    (tmp_path / "preds.json").write_text(json.dumps(HAND_PREDS))
    out = mounted("size=16k") / "report"
    outcome = run_main(tmp_path, "evaluate", "cgf1", "--gt", str(tmp_path / "gt.json"), "--predictions",
                       str(tmp_path / "preds.json"), "--out", str(out))
    assert_clean_failure(outcome, "No space left on device", "free space")


def test_a_round_command_with_a_prefect_api_that_does_not_answer_names_it(tmp_path, monkeypatch):
    key = _launched_round(tmp_path / "data", "files")
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    outcome = run_main(tmp_path, "rounds", "ingest", key)
    assert_clean_failure(outcome, "PREFECT_API_URL=http://127.0.0.1:9/api", "does not answer")


def test_a_closed_stdout_or_a_deleted_working_folder_is_said_not_a_traceback(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    console = Path(sys.executable).parent / "segbench"
    closed = subprocess.run([str(console), "rounds", "list"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, timeout=60, cwd=tmp_path, preexec_fn=lambda: __import__("os").close(1))
    assert closed.returncode == 2 and "standard output is closed" in closed.stderr
    assert "Traceback" not in closed.stderr
    gone = tmp_path / "gone"
    gone.mkdir()
    deleted = subprocess.run(["sh", "-c", f'cd "{gone}" && rmdir "{gone}" && exec "{console}" rounds list'],
                             capture_output=True, text=True, timeout=60)
    assert deleted.returncode == 2 and "the current folder no longer exists" in deleted.stderr
    assert "Traceback" not in deleted.stderr


def test_an_http_error_escaping_a_flow_is_one_message_not_a_traceback(monkeypatch, capsys):
    # What a flow raises when the Prefect server it runs on is stopped under it.
    import httpx
    import pytest

    import segbench.cli as cli

    def lost() -> None:
        raise httpx.ConnectError("[Errno 111] Connection refused")

    monkeypatch.setattr(cli, "app", lost)
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    shown = capsys.readouterr().err
    assert exit_.value.code == 2 and "lost the Prefect server" in shown and "run the command again" in shown
