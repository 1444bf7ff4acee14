"""Rows that time whole commands as users run them (one process each, no server started by hand),
against the public evaluators run as their users run them (``bench/public_tools.py``).

* ``overhead``: ``segbench evaluate cgf1`` on 5 pairs against SAM3's ``CGF1Evaluator`` as a process
  on the same files: what a command costs when the work is nothing. Target <= 2x SAM3's.
* ``eval_commands``: ``segbench evaluate cgf1`` against SAM3's evaluator at 2,146 pairs (CAFE's size),
  10k and (full runs) 100k, wall time and peak RSS of each process (targets >= 1.0x / 1.5x / 3x
  faster); ``segbench evaluate cafe`` (report and plots included) alone, since CAFE's script cannot be
  run here (``public_tools.CAFE_MISSING``).
* ``cgf1_warm``: cgF1 from the files to the numbers, in a warm process each: segbench's evaluation
  function against ``CGF1Evaluator(gt).evaluate(predictions)`` in SAM3's own interpreter. Target >= 5x at 10k.
* ``status``: ``segbench rounds status`` on a round of the demo's size (files backend, answers
  in the results folder), against ``segbench --version``, the floor of any command. Target <= 1 s.

Every row checks that segbench's numbers are SAM3's (as ``metrics.json`` rounds them). Each time is the
median of a few alternating runs; they need an idle machine to mean anything.
"""

from __future__ import annotations

import csv
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPEAT = 3
SEGBENCH = [sys.executable, "-m", "segbench"]
HERE = Path(__file__).resolve().parent
CAFE_PAIRS = 2146  # the pairs of CAFE's released benchmark
SAM3_PREFIX = "cgF1_eval_segm_"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float | None]:
    """Wall seconds, CPU seconds and peak RSS (MB) of one run of ``command`` (it must succeed).

    Peak RSS comes from GNU time, which forks a small process to run the command: its high-water
    mark is the command's own (``ru_maxrss`` of a child forked from this large process would start
    at this process's size). ``None`` without ``/usr/bin/time``.
    """
    timer = shutil.which("time", path="/usr/bin")
    with tempfile.NamedTemporaryFile(mode="r", suffix=".rss") as rss:
        wrapped = [timer, "-f", "%M", "-o", rss.name, *command] if timer else command
        start, cpu = time.perf_counter(), _children_cpu()
        done = subprocess.run(wrapped, env=env, cwd=cwd, capture_output=True, text=True)
        wall, used = time.perf_counter() - start, _children_cpu() - cpu
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command[:6])} … failed: {done.stderr[-2000:]}")
        peak = int(rss.read().split()[-1]) / 1024 if timer else None
    return wall, used, peak


def _medians(commands: dict[str, list[str]], env: dict[str, str], cwd: Path, repeat: int) -> dict[str, dict[str, Any]]:
    """Each command's median wall / CPU seconds and largest peak RSS over ``repeat`` alternating runs."""
    runs: dict[str, list[tuple[float, float, float | None]]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, command in commands.items():  # alternating: a slow spell of the machine hits both
            runs[name].append(_run(command, env, cwd))
    return {name: {"wall_s": round(statistics.median(r[0] for r in done), 3),
                   "cpu_s": round(statistics.median(r[1] for r in done), 3),
                   "peak_rss_mb": None if done[0][2] is None else round(max(r[2] for r in done), 1)}
            for name, done in runs.items()}


def _wall(command: list[str], env: dict[str, str], cwd: Path, repeat: int = REPEAT) -> tuple[float, float]:
    """Median wall and CPU seconds of ``command``."""
    timed = _medians({"command": command}, env, cwd, repeat)["command"]
    return timed["wall_s"], timed["cpu_s"]


def _user_env(work: Path) -> dict[str, str]:
    """A user's environment, running the segbench this process imported (wherever the command runs)."""
    import segbench

    source = str(Path(segbench.__file__).resolve().parents[1])
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))}
    for var in ("PREFECT_API_URL", "PREFECT_HOME", "PREFECT_LOCAL_STORAGE_PATH", "SEGBENCH_CONFIG"):
        env.pop(var, None)
    return env


def _sam3_numbers(path: Path) -> dict[str, float]:
    """SAM3's summary under segbench's names (``cgF1``, ``cgF1@0.5``, ``IL_MCC``, ``positive_micro_F1``…)."""
    summary = json.loads(path.read_text())["summary"]
    return {key.removeprefix(SAM3_PREFIX): value for key, value in summary.items()}


def _same_numbers(ours_dir: Path, sam3_out: Path) -> bool:
    """segbench's metrics.json agrees with SAM3's summary, rounded as metrics.json rounds it."""
    from cafe_eval import compare_cgf1

    from segbench.core.io import canonical_json

    ours = json.loads((ours_dir / "metrics.json").read_text())["metrics"]
    ref = json.loads(canonical_json(_sam3_numbers(sam3_out)))
    try:
        compare_cgf1(ours, ref)
    except (AssertionError, KeyError, TypeError):
        return False
    return True


def _write_pairs(root: Path, pairs: int) -> tuple[Path, Path]:
    from cafe_eval import generate

    gt, predictions = generate(pairs, 0)
    (root / "gt.json").write_text(json.dumps(gt))
    (root / "preds.json").write_text(json.dumps(predictions))
    return root / "gt.json", root / "preds.json"


