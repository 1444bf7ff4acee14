"""The package's shape: the command line starts without Prefect, no import cycle anywhere, and the
registry is the one list of datasets."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from segbench import registry
from segbench.core.errors import InputError

SRC = Path(__file__).resolve().parents[1] / "src" / "segbench"


def test_importing_the_command_line_leaves_prefect_and_the_round_kinds_unimported():
    # `segbench --help` and every argument error pay only for what the CLI imports at start-up; the
    # round kinds (label configs, masks) load when `rounds create` is asked for.
    heavy = ("prefect", "dvc", "jinja2", "pycocotools")
    code = f"import sys, segbench.cli; print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_module_imports_itself_back():
    # grimp reads every import statement, function-local ones included, so a cycle hidden behind a
    # local import shows here too.
    graph = grimp.build_graph("segbench", exclude_type_checking_imports=True)
    cycles = []
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back:
                cycles.append(" -> ".join((module, *back)))
    assert cycles == []


@pytest.mark.parametrize("spec", registry.DATASETS, ids=lambda spec: spec.name)
def test_every_registered_hook_resolves_to_what_its_type_says(spec):
    from segbench.annotation_ui.kinds import RoundKind
    from segbench.core.leaderboard import Board
    from segbench.flows.demo import DemoStep
    from segbench.providers.base import OfflineAnswer
    from segbench.schemas.rebuild import PlanEvaluation, PlanTable

    classes = {"plan_section": PlanTable, "plan_evaluation": PlanEvaluation}
    instances = {"demo_step": DemoStep}
    for field in dataclasses.fields(spec):
        ref = getattr(spec, field.name)
        if not isinstance(ref, registry.Ref):
            continue
        loaded = ref.load()
        if field.name in classes:
            assert isinstance(loaded, type) and issubclass(loaded, classes[field.name]), field.name
        elif field.name in instances:
            assert isinstance(loaded, instances[field.name]), field.name
        else:
            assert callable(loaded), field.name
    assert callable(registry.load(f"{spec.cli}:register"))
    assert all(isinstance(ref.load(), RoundKind) for ref in spec.round_kinds)
    assert all(isinstance(ref.load(), OfflineAnswer) for ref in spec.offline_answers)
    assert all(isinstance(ref.load(), Board) for ref in spec.leaderboards)


def test_an_unknown_dataset_names_the_ones_there_are():
    with pytest.raises(InputError) as error:
        registry.dataset("imagenet")
    assert "imagenet" in str(error.value) and all(name in str(error.value) for name in registry.names())


def test_only_dataset_packages_and_the_registry_name_a_dataset():
    names = {spec.name for spec in registry.DATASETS} | {"flip"}
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        # The registry names each dataset's hooks, the public API each dataset's reader and evaluator.
        if parts[0] in ("registry", "api") or any(part in names for part in parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            imported = node.module if isinstance(node, ast.ImportFrom) else None
            if imported and any(part in names for part in imported.split(".")[1:]):
                offenders.append(f"{path.relative_to(SRC)} imports {imported}")
    assert offenders == []


def test_the_registry_lists_the_plan_steps_a_plan_knows():
    from segbench.schemas.rebuild import FINAL_STEPS

    assert registry.FINAL_PLAN_STEPS == FINAL_STEPS
    assert registry.plan_steps()[-len(FINAL_STEPS):] == FINAL_STEPS
