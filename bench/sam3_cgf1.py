"""SAM3's own cgF1 evaluator run as its users run it: ``CGF1Evaluator(gt).evaluate(predictions)``.

    PYTHON bench/sam3_cgf1.py CGF1_EVAL_PY GT.json PREDICTIONS.json OUT.json [--repeat N]

``CGF1_EVAL_PY`` is ``sam3/eval/cgf1_eval.py`` of an installed ``sam3`` package or of a checkout,
unmodified (``bench/public_tools.py`` finds it). The module is loaded from its file because the
package's ``__init__`` builds the model (torch); the evaluator itself needs only numpy,
pycocotools, scipy and tqdm. Run by the public tool's own interpreter: nothing of segbench is
imported. Writes ``{"summary": the evaluator's summary, "seconds": [...]}``: with ``--repeat N``,
the seconds of N more evaluations in this warm process (each from the files to the summary, as
the first one), else none.
"""

import argparse
import gc
import importlib.util
import json
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("module", "gt", "predictions", "out"):
        parser.add_argument(name)
    parser.add_argument("--repeat", type=int, default=0)
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("sam3_cgf1_eval", args.module)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def evaluate() -> dict:
        return module.CGF1Evaluator(gt_path=args.gt, iou_type="segm").evaluate(args.predictions)

    summary, seconds = evaluate(), []
    for _ in range(args.repeat):
        gc.collect()
        start = time.perf_counter()
        evaluate()
        seconds.append(time.perf_counter() - start)
    with open(args.out, "w") as f:
        json.dump({"summary": summary, "seconds": seconds}, f)


if __name__ == "__main__":
    main()
