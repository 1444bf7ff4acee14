"""Rows that time whole ``segbench`` commands as a user runs them (one process each).

* ``overhead``: ``segbench evaluate cgf1`` on a tiny input with ``segbench server`` up, minus the
  same flow run in a warm process on the same server: what a command costs beyond its work
  (interpreter, imports, settings, the flow run's API calls). Target <= 1.5 s.
* ``eval_commands``: ``segbench evaluate cgf1`` and ``segbench evaluate cafe`` on 10k CAFE pairs
  (``bench/cafe_eval.py``'s data) with ``segbench server`` up, minus the same flow in a warm
  process: what the command costs beyond its evaluation (target <= 1.5 s). The detail times the
  public evaluators' algorithms run as commands on the same files (``bench/public_baselines.py``),
  whose numbers must match.
* ``status``: ``segbench rounds status`` on a round of the demo's size (files backend, answers
  in the results folder), against ``segbench --version``, the floor of any command. Target <= 1 s.

Each is the median of a few runs; both need an idle machine to mean anything.
"""

from __future__ import annotations

import csv
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPEAT = 3
SEGBENCH = [sys.executable, "-m", "segbench"]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _wall(command: list[str], env: dict[str, str], cwd: Path, repeat: int = REPEAT) -> tuple[float, float]:
    """Median wall and CPU seconds of ``command`` (it must succeed); CPU tells a busy machine apart."""
    walls, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), _children_cpu()
        done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        cpus.append(_children_cpu() - cpu)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command[2:])} failed: {done.stderr[-2000:]}")
    return statistics.median(walls), statistics.median(cpus)


def _user_env(work: Path) -> dict[str, str]:
    """A user's environment, running the segbench this process imported (wherever the command runs)."""
    import segbench

    source = str(Path(segbench.__file__).resolve().parents[1])
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))}
    for var in ("PREFECT_API_URL", "PREFECT_HOME", "PREFECT_LOCAL_STORAGE_PATH", "SEGBENCH_CONFIG"):
        env.pop(var, None)
    return env


def command_overhead(quick: bool, result: Any) -> list[dict[str, Any]]:
    from support.cafe_eval_data import HAND_PAIRS, HAND_PREDS, cafe_gt

    from segbench import prefect_server

    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
        root = Path(tmp)
        (root / "gt.json").write_text(json.dumps(cafe_gt(HAND_PAIRS)))
        (root / "preds.json").write_text(json.dumps(HAND_PREDS))
        work = root / "work"
        state, _ = prefect_server.start_server(work, tied=True)
        try:
            env = _user_env(work)
            args = ["--work-dir", str(work), "--data-root", str(root / "data"), "evaluate", "cgf1", "--gt",
                    str(root / "gt.json"), "--predictions", str(root / "preds.json"), "--force"]
            process_s, process_cpu = _wall([*SEGBENCH, *args], env, root)
            flow_s = _in_process_flow(root, work, state.api_url)
        finally:
            prefect_server.drain_prefect_workers()  # this process's flow logs, before the server goes
            prefect_server.stop_server(work)
    overhead = process_s - flow_s
    return [result("per-command overhead, server up (evaluate cgf1, 5 pairs)", measured=overhead,
                   baseline=flow_s, ratio=overhead / flow_s, target="<= 1.5 s", passed=overhead <= 1.5,
                   detail={"command_wall_s": round(process_s, 3), "command_cpu_s": round(process_cpu, 3),
                           "flow_in_warm_process_s": round(flow_s, 3), "runs": REPEAT})]


def evaluate_commands(quick: bool, result: Any) -> list[dict[str, Any]]:
    from cafe_eval import compare_cgf1, compare_table, generate

    from segbench import prefect_server
    from segbench.core.io import FLOAT_DIGITS, canonical_json

    pairs = 2000 if quick else 10_000
    repeat = 1 if quick else REPEAT
    gt, predictions = generate(pairs, 0)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-eval-commands-") as tmp:
        root = Path(tmp)
        (root / "gt.json").write_text(json.dumps(gt))
        (root / "preds.json").write_text(json.dumps(predictions))
        work = root / "work"
        state, _ = prefect_server.start_server(work, tied=True)
        try:
            env = _user_env(work)
            for name, compare in (("cgf1", compare_cgf1), ("cafe", compare_table)):
                out = root / "data" / name
                command = [*SEGBENCH, "--work-dir", str(work), "--data-root", str(root / "data"), "evaluate", name,
                           "--gt", str(root / "gt.json"), "--predictions", str(root / "preds.json"),
                           "--out", str(out), "--force"]
                ours_s, ours_cpu = _wall(command, env, root, repeat)
                flow_s = _in_process_flow(root, work, state.api_url, name, repeat)
                baseline = [sys.executable, str(Path(__file__).with_name("public_baselines.py")), name,
                            str(root / "gt.json"), str(root / "preds.json"), str(root / f"{name}-baseline.json")]
                base_s, base_cpu = _wall(baseline, env, root, repeat)
                ours = json.loads((out / "metrics.json").read_text())["metrics"]
                # metrics.json holds floats rounded to FLOAT_DIGITS: the baseline's numbers, rounded alike
                ref = json.loads(canonical_json(json.loads((root / f"{name}-baseline.json").read_text())))
                overhead = ours_s - flow_s
                rows.append(result(f"segbench evaluate {name}: command - its flow in a warm process ({pairs} pairs)",
                                   measured=overhead, baseline=flow_s, ratio=overhead / flow_s, target="<= 1.5 s",
                                   passed=overhead <= 1.5,
                                   checks={f"identical numbers ({FLOAT_DIGITS} decimals, as in metrics.json)":
                                           _agrees(compare, ours, ref)},
                                   detail={"pairs": pairs, "runs": repeat, "command_wall_s": round(ours_s, 3),
                                           "command_cpu_s": round(ours_cpu, 3),
                                           "public_algorithm_command_s": round(base_s, 3),
                                           "public_algorithm_command_cpu_s": round(base_cpu, 3),
                                           "command_vs_public_command": round(base_s / ours_s, 3),
                                           "segbench_also_computes": "report, plots" + (
                                               ", per-subset cgF1, tau sweep" if name == "cafe" else "")}))
        finally:
            prefect_server.drain_prefect_workers()  # this process's flow logs, before the server goes
            prefect_server.stop_server(work)
    return rows


