"""One measured step of the COCO-CD scale benchmark, run in a fresh child process.

``python bench/coco_cd_steps.py STEP --root TREE --out DIR [...]`` runs one step and prints one JSON
line: its seconds, the child's peak RSS and what the step produced. A fresh process per step keeps
peak RSS per step and keeps one step's warm caches (imports, page cache aside) out of the next.

Steps:
  baseline  pycocotools ``COCO(path)`` on the four annotation files (the cost of just loading them);
  flow      the Prefect flow ``build_coco_cd`` without images, after a trivial flow that starts the
            ephemeral Prefect API, timed separately; ``--repeat`` builds once more with nothing
            changed (the no-op rebuild) and times that too.
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
    """This program's peak resident memory (``VmHWM``). ``ru_maxrss`` would not do: Linux carries the
    high-water mark across ``exec``, so it counts the spawning process's memory too."""
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)  # kB
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # Linux reports KiB


def baseline(root: Path) -> dict[str, Any]:
    from pycocotools.coco import COCO

    seconds, loaded = {}, []  # every file stays loaded, as the build keeps all four
    cpu = time.process_time()
    for name in FILES:
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):  # COCO() prints its progress
            loaded.append(COCO(str(root / "annotations" / f"{name}.json")))
        seconds[name] = round(time.perf_counter() - start, 3)
    return {"seconds": round(sum(seconds.values()), 3), "cpu_seconds": round(time.process_time() - cpu, 3),
            "per_file": seconds,
            "annotations": sum(len(c.anns) for c in loaded)}


def flow_build(root: Path, out: Path, params, repeat: bool = False) -> dict[str, Any]:
    start = time.perf_counter()
    from prefect import flow

    from segbench.flows.coco_cd.build import build_coco_cd
    from segbench.flows.runner import without_heartbeats

    imported = time.perf_counter()

    @flow(name="bench-warm-up")
    def warm_up() -> int:
        return 1

    warm_up()  # the first flow run of a process starts the ephemeral API; later runs reuse it
    warmed, cpu = time.perf_counter(), time.process_time()
    with without_heartbeats():  # as segbench's commands run their flows
        result = build_coco_cd(root, root, out, params)
    done = time.perf_counter()
    # CPU of this process only (the flow's threads included; the ephemeral Prefect API's server too when in-process).
    timing = {"seconds": round(done - warmed, 3), "cpu_seconds": round(time.process_time() - cpu, 3),
              "api_start_seconds": round(warmed - imported, 3),
              "import_seconds": round(imported - start, 3), "counts": result.counts.model_dump(),
              "up_to_date": result.up_to_date}
    if repeat:  # the same build again, nothing changed: what a scheduled rebuild costs
        with without_heartbeats():
            again = build_coco_cd(root, root, out, params)
        timing["rebuild"] = {"seconds": round(time.perf_counter() - done, 3), "up_to_date": again.up_to_date,
                             "same_counts": again.counts == result.counts}
    return timing


def release(build: Path, out: Path) -> dict[str, Any]:
    """What ``segbench release coco_cd`` runs, in this process as the command does, of a finished build
    (``build`` is ``<project>/coco_cd``), timed after start-up."""
    from segbench.core.release.make import make_release
    from segbench.core.steps import InProcess
    from segbench.demo.release import DEMO_RELEASE_INFO

    start, cpu = time.perf_counter(), time.process_time()
    result = make_release(InProcess(), "coco_cd", out, DEMO_RELEASE_INFO, repo=build.parent, data_dir=build.name)
    return {"seconds": round(time.perf_counter() - start, 3), "cpu_seconds": round(time.process_time() - cpu, 3),
            "rows": sum(sum(splits.values()) for splits in result.configs.values()),
            "parquet_mb": round(sum(f.size for f in result.files if f.path.endswith(".parquet")) / 2**20, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("baseline", "flow", "release"))
    parser.add_argument("--root", type=Path, required=True, help="the generated COCO tree")
    parser.add_argument("--out", type=Path, help="where the build writes COCO-CD")
    parser.add_argument("--params", default="{}", help="CocoCdParams fields as JSON")
    parser.add_argument("--repeat", action="store_true", help="flow step: build a second time, nothing changed")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="segbench-bench-") as home:
        prefect_environment(Path(home))
        if args.step == "baseline":
            result = baseline(args.root)
        elif args.step == "release":  # --root: the build to release, --out: the release folder
            result = release(args.root, args.out)
        else:
            from segbench.schemas.coco_cd import CocoCdParams

            params = CocoCdParams(**json.loads(args.params))
            result = flow_build(args.root, args.out, params, args.repeat)
    print(json.dumps({"step": args.step, "peak_rss_mb": peak_rss_mb(), **result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
