"""The logic versions of SPIN: one per output, all in this one place
(what a version is and when to bump it: :mod:`segbench.core.build`).
"""

# The taxonomy ``spin/taxonomy.yaml``. Changes: 4: proposals that are not visible parts are dropped before the
# edits; 5: restrict rules (subparts asked only of some object classes), recorded as restricted_by; 6: taxonomy.png.
TAXONOMY = "6"

# The dataset ``spin/dataset/``. Changes: 2: the manifest records the images as an input, and the build key; 3:
# statistics plot; 5: rigid and non-rigid groups, subparts per object, Fig. 7's shapes; 6: the Fig. 5/6 bar chart; 7: each
# measure's range (min, max).
DATASET = "7"

# The evaluation report. Changes: 2: plots label both axes, legends beside the data, colour bars; 3: instance-
# level; 4: report.md shows its plots.
EVALUATION = "4"
