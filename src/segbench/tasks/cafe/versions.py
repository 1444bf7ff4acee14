"""The logic versions of CAFE: one per output, all in this one place.

A version is part of its output's build key and manifest (``builder_version``): bump it whenever
the output changes for the same inputs and parameters, so that every built copy is rebuilt. The
golden test of the demo world (``tests/demo/test_demo_golden.py``) fails when an output changes
while its version does not. Prompt and offline-rule versions are part of the answer cache's keys
instead and stay beside their prompts.
"""

# The build of ``cafe_candidates/``. Changes: 2: the manifest records the image folders as inputs, and the build
# key.
CANDIDATES = "2"

# The export ``cafe/``. Changes: 2: the manifest records the build key.
EXPORT = "2"

# The CAFE evaluation report. Changes: 2: metrics.json is {"evaluated", "metrics"}; 3: SoftSwap; 4: published
# comparison, summary table; 5: "what was evaluated" names paths relative to the project and the working tree; report.md shows its plots.
EVALUATION = "5"

# The cgF1 evaluation report. Changes: 2: the same; 3: predictions outside the ground truth are ignored and
# counted; 4: published comparison; 5: "what was evaluated" in plain words (lists and a missing rev); report.md shows its plots.
CGF1 = "5"
