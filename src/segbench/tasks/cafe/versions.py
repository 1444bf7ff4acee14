"""The logic versions of CAFE: one per output, all in this one place
(what a version is and when to bump it: :mod:`segbench.core.build`).
"""

# The build of ``cafe_candidates/``. Changes: 2: the manifest records the image folders as inputs, and the build
# key; 3: quotas are verified counts (dealt per source × edit type, over the expected share), top-up batches,
# targets.json.
CANDIDATES = "3"

# The export ``cafe/``. Changes: 2: the manifest records the build key; 3: a chain of top-up rounds, at most the
# target per source × edit type, tables/targets.{md,json}.
EXPORT = "3"

# The CAFE evaluation report. Changes: 2: metrics.json is {"evaluated", "metrics"}; 3: SoftSwap; 4: published
# comparison, summary table; 5: "what was evaluated" names paths relative to the project and the working tree; report.md shows its plots.
EVALUATION = "5"

# The cgF1 evaluation report. Changes: 2: the same; 3: predictions outside the ground truth are ignored and
# counted; 4: published comparison; 5: "what was evaluated" in plain words (lists and a missing rev); report.md shows its plots.
CGF1 = "5"
