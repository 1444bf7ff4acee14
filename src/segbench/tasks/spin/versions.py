"""The logic versions of SPIN: one per output, all in this one place.

A version is part of its output's build key and manifest (``builder_version``): bump it whenever
the output changes for the same inputs and parameters, so that every built copy is rebuilt. The
golden test of the demo world (``tests/demo/test_demo_golden.py``) fails when an output changes
while its version does not. Prompt and offline-rule versions are part of the answer cache's keys
instead and stay beside their prompts.
"""

# The taxonomy ``spin/taxonomy.yaml``. Changes: 4: proposals that are not visible parts are dropped before the
# edits.
TAXONOMY = "4"

# The dataset ``spin/dataset/``. Changes: 2: the manifest records the images as an input, and the build key; 3:
# statistics plot.
DATASET = "4"

# The evaluation report. Changes: 2: plots label both axes, legends beside the data, colour bars; 3: instance-
# level; 4: report.md shows its plots.
EVALUATION = "4"
