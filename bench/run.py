"""segbench benchmarks: one table of ratios, each measured against its baseline in this run.

    .venv/bin/python bench/run.py                 # full scale (COCO scale, 10k CAFE pairs, ...): long
    .venv/bin/python bench/run.py --quick         # small scales: a few minutes
    .venv/bin/python bench/run.py --only nouns overhead

Rows (``--only`` names): coco_cd (COCO-CD build vs pycocotools loading its inputs; its peak RSS vs the
JSON size; peak RSS at 10%, 50% and 100% of the scale, each build in its own process, with the slope),
nouns (noun mining vs spaCy's full pipeline), llm (the vocabulary's judging stage against a local server with injected latency, and a rebuild that
must make no call), noop (a no-op rebuild vs a full build), dask (2 Dask workers vs 1), overhead
(`segbench evaluate cgf1` on 5 pairs vs SAM3's CGF1Evaluator, both processes), eval_commands (`segbench
evaluate cgf1` vs SAM3's CGF1Evaluator as processes at 2,146, 10k and 100k pairs, with peak RSS;
`evaluate cafe` alone), cgf1_warm (cgF1 from files to numbers in a warm process vs SAM3's evaluator in
its own), status (`rounds status` against
`segbench --version`), crowd (a simulated crowd with 0/20/40% spammers: true labels and masks
recovered by gold filtering and Dawid-Skene against plain majority vote; ``bench/crowd.py``), release
(`segbench release coco_cd` at COCO scale against its build; peak RSS at 10%, 50% and 100% of the scale).

SAM3's evaluator is the ``sam3`` package from the registry, installed once into ``bench/out/public/``
without the model's dependencies, or a checkout given with ``--sam3-dir`` (``bench/public_tools.py``).
Every row runs in its own child process (fresh imports, its own peak memory) and checks that segbench
and the baseline give the same output; a row whose outputs differ fails whatever its ratio. Writes
``bench/out/summary.json`` and ``bench/out/summary.md``; exits 1 when a row fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
ORDER = ("coco_cd", "nouns", "llm", "noop", "dask", "overhead", "eval_commands", "cgf1_warm", "status",
         "crowd", "release")
HEADER = ("row", "measured", "baseline", "ratio", "target", "result")


def run_row(name: str, quick: bool) -> list[dict[str, Any]]:
    """Run one row in a child process; a crash becomes a failed row that says why."""
    command = [sys.executable, str(HERE / "rows.py"), name, *(["--quick"] if quick else [])]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = round(time.perf_counter() - start, 1)
    if done.returncode == 0:
        rows = json.loads(done.stdout.strip().splitlines()[-1])
        for row in rows:
            row["wall_s"] = seconds
        return rows
    tail = done.stderr.strip().splitlines()[-12:]
    return [{"row": name, "passed": False, "error": "\n".join(tail), "wall_s": seconds}]


def cells(row: dict[str, Any]) -> tuple[str, ...]:
    if "error" in row:
        return (row["row"], "-", "-", "-", "-", "ERROR")
    failed = [name for name, ok in row["checks"].items() if ok is False]
    verdict = "pass" if row["passed"] else "FAIL" + (f" ({', '.join(failed)})" if failed else "")
    return (row["row"], f"{row['measured']:.2f} {row['unit']}", f"{row['baseline']:.2f} {row['unit']}",
            f"{row['ratio']:.2f}x", row["target"], verdict)


def text_table(rows: list[dict[str, Any]]) -> str:
    lines = [HEADER, *map(cells, rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER))]
    out = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in lines]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(out)


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [f"# segbench benchmarks ({meta['mode']})", "",
             f"{meta['date']}, {meta['machine']}, {meta['cpus']} CPUs, Python {meta['python']}.", "",
             "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in cells(row)) + " |" for row in rows]
    lines += ["", "## Details", ""]
    for row in rows:
        if "error" in row:
            lines += [f"- **{row['row']}**: error:", "", "```", row["error"], "```"]
        else:
            lines.append(f"- **{row['row']}**: checks {json.dumps(row['checks'])}; {json.dumps(row['detail'])}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--quick", action="store_true", help="small scales, a few minutes in all")
    parser.add_argument("--only", nargs="+", choices=ORDER, metavar="ROW", help=f"rows to run: {', '.join(ORDER)}")
    parser.add_argument("--sam3-dir", type=Path, help="a checkout of facebookresearch/sam3 to run SAM3's evaluator "
                                                      "from (default: the sam3 package from the registry)")
    args = parser.parse_args(argv)
    if args.sam3_dir:
        from public_tools import SAM3_DIR_ENV

        os.environ[SAM3_DIR_ENV] = str(args.sam3_dir.resolve())  # the rows run in child processes
    meta = {"mode": "quick" if args.quick else "full scale", "date": time.strftime("%Y-%m-%d %H:%M"),
            "machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version()}
    rows: list[dict[str, Any]] = []
    for name in args.only or ORDER:
        print(f"running {name} ...", file=sys.stderr, flush=True)
        new = run_row(name, args.quick)
        for row in new:
            print(f"  {' | '.join(cells(row))}   ({row['wall_s']} s)", file=sys.stderr, flush=True)
        rows += new
    OUT.mkdir(exist_ok=True)
    (OUT / "summary.json").write_text(json.dumps({**meta, "rows": rows}, indent=1) + "\n")
    (OUT / "summary.md").write_text(markdown(rows, meta))
    print(text_table(rows))
    print(f"\nwritten: {OUT / 'summary.json'}, {OUT / 'summary.md'}")
    return 0 if all(row["passed"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
