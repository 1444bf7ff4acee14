"""The logic versions of Waterbirds-seg: one per output, all in this one place
(what a version is and when to bump it: :mod:`segbench.core.build`).
"""

# The build of ``waterbirds_seg/``. Changes: 2: the manifest records the images, segmentations and places as
# inputs, and the build key. 3: the Waterbirds construction (test from CUB's test split, val from its train
# split, places drawn 50/50 in val and test and at ρ in train; image id 2·bird + place type).
BUILD = "3"