def _agrees(compare: Any, ours: Any, ref: Any) -> bool:
    try:
        compare(ours, ref)
    except (AssertionError, KeyError, TypeError):
        return False
    return True


def _in_process_flow(root: Path, work: Path, api_url: str, name: str = "cgf1", repeat: int = REPEAT) -> float:
    """Median seconds of the ``segbench evaluate NAME`` command's flow in this process, warm, on the
    same server, reading ``root``'s ``gt.json`` and ``preds.json``."""
    from segbench.settings import configure_runtime, load_settings

    configure_runtime(load_settings(work_dir=work, data_root=root / "data"))
    os.environ["PREFECT_API_URL"] = api_url  # before Prefect is imported: it reads it then
    from segbench.flows.cafe.evaluate import evaluate_cafe, evaluate_cgf1
    from segbench.flows.runner import without_heartbeats
    from segbench.schemas.cafe import CafeEvalParams

    gt, preds, out = root / "gt.json", root / "preds.json", root / "data" / f"in-process-{name}"

    def once() -> float:
        start = time.perf_counter()
        with without_heartbeats():  # as the command runs its flow
            if name == "cgf1":
                evaluate_cgf1(gts=[gt], predictions=preds, out=out, score_threshold=0.5, force=True)
            else:
                evaluate_cafe(repo=root, rev=None, gt=gt, predictions=preds, out=out, params=CafeEvalParams(),
                              force=True)
        return time.perf_counter() - start

    once()  # the first flow run of a process sets up its client
    return statistics.median(once() for _ in range(repeat))


def _files_round(data_root: Path, items: int, workers: int) -> str:
    """A launched files-backend round like the demo's context audit, with every worker's answers in."""
    from segbench.annotation_ui.backends.files import files_dir
    from segbench.annotation_ui.rounds import RoundStore
    from segbench.schemas.rounds import Round, RoundConfig, RoundItem, RoundStatus

    now = "2026-01-01T00:00:00+00:00"
    round_ = Round(key="bench-audit", kind="coco_cd_context_audit", dataset="coco_cd", dataset_version="0" * 64,
                   config=RoundConfig(label_config="coco_cd_context", overlap=workers), backend="files",
                   status=RoundStatus.LAUNCHED, created_at=now, updated_at=now, launched_at=now,
                   items=[RoundItem(item_id=str(i), image=f"coco_cd/images/{i}.png", width=512, height=512)
                          for i in range(items)])
    RoundStore(data_root / "rounds").save(round_)
    results = files_dir(data_root, round_.key) / "results"
    results.mkdir(parents=True)
    with (results / "batch-1.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["WorkerId", "AssignmentId", "Input.item_id", "Answer.context"])
        for worker in range(workers):
            writer.writerows([f"W{worker}", f"W{worker}-{i}", str(i), "indoor"] for i in range(items))
    return round_.key


def rounds_status(quick: bool, result: Any) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="bench-status-") as tmp:
        root = Path(tmp)
        key = _files_round(root / "data", items=200, workers=2)  # the demo's audit: 4 groups x 50, overlap 2
        env = _user_env(root / "work")
        common = ["--work-dir", str(root / "work"), "--data-root", str(root / "data")]
        status_s, status_cpu = _wall([*SEGBENCH, *common, "rounds", "status", key], env, root)
        version_s, version_cpu = _wall([*SEGBENCH, "--version"], env, root)
    return [result("rounds status (200 items, 400 answers) / segbench --version", measured=status_s,
                   baseline=version_s, ratio=status_s / version_s, target="<= 1 s", passed=status_s <= 1.0,
                   detail={"runs": REPEAT, "status_cpu_s": round(status_cpu, 3),
                           "version_cpu_s": round(version_cpu, 3)})]