def _cgf1_commands(root: Path, gt: Path, preds: Path) -> tuple[dict[str, list[str]], Any]:
    """``segbench evaluate cgf1`` and SAM3's evaluator on the same files, and SAM3 as found."""
    from public_tools import sam3_evaluator

    sam3 = sam3_evaluator()
    ours = [*SEGBENCH, "--work-dir", str(root / "work"), "--data-root", str(root / "data"), "evaluate", "cgf1",
            "--gt", str(gt), "--predictions", str(preds), "--out", str(root / "ours"), "--force"]
    public = [str(sam3.python), str(HERE / "sam3_cgf1.py"), str(sam3.source), str(gt), str(preds),
              str(root / "sam3.json")]
    return {"segbench": ours, "sam3": public}, sam3


def command_overhead(quick: bool, result: Any) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as tmp:
        root = Path(tmp)
        gt, preds = _write_pairs(root, 5)
        commands, sam3 = _cgf1_commands(root, gt, preds)
        timed = _medians(commands, _user_env(root / "work"), root, 1 if quick else 5)
        same = _same_numbers(root / "ours", root / "sam3.json")
    ours, public = timed["segbench"]["wall_s"], timed["sam3"]["wall_s"]
    return [result("segbench evaluate cgf1 on 5 pairs vs SAM3's CGF1Evaluator, both processes", measured=ours,
                   baseline=public, ratio=ours / public, target="<= 2x SAM3's", passed=ours <= 2 * public,
                   checks={"SAM3's numbers": same},
                   detail={"public": sam3.origin, **{f"{name}_{k}": v for name, t in timed.items() for k, v in t.items()},
                           "segbench_also_writes": "report.md, cgf1_by_iou.png, manifest.json"})]


def evaluate_commands(quick: bool, result: Any) -> list[dict[str, Any]]:
    from public_tools import CAFE_MISSING

    rows = []
    scales = (500, CAFE_PAIRS) if quick else (CAFE_PAIRS, 10_000, 100_000)
    targets = {500: 1.0, CAFE_PAIRS: 1.0, 10_000: 1.5, 100_000: 3.0}
    for pairs in scales:
        repeat = 1 if quick or pairs >= 100_000 else REPEAT
        with tempfile.TemporaryDirectory(prefix="bench-eval-commands-") as tmp:
            root = Path(tmp)
            gt, preds = _write_pairs(root, pairs)
            env = _user_env(root / "work")
            commands, sam3 = _cgf1_commands(root, gt, preds)
            timed = _medians(commands, env, root, repeat)
            same = _same_numbers(root / "ours", root / "sam3.json")
            ours, public = timed["segbench"]["wall_s"], timed["sam3"]["wall_s"]
            rows.append(result(f"segbench evaluate cgf1 vs SAM3's CGF1Evaluator, processes ({pairs:,} pairs)",
                               measured=ours, baseline=public, ratio=public / ours,
                               target=f">= {targets[pairs]:g}x faster", passed=public / ours >= targets[pairs],
                               checks={"SAM3's numbers": same},
                               detail={"pairs": pairs, "runs": repeat, "public": sam3.origin,
                                       **{f"{n}_{k}": v for n, t in timed.items() for k, v in t.items()}}))
            cafe_command = [*SEGBENCH, "--work-dir", str(root / "work"), "--data-root", str(root / "data"),
                            "evaluate", "cafe", "--gt", str(gt), "--predictions", str(preds), "--out",
                            str(root / "ours-cafe"), "--force"]
            alone = _medians({"segbench": cafe_command}, env, root, repeat)["segbench"]
            rows.append(result(f"segbench evaluate cafe, report and plots ({pairs:,} pairs; {CAFE_MISSING})",
                               measured=alone["wall_s"], baseline=0.0, ratio=0.0, target="-", passed=True,
                               detail={"pairs": pairs, "runs": repeat, **alone}))
    return rows


def cgf1_warm(quick: bool, result: Any) -> list[dict[str, Any]]:
    """cgF1 from the files to the numbers in a warm process: segbench's function vs SAM3's evaluator."""
    import gc

    from public_tools import sam3_evaluator

    from segbench.tasks.cafe.evaluation import score_cgf1

    sam3, rows = sam3_evaluator(), []
    for pairs in (500, CAFE_PAIRS) if quick else (CAFE_PAIRS, 10_000):
        with tempfile.TemporaryDirectory(prefix="bench-cgf1-warm-") as tmp:
            root = Path(tmp)
            gt, preds = _write_pairs(root, pairs)
            score_cgf1("warm-up", [str(gt)], str(preds), 0.5)  # numba's start-up and the imports, once
            seconds = []
            for _ in range(REPEAT):
                gc.collect()
                start = time.perf_counter()
                ours = score_cgf1("timed", [str(gt)], str(preds), 0.5)
                seconds.append(time.perf_counter() - start)
            subprocess.run([str(sam3.python), str(HERE / "sam3_cgf1.py"), str(sam3.source), str(gt), str(preds),
                            str(root / "sam3.json"), "--repeat", str(REPEAT)], check=True, capture_output=True)
            public_seconds = json.loads((root / "sam3.json").read_text())["seconds"]
            from cafe_eval import compare_cgf1

            try:
                compare_cgf1(ours, _sam3_numbers(root / "sam3.json"))
                same = True
            except (AssertionError, KeyError):
                same = False
        mine, public = statistics.median(seconds), statistics.median(public_seconds)
        target = 5.0 if pairs >= 10_000 else 1.0
        rows.append(result(f"cgF1 in a warm process, files to numbers: segbench vs SAM3's CGF1Evaluator ({pairs:,} pairs)",
                           measured=mine, baseline=public, ratio=public / mine, target=f">= {target:g}x faster",
                           passed=public / mine >= target, checks={"SAM3's numbers": same},
                           detail={"pairs": pairs, "runs": REPEAT, "public": sam3.origin}))
    return rows


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
