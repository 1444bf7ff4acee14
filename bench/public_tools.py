"""Where the benchmark finds the public evaluators it runs side by side with segbench's.

* SAM3's ``CGF1Evaluator`` (``sam3/eval/cgf1_eval.py``, SAM License): a checkout named by
  ``--sam3-dir`` (``SEGBENCH_BENCH_SAM3_DIR``), else the ``sam3`` package from the registry, installed
  once without the model's dependencies into a venv of its own under ``bench/out/public/`` with the
  versions its metadata pins for numpy, pycocotools and tqdm (its evaluator needs only those and
  scipy). It runs in that interpreter, from outside this repository, unmodified.
* CAFE's ``tools/eval_cafe_metrics.py`` (MIT) has no package, and this machine reaches only the
  package registries: its rows say it was not measured (:data:`CAFE_MISSING`) rather than time a
  re-implementation in its place.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
PUBLIC = HERE / "out" / "public"
SAM3_VERSION = "0.1.4"
# What sam3 0.1.4 pins for what its evaluator imports (numpy<2.4, tqdm<4.68, pycocotools<2.1).
SAM3_EVALUATOR_DEPS = ("numpy>=1.26,<2.4", "pycocotools>=2.0.10,<2.1", "tqdm>=4.66,<4.68", "scipy")
SAM3_DIR_ENV = "SEGBENCH_BENCH_SAM3_DIR"
CGF1_EVAL = Path("sam3") / "eval" / "cgf1_eval.py"


@dataclass(frozen=True)
class PublicTool:
    """A public evaluator: the interpreter that runs it and the file it is."""

    python: Path
    source: Path
    origin: str  # what it is, for the table: "sam3 0.1.4 (PyPI)", "checkout <dir>"


def sam3_evaluator() -> PublicTool:
    """SAM3's evaluator: a checkout if one is named, else the registry package (installed on first use)."""
    checkout = os.environ.get(SAM3_DIR_ENV)
    if checkout:
        source = Path(checkout) / CGF1_EVAL
        if not source.is_file():
            raise SystemExit(f"{SAM3_DIR_ENV}={checkout}: no {CGF1_EVAL} there (a checkout of facebookresearch/sam3)")
        return PublicTool(Path(sys.executable), source, f"checkout {checkout}")
    env_dir = PUBLIC / f"sam3-{SAM3_VERSION}"
    python = env_dir / "bin" / "python"
    marker = env_dir / ".installed"
    if not marker.is_file():
        venv.create(env_dir, with_pip=True, clear=True)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, "--no-deps", f"sam3=={SAM3_VERSION}"], check=True)
        subprocess.run([*pip, *SAM3_EVALUATOR_DEPS], check=True)
        marker.write_text(SAM3_VERSION)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    return PublicTool(python, Path(site) / CGF1_EVAL, f"sam3 {SAM3_VERSION} (PyPI)")


CAFE_MISSING = ("CAFE's script not measured: it has no package, and a checkout of T-S-Liang/CAFE cannot be "
                "fetched here")
