"""The names of the aggregation methods, apart from :mod:`segbench.core.aggregation` so that round
records, settings and the command line read them without loading numpy."""

from __future__ import annotations

MAJORITY = "majority"
DAWID_SKENE = "dawid-skene"
GLAD = "glad"
SCREENED = "screened"
PLAIN_METHODS = (MAJORITY, DAWID_SKENE, GLAD)
METHODS = (SCREENED, *PLAIN_METHODS)
"""The categorical aggregation methods a round can use. ``screened`` (the default of new rounds) is
Dawid–Skene anchored on the gold answers and fitted again without the workers the worker report
flags (:mod:`segbench.core.screening`); the other three are the plain methods, fitted on every
counted worker without gold."""

MASK_METHODS = ("em", "majority", "rasa")
"""crowd-kit's segmentation aggregation: ``SegmentationEM``, ``SegmentationMajorityVote``, ``SegmentationRASA``."""
