"""The rows of the benchmark table, one function each; ``bench/run.py`` runs each in a child process.

``python bench/rows.py ROW [--quick]`` runs one row and prints its result rows as one JSON line
(the last line of stdout). A row measures its baseline and segbench in the same run, checks that
both give the same output, and fails when they differ.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))  # tests/support/openai_server.py, the local model server

Row = dict[str, Any]


def result(name: str, *, measured: float, baseline: float, ratio: float, target: str, passed: bool,
           unit: str = "s", checks: dict[str, Any] | None = None, detail: dict[str, Any] | None = None) -> Row:
    """One table row; ``passed`` already includes every output check in ``checks``."""
    checks = checks or {}
    ok = passed and all(v is True for v in checks.values() if isinstance(v, bool))
    return {"row": name, "measured": round(measured, 3), "baseline": round(baseline, 3), "unit": unit,
            "ratio": round(ratio, 3), "target": target, "passed": ok, "checks": checks, "detail": detail or {}}


def private_prefect(home: Path) -> None:
    """A private Prefect home with telemetry off; must run before Prefect is imported."""
    from coco_cd_steps import prefect_environment

    prefect_environment(home)


def warm_up_prefect() -> float:
    """Start the temporary Prefect API (the first flow run of a process does); returns its seconds."""
    from prefect import flow

    @flow(name="bench-warm-up")
    def warm_up() -> int:
        return 1

    start = time.perf_counter()
    warm_up()
    return time.perf_counter() - start


# --- COCO-CD at COCO scale, and the no-op rebuild ---------------------------------------------------

def _coco_tree(quick: bool, scale: float | None = None) -> tuple[Path, float, dict[str, Any]]:
    from coco_cd_scale import build_params
    from gen_coco_scale import Spec, ensure_tree

    scale = scale if scale is not None else (0.05 if quick else 1.0)
    root, _, _ = ensure_tree(Spec(scale, 0))
    return root, scale, build_params(scale)


def _json_mb(root: Path) -> float:
    return sum(path.stat().st_size for path in (root / "annotations").glob("*.json")) / 2**20


def _build_at(quick: bool, scale: float | None = None) -> tuple[dict[str, Any], Path, float]:
    """One COCO-CD build (no images) in its own process: its step result, the tree and the scale."""
    from coco_cd_scale import run_step

    root, scale, params = _coco_tree(quick, scale)
    with tempfile.TemporaryDirectory(prefix="bench-coco-cd-", dir=OUT) as work:
        build = run_step("flow", root, "--out", str(Path(work) / "coco_cd"), "--params", json.dumps(params))
    return build, root, scale


def coco_cd(quick: bool) -> list[Row]:
    """The build against pycocotools' bare load, its peak RSS against the JSON size, and how RSS grows with scale."""
    from coco_cd_scale import run_step

    root, scale, _ = _coco_tree(quick)
    base = run_step("baseline", root)
    build, _, _ = _build_at(quick)
    ratio = build["seconds"] / base["seconds"]
    checks = {"built (not up to date)": build["up_to_date"] is False, "rendered masks": build["counts"]["rendered"] > 0}
    json_mb = _json_mb(root)
    detail = {"scale": scale, "build_peak_rss_mb": build["peak_rss_mb"], "load_peak_rss_mb": base["peak_rss_mb"],
              "json_mb": round(json_mb, 1), "peak_rss_ratio": round(build["peak_rss_mb"] / base["peak_rss_mb"], 2),
              # CPU seconds move less than wall seconds when other work shares the cores.
              "build_cpu_s": build["cpu_seconds"], "load_cpu_s": base["cpu_seconds"],
              "cpu_ratio": round(build["cpu_seconds"] / base["cpu_seconds"], 2),
              "prefect_api_start_s": build["api_start_seconds"], "counts": build["counts"]}
    rss_ratio = build["peak_rss_mb"] / json_mb
    return [result(f"COCO-CD build / pycocotools load (scale {scale:g})", measured=build["seconds"],
                   baseline=base["seconds"], ratio=ratio, target="< 1.0x", passed=ratio < 1.0, checks=checks,
                   detail=detail),
            result(f"COCO-CD build peak RSS / JSON size (scale {scale:g})", measured=build["peak_rss_mb"],
                   baseline=json_mb, ratio=rss_ratio, unit="MB", target="<= 2x", passed=quick or rss_ratio <= 2,
                   detail={"pycocotools_load_peak_rss_mb": base["peak_rss_mb"]}),
            _memory_growth(quick, scale, json_mb, build)]


