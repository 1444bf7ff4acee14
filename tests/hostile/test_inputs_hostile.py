"""Hostile files and option values across the commands: each ends with exit code 2, a message naming
the path or item (and the fix), no traceback, and the data root exactly as it was.

Every case fails before a Prefect flow starts, so the whole table runs in seconds. ``{name}`` in the
arguments is replaced by the path of that prepared input (see :func:`project`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.hostile import assert_clean_failure, latin1, run_console, run_main, skip_as_root, snapshot

from segbench.annotation_ui.rounds import RoundStore, mark_launched, new_round
from segbench.core.io import write_json
from segbench.schemas.rounds import RoundConfig, RoundItem

VOCAB = {"cat": {"exact": ["cat"], "synonyms": [], "hyponyms": ["kitty"], "meronyms": ["paw"], "id": 0},
         "dog": {"exact": ["dog"], "synonyms": [], "hyponyms": ["puppy"], "meronyms": ["tail"], "id": 1}}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with previous outputs in its data root, a SPIN round, and one of each bad input in in/."""
    data, bad = tmp_path / "data", tmp_path / "in"
    write_json(data / "earlier" / "output.json", {"earlier": True})
    write_json(data / "vocab" / "coco_cd" / "coco_cd.json", VOCAB, indent=1)
    items = [RoundItem(item_id="img1-41", image="spin/tasks/img1-41.png", width=100, height=80,
                       data={"image_id": 1, "part_ann_id": 41, "object": "Car", "object_class": "cab", "part": "Tire",
                             "subparts": ["Rim"]})]
    config = RoundConfig(label_config="spin_subparts", overlap=1, params={"object": "Car", "part": "Tire",
                                                                          "subparts": ["Rim"]})
    now = "2026-01-01T00:00:00+00:00"
    spin_round = new_round("s-car-tire", "spin_subparts", "spin", "0" * 64, config, items, "files", now)
    RoundStore(data / "rounds").save(mark_launched(spin_round, None, now))
    (bad / "folder").mkdir(parents=True)
    for suffix in ("json", "toml", "yaml", "csv", "txt"):
        latin1(bad / f"latin1.{suffix}", {"json": '{"name": "café"}', "toml": 'x = "café"\n', "yaml": "a: café\n",
                                           "csv": "WorkerId,AssignmentId,Input.item_id,Answer.x\nW,é,1,y\n",
                                           "txt": "café\n"}[suffix])
        (bad / f"empty.{suffix}").write_text("")
    (bad / "file").write_text("a regular file\n")
    (bad / "truncated.json").write_text('{"images": [{"id": 1,')
    (bad / "list.json").write_text("[]\n")
    (bad / "string.json").write_text('"just a string"\n')
    (bad / "object.json").write_text('{"a": 1}\n')
    (bad / "string-ids.json").write_text(json.dumps([{"description": 7, "gt_class": ["cat"]}]))
    (bad / "bad.toml").write_text("[coco_cd\nrho = [0.5\n")
    (bad / "misspelt.toml").write_text("[coco_cd]\ncoco_root = \"x\"\nstuff_root = \"x\"\nrhoo = [0.5]\n")
    (bad / "bad.yaml").write_text("add: [unclosed\n  - x: :\n")
    (bad / "vocab-list.json").write_text('[{"cat": ["cat"]}]')
    (bad / "results.csv").write_text("WorkerId,AssignmentId,Input.item_id,Answer.part_visible,Answer.polygons\n"
                                     "W1,A1,img1-41,yes,\n")
    (bad / "short-header.csv").write_text("WorkerId,Answer.x\nW,y\n")
    write_json(bad / "vocab.json", VOCAB)
    write_json(bad / "descriptions.json", [{"description": "a cat on a sofa", "gt_class": "cat"}])
    return tmp_path


