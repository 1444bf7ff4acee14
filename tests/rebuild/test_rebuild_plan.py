"""The rebuild plan file: what it accepts, how it resolves paths, and one test per kind of mistake."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from segbench.core.errors import InputError
from segbench.registry import load_plan
from segbench.schemas.rebuild import check_cron

FULL = """
repo = ".."

[coco_cd]
coco_root = "inputs/coco"
stuff_root = "/abs/stuff"
params = { val_per_group = 2, rhos = [0.9, 0.5] }

[vocab]
captions = ["captions/a.json", "captions/b.txt"]
categories = "my_categories.json"
params = { min_count = 1 }

[cafe]
round = "cafe-verify-1"

[[evaluate]]
dataset = "coco_cd"
predictions = "predictions/a"

[[evaluate]]
dataset = "coco_cd"
predictions = "predictions/b"
rho = 0.5

[[evaluate]]
name = "sam"
dataset = "cafe"
predictions = "cafe.json"
params = { score_threshold = 0.4 }

[publish]
remote = "storage"

[[schedule]]
name = "nightly"
cron = "0 3 * * *"

[[schedule]]
name = "weekly-eval"
cron = "30 6 * * mon"
timezone = "Europe/Berlin"
steps = ["evaluate", "publish"]
"""


def _plan(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "plans" / "rebuild.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def _error(tmp_path: Path, text: str) -> InputError:
    with pytest.raises(InputError) as error:
        load_plan(_plan(tmp_path, text))
    return error.value


def test_a_full_plan_resolves_paths_from_its_own_folder(tmp_path):
    plan = load_plan(_plan(tmp_path, FULL))
    base = (tmp_path / "plans").resolve()
    assert plan.repo == tmp_path.resolve()
    assert plan.coco_cd.coco_root == base / "inputs" / "coco"
    assert plan.coco_cd.stuff_root == Path("/abs/stuff")
    assert plan.coco_cd.params.rhos == (0.5, 0.9) and plan.coco_cd.params.val_per_group == 2
    assert plan.coco_cd.params.test_per_group == 125  # the command's default
    assert plan.vocab.captions == [base / "captions" / "a.json", base / "captions" / "b.txt"]
    assert plan.vocab.categories == str(base / "my_categories.json")
    assert plan.vocab.params.spacy_model is None  # the setting decides
    assert plan.evaluate[1].rho == 0.5 and plan.evaluate[2].params.score_threshold == 0.4
    assert plan.evaluation_names() == ["coco_cd", "coco_cd-2", "sam"]
    assert plan.schedule[0].timezone == "UTC" and plan.schedule[0].steps is None


def test_steps_run_in_a_fixed_order_and_only_selects_among_them(tmp_path):
    plan = load_plan(_plan(tmp_path, FULL))
    assert plan.steps() == ["coco_cd", "vocab", "cafe", "evaluate", "publish"]
    assert plan.select(["publish", "coco_cd"]) == ["coco_cd", "publish"]
    assert plan.select(None) == plan.steps()
    with pytest.raises(InputError, match="--only waterbirds") as error:
        plan.select(["waterbirds"])
    assert error.value.hint == "choose among coco_cd, vocab, cafe, evaluate, publish"


def test_a_shipped_category_name_is_not_taken_for_a_path(tmp_path):
    plan = load_plan(_plan(tmp_path, '[vocab]\ncaptions = ["c.json"]\ncategories = "coco_cd"\n'))
    assert plan.vocab.categories == "coco_cd"


@pytest.mark.parametrize(("text", "item", "message", "hint"), [
    ('[coco_cd]\nstuff_root = "s"\n', "coco_cd.coco_root", "Field required", "add coco_root = ... to [coco_cd]"),
    ('[coco_cd]\ncoco_root = "c"\nstuff_root = "s"\nval_per_group = 2\n', "coco_cd.val_per_group",
     "Extra inputs are not permitted", "remove val_per_group from [coco_cd]"),
    ('[coco_cd]\ncoco_root = "c"\nstuff_root = "s"\nparams = { rhos = [0.2] }\n', "coco_cd.params.rhos",
     "outside [0.5, 1]", "fix coco_cd.params.rhos"),
    ('[[evaluate]]\ndataset = "imagenet"\npredictions = "p"\n', "evaluate[0]", "does not match any of the expected",
     "set dataset to coco_cd, waterbirds, spin or cafe"),
    ('[[evaluate]]\ndataset = "spin"\npredictions = "p"\nrho = 0.5\n', "evaluate[0].rho",
     "Extra inputs are not permitted", "remove rho from [evaluate[0]]"),
    ('[publish]\n[[schedule]]\nname = "n"\ncron = "0 24 * * *"\n', "schedule[0].cron", "'24' is outside 0-23",
     "fix schedule[0].cron"),
    ('[publish]\n[[schedule]]\nname = "n"\ncron = "0 3 * * *"\ntimezone = "Europe/Atlantis"\n',
     "schedule[0].timezone", "unknown time zone 'Europe/Atlantis'", "fix schedule[0].timezone"),
    ('[publish]\n[[schedule]]\nname = "n"\ncron = "0 3 * * *"\nsteps = ["coco_cd"]\n', None,
     "schedule 'n' names steps the plan does not configure: ['coco_cd']", "fix the plan"),
    ('[publish]\n[[schedule]]\nname = "n"\ncron = "0 3 * * *"\nsteps = ["build"]\n', "schedule[0].steps[0]",
     "Input should be", "fix schedule[0].steps[0]"),
    ('[publish]\n[[schedule]]\nname = "n"\ncron = "0 3 * * *"\n[[schedule]]\nname = "n"\ncron = "0 4 * * *"\n',
     None, "two schedules share a name: ['n']", "fix the plan"),
    ('[publish]\n[[schedule]]\nname = "night ly"\ncron = "0 3 * * *"\n', "schedule[0].name", "should match pattern",
     "fix schedule[0].name"),
    ('[[schedule]]\nname = "n"\ncron = "0 3 * * *"\n', None, "the plan has no step", "fix the plan"),
])
def test_each_mistake_names_the_key_and_the_fix(tmp_path, text, item, message, hint):
    error = _error(tmp_path, text)
    assert error.path == str(tmp_path / "plans" / "rebuild.toml")
    assert error.item == item
    assert message in error.message
    assert error.hint.startswith(hint)


def test_a_file_that_is_not_toml_names_the_line(tmp_path):
    error = _error(tmp_path, "[publish\n")
    assert "not valid TOML" in error.message and "line 1" in error.message


def test_a_missing_plan_file_says_so(tmp_path):
    with pytest.raises(InputError, match="plan file not found"):
        load_plan(tmp_path / "nowhere.toml")


@pytest.mark.parametrize("cron", ["* * * * *", "*/15 0-6 1,15 jan-mar mon-fri", "0 0 * * 7", "5 4 * * sun",
                                  "0 12 1-31/2 * *"])
def test_standard_cron_expressions_pass(cron):
    assert check_cron(cron) == cron


@pytest.mark.parametrize(("cron", "message"), [
    ("* * * *", "has 4 fields; cron takes 5"),
    ("60 * * * *", "minute field '60': '60' is outside 0-59"),
    ("*/0 * * * *", "minute field '*/0' is not a cron field"),
    ("0 3 0 * *", "day of month field '0': '0' is outside 1-31"),
    ("0 3 * foo *", "month field 'foo': 'foo' is not a number or a name"),
    ("0 3 * * 8", "day of week field '8': '8' is outside 0-7"),
    ("0 3 * * H", "day of week field 'H': 'h' is not a number or a name"),
    ("0 3 31 2 *", "never fires: no month '2' has a day '31'"),
    ("0 3 30,31 feb *", "never fires"),
])
def test_bad_cron_expressions_say_which_field(cron, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        check_cron(cron)
