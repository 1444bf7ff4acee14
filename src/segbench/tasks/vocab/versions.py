"""The logic versions of valid vocabularies: one per output, all in this one place.

A version is part of its output's build key and manifest (``builder_version``): bump it whenever
the output changes for the same inputs and parameters, so that every built copy is rebuilt. The
golden test of the demo world (``tests/demo/test_demo_golden.py``) fails when an output changes
while its version does not. Prompt and offline-rule versions are part of the answer cache's keys
instead and stay beside their prompts.
"""

# The build of ``vocab/<set>/``. Changes: 2: the manifest records the build key.
BUILD = "2"

# The evaluation report. Changes: 2: plots label both axes, legends beside the data, colour bars; 3: report.md
# shows its plots.
EVALUATION = "3"
