"""COCO-CD at COCO scale: how long the build takes compared with just loading its inputs.

Generates (or reuses) an annotation-only COCO 2017 + COCO-Stuff tree at COCO scale
(:mod:`gen_coco_scale`), then runs each step in a fresh child process (:mod:`coco_cd_steps`):
pycocotools loading the four files (the baseline) and the Prefect flow ``build_coco_cd`` without
images. Prints the ratio measured in this run, with peak RSS per step and the build's counts, and
writes ``bench/out/coco_cd_scale.json``. ``bench/run.py`` runs this as one row of its table.

    .venv/bin/python bench/coco_cd_scale.py               # COCO scale (make bench)
    .venv/bin/python bench/coco_cd_scale.py --scale 0.05  # a quick check, well under a minute

Below scale 1 the val/test sizes per group shrink with the scale (the groups do); at scale 1 the
build uses the default parameters of the released COCO-CD.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from gen_coco_scale import OUT_DIR, Spec, ensure_tree

HERE = Path(__file__).resolve().parent
STEPS = HERE / "coco_cd_steps.py"
RESULTS = OUT_DIR / "coco_cd_scale.json"
DEFAULT_VAL, DEFAULT_TEST = 50, 125  # CocoCdParams defaults


def build_params(scale: float) -> dict[str, Any]:
    params: dict[str, Any] = {"write_images": False}  # annotation-only tree: label masks, no images
    if scale < 1:
        params |= {"val_per_group": max(1, round(DEFAULT_VAL * scale)),
                   "test_per_group": max(1, round(DEFAULT_TEST * scale))}
    return params


def run_step(step: str, root: Path, *extra: str) -> dict[str, Any]:
    """Run one step in a fresh interpreter; its last stdout line is its JSON result."""
    command = [sys.executable, str(STEPS), step, "--root", str(root), *extra]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"step {step!r} failed (exit {done.returncode})")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(root: Path, work: Path, params: dict[str, Any]) -> dict[str, Any]:
    build_args = ["--params", json.dumps(params)]
    return {"baseline": run_step("baseline", root),
            "flow": run_step("flow", root, "--out", str(work / "flow"), *build_args)}


def ratio_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    base, step = results["baseline"], results["flow"]
    return [{"ratio": "COCO-CD build (flow) / pycocotools load", "build_s": step["seconds"], "load_s": base["seconds"],
             "x": round(step["seconds"] / base["seconds"], 2), "build_peak_rss_mb": step["peak_rss_mb"],
             "load_peak_rss_mb": base["peak_rss_mb"]}]


def report(summary: dict[str, Any]) -> str:
    r, gen = summary["results"], summary["generation"]
    lines = [f"COCO-CD scale benchmark — scale {summary['scale']}, seed {summary['seed']}, tree {summary['tree']}",
             f"generation: {gen['seconds']} s{'' if summary['generated_now'] else ' (cached)'}, peak RSS "
             f"{gen['peak_rss_mb']} MB; files (MB): {gen['file_mb']}", "",
             f"{'':52} {'build s':>8} {'load s':>7} {'ratio':>6} {'build MB':>9} {'load MB':>8}"]
    for row in summary["ratios"]:
        lines.append(f"{row['ratio']:52} {row['build_s']:8.2f} {row['load_s']:7.2f} {row['x']:6.2f} "
                     f"{row['build_peak_rss_mb']:9.0f} {row['load_peak_rss_mb']:8.0f}")
    flow = r["flow"]
    counts = flow["counts"]
    lines += ["", f"flow: ephemeral Prefect API start-up {flow['api_start_seconds']} s (not in the build time), "
              f"import {flow['import_seconds']} s", "",
              f"params: {summary['params']}",
              f"candidates: {counts['with_target_class']} with cat or dog, {counts['both_classes']} both, "
              f"{counts['fg_too_small']} fg too small, {counts['fg_too_large']} fg too large, kept {counts['kept']}",
              f"context: {counts['context']}; usable {counts['usable']}; masks rendered {counts['rendered']}",
              "groups (cat·indoor, cat·outdoor, dog·indoor, dog·outdoor):"]
    for rho, splits in counts["splits"].items():
        lines.append(f"  {rho}: " + ", ".join(f"{name} {values}" for name, values in splits.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of COCO 2017's size (default 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated tree")
    parser.add_argument("--regenerate", action="store_true", help="regenerate the tree even if cached")
    parser.add_argument("--keep", action="store_true", help="keep the COCO-CD builds under bench/out/")
    args = parser.parse_args(argv)

    spec = Spec(args.scale, args.seed)
    root, generation, generated_now = ensure_tree(spec, regenerate=args.regenerate)
    work = OUT_DIR / f"builds-{spec.key()}"
    shutil.rmtree(work, ignore_errors=True)
    params = build_params(args.scale)
    try:
        results = measure(root, work, params)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    summary = {"scale": args.scale, "seed": args.seed, "tree": str(root), "generated_now": generated_now,
               "generation": generation, "params": params, "ratios": ratio_rows(results), "results": results}
    RESULTS.write_text(json.dumps(summary, indent=1) + "\n")
    print(report(summary))
    print(f"\nresults: {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
