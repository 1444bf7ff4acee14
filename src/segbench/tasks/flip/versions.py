"""The logic versions of the COCO-CD and Waterbirds-seg evaluations: one per output, all in this one place
(what a version is and when to bump it: :mod:`segbench.core.build`).
"""

# Their evaluation reports. Changes: 2: plots label both axes, legends beside the data, colour bars; 3: report.md
# shows its plots; 4: flip-risk over ground-truth foreground beside the deployable one (App. G).
EVALUATION = "4"
