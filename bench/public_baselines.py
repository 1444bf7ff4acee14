"""The public evaluators' algorithms as commands, reading their files as the public scripts do.

    python bench/public_baselines.py cgf1 GT.json PREDICTIONS.json OUT.json   # SAM3's CGF1Evaluator algorithm
    python bench/public_baselines.py cafe GT.json PREDICTIONS.json OUT.json   # CAFE's eval_cafe_metrics.py algorithm

Both parse their inputs with the standard library's ``json`` (as pycocotools' ``COCO`` and CAFE's
script do) and write their numbers as JSON, for ``bench/commands.py`` to compare with segbench's.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value.item() if isinstance(value, np.generic) else value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("evaluator", choices=("cgf1", "cafe"))
    parser.add_argument("gt", type=Path)
    parser.add_argument("predictions", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    from segbench.tasks.cafe.reference import reference_cgf1, reference_target_aware

    gt = json.loads(args.gt.read_text())
    predictions = json.loads(args.predictions.read_text())
    if args.evaluator == "cgf1":
        numbers = reference_cgf1([gt], predictions)
    else:
        numbers = reference_target_aware(gt, predictions)
    args.out.write_text(json.dumps(_plain(numbers)))


if __name__ == "__main__":
    main()
