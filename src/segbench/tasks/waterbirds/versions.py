"""The logic versions of Waterbirds-seg: one per output, all in this one place
(what a version is and when to bump it: :mod:`segbench.core.build`).
"""

# The build of ``waterbirds_seg/``. Changes: 2: the manifest records the images, segmentations and places as
# inputs, and the build key.
BUILD = "2"
