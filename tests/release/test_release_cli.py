"""`segbench release` run as a user runs it, on a copy of the demo project."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from support.cli import run

from segbench.core.io import sha256_tree

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_harness")]

ANSWERS = ["--annotations-license", "cc-by-4.0", "--intended-uses", "testing", "--social-impact", "none known",
           "--personal-information", "none", "--maintainer", "Data Team <data@example.org>"]


@pytest.fixture
def project(demo_copy, monkeypatch):
    monkeypatch.chdir(demo_copy)
    return demo_copy


def test_two_releases_of_one_version_are_byte_identical_in_process_and_as_a_flow(project):
    first = run(project, "release", "coco-cd", "--out", str(project / "one"), *ANSWERS)
    assert "Released coco_cd" in first.output and "rho_0.95" in first.output
    run(project, "release", "coco_cd", "--out", str(project / "two"), *ANSWERS, "--track")
    assert sha256_tree(project / "one") == sha256_tree(project / "two")
    assert not list(project.glob(".one*")), "no stage is left beside the release"


def test_a_release_imports_neither_prefect_unless_tracked_nor_datasets_nor_mlcroissant(project):
    """Run as a user does, with Prefect pointed at a closed port: nothing may import or reach it; the
    features and the Croissant are written without the libraries that read them."""
    env = {**os.environ, "PREFECT_API_URL": "http://127.0.0.1:9/api"}
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "segbench", "release", "waterbirds", "--out",
                           str(project / "rel"), *ANSWERS], cwd=project, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert not [module for module in imported if module.split(".")[0] in ("prefect", "datasets", "mlcroissant")]
    assert "Released waterbirds" in done.stdout and (project / "rel" / "croissant.json").is_file()


def test_a_release_without_the_makers_answers_names_each_missing_field(project):
    result = run(project, "release", "vocab", "--out", str(project / "rel"), "--maintainer", "me", code=1)
    message = str(result.exception)
    for field in ("annotations_license", "intended_uses", "social_impact", "personal_information"):
        assert field in message
    assert "maintainer" not in message.split("fix:")[0]
    assert not (project / "rel").exists()


def test_release_toml_gives_the_answers_and_options_override_it(project):
    (project / "release.toml").write_text(
        'annotations_license = "cc-by-4.0"\nintended_uses = "x"\nsocial_impact = "y"\n'
        'personal_information = "none"\nmaintainer = "toml maintainer"\n')
    run(project, "release", "vocab", "--out", str(project / "rel"), "--maintainer", "option maintainer")
    card = (project / "rel" / "README.md").read_text()
    assert "option maintainer" in card and "toml maintainer" not in card


def test_a_licence_that_is_not_an_id_is_refused_before_anything_is_written(project):
    answers = [*ANSWERS[2:], "--annotations-license", "CC BY 4.0\nlicense: mit"]
    result = run(project, "release", "vocab", "--out", str(project / "rel"), *answers, code=1)
    assert "annotations_license" in str(result.exception) and "is not a licence id" in str(result.exception)
    assert not (project / "rel").exists()


def test_restricted_images_are_withheld_unless_the_maker_says_so(project):
    withheld = run(project, "--json", "release", "spin", "--out", str(project / "spin"), *ANSWERS)
    assert '"withheld_images": 40' in withheld.stdout.replace(" ", "").replace('":', '": ')
    licences = (project / "spin" / "LICENSES.md").read_text()
    assert "ImageNet" in licences and "not in this release, in no file" in licences
    run(project, "release", "spin", "--out", str(project / "spin"), *ANSWERS, "--embed-restricted")
    assert '"withheld_images": []' in (project / "spin" / "licenses.json").read_text().replace("\n", "")


def test_an_unknown_dataset_is_refused_with_the_names_there_are(project):
    result = run(project, "release", "imagenet", "--out", str(project / "rel"), *ANSWERS, code=2)
    assert "coco_cd" in result.output


def test_push_uploads_the_folder_and_tags_it_without_leaking_the_token(project, monkeypatch):
    from support.hub_stub import HubStub

    with HubStub(token="hf_secret_for_test") as hub:
        monkeypatch.setenv("HF_TOKEN", "hf_secret_for_test")
        monkeypatch.setenv("SEGBENCH_HUB_ENDPOINT", hub.url)
        result = run(project, "release", "vocab", "--out", str(project / "rel"), *ANSWERS, "--push", "org/vocab",
                     "--tag", "v1.0")
        released = {p.relative_to(project / "rel").as_posix(): p.read_bytes()
                    for p in (project / "rel").rglob("*") if p.is_file()}
        assert hub.repos == ["org/vocab"] and hub.tags == ["v1.0"]
        assert hub.files == released, "the Hub received every file of the release, byte for byte"
        assert "license: cc-by-4.0" in hub.card_headers[0]
        croissant = json.loads(released["croissant.json"])
        assert croissant["url"] == f"{hub.url.rstrip('/')}/datasets/org/vocab", "Croissant names where it was pushed"
        assert "org/vocab" in result.output and "v1.0" in result.output
        assert "hf_secret_for_test" not in result.output

        monkeypatch.setenv("HF_TOKEN", "hf_wrong_token")
        refused = run(project, "release", "vocab", "--out", str(project / "rel"), *ANSWERS, "--push", "org/vocab",
                      code=1)
        assert "cannot push the release to org/vocab" in str(refused.exception)
        assert "hf_wrong_token" not in str(refused.exception) + refused.output
        assert hub.unauthorised >= 1


def test_a_release_of_a_published_version_reads_it_through_dvc(project):
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=project,
                       check=True, capture_output=True)

    git("add", "data.dvc", ".gitignore", ".dvc/config", ".dvcignore")
    git("commit", "-qm", "data v1")
    git("tag", "v1")
    run(project, "release", "waterbirds", "--out", str(project / "tree"), *ANSWERS)
    shutil.rmtree(project / "data" / "waterbirds_seg")  # the working tree no longer has it
    result = run(project, "release", "waterbirds", "--rev", "v1", "--out", str(project / "rel"), *ANSWERS)
    assert "v1" in result.output
    shards = sorted(p.relative_to(project / "rel") for p in (project / "rel" / "data").rglob("*.parquet"))
    assert shards and all((project / "rel" / s).read_bytes() == (project / "tree" / s).read_bytes() for s in shards)
    assert "Data version `v1`" in (project / "rel" / "README.md").read_text()


def test_a_release_folder_inside_the_data_root_is_refused_before_it_can_replace_a_build(project):
    for out in (project / "data" / "coco_cd", project / "data", project):
        result = run(project, "release", "coco_cd", "--out", str(out), *ANSWERS, code=1)
        assert "cannot be the data root" in str(result.exception)
    assert (project / "data" / "coco_cd" / "manifest.json").is_file()


def test_a_file_changed_since_its_build_stops_the_release_naming_it(project):
    mask = sorted((project / "data" / "coco_cd" / "masks").iterdir())[0]
    mask.write_bytes(mask.read_bytes() + b"\0")  # still a PNG to most readers; not what the build wrote
    result = run(project, "release", "coco_cd", "--out", str(project / "rel"), *ANSWERS, code=1)
    assert mask.name in str(result.exception) and "differs from what its build wrote" in str(result.exception)
    assert not (project / "rel").exists() and not list(project.glob(".rel*"))


def test_a_file_its_build_did_not_write_stops_the_release_naming_it(project, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0")
    stray = project / "data" / "coco_cd" / "masks" / "000000999999.png"
    stray.symlink_to(secret)  # a link out of the data root, where a mask would be
    result = run(project, "release", "coco_cd", "--out", str(project / "rel"), *ANSWERS, code=1)
    assert stray.name in str(result.exception) and "its manifest does not list it" in str(result.exception)
    assert not (project / "rel").exists()


@pytest.mark.parametrize("edit", ["no key", "items not a list", "a tag in the kind"])
def test_a_hand_edited_round_record_stops_the_release_naming_it(project, edit):
    import json

    record_path = next(p for p in sorted((project / "data" / "rounds").glob("*.json")) if p.name.count(".") == 1
                       and json.loads(p.read_text())["dataset"] == "coco_cd")
    record = json.loads(record_path.read_text())
    if edit == "no key":
        del record["key"]
    elif edit == "items not a list":
        record["items"] = "<script>alert(1)</script>"
    else:  # the card names each round's kind: no record may carry markup into it
        record["kind"] = "<script>alert(1)</script>"
    record_path.write_text(json.dumps(record))
    result = run(project, "release", "coco_cd", "--out", str(project / "rel"), *ANSWERS, code=1)
    assert record_path.name in str(result.exception) and "not a Round segbench wrote" in str(result.exception)
    assert not (project / "rel").exists()


def test_a_folder_that_is_not_a_release_is_never_replaced(project):
    keep = project / "notes"
    keep.mkdir()
    (keep / "todo.txt").write_text("mine")
    result = run(project, "release", "vocab", "--out", str(keep), *ANSWERS, code=1)
    assert "no release" in str(result.exception)
    assert (keep / "todo.txt").read_text() == "mine"
    run(project, "release", "vocab", "--out", str(project / "rel"), *ANSWERS)
    run(project, "release", "vocab", "--out", str(project / "rel"), *ANSWERS)  # a previous release is replaced
    (project / "rel" / "my-notes.txt").write_text("mine too")  # beside a release: not the release's to delete
    result = run(project, "release", "vocab", "--out", str(project / "rel"), *ANSWERS, code=1)
    assert "my-notes.txt" in str(result.exception) and "did not write" in str(result.exception)
    assert (project / "rel" / "my-notes.txt").read_text() == "mine too"


def test_a_malformed_stored_answer_stops_the_release_naming_it(project):
    path = project / "data" / "rounds" / "demo-context-audit.answers.json"
    stored = json.loads(path.read_text())
    del stored["answers"][1]["annotator"]
    path.write_text(json.dumps(stored))
    result = run(project, "release", "coco_cd", "--out", str(project / "rel"), *ANSWERS, code=1)
    message = str(result.exception)
    assert "answers[1]" in message and "demo-context-audit.answers.json" in message and "rounds ingest" in message
    assert not (project / "rel").exists()


def test_ctrl_c_during_a_push_to_a_hub_that_never_answers_ends_the_command_at_once(project):
    """The push waits on a server that accepts and never answers; Ctrl-C (to the group, as a terminal sends
    it) ends the command with 130 within seconds, not at the push's deadline, and the release is written."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as hub:
        hub.bind(("127.0.0.1", 0))
        hub.listen(8)
        env = {**os.environ, "HF_TOKEN": "hf_secret_for_test",
               "SEGBENCH_HUB_ENDPOINT": f"http://127.0.0.1:{hub.getsockname()[1]}"}
        process = subprocess.Popen([sys.executable, "-m", "segbench", "release", "vocab", "--out", "rel", *ANSWERS,
                                    "--push", "org/vocab"], cwd=project, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, start_new_session=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        hub.settimeout(180)
        connection, _ = hub.accept()  # the push has started and waits for an answer
        with connection:
            time.sleep(0.5)
            os.killpg(process.pid, signal.SIGINT)
            interrupted = time.monotonic()
            stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stdout + stderr
    assert time.monotonic() - interrupted < 15
    assert "Traceback" not in stderr and "interrupted" in stderr and "hf_secret_for_test" not in stdout + stderr
    assert (project / "rel" / "croissant.json").exists()