def _memory_growth(quick: bool, scale: float, json_mb: float, build: dict[str, Any]) -> Row:
    """Peak RSS of the build at 10%, 50% and 100% of the scale (each its own process): slope and linearity."""
    import numpy as np

    points = {scale: (json_mb, build["peak_rss_mb"], build["counts"]["source_images"])}
    for fraction in (0.1, 0.5):
        smaller, root, at = _build_at(quick, round(scale * fraction, 4))
        points[at] = (_json_mb(root), smaller["peak_rss_mb"], smaller["counts"]["source_images"])
    scales = sorted(points)
    mb, rss, images = (np.array([points[s][i] for s in scales], dtype=float) for i in range(3))
    slope, intercept = np.polyfit(mb, rss, 1)
    per_1k_images = np.polyfit(images / 1000, rss, 1)[0]
    # Linear: the middle point lies within 5% of the line through the ends, and the fit explains the points.
    through_ends = rss[0] + (rss[-1] - rss[0]) * (mb[1] - mb[0]) / (mb[-1] - mb[0])
    off_line = abs(rss[1] - through_ends) / rss[1]
    r_squared = 1 - np.sum((rss - (slope * mb + intercept)) ** 2) / np.sum((rss - rss.mean()) ** 2)
    checks = {"linear (middle point within 5% of the line)": bool(off_line <= 0.05), "r_squared": round(float(r_squared), 4)}
    detail = {"points": [{"scale": s, "json_mb": round(points[s][0], 1), "peak_rss_mb": points[s][1],
                          "images": points[s][2]} for s in scales],
              "slope_mb_per_100mb_json": round(float(slope) * 100, 1), "intercept_mb": round(float(intercept), 1),
              "slope_mb_per_1k_images": round(float(per_1k_images), 2), "middle_point_off_line": round(float(off_line), 3)}
    return result(f"COCO-CD build peak RSS growth, MB per 100 MB of JSON (scales {', '.join(f'{s:g}' for s in scales)})",
                  measured=float(slope) * 100, baseline=100.0, ratio=float(slope), unit="MB", target="linear",
                  passed=True, checks=checks, detail=detail)


RELEASE_ANSWERS = ("--annotations-license", "cc-by-4.0", "--intended-uses", "benchmarks", "--social-impact", "none",
                   "--personal-information", "none", "--maintainer", "bench")


def _release_at(quick: bool, scale: float | None = None, *, against_datasets: bool = False,
                ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]:
    """A COCO-CD build and its release, each in its own process: (build step, release step), and with
    ``against_datasets`` the ``segbench release`` command beside a plain ``datasets`` script writing the
    same rows (``bench/datasets_release.py``), both whole processes."""
    from coco_cd_scale import run_step
    from commands import _medians, _user_env

    root, scale, params = _coco_tree(quick, scale)
    with tempfile.TemporaryDirectory(prefix="bench-release-", dir=OUT) as tmp:
        work = Path(tmp)
        build = run_step("flow", root, "--out", str(work / "coco_cd"), "--params", json.dumps(params))
        release = run_step("release", work / "coco_cd", "--out", str(work / "release"))
        compared = None
        if against_datasets:
            commands = {"segbench": [sys.executable, "-m", "segbench", "release", "coco_cd", "--path", "coco_cd",
                                     "--out", str(work / "command"), *RELEASE_ANSWERS],
                        "datasets": [sys.executable, str(HERE / "datasets_release.py"), str(work / "coco_cd"),
                                     str(work / "script")]}
            compared = _medians(commands, _user_env(work), work, 1 if quick else 3)
            compared["rows"] = {"segbench": _parquet_rows(work / "command", skip="answers"),
                                "datasets": _parquet_rows(work / "script")}
    return build, release | {"images": build["counts"]["source_images"], "scale": scale}, compared


