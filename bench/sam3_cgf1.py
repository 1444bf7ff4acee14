"""SAM3's own cgF1 evaluator run as its users run it: ``CGF1Evaluator(gt).evaluate(predictions)``.

    PYTHON bench/sam3_cgf1.py CGF1_EVAL_PY GT.json PREDICTIONS.json OUT.json

``CGF1_EVAL_PY`` is ``sam3/eval/cgf1_eval.py`` of an installed ``sam3`` package or of a checkout,
unmodified (``bench/public_tools.py`` finds it). The module is loaded from its file because the
package's ``__init__`` builds the model (torch); the evaluator itself needs only numpy,
pycocotools, scipy and tqdm. Run by the public tool's own interpreter: nothing of segbench is
imported. Writes the evaluator's returned summary as JSON.
"""

import importlib.util
import json
import sys


def main() -> None:
    module_path, gt, predictions, out = sys.argv[1:5]
    spec = importlib.util.spec_from_file_location("sam3_cgf1_eval", module_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    summary = module.CGF1Evaluator(gt_path=gt, iou_type="segm").evaluate(predictions)
    with open(out, "w") as f:
        json.dump(summary, f)


if __name__ == "__main__":
    main()
