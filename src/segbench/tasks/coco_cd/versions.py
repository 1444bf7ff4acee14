"""The logic versions of COCO-CD: one per output, all in this one place
(what a version is and when to bump it: :mod:`segbench.core.build`).
"""

# The build of ``coco_cd/``. Changes: 2: groups named "cat indoors" (was "cat·indoor").
BUILD = "2"
