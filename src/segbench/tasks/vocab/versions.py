"""The logic versions of valid vocabularies: one per output, all in this one place
(what a version is and when to bump it: :mod:`segbench.core.build`).
"""

# The build of ``vocab/<set>/``. Changes: 2: the manifest records the build key.
BUILD = "2"

# The evaluation report. Changes: 2: plots label both axes, legends beside the data, colour bars; 3: report.md
# shows its plots; 4: mask AP per level with panoptic ground truth, and the model's own segments (--segments).
EVALUATION = "4"