# (id, arguments, what the message must name, whether a "fix:" line is expected). Option errors that
# click reports itself name the option but give no "fix:" line; segbench's own errors always do.
CASES = [
    # rebuild / serve: the plan
    ("rebuild-plan-folder", "rebuild --plan {folder}", ["folder", "expected a plan file, found a directory"], True),
    ("rebuild-plan-latin1", "rebuild --plan {latin1.toml}", ["latin1.toml", "not UTF-8"], True),
    ("rebuild-plan-empty", "rebuild --plan {empty.toml}", ["empty.toml", "no step"], True),
    ("rebuild-plan-syntax", "rebuild --plan {bad.toml}", ["bad.toml", "not valid TOML"], True),
    ("rebuild-plan-unknown-key", "rebuild --plan {misspelt.toml}", ["misspelt.toml", "rhoo"], True),
    ("rebuild-plan-missing", "rebuild --plan {absent.toml}", ["absent.toml"], False),
    ("rebuild-plan-json-file", "rebuild --plan {object.json}", ["object.json"], True),
    ("serve-plan-folder", "serve --plan {folder}", ["folder", "found a directory"], True),
    ("serve-plan-latin1", "serve --plan {latin1.toml}", ["latin1.toml", "not UTF-8"], True),
    ("serve-plan-truncated", "serve --plan {truncated.json}", ["truncated.json", "not valid TOML"], True),
    # vocab map
    ("vocab-map-vocab-latin1", "vocab map --vocab {latin1.json} --descriptions {descriptions.json} --out {o.json}",
     ["latin1.json", "not UTF-8"], True),
    ("vocab-map-vocab-folder", "vocab map --vocab {folder} --descriptions {descriptions.json} --out {o.json}",
     ["folder", "found a directory"], True),
    ("vocab-map-vocab-list", "vocab map --vocab {vocab-list.json} --descriptions {descriptions.json} --out {o.json}",
     ["vocab-list.json", "non-empty object"], False),
    ("vocab-map-vocab-truncated", "vocab map --vocab {truncated.json} --descriptions {descriptions.json} "
     "--out {o.json}", ["truncated.json", "not valid JSON"], True),
    ("vocab-map-vocab-empty", "vocab map --vocab {empty.json} --descriptions {descriptions.json} --out {o.json}",
     ["empty.json", "not valid JSON"], True),
    ("vocab-map-descriptions-latin1", "vocab map --vocab {vocab.json} --descriptions {latin1.json} --out {o.json}",
     ["latin1.json", "not UTF-8"], True),
    ("vocab-map-descriptions-object", "vocab map --vocab {vocab.json} --descriptions {object.json} --out {o.json}",
     ["object.json", "JSON list"], False),
    ("vocab-map-descriptions-missing", "vocab map --vocab {vocab.json} --descriptions {absent.json} --out {o.json}",
     ["absent.json", "not found"], True),
    # build vocab: the category list (read before any flow)
    ("build-vocab-categories-latin1", "build vocab --captions {descriptions.json} --categories {latin1.json}",
     ["latin1.json", "not UTF-8"], True),
    ("build-vocab-categories-folder", "build vocab --captions {descriptions.json} --categories {folder}",
     ["folder", "found a directory"], True),
    ("build-vocab-categories-string", "build vocab --captions {descriptions.json} --categories {string.json}",
     ["string.json", "category list"], True),
    ("build-vocab-categories-string-ids", "build vocab --captions {descriptions.json} --categories "
     "{string-ids.json}", ["string-ids.json"], True),
    ("build-vocab-negative-top-k", "build vocab --captions {descriptions.json} --top-k -1", ["top_k"], False),
    ("build-vocab-zero-min-count", "build vocab --captions {descriptions.json} --min-count 0", ["min_count"], False),
    # build spin-taxonomy: the edits file
    ("spin-taxonomy-edits-latin1", "build spin-taxonomy --edits {latin1.yaml}", ["latin1.yaml", "not UTF-8"], True),
    ("spin-taxonomy-edits-folder", "build spin-taxonomy --edits {folder}", ["folder", "found a directory"], True),
    ("spin-taxonomy-edits-empty", "build spin-taxonomy --edits {empty.yaml}", ["empty.yaml", "YAML mapping"], True),
    ("spin-taxonomy-edits-syntax", "build spin-taxonomy --edits {bad.yaml}", ["bad.yaml", "not valid YAML"], True),
    ("spin-taxonomy-edits-list", "build spin-taxonomy --edits {list.json}", ["list.json", "YAML mapping"], True),
    # build spin / rounds create spin_subparts: option values and roots
    ("build-spin-root-file", "build spin --partimagenet {file}", ["file", "not a PartImageNet root"], True),
    ("build-spin-negative-cap", "build spin --partimagenet {folder} --cap -1", ["--cap"], False),
    ("spin-rounds-no-taxonomy", "rounds create spin_subparts k --partimagenet {folder}", ["taxonomy.yaml", "spin-taxonomy"],
     True),
    # spin import: the results file, the parts file, option values
    ("spin-import-unknown-round", "spin import --round nosuch", ["nosuch", "no round with key", "s-car-tire"], True),
    ("spin-import-results-latin1", "spin import --round s-car-tire --results {latin1.csv}",
     ["latin1.csv", "not UTF-8"], True),
    ("spin-import-results-folder", "spin import --round s-car-tire --results {folder}",
     ["folder"], True),
    ("spin-import-results-empty", "spin import --round s-car-tire --results {empty.csv}",
     ["empty.csv", "no header row"], True),
    ("spin-import-results-columns", "spin import --round s-car-tire --results {short-header.csv}",
     ["short-header.csv", "AssignmentId"], True),
    ("spin-import-results-truncated", "spin import --round s-car-tire --results {truncated.json}",
     ["truncated.json", "not valid JSON"], True),
    ("spin-import-results-object", "spin import --round s-car-tire --results {object.json}",
     ["object.json", "JSON list"], True),
    ("spin-import-results-txt", "spin import --round s-car-tire --results {latin1.txt}",
     ["latin1.txt", "expected .csv or .json"], True),
    ("spin-import-parts-latin1", "spin import --round s-car-tire --results {results.csv} --parts {latin1.json}",
     ["latin1.json", "not UTF-8"], True),
    ("spin-import-parts-folder", "spin import --round s-car-tire --results {results.csv} --parts {folder}",
     ["folder", "found a directory"], True),
    ("spin-import-parts-list", "spin import --round s-car-tire --results {results.csv} --parts {list.json}",
     ["list.json", "JSON object"], False),
    ("spin-import-containment-nan", "spin import --round s-car-tire --containment nan", ["--containment"], False),
    ("spin-import-containment-2", "spin import --round s-car-tire --containment 2", ["--containment"], False),
    ("spin-import-unknown-policy", "spin import --round s-car-tire --on-error ignore", ["--on-error"], False),
    ("evaluate-coco-cd-split-unknown", "evaluate coco-cd --predictions {folder} --split bogus", ["--split", "bogus"],
     False),
    ("evaluate-waterbirds-rho-nan", "evaluate waterbirds --predictions {folder} --rho nan", ["--rho", "nan"], False),
    # root options
    ("root-wait-nan", "--wait nan rounds list", ["--wait", "nan"], False),
    ("root-wait-negative", "--wait -5 rounds list", ["--wait", "-5"], False),
    # evaluate spin: where the predictions are (checked before the flow starts)
    ("evaluate-spin-predictions-file", "evaluate spin --predictions {file}",
     ["file", "expected a predictions folder, found a file"], True),
    ("evaluate-spin-predictions-missing", "evaluate spin --predictions {absent}", ["absent", "not found"], True),
    ("evaluate-spin-predictions-empty-folder", "evaluate spin --predictions {folder}",
     ["folder", "no results file for split 'test'"], True),
    # cafe and the builds: sources given as the wrong kind of path (the build cases are in test_build_hostile.py)
    ("cafe-candidates-source-syntax", "build cafe-candidates --source nonsense", ["nonsense"], True),
    ("cafe-candidates-source-folders", "build cafe-candidates --source x={folder}:{folder}", ["folder", "source x"],
     True),
    ("build-coco-cd-root-file", "build coco-cd --coco-root {file} --stuff-root {folder}", ["file"], True),
    ("build-waterbirds-root-file", "build waterbirds --cub-root {file} --places-root {folder}", ["file"], True),
    # a regular file where an output folder is expected: refused while the options are read
    ("spin-taxonomy-out-file", "build spin-taxonomy --out {file}", ["file", "expected a folder, found a file"], True),
    ("evaluate-spin-out-below-file", "evaluate spin --predictions {folder} --out {file}/report",
     ["file", "expected a folder, found a file"], True),
    ("build-vocab-out-file", "build vocab --captions {descriptions.json} --out {file}",
     ["file", "expected a folder, found a file"], True),
    ("evaluate-vocab-out-file", "evaluate vocab --vocab coco_cd --descriptions {descriptions.json} --gt {folder} "
     "--out {file}", ["file", "expected a folder, found a file"], True),
    ("evaluate-coco-cd-out-file", "evaluate coco-cd --predictions {folder} --out {file}",
     ["file", "expected a folder, found a file"], True),
    ("evaluate-waterbirds-out-file", "evaluate waterbirds --predictions {folder} --out {file}",
     ["file", "expected a folder, found a file"], True),
    ("vocab-map-out-folder", "vocab map --vocab {vocab.json} --descriptions {descriptions.json} --out {folder}",
     ["folder", "found a directory"], True),
    # rounds
    ("rounds-launch-unknown", "rounds launch nosuch", ["nosuch", "no round with key"], True),
    ("rounds-status-unknown", "rounds status nosuch", ["nosuch", "no round with key"], True),
    ("rounds-ingest-unknown", "rounds ingest nosuch", ["nosuch", "no round with key"], True),
    ("rounds-close-unknown", "rounds close nosuch", ["nosuch", "no round with key"], True),
    ("rounds-close-not-ingested", "rounds close s-car-tire", ["s-car-tire", "cannot close"], False),
    ("rounds-create-traversal", "rounds create coco_cd_context_audit ../outside", ["invalid round key", "../outside"], True),
    ("rounds-create-answers-suffix", "rounds create coco_cd_context_audit r1.answers", ["invalid round key", "r1.answers"], True),
    ("rounds-create-negative-per-group", "rounds create coco_cd_context_audit r1 --per-group -3", ["--per-group"], False),
    ("rounds-create-key-too-long", "rounds create coco_cd_context_audit " + "k" * 101, ["invalid round key", "at most 100"], True),
    ("cafe-verification-traversal", "rounds create cafe_verification ../v1", ["invalid round key", "../v1"], True),
    ("rounds-create-unknown-backend", "rounds create coco_cd_context_audit r1 --backend paper", ["--backend"], False),
    ("rounds-ingest-unknown-policy", "rounds ingest s-car-tire --on-error ignore", ["--on-error"], False),
    ("evaluate-coco-cd-split-unknown", "evaluate coco-cd --predictions {folder} --split bogus", ["--split", "bogus"],
     False),
    ("evaluate-waterbirds-rho-nan", "evaluate waterbirds --predictions {folder} --rho nan", ["--rho", "nan"], False),
    # root options
    ("root-workers-zero", "--workers 0 rounds list", ["--workers"], False),
    ("root-wait-text", "--wait soon rounds list", ["--wait"], False),
    ("root-runner-unknown", "--runner gpu rounds list", ["runner"], False),
]