def _parquet_rows(folder: Path, skip: str | None = None) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(path).metadata.num_rows for path in folder.glob("data/**/*.parquet")
               if skip is None or path.parent.name != skip)


def release(quick: bool) -> list[Row]:
    """`segbench release coco_cd` against the build it releases, its peak RSS, and how that grows with scale;
    then the command against a plain `datasets` script writing the same rows."""
    import numpy as np

    points, compared = {}, None
    for fraction in (0.1, 0.5, 1.0):
        build, made, compared = _release_at(quick, round((0.05 if quick else 1.0) * fraction, 4),
                                            against_datasets=fraction == 1.0)
        points[made["scale"]] = (build, made)
    full_build, full = points[max(points)]
    ratio = full["seconds"] / full_build["seconds"]
    scales = sorted(points)
    rss = np.array([points[s][1]["peak_rss_mb"] for s in scales])
    rows = np.array([points[s][1]["rows"] for s in scales], dtype=float)
    per_1k_rows = float(np.polyfit(rows / 1000, rss, 1)[0]) if rows[-1] > rows[0] else 0.0
    detail = {"points": [{"scale": s, "rows": points[s][1]["rows"], "peak_rss_mb": points[s][1]["peak_rss_mb"],
                          "release_s": points[s][1]["seconds"], "build_s": points[s][0]["seconds"],
                          "parquet_mb": points[s][1]["parquet_mb"]} for s in scales],
              "rss_growth_mb_per_1k_rows": round(per_1k_rows, 1),
              "note": "the bench's COCO tree has no pixels: the release embeds the label masks, not images"}
    checks = {"peak RSS <= 500 MB": bool(full["peak_rss_mb"] <= 500)}
    assert compared is not None
    ours, script = compared["segbench"]["wall_s"], compared["datasets"]["wall_s"]
    same_rows = compared["rows"]["segbench"] == compared["rows"]["datasets"]
    return [result(f"COCO-CD release / its build (scale {max(scales):g}, {full['rows']} rows)", measured=full["seconds"],
                   baseline=full_build["seconds"], ratio=ratio, target="<= 1.0x", passed=ratio <= 1.0 and all(
                       checks.values()), checks=checks, detail=detail),
            result(f"segbench release coco_cd vs a plain datasets script writing the same rows, processes "
                   f"(scale {max(scales):g}, {compared['rows']['datasets']} rows)", measured=ours, baseline=script,
                   ratio=ours / script, target="<= 1.5x", passed=ours <= 1.5 * script,
                   checks={"same rows": same_rows}, detail=compared)]


def noop_rebuild(quick: bool) -> list[Row]:
    from coco_cd_scale import run_step

    root, scale, params = _coco_tree(quick)
    with tempfile.TemporaryDirectory(prefix="bench-noop-", dir=OUT) as work:
        build = run_step("flow", root, "--out", str(Path(work) / "coco_cd"), "--params", json.dumps(params), "--repeat")
    again = build["rebuild"]
    ratio = again["seconds"] / build["seconds"]
    checks = {"rebuild reports up_to_date": again["up_to_date"] is True, "same counts": again["same_counts"]}
    return [result(f"no-op rebuild / full build (COCO-CD scale {scale:g})", measured=again["seconds"],
                   baseline=build["seconds"], ratio=ratio, target="<= 0.05x", passed=ratio <= 0.05, checks=checks,
                   detail={"scale": scale})]


# --- noun mining ------------------------------------------------------------------------------------

def _mining_cpu(model: str, captions: list[str], batch_size: int) -> float:
    from collections import Counter

    from segbench.tasks.vocab import nouns

    pipeline = nouns.load_mining_pipeline(model)
    start = time.process_time()
    nouns.mine_shard(pipeline, list(Counter(captions).items()), batch_size=batch_size)
    return time.process_time() - start


