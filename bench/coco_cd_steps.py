"""One measured step of the COCO-CD scale benchmark, run in a fresh child process.

``python bench/coco_cd_steps.py STEP --root TREE --out DIR [...]`` runs one step and prints one JSON
line: its seconds, the child's peak RSS and what the step produced. A fresh process per step keeps
peak RSS per step and keeps one step's warm caches (imports, page cache aside) out of the next.

Steps:
  baseline  pycocotools ``COCO(path)`` on the four annotation files (the cost of just loading them);
  flow      the Prefect flow ``build_coco_cd`` without images, after a trivial flow that starts the
            ephemeral Prefect API, timed separately;
  plain     the same tasks called as plain functions (``task.fn``), in the flow's order, with
            per-stage seconds; ``--profile FILE`` runs it under cProfile instead.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FILES = ("instances_train2017", "instances_val2017", "stuff_train2017", "stuff_val2017")


def prefect_environment(home: Path) -> None:
    """Point Prefect at a private temporary home; it reads these when it is first imported."""
    os.environ.update({
        "PREFECT_HOME": str(home / "prefect"),
        "PREFECT_LOCAL_STORAGE_PATH": str(home / "prefect" / "results"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "DO_NOT_TRACK": "1",
    })
    for var in ("PREFECT_API_URL", "SEGBENCH_CONFIG"):
        os.environ.pop(var, None)


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # Linux reports KiB


def baseline(root: Path) -> dict[str, Any]:
    from pycocotools.coco import COCO

    seconds, loaded = {}, []  # every file stays loaded, as the build keeps all four
    for name in FILES:
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):  # COCO() prints its progress
            loaded.append(COCO(str(root / "annotations" / f"{name}.json")))
        seconds[name] = round(time.perf_counter() - start, 3)
    return {"seconds": round(sum(seconds.values()), 3), "per_file": seconds,
            "annotations": sum(len(c.anns) for c in loaded)}


def _timed(stages: dict[str, float], name: str, start: float) -> float:
    now = time.perf_counter()
    stages[name] = round(now - start, 3)
    return now


def plain_build(root: Path, out: Path, params) -> tuple[dict[str, Any], dict[str, float]]:
    """``build_coco_cd`` without images, as plain calls of its tasks' functions (mirrors the flow body).

    Returns the flow's counts and the seconds of each stage.
    """
    from segbench.errors import ImportPolicy
    from segbench.flows import coco_cd as flow
    from segbench.tasks import coco_cd as cd
    from segbench.tasks.io import staged_directory
    from segbench.tasks.manifest import build_manifest, write_manifest

    policy, stages, t = ImportPolicy(on_error=params.on_error), {}, time.perf_counter()
    sources = flow.load_sources.fn(root, root, policy)
    t = _timed(stages, "load_sources", t)
    candidates, selection = flow.select_candidates.fn(sources, params, policy)
    t = _timed(stages, "select_candidates", t)
    records = flow.label_contexts.fn(sources, candidates, params)
    t = _timed(stages, "label_contexts", t)
    usable = [r for r in records if r.context != cd.UNKNOWN]  # what the flow does without images
    plan = flow.plan_splits.fn(usable, params)
    t = _timed(stages, "plan_splits", t)
    with staged_directory(out) as stage:
        tables = flow.write_records.fn(stage, sources, records, usable, plan, params, policy)
        t = _timed(stages, "write_records", t)
        ids = sorted({*plan.val, *plan.test, *(i for train in plan.train.values() for i in train)})
        for start in range(0, len(ids), flow.RENDER_SHARD):
            flow.render_shard.fn(stage, sources.instances, root, ids[start : start + flow.RENDER_SHARD], params)
        t = _timed(stages, "render_masks", t)
        counts = {
            "source_images": len(sources.instances.images), **selection,
            "context": {c: sum(r.context == c for r in records) for c in (*cd.CONTEXTS, cd.UNKNOWN)},
            "usable": len(usable), "rendered": len(ids), "train_per_class_total": plan.per_class_total,
            "splits": tables["group_counts"],
        }
        write_manifest(stage, build_manifest(
            dataset="coco_cd", builder_version=cd.BUILDER_VERSION, root=stage,
            params=params.model_dump(mode="json"), inputs=sources.files, counts=counts,
            seed=params.seed, skipped=len(policy.report)))
        _timed(stages, "manifest", t)
    return counts, stages


def flow_build(root: Path, out: Path, params) -> dict[str, Any]:
    start = time.perf_counter()
    from prefect import flow

    from segbench.flows.coco_cd import build_coco_cd

    imported = time.perf_counter()

    @flow(name="bench-warm-up")
    def warm_up() -> int:
        return 1

    warm_up()  # the first flow run of a process starts the ephemeral API; later runs reuse it
    warmed = time.perf_counter()
    result = build_coco_cd(root, root, out, params)
    done = time.perf_counter()
    return {"seconds": round(done - warmed, 3), "api_start_seconds": round(warmed - imported, 3),
            "import_seconds": round(imported - start, 3), "counts": result["counts"]}


def plain_step(root: Path, out: Path, params, profile: Path | None) -> dict[str, Any]:
    start = time.perf_counter()
    import segbench.flows.coco_cd  # noqa: F401  (imports Prefect, timed apart from the build)

    imported = time.perf_counter()
    if profile is None:
        counts, stages = plain_build(root, out, params)
    else:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        counts, stages = profiler.runcall(plain_build, root, out, params)
        profiler.dump_stats(profile)
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(15)
        stages["profile_top15"] = text.getvalue()
    done = time.perf_counter()
    return {"seconds": round(done - imported, 3), "import_seconds": round(imported - start, 3),
            "stages": stages, "counts": counts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("baseline", "flow", "plain"))
    parser.add_argument("--root", type=Path, required=True, help="the generated COCO tree")
    parser.add_argument("--out", type=Path, help="where the build writes COCO-CD")
    parser.add_argument("--params", default="{}", help="CocoCdParams fields as JSON")
    parser.add_argument("--profile", type=Path, help="plain step only: run under cProfile, stats to FILE")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="segbench-bench-") as home:
        prefect_environment(Path(home))
        if args.step == "baseline":
            result = baseline(args.root)
        else:
            from segbench.schemas.coco_cd import CocoCdParams

            params = CocoCdParams(**json.loads(args.params))
            result = (flow_build(args.root, args.out, params) if args.step == "flow"
                      else plain_step(args.root, args.out, params, args.profile))
    print(json.dumps({"step": args.step, "peak_rss_mb": peak_rss_mb(), **result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