def _args(project: Path, template: str) -> list[str]:
    def resolve(token: str) -> str:
        if not token.startswith("{"):
            return token
        name, rest = token[1:].split("}", 1)
        return str(project / "in" / name) + rest
    return [resolve(token) for token in template.split()]


@pytest.mark.parametrize(("args", "names", "fix"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_hostile_input(project, args, names, fix):
    argv = _args(project, args)
    root = argv.index("rounds") if argv[0].startswith("--") else 0  # root options go before the command
    before = snapshot(project / "data")
    outcome = run_main(project, *argv[root:],
                       root_args=["--data-root", str(project / "data"), "--work-dir", str(project / "work"),
                                  *argv[:root]])
    assert_clean_failure(outcome, *names, fix=fix)
    assert snapshot(project / "data") == before
    assert not (project / "in" / "o.json").exists()


def _damage(project: Path, how: str) -> Path:
    record = project / "data" / "rounds" / "s-car-tire.json"
    if how == "truncated":
        record.write_text(record.read_text()[:40])
    elif how == "list":
        record.write_text("[]")
    elif how == "string-ids":
        data = json.loads(record.read_text())
        data["items"][0]["width"] = "wide"
        record.write_text(json.dumps(data))
    elif how == "latin1":
        latin1(record, record.read_text().replace("Tire", "Tíre"))
    elif how == "folder":
        record.unlink()
        record.mkdir()
    return record


@pytest.mark.parametrize(("how", "command"), [(how, command) for how in ("truncated", "list", "string-ids", "latin1")
                                              for command in ("status", "list")] + [("folder", "status")])
def test_a_damaged_round_record(project, how, command):
    record = _damage(project, how)
    before = snapshot(project / "data")
    args = ["rounds", "status", "s-car-tire"] if command == "status" else ["rounds", "list"]
    assert_clean_failure(run_main(project, *args), "s-car-tire")
    assert snapshot(project / "data") == before
    assert record.exists()


def test_hostile_inputs_through_the_console_script(project):
    """The same checks in a real process: the entry point, its exit code and its stderr."""
    before = snapshot(project / "data")
    for args, names in (([f"{project}/in/latin1.toml"], ["latin1.toml", "not UTF-8"]),
                        ([f"{project}/in/folder"], ["folder", "found a directory"])):
        assert_clean_failure(run_console(project, "rebuild", "--plan", *args), *names)
    assert snapshot(project / "data") == before


# --- permissions (root ignores them) -------------------------------------------------------------------

# (id, what is made unreadable, arguments, what the message names). Paths given on the command line
# are refused by click itself ("is not readable", naming the option); files segbench finds on its own
# (round records, the rounds folder) are refused by segbench, naming the file and the fix.
UNREADABLE = [
    ("spin-import-results", "in/results.csv", "spin import --round s-car-tire --results {results.csv}",
     ["--results", "is not readable"]),
    ("vocab-map-vocab", "in/vocab.json", "vocab map --vocab {vocab.json} --descriptions {descriptions.json} "
                                         "--out {o.json}", ["--vocab", "is not readable"]),
    ("vocab-map-descriptions", "in/descriptions.json", "vocab map --vocab {vocab.json} --descriptions "
                                                       "{descriptions.json} --out {o.json}",
     ["--descriptions", "is not readable"]),
    ("spin-taxonomy-edits", "in/bad.yaml", "build spin-taxonomy --edits {bad.yaml}", ["--edits", "is not readable"]),
    ("evaluate-spin-predictions", "in/folder", "evaluate spin --predictions {folder}",
     ["--predictions", "is not readable"]),
    ("rounds-record", "data/rounds/s-car-tire.json", "rounds status s-car-tire", ["s-car-tire.json",
                                                                                  "permission denied"]),
    ("rounds-folder", "data/rounds", "rounds list", ["rounds", "permission denied"]),
]


@skip_as_root
@pytest.mark.parametrize(("target", "args", "names"), [case[1:] for case in UNREADABLE],
                         ids=[case[0] for case in UNREADABLE])
def test_permission_denied(project, target, args, names):
    path = project / target
    before = snapshot(project / "data")
    path.chmod(0)
    try:
        outcome = run_main(project, *_args(project, args))
    finally:
        path.chmod(0o755 if path.is_dir() else 0o644)
    assert_clean_failure(outcome, *names, fix="permission denied" in names)
    assert snapshot(project / "data") == before