def noun_mining(quick: bool) -> list[Row]:
    from noun_mining import baseline, make_captions, ours

    model, workers, shard_size, batch_size = "en_core_web_sm", 2, 2000, 256
    templated = make_captions(4000 if quick else 20_000)
    rows = []
    for corpus, captions in (("distinct", list(dict.fromkeys(templated))), ("templated", templated)):
        cpu = time.process_time()
        expected, t_base = baseline(model, captions, batch_size)
        cpu_base = time.process_time() - cpu
        got, t_ours, t_cold = ours(model, captions, workers=workers, shard_size=min(shard_size, len(captions) // 4),
                                   batch_size=batch_size)
        detail = {"captions": len(captions), "distinct": len(set(captions)), "nouns": len(got),
                  "workers": workers, "seconds_with_worker_start": round(t_cold, 3),
                  "speedup_with_worker_start": round(t_base / t_cold, 2),
                  # Per-core speed, which other load on the machine hardly changes: CPU seconds of the
                  # full pipeline over those of the mining pipeline in this process on the same captions.
                  "cpu_speedup_one_process": round(cpu_base / _mining_cpu(model, captions, batch_size), 2)}
        rows.append(result(f"noun mining / spaCy full nlp.pipe ({corpus} captions)", measured=t_ours,
                           baseline=t_base, ratio=t_base / t_ours, target=">= 5x faster", passed=t_base / t_ours >= 5,
                           checks={"identical counts": got == expected}, detail=detail))
    return rows


# --- CAFE evaluation --------------------------------------------------------------------------------

def _timed(function: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = function(*args)
    return out, time.perf_counter() - start


def _agrees(check: Callable[[Any, Any], None], ours: Any, ref: Any) -> bool:
    try:
        check(ours, ref)
    except AssertionError:
        return False
    return True


# --- the LLM stage ----------------------------------------------------------------------------------

def _judge(body: dict[str, Any]) -> dict[str, Any]:
    """A stand-in language model: every candidate noun is judged ``none`` unless it names the category."""
    import re

    text = body["messages"][-1]["content"]
    category = re.search(r"Category: (.+)", text).group(1).strip()
    nouns = re.findall(r"^- (.+)$", text, flags=re.MULTILINE)
    return {"category": category,
            "judgements": [{"noun": n, "relation": "exact" if n == category else "none"} for n in nouns]}


def llm_stage(quick: bool) -> list[Row]:
    from support.openai_server import OpenAICompatServer

    n_questions, latency = (96, 0.25) if quick else (400, 0.25)
    with tempfile.TemporaryDirectory(prefix="bench-llm-") as tmp, OpenAICompatServer(_judge) as server:
        private_prefect(Path(tmp))
        from prefect import flow

        from segbench.flows.vocab import build as vocab_flow
        from segbench.providers import make_provider
        from segbench.schemas.vocab import CategorySpec, VocabParams
        from segbench.settings import load_settings

        params = VocabParams()
        settings = load_settings(data_root=Path(tmp) / "data", work_dir=Path(tmp) / "wd", provider="openai",
                                 openai_base_url=server.base_url, openai_model="bench-model")
        concurrency = settings.openai_concurrency
        categories = [CategorySpec(id=i, name=f"category{i}") for i in range(n_questions)]
        # One question per category: question_batch candidates each.
        candidates = {c.id: [{"noun": f"{c.name} noun{k}"} for k in range(params.question_batch)] for c in categories}
        warm_up_prefect()

        @flow(name="bench-judge-relations")
        def judge_stage(provider: Any) -> tuple[Any, float]:
            start = time.perf_counter()
            relations = vocab_flow._judge_all(provider, categories, candidates, params)
            return relations, time.perf_counter() - start

        server.latency = latency
        first, seconds = judge_stage(make_provider(settings))
        calls_first = server.count
        replay, replay_seconds = judge_stage(make_provider(settings))  # a rebuild: a new provider, the same cache
        calls_replay = server.count - calls_first
    ideal = n_questions * latency / concurrency
    checks = {"asked every question once": calls_first == n_questions, "rebuild makes zero calls": calls_replay == 0,
              "rebuild gives the same relations": replay[0] == first[0]}
    detail = {"questions": n_questions, "latency_s": latency, "concurrency": concurrency,
              "max_in_flight": server.max_in_flight, "rebuild_seconds": round(replay_seconds, 3),
              "rebuild_calls": calls_replay, "questions_per_task": params.questions_per_task}
    return [result(f"LLM judge stage / (N * latency / concurrency) (N={n_questions}, {latency:g} s, c={concurrency})",
                   measured=seconds, baseline=ideal, ratio=seconds / ideal, target="<= 1.25x",
                   passed=seconds / ideal <= 1.25, checks=checks, detail=detail)]


# --- Dask scale-out ---------------------------------------------------------------------------------

def _birds(quick: bool) -> tuple[Path, Path, Any]:
    from segbench.demo.waterbirds.birds import generate_demo_birds
    from segbench.tasks.waterbirds.dataset import WaterbirdsParams

    per_species = 150 if quick else 1000
    root = OUT / f"birds-{per_species}"
    if not (root / "complete").is_file():
        shutil.rmtree(root, ignore_errors=True)
        generate_demo_birds(root, seed=0, birds_per_species=per_species, images_per_place=50)
        (root / "complete").write_text("")
    # The minority groups hold about per_species birds; val and test take half of them.
    params = WaterbirdsParams(val_per_group=per_species // 4, test_per_group=per_species // 4)
    return root / "cub", root / "places", params


def _stage_seconds(flow_run_id: Any, task_name: str) -> float:
    """Wall seconds of one stage of a flow run: first start to last end of its task runs."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def read() -> list[Any]:
        async with get_client() as client:
            return await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))

    runs = [r for r in asyncio.run(read()) if r.name.startswith(task_name) and r.start_time and r.end_time]
    return (max(r.end_time for r in runs) - min(r.start_time for r in runs)).total_seconds()


def dask_scale_out(quick: bool) -> list[Row]:
    """Waterbirds-seg's compositing stage (CPU-bound PNG work in shards of 200) on 1 and 2 Dask workers."""
    cub, places, params = _birds(quick)
    with tempfile.TemporaryDirectory(prefix="bench-dask-", dir=OUT) as tmp:
        private_prefect(Path(tmp))
        from prefect import flow, task

        from segbench.flows.runner import RunnerSpec, runner_session, with_runner
        from segbench.flows.waterbirds.build import build_waterbirds

        @task(name="bench-worker-warm-up")
        def touch(i: int) -> int:
            return i

        @flow(name="bench-dask-warm-up")
        def warm_workers(n: int) -> int:
            return sum(f.result() for f in [touch.submit(i) for i in range(n)])

        stage, whole, manifests, rendered = {}, {}, {}, {}
        for workers in (1, 2):
            with runner_session(RunnerSpec(kind="dask", workers=workers)) as spec:
                with_runner(warm_workers, spec)(4 * workers)  # worker imports and Prefect clients, not timed
                out = Path(tmp) / f"waterbirds-{workers}"
                start = time.perf_counter()
                state = with_runner(build_waterbirds, spec)(cub, places, out, params, return_state=True)
                whole[workers] = time.perf_counter() - start
                rendered[workers] = state.result().counts.rendered
                stage[workers] = _stage_seconds(state.state_details.flow_run_id, "render-shard")
            manifests[workers] = json.loads((out / "manifest.json").read_text())["outputs"]
    ratio = stage[1] / stage[2]
    detail = {"rendered": rendered[1], "cpus": os.cpu_count(), "whole_flow_s": {k: round(v, 2) for k, v in whole.items()},
              "whole_flow_speedup": round(whole[1] / whole[2], 2)}
    return [result(f"Waterbirds-seg compositing stage, 2 Dask workers vs 1 ({rendered[1]} images)",
                   measured=stage[2], baseline=stage[1], ratio=ratio, target=">= 1.6x faster", passed=ratio >= 1.6,
                   checks={"byte-identical outputs": manifests[1] == manifests[2]}, detail=detail)]


# --- whole commands (bench/commands.py) ---------------------------------------------------------------

def command_overhead(quick: bool) -> list[Row]:
    import commands

    return commands.command_overhead(quick, result)


def evaluate_commands(quick: bool) -> list[Row]:
    import commands

    return commands.evaluate_commands(quick, result)


def cgf1_warm(quick: bool) -> list[Row]:
    import commands

    return commands.cgf1_warm(quick, result)


def rounds_status(quick: bool) -> list[Row]:
    import commands

    return commands.rounds_status(quick, result)


def crowd(quick: bool) -> list[Row]:
    """The simulated crowd (``bench/crowd.py``): true labels and masks recovered at 40% spammers.

    measured = the best of gold filtering and Dawid–Skene, baseline = plain majority vote (categorical)
    or the SPIN medoid rule (polygons, mean IoU); the full tables per spammer share are in the detail.
    With 5 workers per item some items have one honest worker or none, so the target there is the
    oracle's ceiling (maximum likelihood knowing who spams: no method can beat it) within half a point;
    with 7 per item it is 95% of the true labels.
    """
    from crowd import CATEGORICAL, categorical, run_all

    tables = run_all(quick)
    seven = categorical(600 if quick else 2000, 0.4, 0, [m for m in CATEGORICAL if m not in ("glad", "oracle")],
                        overlap=7)
    best_seven = max(seven["gold-filtered majority"], seven["dawid-skene"], seven["gold-filtered dawid-skene"])
    cat, poly = tables["categorical"]["40%"], tables["polygons"]["40%"]
    best = max(cat["gold-filtered majority"], cat["dawid-skene"], cat["gold-filtered dawid-skene"])
    best_mask = max(poly["gold-filtered medoid"], poly["segmentation EM"])
    return [
        result("crowd: true labels recovered, 40% spammers (gold filter or Dawid-Skene / majority)",
               measured=best, baseline=cat["majority"], ratio=best / cat["majority"], unit="acc",
               target=">= 0.95, or the ceiling - 0.005", passed=best >= min(0.95, cat["oracle"] - 0.005),
               checks={"oracle ceiling": round(cat["oracle"], 3)}, detail=tables),
        result("crowd: true labels recovered, 40% spammers, 7 workers per item (gold filter or Dawid-Skene / "
               "majority)", measured=best_seven, baseline=seven["majority"], ratio=best_seven / seven["majority"],
               unit="acc", target=">= 0.95", passed=best_seven >= 0.95,
               checks={"oracle ceiling": round(seven["oracle"], 3)}, detail=seven),
        _adversarial_row(tables["adversarial"]["7 per item, 40% spammers"], tables["sizes"]["trials"]),
        result("crowd: polygon IoU, 40% spammers (gold-filtered medoid or EM / medoid rule)",
               measured=best_mask, baseline=poly["medoid rule"],
               ratio=best_mask / poly["medoid rule"], unit="IoU", target=">= medoid rule",
               passed=best_mask >= poly["medoid rule"], detail={"sizes": tables["sizes"]}),
    ]


def _adversarial_row(row: dict[str, float], trials: int) -> Row:
    """The adversarial crowd at 7 per item and 40% spammers: the issue's targets for the default aggregation."""
    passed = (row["screened"] >= 0.95 and row["spammers_flagged"] >= 0.9 and row["honest_flagged"] <= 0.1
              and row["spotted_share_gold"] <= 0.143 * 1.5)
    return result(f"crowd: adversarial crowd, 7 per item, 40% spammers, mean of {trials} rounds (screened / "
                  "majority)", measured=row["screened"], baseline=row["majority"],
                  ratio=row["screened"] / row["majority"], unit="acc",
                  target=">= 0.95 right, >= 90% of spammers and <= 10% of honest workers flagged, gold not spotted",
                  passed=passed, checks={k: row[k] for k in ("oracle", "spammers_flagged", "honest_flagged",
                                                             "spotted_share_gold")}, detail=row)


ROWS: dict[str, Callable[[bool], list[Row]]] = {
    "coco_cd": coco_cd, "nouns": noun_mining, "llm": llm_stage, "noop": noop_rebuild,
    "dask": dask_scale_out, "overhead": command_overhead, "eval_commands": evaluate_commands, "cgf1_warm": cgf1_warm,
    "status": rounds_status, "crowd": crowd, "release": release,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("row", choices=sorted(ROWS))
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    rows = ROWS[args.row](args.quick)
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
